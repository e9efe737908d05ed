// Module: one graph-level function, the unit every relay pass takes and returns.
//
// `params` are the graph inputs in order (their names are the model's input names), `body`
// computes the outputs: one tensor, or a Tuple when the model has several outputs. Output
// names follow the model's. Modules are values: passes build new ones and share unchanged nodes.
#pragma once

#include <string>
#include <vector>

#include "kiln/relay/expr.h"

namespace kiln::relay {

struct Module {
  std::vector<Expr> params;  // VarNodes
  Expr body;
  std::vector<std::string> output_names;

  std::vector<std::string> input_names() const;
  // The output expressions: the fields of a Tuple body, or the body alone.
  std::vector<Expr> outputs() const;
  // Their types, in order.
  std::vector<Type> output_types() const;
  // Same params and names, another body (outputs must keep their count).
  Module with_body(Expr new_body) const;
  // Builds a module: one output gives that output as the body, several a Tuple of them.
  static Module make(std::vector<Expr> params, std::vector<Expr> outputs, std::vector<std::string> output_names);
};

}  // namespace kiln::relay
