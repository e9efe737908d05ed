// Graph-level choices measured on the target: the alternatives kiln has for a whole model
// (conv data layout auto/NCHW/blocked, Winograd or direct 3x3 convs, parallel branches combined
// or not) are fixed rules in compile(); `kiln tune` measures them on the target and records the
// measurements as tuning records like any other (task "graph", workload "graph_<model hash>", one
// knob per choice, costs = the whole model's latency) and its choice as one more (task
// "graph_choice"), which `compile --tuning-log` applies.
//
// The search is coordinate descent from the rules' defaults: each choice in turn takes each of
// its values with the others at the best so far, and a value is kept only when the model runs at
// least kMinGain faster (the machines are shared and noisy; a smaller difference is not worth a
// different graph). Models are measured with the schedules the log holds at that moment (kernel
// records of the other alternatives' graphs may be missing, so a choice is judged with the
// default schedules of the kernels it creates). CPU targets only: a GPU model is not measured.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kiln/autotune/records.h"
#include "kiln/compiler.h"

namespace kiln::autotune {

// A value is kept only when the model runs this much faster than with the best so far.
constexpr double kMinGain = 0.03;

// The task name and workload key of a model's graph records: "graph_" + a hash of the model's
// graph as printed (ops, shapes, attributes; not weight values), so a log's choice applies to the
// same model exported again, and to no other.
constexpr const char* kGraphTask = "graph";
std::string graph_workload_key(const relay::Module& m);
// The record of what the search chose (the graph records' workload key, costs = the chosen
// graph's latency): compile applies the latest one rather than the fastest graph record, which
// the search passes over when it is within kMinGain of the default.
constexpr const char* kGraphChoiceTask = "graph_choice";

// The choices a graph record holds, set in (or read from) CompileOptions.
std::map<std::string, KnobChoice> graph_knobs(const CompileOptions& o);
// Sets o's choices from a record's knobs; kiln::Error naming a knob or value it does not know.
void apply_graph_knobs(const std::map<std::string, KnobChoice>& knobs, CompileOptions* o);
// "layout=blocked winograd=on combine_branches=2".
std::string describe_graph_knobs(const std::map<std::string, KnobChoice>& knobs);

struct GraphTuneOptions {
  std::string log;          // appended to; records already there for this model are reused
  CompileOptions compile;   // target and the starting choices (the rules' defaults)
  int repeat = 7;           // samples per measurement (median)
  std::vector<std::string> fixed;  // choices the user set (knob names): kept, not searched
};

// Measures the alternatives (see above), appends one record per graph measured and one of the
// choice, and returns the chosen knobs. `line` receives one progress line per measurement.
std::map<std::string, KnobChoice> tune_graph_choices(const relay::Module& m, const GraphTuneOptions& o,
                                                     const std::function<void(const std::string&)>& line);

// The log's latest choice for `m` on o->target's instruction set (a log without one: its
// fastest graph record) applied to *o, except choices the user set on the command line
// (`explicit_choices`, knob names); returns a note saying what was applied, or nothing when the
// log has no graph record for this model.
std::optional<std::string> apply_logged_graph_choices(const TuningLog& log, const relay::Module& m, CompileOptions* o,
                                                      const std::vector<std::string>& explicit_choices);

}  // namespace kiln::autotune
