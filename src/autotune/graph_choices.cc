// Graph-level choices measured on the target (see graph_choices.h).
#include "kiln/autotune/graph_choices.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "kiln/autotune/apply_log.h"
#include "kiln/autotune/measure_process.h"
#include "kiln/relay/printer.h"
#include "kiln/runtime/kiln_runtime.h"
#include "kiln/support/error.h"

namespace kiln::autotune {

namespace {

// The values each choice can take, in index order (a record stores both); index 0 of layout and
// winograd is the rule. layout: auto, nchw, blocked; winograd: on (1), off (0).
const std::map<std::string, std::vector<int64_t>> kValues = {
    {"layout", {0, 1, 2}}, {"winograd", {1, 0}}, {"combine_branches", {0, 2, 3}}};
const std::vector<std::string> kLayouts = {"auto", "nchw", "blocked"};

KnobChoice choice(const std::string& name, size_t index) { return {index, {kValues.at(name).at(index)}}; }

// A successful graph record of the model keyed `key`, measured on instruction set `isa`.
bool graph_record_of(const TuningRecord& r, const std::string& key, const std::string& isa,
                     const char* task = kGraphTask) {
  return r.task == task && r.workload_key == key && r.ok() && Target::isa_of(r.target) == isa;
}

// The choice of `name` whose value is `value`; nothing when it has no such value.
std::optional<KnobChoice> choice_of(const std::string& name, int64_t value) {
  const std::vector<int64_t>& values = kValues.at(name);
  auto at = std::find(values.begin(), values.end(), value);
  if (at == values.end()) return std::nullopt;
  return choice(name, static_cast<size_t>(at - values.begin()));
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// A temporary directory for one measured module, removed with it.
struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kiln_graph_XXXXXX").string();
    KILN_USER_CHECK(mkdtemp(tmpl.data()) != nullptr) << "cannot create a temporary directory in "
                                                      << std::filesystem::temp_directory_path().string();
    path = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// Seconds per run of the compiled module at `so` (zero inputs: the kernels' speed does not
// depend on the values).
std::vector<double> time_module(const std::string& so, int repeat) {
  kiln_module* mod = nullptr;
  KILN_USER_CHECK(kiln_module_load(so.c_str(), &mod) == KILN_OK) << "graph choice: " << kiln_last_error();
  std::unique_ptr<kiln_module, void (*)(kiln_module*)> owner(mod, kiln_module_free);
  int32_t n = 0;
  kiln_module_num_inputs(mod, &n);
  std::vector<std::vector<uint8_t>> buffers(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    kiln_tensor_info info{};
    kiln_module_input_info(mod, i, &info);
    int64_t elems = 1;
    for (int32_t d = 0; d < info.ndim; ++d) elems *= info.shape[d];
    buffers[static_cast<size_t>(i)].assign(static_cast<size_t>(elems) * ((info.dtype.bits + 7) / 8), 0);
    DLTensor t{};
    t.data = buffers[static_cast<size_t>(i)].data();
    t.device = {kDLCPU, 0};
    t.ndim = info.ndim;
    t.dtype = info.dtype;
    t.shape = const_cast<int64_t*>(info.shape);
    KILN_USER_CHECK(kiln_module_set_input_index(mod, i, &t) == KILN_OK) << "graph choice: " << kiln_last_error();
  }
  // Warm for a fifth of a second first: the first runs of a fresh module page in its code and
  // weights and wake the thread pool, which would make whichever choice is timed first look slow.
  const auto warm_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  do {
    KILN_USER_CHECK(kiln_module_run(mod) == KILN_OK) << "graph choice: " << kiln_last_error();
  } while (std::chrono::steady_clock::now() < warm_until);
  TimerOptions timer;
  timer.warmup = 1;
  timer.repeat = repeat;
  timer.min_duration_s = 0.05;
  TimingResult r = time_function([&] {
    KILN_USER_CHECK(kiln_module_run(mod) == KILN_OK) << "graph choice: " << kiln_last_error();
  }, timer);
  return r.samples;
}

}  // namespace

std::string graph_workload_key(const relay::Module& m) {
  return fmt::format("graph_{:016x}", fnv1a(relay::to_string(m)));
}

std::map<std::string, KnobChoice> graph_knobs(const CompileOptions& o) {
  const int64_t layout = o.layout == CompileOptions::Layout::kAuto   ? 0
                         : o.layout == CompileOptions::Layout::kNCHW ? 1
                                                                     : 2;
  auto combine = choice_of("combine_branches", o.combine_branches);
  KILN_CHECK(combine) << "combine_branches " << o.combine_branches << " is not a graph-choice value";
  return {{"layout", *choice_of("layout", layout)},
          {"winograd", *choice_of("winograd", o.winograd ? 1 : 0)},
          {"combine_branches", *combine}};
}

void apply_graph_knobs(const std::map<std::string, KnobChoice>& knobs, CompileOptions* o) {
  for (const auto& [name, k] : knobs) {
    KILN_USER_CHECK(kValues.count(name)) << "unknown graph choice '" << name << "'";
    KILN_USER_CHECK(k.values.size() == 1) << "graph choice '" << name << "' must have one value";
    const int64_t v = k.values[0];
    KILN_USER_CHECK(choice_of(name, v)) << "graph choice " << name << ": unknown value " << v;
    if (name == "layout") {
      o->layout = v == 0 ? CompileOptions::Layout::kAuto : v == 1 ? CompileOptions::Layout::kNCHW
                                                                  : CompileOptions::Layout::kBlocked;
    } else if (name == "winograd") {
      o->winograd = v == 1;
    } else {
      o->combine_branches = static_cast<int>(v);
    }
  }
}

std::string describe_graph_knobs(const std::map<std::string, KnobChoice>& knobs) {
  std::string s;
  for (const auto& [name, k] : knobs) {
    const int64_t v = k.values.empty() ? -1 : k.values[0];
    std::string value = name == "layout"     ? (v >= 0 && v < 3 ? kLayouts[static_cast<size_t>(v)] : "?")
                        : name == "winograd" ? (v ? "on" : "off")
                                             : std::to_string(v);
    s += (s.empty() ? "" : " ") + name + "=" + value;
  }
  return s;
}

std::map<std::string, KnobChoice> tune_graph_choices(const relay::Module& m, const GraphTuneOptions& o,
                                                     const std::function<void(const std::string&)>& line) {
  const Target& target = o.compile.target;
  KILN_USER_CHECK(!target.is_gpu()) << "graph choices are measured on CPU targets only (this one is '" << target.str()
                                    << "')";
  const std::string key = graph_workload_key(m);
  // What the log already knows about this model on this instruction set: reused, not measured.
  std::map<std::string, double> known;
  for (const TuningRecord& r : read_log(o.log).records)
    if (graph_record_of(r, key, target.isa())) known[describe_graph_knobs(r.config)] = r.median_cost();
  // Each configuration is compiled, so that two that build the same module (no parallel
  // branches to combine, no conv that Winograd would take) are timed once: a second timing of
  // one module would only let noise pick between them.
  std::map<std::string, double> by_module;  // hash of the .so -> seconds
  // The kernels' schedules the log holds now (the graph records added below change none).
  std::optional<LogSchedules> schedules;
  if (std::filesystem::exists(o.log)) schedules.emplace(o.log, target);
  auto graph_record = [&](const char* task, const std::map<std::string, KnobChoice>& knobs) {
    TuningRecord r;
    r.task = task;
    r.workload_key = key;
    r.target = target.str();
    r.config = knobs;
    r.timestamp = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch()).count();
    r.version = kiln_version();
    return r;
  };
  auto measure = [&](const std::map<std::string, KnobChoice>& knobs) -> double {
    const std::string what = describe_graph_knobs(knobs);
    CompileOptions opts = o.compile;
    apply_graph_knobs(knobs, &opts);
    if (schedules) opts.schedules = &*schedules;
    ScratchDir dir;
    const std::string so = (dir.path / "model.so").string();
    export_library(compile(m, opts), so);
    const std::string hash = std::to_string(fnv1a(file_bytes(so)));
    if (auto k = known.find(what); k != known.end()) {
      by_module.emplace(hash, k->second);
      line(fmt::format("  graph {}: {:.3f} ms (from the log)", what, k->second * 1e3));
      return k->second;
    }
    if (auto same = by_module.find(hash); same != by_module.end()) {
      line(fmt::format("  graph {}: the same module as one measured above", what));
      return same->second;
    }
    TuningRecord r = graph_record(kGraphTask, knobs);
    r.costs = time_module(so, o.repeat);
    append_record(o.log, r);
    known[what] = by_module[hash] = r.median_cost();
    line(fmt::format("  graph {}: {:.3f} ms", what, known[what] * 1e3));
    return known[what];
  };

  std::map<std::string, KnobChoice> best = graph_knobs(o.compile);
  double best_s = measure(best);
  for (const auto& [name, values] : kValues) {
    if (std::find(o.fixed.begin(), o.fixed.end(), name) != o.fixed.end()) continue;
    for (size_t i = 0; i < values.size(); ++i) {
      if (best.at(name).index == i) continue;
      std::map<std::string, KnobChoice> trial = best;
      trial[name] = choice(name, i);
      const double s = measure(trial);
      if (s < best_s * (1 - kMinGain)) {
        best = trial;
        best_s = s;
      }
    }
  }
  TuningRecord chosen = graph_record(kGraphChoiceTask, best);
  chosen.costs = {best_s};
  append_record(o.log, chosen);
  line(fmt::format("  graph choices: {} ({:.3f} ms)", describe_graph_knobs(best), best_s * 1e3));
  return best;
}

std::optional<std::string> apply_logged_graph_choices(const TuningLog& log, const relay::Module& m, CompileOptions* o,
                                                      const std::vector<std::string>& explicit_choices) {
  const std::string key = graph_workload_key(m);
  const TuningRecord* best = nullptr;
  for (const TuningRecord& r : log.records)
    if (graph_record_of(r, key, o->target.isa(), kGraphChoiceTask)) best = &r;  // the latest choice
  if (!best) {
    for (const TuningRecord& r : log.records)
      if (graph_record_of(r, key, o->target.isa()) && (!best || r.median_cost() < best->median_cost()))
        best = &r;
  }
  if (!best) return std::nullopt;
  std::map<std::string, KnobChoice> knobs = best->config;
  for (const std::string& e : explicit_choices) knobs.erase(e);
  apply_graph_knobs(knobs, o);
  return fmt::format("graph choices from the tuning log: {} ({:.3f} ms measured on '{}'){}",
                     describe_graph_knobs(best->config),
                     best->median_cost() * 1e3, best->target,
                     explicit_choices.empty() ? "" : "; the command line's choices kept");
}

}  // namespace kiln::autotune
