// Deterministic text form of the graph IR, so tests and `kiln compile --dump-ir` can read it:
//
//   fn (%x: float32[1,3,8,8]) -> float32[1,4,4,4] {
//     %0 = nn.conv2d(%x, meta[0], dilation=[1,1], groups=1, padding=[1,1,1,1], strides=[2,2]) : float32[1,4,4,4]
//     %1 = nn.relu(%0) : float32[1,4,4,4]
//     return %1
//   }
//   outputs: y
//   meta[0] = float32[4,3,3,3]
//
// Nodes are numbered in post order; Vars print by name; scalar constants print inline (0.5f,
// 2i64, true), other constants as meta[i] in order of first use, listed after the function with
// their values when small. Nothing depends on addresses.
#pragma once

#include <ostream>
#include <string>

#include "kiln/relay/module.h"

namespace kiln::relay {

struct PrintOptions {
  bool node_names = false;   // append "  # Conv_0" (the source node) to each call line
  bool meta_values = true;   // list small constants' values in the meta table
};

std::string to_string(const Module& m, const PrintOptions& opts = {});
// One expression and everything it reads, as the body of an anonymous function.
std::string to_string(const Expr& e, const PrintOptions& opts = {});
std::ostream& operator<<(std::ostream& os, const Module& m);
// How the printers write a Var named `name`: %name, quoted where it could read as a node number
// or holds odd characters (%"0", %"x:0").
std::string var_text(const std::string& name);

}  // namespace kiln::relay
