// The four real models of ../shared/models import with static shapes, the output types of
// their PyTorch reference outputs, and only the ops their architectures need.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <map>
#include <string>

#include "kiln/relay/frontend/onnx.h"
#include "kiln/relay/op.h"
#include "kiln/relay/printer.h"
#include "kiln/relay/transforms.h"
#include "kiln/relay/verify.h"
#include "test_shared_dir.h"

using namespace kiln::relay;

namespace {
// ../shared next to the repository (docs/architecture.md, "Dependencies"), found from this file's path; KILN_SHARED_DIR overrides.
using kiln::test::shared_dir;

std::string op_histogram(const Module& m) {
  std::map<std::string, int> h;
  for (const Expr& e : post_order({m.body}))
    if (auto* c = e.as<CallNode>()) ++h[c->op_name()];
  std::string s;
  for (const auto& [op, n] : h) s += op + ":" + std::to_string(n) + " ";
  return s;
}

Module load(const std::string& name) { return from_onnx(shared_dir() + "/models/" + name + "/model.onnx"); }

// The model's output type must be that of the reference output PyTorch computed.
void check_reference_type(const std::string& name, const Module& m) {
  NamedTensor ref = load_tensor_pb(shared_dir() + "/models/" + name + "/test_data_set_0/output_0.pb");
  NamedTensor in = load_tensor_pb(shared_dir() + "/models/" + name + "/test_data_set_0/input_0.pb");
  REQUIRE(m.output_types().size() == 1);
  CHECK(m.output_types()[0] == ref.value.type());
  CHECK(m.params[0].type() == in.value.type());
  verify(m);
  CHECK(infer_types(m).body.same_as(m.body));  // import typed every node already
}
}  // namespace

TEST_CASE("resnet18 imports: conv + bias + relu blocks, one dense", "[onnx][models]") {
  Module m = load("resnet18");
  check_reference_type("resnet18", m);
  CHECK(m.output_types()[0].str() == "float32[1,1000]");
  CHECK(op_histogram(m) ==
        "add:9 nn.bias_add:20 nn.conv2d:20 nn.dense:1 nn.global_avg_pool:1 nn.max_pool2d:1 nn.relu:17 reshape:1 ");
  std::string text = to_string(m);
  CHECK(text.substr(0, text.find('\n', text.find('\n') + 1)) ==
        "fn (%input: float32[1,3,224,224]) -> float32[1,1000] {\n"
        "  %0 = nn.conv2d(%input, meta[0], dilation=[1,1], groups=1, padding=[3,3,3,3], strides=[2,2]) : "
        "float32[1,64,112,112]");
}

TEST_CASE("mobilenet_v2 imports: depthwise convs and clip(0, 6), the Gemm bias is the 11th add", "[onnx][models]") {
  Module m = load("mobilenet_v2");
  check_reference_type("mobilenet_v2", m);
  CHECK(op_histogram(m) == "add:11 clip:35 nn.bias_add:52 nn.conv2d:52 nn.dense:1 nn.global_avg_pool:1 reshape:1 ");
  CHECK(to_string(m).find("groups=32, padding=[1,1,1,1], strides=[1,1]) : float32[1,32,112,112]") != std::string::npos);
}

TEST_CASE("squeezenet1_1 imports: ceil-mode pooling and fire-module concats", "[onnx][models]") {
  Module m = load("squeezenet1_1");
  check_reference_type("squeezenet1_1", m);
  CHECK(op_histogram(m).find("concatenate:8 ") != std::string::npos);
  // 111 -> 55 only with ceil_mode (floor would give 55 too; 55 -> 27 checks the next one).
  CHECK(to_string(m).find("ceil_mode=1, dilation=[1,1], kernel=[3,3], padding=[0,0,0,0], strides=[2,2]) : "
                          "float32[1,128,27,27]") != std::string::npos);
}

TEST_CASE("bert_mini imports with every shape computation folded away", "[onnx][models]") {
  Module m = load("bert_mini");
  check_reference_type("bert_mini", m);
  CHECK(m.params[0].type().str() == "int64[1,128]");
  // No Shape/Gather-on-shapes/Concat/ConstantOfShape arithmetic survives: only tensor math.
  CHECK(op_histogram(m) ==
        "add:30 divide:8 erf:4 multiply:8 nn.dense:1 nn.layer_norm:9 nn.matmul:24 nn.softmax:4 reshape:16 "
        "strided_slice:12 take:2 tanh:1 transpose:28 ");
  CHECK(to_string(m).find("reshape(%6, newshape=[1,128,4,64]) : float32[1,128,4,64]") != std::string::npos);
}
