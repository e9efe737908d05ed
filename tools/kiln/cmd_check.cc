// kiln check CASE_DIR [--tuning-log LOG] [--input-shape NAME=D0,D1,...] [--target T] [--runner R]:
// compiles CASE_DIR/model.onnx into a .so, runs every test_data_set_* with it through the runtime, and compares each output with its
// expected output_N.pb or output_N.npy (inputs too may be input_N.pb or .npy, tensor_file.h).
// Inputs the importer needs at compile time (a Pad's pads) are bound from each data
// set, and inputs with symbolic dims that --input-shape does not give take the data set's shape;
// sets that differ in either compile once each; a batch range (--input-shape NAME=MIN..MAX,...)
// compiles one dynamic-batch module that runs every set at its own batch. Prints PASS or FAIL with the worst error and the tolerances; exit 0 on
// pass, 1 on a mismatch, 3 (kUnsupported) when the model uses something kiln does not implement.
// A target for another architecture (aarch64) runs in kiln-runner under qemu-aarch64
// (external_runner.h); --runner runs a host module through a kiln-runner too.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "bind.h"
#include "commands.h"
#include "external_runner.h"
#include "graph_choice_flags.h"
#include "runtime/cpu_features.h"
#include "kiln/autotune/apply_log.h"
#include "kiln/compiler.h"
#include "kiln/relay/frontend/onnx.h"
#include "kiln/support/error.h"
#include "module_io.h"
#include "tensor_file.h"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> sorted_files(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string n = e.path().filename().string();
    if (n.rfind(prefix, 0) == 0) out.push_back(e.path());
  }
  // input_10.pb after input_9.pb: order by the number after the prefix.
  std::sort(out.begin(), out.end(), [&](const fs::path& a, const fs::path& b) {
    auto num = [&](const fs::path& p) { return std::atoi(p.filename().string().c_str() + prefix.size()); };
    return num(a) < num(b);
  });
  return out;
}

// A data set's tensor files PREFIX<N>.pb or PREFIX<N>.npy, by N; one N in both forms is refused
// (which one is meant?).
std::vector<fs::path> tensor_files(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  for (const fs::path& p : sorted_files(dir, prefix)) {
    std::string ext = p.extension().string();
    if (ext != ".pb" && ext != ".npy") continue;
    if (!out.empty() && out.back().stem() == p.stem())
      KILN_THROW() << dir.filename().string() << " has both " << out.back().filename().string() << " and "
                   << p.filename().string();
    out.push_back(p);
  }
  return out;
}

// Worst |got - want| / (atol + rtol * |want|) over all elements (NaN matches NaN, inf matches
// the same inf); a shape or dtype difference is reported in `why`.
double worst_ratio(const relay::HostTensor& got, const relay::HostTensor& want, double rtol, double atol,
                   std::string* why) {
  if (got.shape() != want.shape()) {
    *why = "shape " + got.type().str() + " vs expected " + want.type().str();
    return INFINITY;
  }
  if (got.dtype() != want.dtype()) {
    *why = "dtype " + got.dtype().str() + " vs expected " + want.dtype().str();
    return INFINITY;
  }
  std::vector<double> g = got.to_doubles(), w = want.to_doubles();
  double worst = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i]) && std::isnan(w[i])) continue;
    if (std::isinf(w[i]) && g[i] == w[i]) continue;
    double r = std::abs(g[i] - w[i]) / (atol + rtol * std::abs(w[i]));
    if (!(r <= worst)) {
      worst = std::isnan(r) ? INFINITY : r;
      std::ostringstream os;
      os << "element " << i << ": " << g[i] << " vs expected " << w[i];
      *why = os.str();
    }
  }
  return worst;
}

// One test data set: its input values (by graph input name, with the file each came from) and
// its expected output files.
struct DataSet {
  fs::path dir;
  std::map<std::string, std::pair<relay::HostTensor, fs::path>> inputs;
  std::vector<fs::path> outputs;
};

DataSet read_data_set(const fs::path& dir, const std::vector<std::string>& input_names) {
  DataSet d{dir, {}, tensor_files(dir, "output_")};
  std::vector<fs::path> ins = tensor_files(dir, "input_");
  // input_N.pb (or .npy) is the N-th graph input that is not an initializer (the ONNX test layout).
  KILN_USER_CHECK(ins.size() == input_names.size())
      << dir.filename().string() << " has " << ins.size() << " inputs, the model takes " << input_names.size();
  for (size_t i = 0; i < ins.size(); ++i)
    d.inputs.emplace(input_names[i], std::make_pair(load_tensor_file(ins[i].string()), ins[i]));
  return d;
}

// The case's name for messages: the directory's last non-empty component ("kiln check dir/").
std::string case_name(const fs::path& dir) {
  fs::path p = fs::absolute(dir).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  std::string name = p.filename().string();
  return name.empty() ? dir.string() : name;
}

std::string file_of(const DataSet& set, const std::string& input) {
  return set.dir.filename().string() + "/" + set.inputs.at(input).second.filename().string();
}

bool same_value(const relay::HostTensor& a, const relay::HostTensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::equal(a.data(), a.data() + a.nbytes(), b.data());
}

template <class Loaded>
void compare_sets(Loaded& loaded, const std::vector<const DataSet*>& sets,
                  const std::map<std::string, relay::HostTensor>& bound, double rtol, double atol, double* worst,
                  std::string* worst_why);

// Compiles `m` into a temporary .so and runs `sets` through it (in this process, or by `runner`),
// raising `worst` (the worst error ratio over all groups so far) and saying where in `worst_why`.
// Inputs in `bound` were compiled in and are not fed.
void run_sets(const relay::Module& m, const std::vector<const DataSet*>& sets,
              const std::map<std::string, relay::HostTensor>& bound, double rtol, double atol, double* worst,
              const CompileOptions& compile_options, const std::string& tuning_log, const GraphChoiceFlags& graph,
              const std::optional<RunnerCommand>& runner, std::string* worst_why) {
  CompileOptions copts = compile_options;
  std::optional<autotune::AppliedTuningLog> log;  // one per compile: its notes count this module's kernels
  if (!tuning_log.empty()) {
    log.emplace(tuning_log, m, &copts, graph.given());
    for (const std::string& note : log->notes()) std::cerr << "note: " << note << "\n";
  }
  CompiledModel compiled = compile(m, copts);
  if (log)  // what the log changed is worth seeing; the other notes are compile's business
    for (const std::string& note : compiled.notes)
      if (note.find("tuning") != std::string::npos) std::cerr << "note: " << note << "\n";
  // One file per compiled module: a data-set group must not dlopen its predecessor's library.
  static int serial = 0;
  fs::path so = fs::temp_directory_path() /
                ("kiln_check_" + std::to_string(getpid()) + "_" + std::to_string(serial++) + ".so");
  export_library(compiled, so.string());
  struct Remove {
    fs::path p;
    ~Remove() { std::error_code ec; fs::remove(p, ec); }
  } cleanup{so};

  if (runner) {  // another process: kiln-runner, under qemu-aarch64 for an aarch64 target
    std::vector<std::string> ins, outs;
    for (const runtime::GraphIO& io : compiled.plan.inputs) ins.push_back(io.name);
    for (const runtime::GraphIO& io : compiled.plan.outputs) outs.push_back(io.name);
    RunnerModule loaded(*runner, so.string(), ins, outs);
    compare_sets(loaded, sets, bound, rtol, atol, worst, worst_why);
  } else {
    LoadedModel loaded(so.string());
    compare_sets(loaded, sets, bound, rtol, atol, worst, worst_why);
  }
}

// Runs each data set through `loaded` (a LoadedModel or a RunnerModule) and compares its outputs.
template <class Loaded>
void compare_sets(Loaded& loaded, const std::vector<const DataSet*>& sets,
                  const std::map<std::string, relay::HostTensor>& bound, double rtol, double atol, double* worst,
                  std::string* worst_why) {
  KILN_CHECK(static_cast<size_t>(loaded.num_inputs()) + bound.size() == sets[0]->inputs.size())
      << "the module takes " << loaded.num_inputs() << " inputs after binding " << bound.size() << " of "
      << sets[0]->inputs.size();
  for (const DataSet* set : sets) {
    KILN_USER_CHECK(static_cast<int>(set->outputs.size()) == loaded.num_outputs())
        << set->dir.filename().string() << " has " << set->outputs.size() << " outputs, the model gives "
        << loaded.num_outputs();
    for (const auto& [name, value] : set->inputs) {
      if (bound.count(name)) continue;
      // The runtime's message names the input and the shapes; this names the file too.
      try {
        loaded.set_input(name, value.first);
      } catch (const Error& e) {
        throw Error(set->dir.filename().string() + "/" + value.second.filename().string() + ": " + e.what());
      }
    }
    loaded.run();
    for (size_t i = 0; i < set->outputs.size(); ++i) {
      std::string why;
      double r = worst_ratio(loaded.output(static_cast<int>(i)), load_tensor_file(set->outputs[i].string()),
                             rtol, atol, &why);
      if (r > *worst || worst_why->empty()) {
        *worst = std::max(*worst, r);
        *worst_why = set->dir.filename().string() + "/" + set->outputs[i].filename().string() + " " + why;
      }
    }
  }
}

int check_case(const fs::path& dir, double rtol, double atol, const CompileOptions& copts, const std::string& tuning_log,
               const GraphChoiceFlags& graph, const std::optional<RunnerCommand>& runner, const std::map<std::string, relay::Shape>& given_shapes,
               const BatchRange& batch) {
  fs::path model = dir / "model.onnx";
  KILN_USER_CHECK(fs::exists(model)) << "no model.onnx in '" << dir.string() << "'";
  std::vector<fs::path> set_dirs = sorted_files(dir, "test_data_set_");
  KILN_USER_CHECK(!set_dirs.empty()) << "no test_data_set_* directory in '" << dir.string() << "'";
  std::vector<std::string> input_names = relay::onnx_graph_inputs(model.string());
  std::vector<DataSet> sets;
  for (const fs::path& d : set_dirs) sets.push_back(read_data_set(d, input_names));
  // A given shape fixes the module's input: a data set that disagrees could never run on it.
  // (A batch range takes any batch in it: the runtime checks each data set's.)
  const std::set<std::string> ranged(batch.inputs.begin(), batch.inputs.end());
  for (const DataSet& set : sets)
    for (const auto& [name, shape] : given_shapes)
      KILN_USER_CHECK(ranged.count(name) || !set.inputs.count(name) || set.inputs.at(name).first.shape() == shape)
          << file_of(set, name) << " has shape " << relay::shape_str(set.inputs.at(name).first.shape())
          << ", --input-shape " << name << "=... gives " << relay::shape_str(shape);
  // Inputs with symbolic dims and no --input-shape take each data set's shape.
  std::vector<std::string> shaped_names;
  for (const std::string& name : relay::onnx_symbolic_inputs(model.string()))
    if (!given_shapes.count(name)) shaped_names.push_back(name);

  double worst = 0;
  std::string worst_why;
  if (!batch.inputs.empty()) {
    // Dynamic batch: one module, every data set at its own batch.
    KILN_USER_CHECK(shaped_names.empty()) << "with a batch range, give every symbolic input's shape (--input-shape "
                                          << shaped_names.front() << "=...)";
    relay::OnnxImportOptions opts;
    opts.input_shapes = given_shapes;
    relay::Module m = relay::from_onnx(model.string(), opts);
    check_batch_range(model.string(), opts, m, batch);
    CompileOptions dynamic = copts;
    dynamic.batch_min = batch.min;
    dynamic.batch_max = batch.max;
    std::vector<const DataSet*> all;
    for (const DataSet& set : sets) all.push_back(&set);
    std::cout << "dynamic batch " << batch.min << ".." << batch.max << ": one module for " << sets.size()
              << " data set" << (sets.size() > 1 ? "s" : "") << "\n";
    run_sets(m, all, opts.bind, rtol, atol, &worst, dynamic, tuning_log, graph, runner, &worst_why);
  }

  // Bind, from each data set, exactly the inputs the importer needs at compile time (found on
  // the first set), and shape the symbolic ones; data sets that agree on those values and
  // shapes share one compiled module.
  std::vector<bool> done(sets.size(), !batch.inputs.empty());  // a batch range did them all
  std::vector<std::string> bound_names;
  for (size_t first = 0; first < sets.size(); ++first) {
    if (done[first]) continue;
    relay::OnnxImportOptions opts;
    opts.input_shapes = given_shapes;
    for (const std::string& name : shaped_names) opts.input_shapes[name] = sets[first].inputs.at(name).first.shape();
    auto from_set = [&](const std::string& name) -> std::optional<relay::HostTensor> {
      return sets[first].inputs.at(name).first;
    };
    relay::Module m;
    if (first == 0) {
      m = import_binding(model.string(), opts, from_set);
      for (const std::string& name : input_names)  // graph order, as the files are numbered
        if (opts.bind.count(name)) bound_names.push_back(name);
    } else {
      for (const std::string& name : bound_names) opts.bind[name] = *from_set(name);
      m = relay::from_onnx(model.string(), opts);
    }
    std::vector<const DataSet*> group;
    for (size_t k = first; k < sets.size(); ++k) {
      bool same = true;
      for (const std::string& name : bound_names) same = same && same_value(sets[k].inputs.at(name).first, opts.bind.at(name));
      for (const std::string& name : shaped_names)
        same = same && sets[k].inputs.at(name).first.shape() == opts.input_shapes.at(name);
      if (same) {
        group.push_back(&sets[k]);
        done[k] = true;
      }
    }
    for (const std::string& name : shaped_names)
      std::cout << "shape of " << name << " from " << file_of(sets[first], name) << ": "
                << relay::shape_str(opts.input_shapes.at(name)) << "\n";
    if (!bound_names.empty()) {
      std::cout << "bound at compile time:";
      for (size_t i = 0; i < bound_names.size(); ++i)
        std::cout << (i ? ", " : " ") << bound_names[i] << " from " << file_of(sets[first], bound_names[i]);
      std::cout << (group.size() > 1 ? " (" + std::to_string(group.size()) + " data sets)" : "") << "\n";
    }
    run_sets(m, group, opts.bind, rtol, atol, &worst, copts, tuning_log, graph, runner, &worst_why);
  }
  bool pass = worst <= 1.0;
  std::cout << (pass ? "PASS " : "FAIL ") << case_name(dir) << ": worst error " << worst
            << " of tolerance (rtol " << rtol << ", atol " << atol << ")" << (pass ? "" : ", at " + worst_why) << "\n";
  return pass ? kOk : kFailed;
}

}  // namespace

void add_check(CLI::App& app, int* status) {
  struct Args {
    std::string dir;
    double rtol = 1e-3, atol = 1e-4;
    std::string tuning_log, target = "llvm", runner;
    std::vector<std::string> input_shapes;
    GraphChoiceFlags graph;
    bool no_int8 = false;
    std::string precision = "fp32";
  };
  auto args = std::make_shared<Args>();
  CLI::App* c = app.add_subcommand("check", "compile a case's model.onnx and compare with its test data");
  c->add_option("case_dir", args->dir, "directory with model.onnx and test_data_set_*")->required();
  c->add_option("--rtol", args->rtol, "relative tolerance (default 1e-3)");
  c->add_option("--atol", args->atol, "absolute tolerance (default 1e-4)");
  c->add_option("--tuning-log", args->tuning_log, "compile with the best schedules of this autotuning log");
  c->add_option("--target", args->target,
                "code generation target (llvm: this CPU; llvm -mtriple=aarch64-linux-gnu runs under qemu-aarch64)");
  c->add_option("--runner", args->runner,
                "run the module with this kiln-runner (default: in process; for aarch64 on another machine "
                "<kiln's dir>/../aarch64/bin/kiln-runner under qemu-aarch64)");
  add_input_shape_option(c, &args->input_shapes, /*batch_range=*/true);
  args->graph.add(c, "compute every conv directly (no Winograd F(2x2,3x3))");
  c->add_flag("--no-int8", args->no_int8, "compute quantized models' convs and dense layers in float on dequantized values, not as int8 kernels");
  c->add_option("--precision", args->precision, "fp32, or fp16: activations and weights stored in float16, sums in float32 (inputs and outputs stay float32)");
  c->callback([args, status] {
    *status = guarded("check", [&] {
      CompileOptions copts;
      args->graph.apply(&copts);
      copts.int8_kernels = !args->no_int8;
      copts.float16 = parse_precision(args->precision);
      copts.target = Target::parse(args->target);
      std::optional<RunnerCommand> runner;
      if (!args->runner.empty() || is_foreign(copts.target))
        runner = find_runner(copts.target.is_gpu() ? runtime::host_cpu_features().arch : triple_arch(copts.target.triple),
                             args->runner);
      BatchRange batch;
      std::map<std::string, relay::Shape> shapes = read_shape_specs(args->input_shapes, &batch);
      return check_case(args->dir, args->rtol, args->atol, copts, args->tuning_log, args->graph, runner, shapes, batch);
    });
  });
}

}  // namespace kiln::cli
