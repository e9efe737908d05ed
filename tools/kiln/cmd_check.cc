// kiln check CASE_DIR [--tuning-log LOG]: compiles CASE_DIR/model.onnx into a .so, runs every test_data_set_* with
// it through the runtime, and compares each output with its expected .pb. Prints PASS or FAIL
// with the worst error and the tolerances; exit 0 on pass, 1 on a mismatch, 3 (kUnsupported)
// when the model uses something kiln does not implement.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "commands.h"
#include "kiln/compiler.h"
#include "kiln/relay/frontend/onnx.h"
#include "kiln/support/error.h"
#include "module_io.h"

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

int check_case(const fs::path& dir, double rtol, double atol, const std::string& tuning_log) {
  fs::path model = dir / "model.onnx";
  KILN_USER_CHECK(fs::exists(model)) << "no model.onnx in '" << dir.string() << "'";
  std::vector<fs::path> sets = sorted_files(dir, "test_data_set_");
  KILN_USER_CHECK(!sets.empty()) << "no test_data_set_* directory in '" << dir.string() << "'";

  // Inputs of the first data set are known at compile time: the importer takes a value from
  // them only where a node needs a constant (a Reshape's shape given as a graph input).
  relay::OnnxImportOptions import_opts;
  relay::Module probe = relay::from_onnx(model.string());
  std::vector<std::string> input_names = probe.input_names();
  std::vector<fs::path> first_inputs = sorted_files(sets[0], "input_");
  for (size_t i = 0; i < first_inputs.size() && i < input_names.size(); ++i) {
    import_opts.input_values[input_names[i]] = relay::load_tensor_pb(first_inputs[i].string()).value;
  }
  relay::Module m = relay::from_onnx(model.string(), import_opts);
  CompileOptions copts;
  copts.tuning_log = tuning_log;
  CompiledModel compiled = compile(m, copts);
  if (!tuning_log.empty())  // what the log changed is worth seeing; the other notes are compile's business
    for (const std::string& note : compiled.notes)
      if (note.find("tuning") != std::string::npos) std::cerr << "note: " << note << "\n";
  fs::path so = fs::temp_directory_path() / ("kiln_check_" + std::to_string(getpid()) + ".so");
  export_library(compiled, so.string());
  struct Remove {
    fs::path p;
    ~Remove() { std::error_code ec; fs::remove(p, ec); }
  } cleanup{so};

  LoadedModel loaded(so.string());
  double worst = 0;
  std::string worst_why = "all outputs match";
  for (const fs::path& set : sets) {
    std::vector<fs::path> ins = sorted_files(set, "input_"), outs = sorted_files(set, "output_");
    KILN_USER_CHECK(static_cast<int>(ins.size()) == loaded.num_inputs())
        << set.filename().string() << " has " << ins.size() << " inputs, the model takes " << loaded.num_inputs();
    KILN_USER_CHECK(static_cast<int>(outs.size()) == loaded.num_outputs())
        << set.filename().string() << " has " << outs.size() << " outputs, the model gives " << loaded.num_outputs();
    for (size_t i = 0; i < ins.size(); ++i) loaded.set_input(static_cast<int>(i), relay::load_tensor_pb(ins[i].string()).value);
    loaded.run();
    for (size_t i = 0; i < outs.size(); ++i) {
      std::string why;
      double r = worst_ratio(loaded.output(static_cast<int>(i)), relay::load_tensor_pb(outs[i].string()).value, rtol, atol, &why);
      if (r > worst || (worst == 0 && r == 0 && i == 0)) {
        worst = r;
        worst_why = set.filename().string() + "/" + outs[i].filename().string() + " " + why;
      }
    }
  }
  bool pass = worst <= 1.0;
  std::cout << (pass ? "PASS " : "FAIL ") << dir.filename().string() << ": worst error " << worst
            << " of tolerance (rtol " << rtol << ", atol " << atol << ")" << (pass ? "" : ", at " + worst_why) << "\n";
  return pass ? kOk : kFailed;
}

}  // namespace

void add_check(CLI::App& app, int* status) {
  struct Args {
    std::string dir;
    double rtol = 1e-3, atol = 1e-4;
    std::string tuning_log;
  };
  auto args = std::make_shared<Args>();
  CLI::App* c = app.add_subcommand("check", "compile a case's model.onnx and compare with its test data");
  c->add_option("case_dir", args->dir, "directory with model.onnx and test_data_set_*")->required();
  c->add_option("--rtol", args->rtol, "relative tolerance (default 1e-3)");
  c->add_option("--atol", args->atol, "absolute tolerance (default 1e-4)");
  c->add_option("--tuning-log", args->tuning_log, "compile with the best schedules of this autotuning log");
  c->callback([args, status] {
    *status = guarded("check", [&] { return check_case(args->dir, args->rtol, args->atol, args->tuning_log); });
  });
}

}  // namespace kiln::cli
