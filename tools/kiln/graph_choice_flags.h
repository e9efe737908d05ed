// The command-line flags of the graph-level choices (autotune/graph_choices.h), shared by
// compile, check and tune: --layout, --no-winograd, --combine-branches. A choice the user sets
// on the command line wins over the one a tuning log recorded.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "kiln/compiler.h"

namespace kiln::cli {

class GraphChoiceFlags {
 public:
  // Adds the flags to `c`; `what` phrases --no-winograd's help ("compute" or "tune").
  void add(CLI::App* c, const std::string& winograd_help);
  // Sets o's choices from the flags (the rules' defaults where none was given).
  void apply(CompileOptions* o) const;
  // The knob names (graph_choices.h) of the choices given on the command line, which win over
  // a tuning log's (autotune::AppliedTuningLog).
  std::vector<std::string> given() const;

 private:
  bool no_winograd_ = false;
  std::string layout_ = "auto";
  int combine_branches_ = CompileOptions().combine_branches;
  CLI::Option* winograd_opt_ = nullptr;
  CLI::Option* layout_opt_ = nullptr;
  CLI::Option* combine_opt_ = nullptr;
};

}  // namespace kiln::cli
