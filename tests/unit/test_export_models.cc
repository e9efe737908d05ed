// Real ONNX models through the whole pipeline and the deployable artifact:
//   relay::from_onnx -> kiln::compile -> export_library -> kiln_module_load (C API) -> run
// Outputs are compared with the reference outputs stored beside each model (ONNX Runtime's for
// examples/tiny_cnn, PyTorch's for ../shared/models), at `kiln check`'s default tolerance:
// |got - want| <= 1e-4 + 1e-3 |want|.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstring>
#include <sys/stat.h>

#include "lower/graph_plan.h"
#include "kiln/relay/frontend/onnx.h"
#include "kiln/runtime/kiln_runtime.h"
#include "kiln/support/error.h"
#include "test_export_util.h"
#include "test_onnx_builder.h"
#include "test_shared_dir.h"

using namespace kiln;

namespace {

using kiln::test::shared_dir;
using kiln::test::repo_dir;
using kiln::test::exists;

DLTensor view(void* data, DLDataType dtype, std::vector<int64_t>& shape) {
  DLTensor t{};
  t.data = data;
  t.device = {kDLCPU, 0};
  t.ndim = static_cast<int>(shape.size());
  t.dtype = dtype;
  t.shape = shape.data();
  return t;
}

// Compiles, exports, loads and runs the model in `dir` on test_data_set_0 and compares every
// output with its reference.
void check_model(const std::string& dir) {
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  CompiledModel c;
  try {
    c = compile(relay::from_onnx(dir + "/model.onnx"));
  } catch (const kiln::Error& e) {
    // The op library is being written in parallel (issue 3): an op it does not lower yet is
    // its business, reported here but not failed. Anything else fails below.
    if (std::string(e.what()).rfind("no kernel lowering for", 0) == 0) {
      WARN(dir << ": not compiled yet: " << e.what());
      return;
    }
    throw;
  }
  test_export::ScratchDir tmp;
  auto t1 = clock::now();
  export_library(c, tmp / "model.so");
  auto t2 = clock::now();
  kiln_module* m = nullptr;
  INFO(dir);
  REQUIRE(kiln_module_load((tmp / "model.so").c_str(), &m) == KILN_OK);
  std::string data = dir + "/test_data_set_0/";
  for (int i = 0; exists(data + "input_" + std::to_string(i) + ".pb"); ++i) {
    relay::NamedTensor in = relay::load_tensor_pb(data + "input_" + std::to_string(i) + ".pb");
    std::vector<uint8_t> bytes(in.value.data(), in.value.data() + in.value.nbytes());
    std::vector<int64_t> shape = in.value.shape();
    DLTensor t = view(bytes.data(), lower::to_dlpack(in.value.dtype()), shape);
    // Inputs by the name the reference file gives, or by position when it has none.
    kiln_status s = in.name.empty() ? kiln_module_set_input_index(m, i, &t) : kiln_module_set_input(m, in.name.c_str(), &t);
    INFO(kiln_last_error());
    REQUIRE(s == KILN_OK);
  }
  REQUIRE(kiln_module_run(m) == KILN_OK);
  auto t3 = clock::now();
  int32_t outputs = 0;
  REQUIRE(kiln_module_num_outputs(m, &outputs) == KILN_OK);
  int compared = 0;
  for (int i = 0; i < outputs && exists(data + "output_" + std::to_string(i) + ".pb"); ++i, ++compared) {
    relay::NamedTensor want = relay::load_tensor_pb(data + "output_" + std::to_string(i) + ".pb");
    REQUIRE(want.value.dtype() == ir::DataType::f32());
    std::vector<float> got(want.value.numel());
    std::vector<int64_t> shape = want.value.shape();
    DLTensor t = view(got.data(), {kDLFloat, 32, 1}, shape);
    INFO("output " << i);
    REQUIRE(kiln_module_get_output(m, i, &t) == KILN_OK);
    const float* w = want.value.data_as<float>();
    double worst = 0;
    for (size_t k = 0; k < got.size(); ++k)
      worst = std::max(worst, std::fabs(double(got[k]) - w[k]) / (1e-4 + 1e-3 * std::fabs(w[k])));
    INFO("worst error / tolerance " << worst);
    CHECK(worst <= 1.0);
  }
  CHECK(compared >= 1);
  kiln_module_free(m);
  using ms = std::chrono::duration<double, std::milli>;
  WARN(dir << ": compile " << ms(t1 - t0).count() << " ms, export " << ms(t2 - t1).count() << " ms, load+run "
           << ms(t3 - t2).count() << " ms, " << c.plan.nodes.size() << " kernels, " << c.weights.size() / 1024
           << " KiB weights");
}

}  // namespace

TEST_CASE("examples/tiny_cnn compiles to a library that computes ONNX Runtime's output", "[export][models]") {
  check_model(repo_dir() + "/examples/tiny_cnn");
}

TEST_CASE("squeezenet1_1 compiles to a library that computes PyTorch's output", "[export][models]") {
  std::string dir = shared_dir() + "/models/squeezenet1_1";
  if (!exists(dir + "/model.onnx")) {
    WARN("no " << dir << ": skipped");
    return;
  }
  check_model(dir);
}

TEST_CASE("an ONNX graph of elementwise, broadcast and reduction ops runs from its library", "[export][models]") {
  // x [2, 16] -> Unsqueeze -> * W [16, 10] -> ReduceSum(axis 1) -> + b -> Relu -> "scores" [2, 10]
  //                                                        scores -> ReduceMax(axis 1) -> "best" [2]
  using namespace onnx_builder;
  const int64_t n = 2, k = 16, c = 10;
  std::vector<float> w = test_export::pattern(k * c, 31), b = test_export::pattern(c, 32), x = test_export::pattern(n * k, 33);
  std::string bytes = model(
      17,
      {node("Unsqueeze", {"x", "axis2"}, {"x3"}, "unsqueeze"), node("Mul", {"x3", "W"}, {"p"}, "mul"),
       node("ReduceSum", {"p", "axis1"}, {"s"}, "sum", {attr_i("keepdims", 0)}), node("Add", {"s", "b"}, {"z"}, "add"),
       node("Relu", {"z"}, {"scores"}, "relu"),
       node("ReduceMax", {"scores"}, {"best"}, "max", {attr_ints("axes", {1}), attr_i("keepdims", 0)})},
      {value("x", FLOAT, {n, k})}, {value("scores", FLOAT, {n, c}), value("best", FLOAT, {n})},
      {tensor_f32("W", {k, c}, w), tensor_f32("b", {c}, b), tensor_i64("axis2", {1}, {2}), tensor_i64("axis1", {1}, {1})});
  CompiledModel compiled = compile(relay::from_onnx_bytes(bytes, "elementwise.onnx"));
  test_export::ScratchDir tmp;
  export_library(compiled, tmp / "m.so");
  kiln_module* m = nullptr;
  REQUIRE(kiln_module_load((tmp / "m.so").c_str(), &m) == KILN_OK);
  std::vector<int64_t> xs = {n, k}, ss = {n, c}, bs = {n};
  DLTensor xt = view(x.data(), {kDLFloat, 32, 1}, xs);
  REQUIRE(kiln_module_set_input(m, "x", &xt) == KILN_OK);
  REQUIRE(kiln_module_run(m) == KILN_OK);
  std::vector<float> scores(n * c), best(n);
  DLTensor st = view(scores.data(), {kDLFloat, 32, 1}, ss), bt = view(best.data(), {kDLFloat, 32, 1}, bs);
  const char* name = nullptr;
  REQUIRE(kiln_module_output_name(m, 1, &name) == KILN_OK);
  CHECK(std::string(name) == "best");
  REQUIRE(kiln_module_get_output(m, 0, &st) == KILN_OK);
  REQUIRE(kiln_module_get_output(m, 1, &bt) == KILN_OK);
  kiln_module_free(m);
  // Reference in double; float32 sums of 16 products: |err| <= 1e-5 + 1e-5 |ref|.
  for (int64_t i = 0; i < n; ++i) {
    double mx = 0;
    for (int64_t j = 0; j < c; ++j) {
      double a = b[j];
      for (int64_t q = 0; q < k; ++q) a += double(x[i * k + q]) * w[q * c + j];
      a = std::max(a, 0.0);
      mx = std::max(mx, a);
      CHECK(std::fabs(scores[i * c + j] - a) <= 1e-5 + 1e-5 * std::fabs(a));
    }
    CHECK(std::fabs(best[i] - mx) <= 1e-5 + 1e-5 * mx);
  }
  WARN("kernels: " << compiled.plan.nodes.size() << " (" << [&] {
    std::string s;
    for (const auto& node : compiled.plan.nodes) s += (s.empty() ? "" : ", ") + node.label;
    return s;
  }() << ")");
}
