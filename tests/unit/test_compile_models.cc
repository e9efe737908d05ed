// kiln::compile on real ONNX models with the op library's lowerings and schedules: each compiled
// model runs kernel by kernel in plan order and matches the outputs its exporter computed
// (ONNX Runtime or PyTorch) within kiln check's default tolerance, rtol 1e-3 and atol 1e-4.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>

#include "kiln/relay/frontend/onnx.h"
#include "test_graph_util.h"

using namespace kiln::graph_test;

namespace {

std::string repo_dir() {
  std::string file = __FILE__;
  return file.substr(0, file.rfind("/tests/unit/"));
}

// Compiles DIR/model.onnx, runs test_data_set_0 and compares every output.
void check_model(const std::string& dir, double max_seconds) {
  namespace fs = std::filesystem;
  if (!fs::exists(dir + "/model.onnx")) {
    WARN("skipped: " << dir << "/model.onnx not found");
    return;
  }
  auto t0 = std::chrono::steady_clock::now();
  Module m = from_onnx(dir + "/model.onnx");
  kiln::CompiledModel c = kiln::compile(m);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(dir << ": compiled " << c.plan.nodes.size() << " kernels in " << seconds << " s; " << c.notes[0]);
  CHECK(seconds < max_seconds);

  std::map<std::string, HostTensor> inputs;
  std::vector<std::string> names = m.input_names();
  for (size_t i = 0; i < names.size(); ++i)
    inputs[names[i]] = load_tensor_pb(dir + "/test_data_set_0/input_" + std::to_string(i) + ".pb").value;
  std::map<std::string, HostTensor> got = run_plan(c, inputs);
  for (size_t i = 0; i < m.output_names.size(); ++i) {
    HostTensor want = load_tensor_pb(dir + "/test_data_set_0/output_" + std::to_string(i) + ".pb").value;
    const HostTensor& out = got.at(m.output_names[i]);
    REQUIRE(out.numel() == want.numel());
    std::vector<double> g = out.to_doubles(), w = want.to_doubles();
    double worst = 0;
    size_t at = 0;
    for (size_t k = 0; k < g.size(); ++k) {
      double r = std::fabs(g[k] - w[k]) / (1e-4 + 1e-3 * std::fabs(w[k]));
      if (r > worst) worst = r, at = k;
    }
    INFO("output " << m.output_names[i] << ": worst error " << worst << " x (1e-4 + 1e-3 |want|) at " << at
                   << " (got " << g[at] << ", want " << w[at] << ")");
    CHECK(worst <= 1.0);
  }
}

}  // namespace

TEST_CASE("compile: the bundled tiny CNN matches ONNX Runtime", "[graph][compile][models]") {
  check_model(repo_dir() + "/examples/tiny_cnn", 30);
}

TEST_CASE("compile: squeezenet1_1 matches PyTorch", "[graph][compile][models]") {
  check_model(repo_dir() + "/../shared/models/squeezenet1_1", 60);
}

TEST_CASE("compile: resnet18 matches PyTorch", "[graph][compile][models]") {
  check_model(repo_dir() + "/../shared/models/resnet18", 60);
}

TEST_CASE("compile: mobilenet_v2 matches PyTorch", "[graph][compile][models]") {
  check_model(repo_dir() + "/../shared/models/mobilenet_v2", 60);
}

TEST_CASE("compile: bert_mini matches PyTorch", "[graph][compile][models]") {
  check_model(repo_dir() + "/../shared/models/bert_mini", 60);
}
