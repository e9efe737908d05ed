// The op registry: every graph IR operator, with what the passes and the lowering need to know.
//
// An op entry holds its name ("nn.conv2d"), how many arguments it takes, its type relation
// (output type from input types and attributes), its fusion pattern kind and a one-line doc of
// its attributes. How an op is computed is the lowering layer's (lower/op_lowering.h): the graph
// IR does not depend on te. Ops are registered once, at first use, by one function per family
// (src/relay/op/*.cc); entries never move, so a CallNode keeps a plain pointer to its OpDef.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kiln/relay/attrs.h"
#include "kiln/relay/type.h"

namespace kiln::relay {

// How an op may fuse with its neighbours (the TVM classification; order matters: fuse_ops
// compares kinds with <=).
enum class OpPattern : uint8_t {
  Elementwise = 0,            // out[i] = f(in[i]), same shape
  Broadcast = 1,              // elementwise with numpy broadcasting of some inputs
  Injective = 2,              // each output element reads some input elements (reshape, slice)
  CommReduce = 3,             // a commutative reduction (sum, max, argmax)
  OutElementwiseFusable = 4,  // complex op whose output can take fused elementwise ops (conv, dense)
  Tuple = 7,                  // makes a tuple (not an op kind of the registry; used by fuse_ops)
  Opaque = 8,                 // never fused (softmax, layer_norm: own kernels)
};
const char* pattern_name(OpPattern p);

// Output type from argument types and attributes. Throws kiln::Error with a message about the
// shapes or attributes; make_call adds the op, node and input types around it.
using TypeRelation = std::function<Type(const std::vector<Type>& args, const Attrs& attrs)>;

struct OpDef {
  std::string name;
  int min_args = 1;
  int max_args = 1;  // -1: variadic
  OpPattern pattern = OpPattern::Opaque;
  TypeRelation relation;
  // The attributes this op reads, for humans and the lowering ("strides (ints), groups (int)").
  std::string attrs_doc;
};

// kiln::Error "unknown graph op 'x'" when not registered.
const OpDef& get_op(const std::string& name);
// nullptr when not registered.
const OpDef* find_op(const std::string& name);
// Every registered op name, sorted.
std::vector<std::string> list_ops();

// Registration, for the op family files: adds an entry, KILN_CHECK that the name is new.
OpDef& register_op(const std::string& name, int min_args, int max_args, OpPattern pattern,
                   TypeRelation relation, std::string attrs_doc);

}  // namespace kiln::relay
