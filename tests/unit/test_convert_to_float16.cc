// relay::convert_to_float16 (`kiln compile --precision fp16`): inputs cast to float16 where they
// enter, float32 constants and casts made float16, outputs cast back (the interface stays
// float32); the compiled model against the float32 one within float16's tolerance; quantized
// models refused by name.
#include <catch2/catch.hpp>

#include <cmath>

#include "kiln/compiler.h"
#include "kiln/relay/printer.h"
#include "kiln/relay/transforms.h"
#include "test_graph_util.h"

using namespace kiln::graph_test;

namespace {

Module small_float_model() {
  relay::Expr x = var("x", {1, 3, 8, 8});
  relay::Expr c = call("nn.conv2d", {x, cst({4, 3, 3, 3}, wave(108, 0.3, 0))}, conv_attrs(), "Conv_0");
  relay::Expr r = call("nn.relu", {call("add", {c, cst({4, 1, 1}, {0.5, -0.25, 0.125, 1})})});
  relay::Expr f = call("reshape", {r}, Attrs().set_ints("newshape", {1, 256}));
  relay::Expr d = call("nn.dense", {f, cst({10, 256}, wave(2560, 0.05, 0.3))});
  relay::Expr s = call("nn.softmax", {d}, Attrs().set_int("axis", 1));
  return infer_types(Module::make({x}, {s}, {"probs"}));
}

}  // namespace

TEST_CASE("convert_to_float16: float16 inside, float32 at the interface", "[graph][fp16]") {
  Module m = small_float_model();
  Module h = convert_to_float16(m);
  std::string text = to_string(h);
  INFO(text);
  CHECK(text.find("fn (%x: float32[1,3,8,8]) -> float32[1,10]") != std::string::npos);
  CHECK(text.find("cast(%x, dtype=\"float16\") : float16[1,3,8,8]") != std::string::npos);
  CHECK(text.find("nn.conv2d(") != std::string::npos);
  CHECK(text.find(": float16[1,4,8,8]") != std::string::npos);
  CHECK(text.find("nn.softmax(") != std::string::npos);
  CHECK(text.find(": float16[1,10]") != std::string::npos);
  CHECK(text.find("dtype=\"float32\") : float32[1,10]") != std::string::npos);

  // Compiled: within float16's resolution of the float32 model (inputs of magnitude ~1, sums in
  // float32, outputs rounded to float16 once per kernel: rtol 1e-2, atol 1e-3 on probabilities).
  std::vector<double> xv = wave(192, 1, 0.2);
  auto run = [&](bool fp16) {
    kiln::CompileOptions o;
    o.float16 = fp16;
    kiln::CompiledModel c = kiln::compile(m, o);
    return run_plan(c, {{"x", HostTensor::from_doubles(DataType::f32(), {1, 3, 8, 8}, xv)}}).at("probs").to_doubles();
  };
  std::vector<double> half = run(true), full = run(false);
  REQUIRE(half.size() == full.size());
  double worst = 0;
  for (size_t i = 0; i < half.size(); ++i) worst = std::max(worst, std::fabs(half[i] - full[i]) / (1e-3 + 1e-2 * std::fabs(full[i])));
  CHECK(worst <= 1.0);
  CHECK(worst > 0.0);  // it did compute in float16
}

TEST_CASE("convert_to_float16 refuses quantized models by node", "[graph][fp16]") {
  relay::Expr x = var("x", {4});
  relay::Expr q = call("quantize", {x, scalar(0.1), make_constant(HostTensor::scalar(DataType::i8(), 0))},
                       Attrs().set_str("out_dtype", "int8").set_int("axis", 0), "Q_0");
  Module m = infer_types(Module::make({x}, {q}, {"q"}));
  REQUIRE_THROWS_WITH(convert_to_float16(m), Catch::Matchers::Contains("node 'Q_0' (quantize) is part of a quantized model"));
}
