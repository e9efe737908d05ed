// The ONNX importer on small hand-built models: opset variants, static shape folding, defaults,
// and every user error it reports (each must name its culprit).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "kiln/relay/error.h"
#include "kiln/relay/frontend/onnx.h"
#include "kiln/relay/printer.h"
#include "test_onnx_builder.h"

using namespace kiln::relay;
using namespace onnx_builder;
using Catch::Matchers::Contains;

namespace {
Module import(const std::string& bytes, const OnnxImportOptions& opts = {}) {
  return from_onnx_bytes(bytes, "test model", opts);
}
std::string print(const std::string& bytes) { return to_string(import(bytes)); }
// One node on one float input x of `shape`, output y.
std::string one_node(int opset, const Pb& n, const std::vector<int64_t>& shape, const std::vector<Pb>& inits = {},
                     const std::vector<Pb>& extra_inputs = {}) {
  std::vector<Pb> inputs = {value("x", FLOAT, shape)};
  inputs.insert(inputs.end(), extra_inputs.begin(), extra_inputs.end());
  return model(opset, {n}, inputs, {value("y", FLOAT, {})}, inits);
}
std::string out_type(const std::string& bytes, const OnnxImportOptions& opts = {}) {
  return import(bytes, opts).output_types()[0].str();
}
}  // namespace

TEST_CASE("a conv net imports to the printed graph", "[onnx]") {
  std::string w(4 * 2 * 3 * 3 * 4, '\0'), b(4 * 4, '\0');
  std::string m = model(
      13,
      {node("Conv", {"x", "w", "b"}, {"c"}, "conv1", {attr_ints("strides", {2, 2}), attr_s("auto_pad", "SAME_UPPER")}),
       node("Relu", {"c"}, {"r"}, "relu1"), node("GlobalAveragePool", {"r"}, {"g"}, "gap"),
       node("Flatten", {"g"}, {"y"}, "flat")},
      {value("x", FLOAT, {1, 2, 7, 7}), value("w", FLOAT, {4, 2, 3, 3})}, {value("y", FLOAT, {})},
      {tensor_raw("w", FLOAT, {4, 2, 3, 3}, w), tensor_raw("b", FLOAT, {4}, b)});
  Module mod = import(m);
  CHECK(mod.input_names() == std::vector<std::string>{"x"});  // w is an initializer listed as an input
  CHECK(to_string(mod, PrintOptions{true, false}) ==
        "fn (%x: float32[1,2,7,7]) -> float32[1,4] {\n"
        "  %0 = nn.conv2d(%x, meta[0], dilation=[1,1], groups=1, padding=[1,1,1,1], strides=[2,2]) : "
        "float32[1,4,4,4]  # conv1\n"
        "  %1 = nn.bias_add(%0, meta[1], axis=1) : float32[1,4,4,4]  # conv1\n"
        "  %2 = nn.relu(%1) : float32[1,4,4,4]  # relu1\n"
        "  %3 = nn.global_avg_pool(%2) : float32[1,4,1,1]  # gap\n"
        "  %4 = reshape(%3, newshape=[1,4]) : float32[1,4]  # flat\n"
        "  return %4\n"
        "}\n"
        "outputs: y\n"
        "meta[0] = float32[4,2,3,3]\n"
        "meta[1] = float32[4]\n");
}

TEST_CASE("auto_pad SAME_LOWER puts the odd pad first, VALID pads nothing", "[onnx]") {
  std::string w(1 * 1 * 2 * 2 * 4, '\0');
  auto conv = [&](const std::string& pad) {
    return print(one_node(11, node("Conv", {"x", "w"}, {"y"}, "c", {attr_s("auto_pad", pad)}), {1, 1, 5, 5},
                          {tensor_raw("w", FLOAT, {1, 1, 2, 2}, w)}));
  };
  CHECK_THAT(conv("SAME_LOWER"), Contains("padding=[1,1,0,0], strides=[1,1]) : float32[1,1,5,5]"));
  CHECK_THAT(conv("SAME_UPPER"), Contains("padding=[0,0,1,1], strides=[1,1]) : float32[1,1,5,5]"));
  CHECK_THAT(conv("VALID"), Contains("padding=[0,0,0,0], strides=[1,1]) : float32[1,1,4,4]"));
}

TEST_CASE("shape arithmetic folds away while importing", "[onnx]") {
  // y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])): the bert_mini pattern.
  std::string m = model(
      13,
      {node("Shape", {"x"}, {"s"}), node("Gather", {"s", "zero"}, {"n"}), node("Unsqueeze", {"n", "axes"}, {"n1"}),
       node("Concat", {"n1", "minus1"}, {"shape"}, "", {attr_i("axis", 0)}), node("Reshape", {"x", "shape"}, {"r"}),
       node("Mul", {"n", "n"}, {"nn"}), node("Cast", {"nn"}, {"f"}, "", {attr_i("to", FLOAT)}),
       node("Mul", {"r", "f"}, {"y"})},
      {value("x", FLOAT, {3, 4, 5})}, {value("y", FLOAT, {})},
      {tensor_i64("zero", {}, {0}), tensor_i64("axes", {1}, {0}), tensor_i64("minus1", {1}, {-1})});
  CHECK(print(m) ==
        "fn (%x: float32[3,4,5]) -> float32[3,20] {\n"
        "  %0 = reshape(%x, newshape=[3,20]) : float32[3,20]\n"
        "  %1 = multiply(%0, 9f) : float32[3,20]\n"
        "  return %1\n"
        "}\n"
        "outputs: y\n");
}

TEST_CASE("attributes that moved to inputs import from either place", "[onnx]") {
  std::vector<int64_t> shp = {2, 1, 6};
  SECTION("Squeeze: attribute before opset 13, input after") {
    CHECK(out_type(one_node(11, node("Squeeze", {"x"}, {"y"}, "", {attr_ints("axes", {1})}), shp)) == "float32[2,6]");
    CHECK(out_type(one_node(13, node("Squeeze", {"x", "a"}, {"y"}), shp, {tensor_i64("a", {1}, {-2})})) ==
          "float32[2,6]");
    CHECK(out_type(one_node(13, node("Squeeze", {"x"}, {"y"}), shp)) == "float32[2,6]");  // all 1-dims
  }
  SECTION("Split: split attribute, split input, num_outputs") {
    auto outs = [&](const std::string& m) {
      std::string s;
      for (const Type& t : import(m).output_types()) s += t.str() + " ";
      return s;
    };
    auto split_model = [&](int opset, const Pb& n, const std::vector<Pb>& inits = {}) {
      return model(opset, {n}, {value("x", FLOAT, shp)}, {value("a", FLOAT, {}), value("b", FLOAT, {})}, inits);
    };
    CHECK(outs(split_model(11, node("Split", {"x"}, {"a", "b"}, "", {attr_i("axis", 2), attr_ints("split", {2, 4})}))) ==
          "float32[2,1,2] float32[2,1,4] ");
    CHECK(outs(split_model(13, node("Split", {"x", "s"}, {"a", "b"}, "", {attr_i("axis", -1)}),
                           {tensor_i64("s", {2}, {5, 1})})) == "float32[2,1,5] float32[2,1,1] ");
    CHECK(outs(split_model(18, node("Split", {"x"}, {"a", "b"}, "", {attr_i("axis", 2), attr_i("num_outputs", 2)}))) ==
          "float32[2,1,3] float32[2,1,3] ");
  }
  SECTION("Slice: attributes before opset 10, inputs with steps after") {
    CHECK(out_type(one_node(9, node("Slice", {"x"}, {"y"}, "",
                                    {attr_ints("starts", {1}), attr_ints("ends", {100}), attr_ints("axes", {2})}),
                            shp)) == "float32[2,1,5]");
    std::string m = one_node(13, node("Slice", {"x", "st", "en", "ax", "sp"}, {"y"}), shp,
                             {tensor_i64("st", {1}, {-1}), tensor_i64("en", {1}, {INT64_MIN}),
                              tensor_i64("ax", {1}, {2}), tensor_i64("sp", {1}, {-2})});
    CHECK_THAT(print(m), Contains("strided_slice(%x, begin=[0,0,5], end=[2,1,-1], strides=[1,1,-2]) : float32[2,1,3]"));
  }
  SECTION("Clip: attributes before opset 11, optional inputs after") {
    CHECK_THAT(print(one_node(7, node("Clip", {"x"}, {"y"}, "", {attr_f("min", -1), attr_f("max", 1)}), shp)),
               Contains("clip(%x, a_max=1.0, a_min=-1.0)"));
    CHECK_THAT(print(one_node(13, node("Clip", {"x", "", "hi"}, {"y"}), shp, {tensor_f32("hi", {}, {6})})),
               Contains("clip(%x, a_max=6.0, a_min=-inf)"));
  }
  SECTION("ReduceSum: axes attribute before opset 13, input after; noop_with_empty_axes") {
    CHECK(out_type(one_node(11, node("ReduceSum", {"x"}, {"y"}, "", {attr_ints("axes", {0, 2})}), shp)) ==
          "float32[1,1,1]");
    CHECK(out_type(one_node(13, node("ReduceSum", {"x", "a"}, {"y"}, "", {attr_i("keepdims", 0)}), shp,
                            {tensor_i64("a", {1}, {-1})})) == "float32[2,1]");
    CHECK_THAT(print(one_node(13, node("ReduceSum", {"x"}, {"y"}, "", {attr_i("noop_with_empty_axes", 1)}), shp)),
               Contains("identity(%x)"));
    CHECK(out_type(one_node(17, node("ReduceMean", {"x"}, {"y"}, "", {attr_ints("axes", {1})}), shp)) ==
          "float32[2,1,6]");
    CHECK(out_type(one_node(18, node("ReduceMean", {"x", "a"}, {"y"}), shp, {tensor_i64("a", {1}, {2})})) ==
          "float32[2,1,1]");
  }
  SECTION("Softmax: 2-D coercion before opset 13, one axis after") {
    CHECK(print(one_node(11, node("Softmax", {"x"}, {"y"}), shp)) ==
          "fn (%x: float32[2,1,6]) -> float32[2,1,6] {\n"
          "  %0 = reshape(%x, newshape=[2,6]) : float32[2,6]\n"
          "  %1 = nn.softmax(%0, axis=1) : float32[2,6]\n"
          "  %2 = reshape(%1, newshape=[2,1,6]) : float32[2,1,6]\n"
          "  return %2\n}\noutputs: y\n");
    CHECK_THAT(print(one_node(13, node("Softmax", {"x"}, {"y"}), shp)), Contains("nn.softmax(%x, axis=2)"));
  }
  SECTION("Pad: attributes before opset 11, inputs after") {
    CHECK_THAT(print(one_node(7, node("Pad", {"x"}, {"y"}, "", {attr_ints("pads", {0, 0, 1, 0, 0, 2})}), shp)),
               Contains("nn.pad(%x, mode=\"constant\", pad_value=0.0, pad_width=[0,0,1,0,0,2]) : float32[2,1,9]"));
    CHECK_THAT(print(one_node(18, node("Pad", {"x", "p", "v", "ax"}, {"y"}, "", {attr_s("mode", "edge")}), shp,
                              {tensor_i64("p", {2}, {1, 2}), tensor_f32("v", {}, {0.5f}), tensor_i64("ax", {1}, {-1})})),
               Contains("nn.pad(%x, mode=\"edge\", pad_value=0.5, pad_width=[0,0,1,0,0,2]) : float32[2,1,9]"));
  }
}

TEST_CASE("Constant nodes import every value form", "[onnx]") {
  auto constant = [](const Pb& a) {
    return print(model(13, {node("Constant", {}, {"y"}, "k", {a})}, {}, {value("y", FLOAT, {})}));
  };
  CHECK_THAT(constant(attr_f("value_float", 2.5f)), Contains("return 2.5f"));
  CHECK_THAT(constant(attr_i("value_int", -3)), Contains("return -3i64"));
  CHECK_THAT(constant(attr_ints("value_ints", {4, 5})), Contains("meta[0] = int64[2]{4, 5}"));
  CHECK_THAT(constant(attr_floats("value_floats", {0.25f})), Contains("meta[0] = float32[1]{0.25}"));
  CHECK_THAT(constant(attr_t("value", tensor_i64("", {2, 1}, {7, 8}))), Contains("meta[0] = int64[2,1]{7, 8}"));
}

TEST_CASE("graph inputs that feed shapes take compile-time values", "[onnx]") {
  std::string m = model(13, {node("Reshape", {"x", "shape"}, {"y"}, "reshape1")},
                        {value("x", FLOAT, {2, 6}), value("shape", INT64, {2})}, {value("y", FLOAT, {})});
  REQUIRE_THROWS_WITH(import(m), Contains("ONNX node 'reshape1' (Reshape): input 1 (shape) is graph input 'shape', "
                                          "whose value is needed at compile time"));
  OnnxImportOptions opts;
  opts.input_values["shape"] = HostTensor::from_int64s(kiln::ir::DataType::i64(), {2}, {3, -1});
  Module mod = import(m, opts);
  CHECK(mod.output_types()[0].str() == "float32[3,4]");
  CHECK(mod.input_names() == std::vector<std::string>{"x", "shape"});  // the signature stays
}

TEST_CASE("inputs needed at compile time are reported by name, and binding them specializes", "[onnx]") {
  // pads reaches Pad through Cast and Add: the error names the graph input behind the value.
  std::string m = model(13,
                        {node("Cast", {"p"}, {"p64"}, "cast1", {attr_i("to", INT64)}),
                         node("Add", {"p64", "one"}, {"pads"}, "add1"), node("Pad", {"x", "pads"}, {"y"}, "pad1")},
                        {value("x", FLOAT, {2, 3}), value("p", INT32, {4})}, {value("y", FLOAT, {})},
                        {tensor_i64("one", {1}, {1})});
  try {
    import(m);
    FAIL("the import must ask for p");
  } catch (const CompileTimeInputError& e) {
    CHECK(e.inputs() == std::vector<std::string>{"p"});
    CHECK_THAT(std::string(e.what()), Contains("ONNX node 'pad1' (Pad): input 1 (pads) is computed from graph input 'p'"));
  }
  OnnxImportOptions opts;
  opts.bind["p"] = HostTensor::from_int64s(kiln::ir::DataType::i32(), {4}, {0, -1, 1, -1});  // pads 1,0,2,0
  Module mod = import(m, opts);
  CHECK(mod.output_types()[0].str() == "float32[5,3]");
  CHECK(mod.input_names() == std::vector<std::string>{"x"});  // p is compiled in
  opts.bind["p"] = HostTensor::from_int64s(kiln::ir::DataType::i64(), {4}, {0, 0, 0, 0});
  REQUIRE_THROWS_WITH(import(m, opts), Contains("graph input 'p' is int32, its given value int64"));
  opts.bind = {{"one", HostTensor::from_int64s(kiln::ir::DataType::i64(), {1}, {1})}};
  REQUIRE_THROWS_WITH(import(m, opts), Contains("cannot bind 'one': the model has no graph input of that name"));
}

TEST_CASE("graph inputs are listed without importing, non-tensor inputs are unsupported", "[onnx]") {
  std::string dir = "/tmp/kiln_onnx_inputs_" + std::to_string(getpid());
  std::string path = dir + ".onnx";
  std::string m = model(13, {node("Relu", {"x"}, {"y"}), node("Pad", {"y", "pads"}, {"z"})},
                        {value("x", FLOAT, {2}), value("pads", INT64, {2}), value("w", FLOAT, {1})},
                        {value("z", FLOAT, {})}, {tensor_f32("w", {1}, {1.f})});
  FILE* f = fopen(path.c_str(), "wb");
  REQUIRE(f);
  fwrite(m.data(), 1, m.size(), f);
  fclose(f);
  CHECK(onnx_graph_inputs(path) == std::vector<std::string>{"x", "pads"});  // w is an initializer
  std::remove(path.c_str());
  REQUIRE_THROWS_WITH(onnx_graph_inputs(path), Contains("cannot open ONNX model"));
  // TypeProto.sequence_type (4) of float tensors: valid ONNX that kiln does not compile.
  Pb seq = Pb().str(1, "s").msg(2, Pb().msg(4, Pb().msg(1, Pb().msg(1, Pb().i(1, FLOAT)))));
  std::string sm = model(13, {node("Identity", {"s"}, {"y"})}, {seq}, {value("y", FLOAT, {})});
  REQUIRE_THROWS_AS(import(sm), UnsupportedError);
  REQUIRE_THROWS_WITH(import(sm), Contains("graph input 's' is a sequence; kiln compiles tensor inputs only"));
}

TEST_CASE("empty results are constants: zero-size Split parts, a Slice past the end, Concat drops them", "[onnx]") {
  // The rotary-embedding pattern: split off an empty "not rotated" part, concatenate it back.
  std::string m = model(13,
                        {node("Split", {"x", "sizes"}, {"a", "e"}, "split1", {attr_i("axis", 1)}),
                         node("Neg", {"a"}, {"n"}), node("Concat", {"n", "e"}, {"y"}, "concat1", {attr_i("axis", 1)})},
                        {value("x", FLOAT, {2, 4})}, {value("y", FLOAT, {})}, {tensor_i64("sizes", {2}, {4, 0})});
  std::string text = print(m);
  CHECK_THAT(text, !Contains("split") && !Contains("concatenate"));  // x is all of part a; e adds nothing
  CHECK(out_type(m) == "float32[2,4]");
  // A Slice past the end has no elements: a constant, not a kernel.
  std::string sl = one_node(13, node("Slice", {"x", "st", "en"}, {"y"}), {2, 4}, {tensor_i64("st", {1}, {5}), tensor_i64("en", {1}, {9})});
  CHECK_THAT(print(sl), Contains("float32[0,4]") && !Contains("strided_slice"));
  // An input with no elements is read as an empty constant: a reduction over it folds.
  std::string rs = one_node(13, node("ReduceSum", {"x"}, {"y"}, "", {attr_i("keepdims", 0)}), {2, 0});
  CHECK_THAT(print(rs), Contains("fn (%x: float32[2,0]) -> float32[]") && Contains("return 0f"));
}

TEST_CASE("symbolic input dims need a given shape", "[onnx]") {
  std::string m = one_node(13, node("Relu", {"x"}, {"y"}), {-1, 3});
  // The message names the CLI flag that gives it.
  REQUIRE_THROWS_WITH(import(m), Contains("graph input 'x' has a symbolic dim 0 'N' (shape [N,3]): give its shape, "
                                          "--input-shape x=..."));
  OnnxImportOptions opts;
  opts.input_shapes["x"] = {5, 3};
  CHECK(out_type(m, opts) == "float32[5,3]");
  // A given shape must agree with the static dims: the message names the dim and both values.
  opts.input_shapes["x"] = {5, 4};
  REQUIRE_THROWS_WITH(import(m, opts), Contains("graph input 'x': dim 1 is 3 in the model [N,3], the given shape [5,4] has 4"));
  opts.input_shapes["x"] = {5, 3, 1};
  REQUIRE_THROWS_WITH(import(m, opts), Contains("graph input 'x' has rank 2 [N,3], the given shape [5,3,1] has rank 3"));
  opts.input_shapes = {{"z", {1}}};
  REQUIRE_THROWS_WITH(import(m, opts), Contains("a shape is given for 'z', which is not a model input (its inputs: 'x')"));
}

TEST_CASE("unsupported operators are listed all at once, with their nodes", "[onnx]") {
  std::string m = model(13,
                        {node("FancyOp", {"x"}, {"a"}, "f1"), node("StringNormalizer", {"a"}, {"b"}, "sn"),
                         node("Relu", {"b"}, {"c"}), node("FancyOp", {"c"}, {"d"}),
                         node("Gelu2", {"d"}, {"y"}, "g", {}, "com.vendor")},
                        {value("x", FLOAT, {2})}, {value("y", FLOAT, {})});
  REQUIRE_THROWS_AS(import(m), UnsupportedError);
  REQUIRE_THROWS_WITH(import(m), "test model: unsupported ONNX operators (3 op types): FancyOp (2 nodes: 'f1', "
                                 "#3 (-> d)); StringNormalizer (node 'sn'); com.vendor.Gelu2 (node 'g')");
}

TEST_CASE("an unsupported operator on hundreds of nodes is named briefly: a few nodes and the count", "[onnx]") {
  // A detector export's 180 NonZero nodes, and 12 more unknown op types of one node each.
  std::vector<Pb> nodes;
  std::string in = "x";
  for (int i = 0; i < 180; ++i) {
    std::string out = "nz" + std::to_string(i);
    nodes.push_back(node("NonZero", {in}, {out}, i ? "/NonZero_" + std::to_string(i) : "/NonZero"));
    in = out;
  }
  for (int i = 0; i < 12; ++i) {
    std::string out = "f" + std::to_string(i);
    nodes.push_back(node("Fancy" + std::string(1, char('A' + i)), {in}, {out}, "/fancy_" + std::to_string(i)));
    in = out;
  }
  nodes.push_back(node("Identity", {in}, {"y"}));
  std::string m = model(13, nodes, {value("x", FLOAT, {2})}, {value("y", FLOAT, {})});
  std::string what;
  try {
    import(m);
  } catch (const UnsupportedError& e) {
    what = e.what();
  }
  CHECK_THAT(what, Catch::Contains("unsupported ONNX operators (13 op types): NonZero (180 nodes: '/NonZero', "
                                   "'/NonZero_1', '/NonZero_2', ...); FancyA (node '/fancy_0'); FancyB"));
  CHECK_THAT(what, Catch::EndsWith("; FancyG (node '/fancy_6'); and 5 more op types"));
  CHECK(what.size() < 1000);
}

TEST_CASE("errors name the node, the op and the shapes", "[onnx]") {
  std::string bad_broadcast =
      model(13, {node("Add", {"a", "b"}, {"y"}, "add1")}, {value("a", FLOAT, {2, 3}), value("b", FLOAT, {4})},
            {value("y", FLOAT, {})});
  REQUIRE_THROWS_WITH(import(bad_broadcast), "test model: ONNX node 'add1' (Add): add (node 'add1') on (float32[2,3], "
                                             "float32[4]): shapes [2,3] and [4] do not broadcast");
  std::string w(4 * 3 * 3 * 3 * 4, '\0');
  auto conv = [&](const std::vector<Pb>& attrs) {
    return one_node(13, node("Conv", {"x", "w"}, {"y"}, "conv1", attrs), {1, 6, 8, 8},
                    {tensor_raw("w", FLOAT, {4, 3, 3, 3}, w)});
  };
  REQUIRE_THROWS_WITH(import(conv({attr_f("strides", 2)})),
                      "test model: ONNX node 'conv1' (Conv): attribute 'strides' must be an int list, got a float");
  REQUIRE_THROWS_WITH(import(conv({})), Contains("weight [4,3,3,3] expects 3 input channels (3 x groups 1), data has 6"));
  CHECK(out_type(conv({attr_i("group", 2)})) == "float32[1,4,6,6]");
  REQUIRE_THROWS_WITH(import(conv({attr_s("auto_pad", "SOMETIMES")})), Contains("unknown auto_pad 'SOMETIMES'"));
  std::string dangling = model(13, {node("Relu", {"nowhere"}, {"y"}, "r")}, {}, {value("y", FLOAT, {})});
  REQUIRE_THROWS_WITH(import(dangling), "test model: ONNX node 'r' (Relu) reads 'nowhere', which no earlier node, "
                                        "initializer or graph input produces");
  std::string indices = one_node(13, node("MaxPool", {"x"}, {"y", "i"}, "mp", {attr_ints("kernel_shape", {2})}), {1, 1, 4});
  REQUIRE_THROWS_AS(import(indices), UnsupportedError);
}

TEST_CASE("bad and missing files are named in the error", "[onnx]") {
  REQUIRE_THROWS_WITH(from_onnx("/nonexistent/dir/model.onnx"),
                      "cannot open ONNX model '/nonexistent/dir/model.onnx'");
  char dir[] = "/tmp/kiln_onnx_test_XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  std::string bad = std::string(dir) + "/garbage.onnx";
  FILE* f = fopen(bad.c_str(), "wb");
  fputs("this is not a protobuf \xff\xff\xff", f);
  fclose(f);
  REQUIRE_THROWS_WITH(from_onnx(bad), "'" + bad + "': not an ONNX model (cannot parse a ModelProto with a graph and an opset)");
  REQUIRE_THROWS_WITH(load_tensor_pb(bad), "'" + bad + "' is not a serialized ONNX TensorProto");
  REQUIRE_THROWS_WITH(load_tensor_pb(std::string(dir) + "/none.pb"), "cannot open tensor file '" + std::string(dir) + "/none.pb'");
  remove(bad.c_str());
  rmdir(dir);
}

TEST_CASE("TensorProto files: typed fields, raw data, every dtype round trips", "[onnx]") {
  char dir[] = "/tmp/kiln_onnx_test_XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  std::string path = std::string(dir) + "/t.pb";
  auto write = [&](const Pb& t) {
    FILE* f = fopen(path.c_str(), "wb");
    fwrite(t.s.data(), 1, t.s.size(), f);
    fclose(f);
  };
  using kiln::ir::DataType;
  // Typed fields: which field holds the values depends on the type (onnx.proto).
  write(Pb().i(1, 3).i(2, INT8).packed_i(5, {-1, 2, -128}).str(8, "small"));
  NamedTensor t = load_tensor_pb(path);
  CHECK(t.name == "small");
  CHECK(t.value.str() == "int8[3]{-1, 2, -128}");
  write(Pb().i(1, 2).i(2, FLOAT16).packed_i(5, {0x3C00, 0xC000}));  // 1.0, -2.0 as half bit patterns
  CHECK(load_tensor_pb(path).value.str() == "float16[2]{1, -2}");
  write(Pb().i(1, 2).i(2, BOOL).packed_i(5, {1, 0}));
  CHECK(load_tensor_pb(path).value.str() == "bool[2]{true, false}");
  write(Pb().i(1, 1).i(2, UINT64).packed_i(11, {-1}));
  CHECK(load_tensor_pb(path).value.str() == "uint64[1]{18446744073709551615}");
  write(tensor_f32("f", {2, 2}, {1.5f, -0.25f, 3, 4}));
  CHECK(load_tensor_pb(path).value.str() == "float32[2,2]{1.5, -0.25, 3, 4}");
  write(tensor_raw("r", FLOAT, {3}, std::string(8, '\0')));
  REQUIRE_THROWS_WITH(load_tensor_pb(path), Contains("raw_data holds 8 bytes, its type float32[3] needs 12"));
  write(tensor_raw("q", FLOAT8E4M3FN, {1}, std::string(1, '\0')));
  REQUIRE_THROWS_AS(load_tensor_pb(path), UnsupportedError);
  // Every supported dtype survives save + load bit for bit.
  for (DataType d : {DataType::f32(), DataType::f64(), DataType::f16(), DataType::bf16(), DataType::i8(),
                     DataType::i16(), DataType::i32(), DataType::i64(), DataType::u8(), DataType::u16(),
                     DataType::u32(), DataType::u64(), DataType::boolean()}) {
    HostTensor v = HostTensor::from_doubles(d, {2, 3}, {0, 1, 2, 3, 4, 5});
    save_tensor_pb(path, v, "v_" + d.str());
    NamedTensor back = load_tensor_pb(path);
    CHECK(back.name == "v_" + d.str());
    CHECK(back.value.bitwise_equal(v));
  }
  remove(path.c_str());
  rmdir(dir);
}

TEST_CASE("the importer claims every operator of issue 3's list", "[onnx]") {
  std::vector<std::string> supported = onnx_supported_ops();
  for (const char* op :
       {"Conv", "ConvTranspose", "Gemm", "MatMul", "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Exp", "Log", "Erf",
        "Tanh", "Sigmoid", "Relu", "LeakyRelu", "Elu", "Selu", "PRelu", "Clip", "HardSigmoid", "HardSwish", "Softplus",
        "Abs", "Neg", "Floor", "Ceil", "Round", "Reciprocal", "Min", "Max", "Sum", "Mean", "Not", "And", "Or", "Equal",
        "Less", "Greater", "Where", "Cast", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
        "BatchNormalization", "LayerNormalization", "InstanceNormalization", "Softmax", "LogSoftmax", "ReduceSum",
        "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2", "ArgMax", "ArgMin", "Concat", "Split",
        "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Slice", "Gather", "GatherElements", "Expand", "Tile",
        "Pad", "Resize", "DepthToSpace", "SpaceToDepth", "Identity", "Dropout", "Shape", "Size", "ConstantOfShape",
        "Range", "LRN", "Einsum", "Constant"}) {
    INFO(op);
    CHECK(std::find(supported.begin(), supported.end(), op) != supported.end());
  }
}

TEST_CASE("initializers with external data are read from the model's folder", "[onnx]") {
  char dir[] = "/tmp/kiln_onnx_test_XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  std::string d = dir;
  float weights[4] = {0, 0, 1.5f, -2.0f};  // the tensor starts at offset 8
  FILE* f = fopen((d + "/weights.bin").c_str(), "wb");
  fwrite(weights, 4, 4, f);
  fclose(f);
  Pb entry_loc = Pb().str(1, "location").str(2, "weights.bin");
  Pb entry_off = Pb().str(1, "offset").str(2, "8");
  Pb w = Pb().i(1, 2).i(2, FLOAT).str(8, "w").msg(13, entry_loc).msg(13, entry_off).i(14, 1);
  std::string m = model(13, {node("Add", {"x", "w"}, {"y"})}, {value("x", FLOAT, {2})}, {value("y", FLOAT, {})}, {w});
  f = fopen((d + "/model.onnx").c_str(), "wb");
  fwrite(m.data(), 1, m.size(), f);
  fclose(f);
  CHECK_THAT(to_string(from_onnx(d + "/model.onnx")), Contains("meta[0] = float32[2]{1.5, -2}"));
  remove((d + "/weights.bin").c_str());
  REQUIRE_THROWS_WITH(from_onnx(d + "/model.onnx"),
                      Contains("initializer 'w': cannot open external data file '" + d + "/weights.bin'"));
  remove((d + "/model.onnx").c_str());
  rmdir(dir);
}
