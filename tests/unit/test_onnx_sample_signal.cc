// The importer's GridSample, AffineGrid, Col2Im, DFT, STFT and MelWeightMatrix on small
// hand-built models: the output types they import to, and every user error they report (each
// names the node and the culprit). Their numerics are the node suite's (../shared/onnx/node)
// and test_ops_grid_sample.cc's.
#include <catch2/catch.hpp>

#include "kiln/relay/error.h"
#include "kiln/relay/frontend/onnx.h"
#include "test_onnx_builder.h"

using namespace kiln::relay;
using namespace onnx_builder;
using Catch::Matchers::Contains;

namespace {
Module import(const std::string& bytes) { return from_onnx_bytes(bytes, "test model"); }
std::string out_type(const std::string& bytes) { return import(bytes).output_types()[0].str(); }
// One node 'n1' of `op` reading float graph inputs (name, shape), then the initializers named
// in `more`; output y.
std::string one(int opset, const std::string& op, const std::vector<std::pair<std::string, std::vector<int64_t>>>& inputs,
                const std::vector<Pb>& attrs, const std::vector<Pb>& inits = {}, const std::vector<std::string>& more = {}) {
  std::vector<Pb> vin;
  std::vector<std::string> in;
  for (const auto& [n, s] : inputs) {
    vin.push_back(value(n, FLOAT, s));
    in.push_back(n);
  }
  in.insert(in.end(), more.begin(), more.end());
  return model(opset, {node(op, in, {"y"}, "n1", attrs)}, vin, {value("y", FLOAT, {})}, inits);
}
}  // namespace

TEST_CASE("GridSample imports both opsets' spellings and names bad attributes and grids", "[onnx_sample]") {
  auto gs = [](int opset, const std::vector<Pb>& attrs, std::vector<int64_t> grid = {1, 3, 5, 2}) {
    return one(opset, "GridSample", {{"x", {1, 2, 4, 4}}, {"g", grid}}, attrs);
  };
  CHECK(out_type(gs(16, {attr_s("mode", "bicubic")})) == "float32[1,2,3,5]");
  CHECK(out_type(gs(20, {attr_s("mode", "nearest"), attr_s("padding_mode", "reflection")})) == "float32[1,2,3,5]");
  REQUIRE_THROWS_WITH(import(gs(20, {attr_s("mode", "area")})),
                      "test model: ONNX node 'n1' (GridSample): unknown mode 'area'");
  REQUIRE_THROWS_WITH(import(gs(20, {attr_s("padding_mode", "wrap")})), Contains("unknown padding_mode 'wrap'"));
  REQUIRE_THROWS_WITH(import(gs(20, {attr_i("align_corners", 2)})), Contains("align_corners must be 0 or 1, not 2"));
  REQUIRE_THROWS_WITH(import(gs(20, {}, {1, 3, 5, 3})),
                      Contains("'n1' (GridSample): grid [1,3,5,3] must be [N, O1..O2, 2] for X [1,2,4,4]"));
}

TEST_CASE("AffineGrid imports to a grid of the given size and names bad theta and size", "[onnx_sample]") {
  auto ag = [](std::vector<int64_t> theta, std::vector<int64_t> size) {
    return one(20, "AffineGrid", {{"theta", theta}}, {}, {tensor_i64("size", {int64_t(size.size())}, size)}, {"size"});
  };
  CHECK(out_type(ag({2, 2, 3}, {2, 3, 5, 6})) == "float32[2,5,6,2]");
  CHECK(out_type(ag({1, 3, 4}, {1, 1, 2, 5, 6})) == "float32[1,2,5,6,3]");
  REQUIRE_THROWS_WITH(import(ag({2, 3, 4}, {2, 3, 5, 6})),
                      Contains("'n1' (AffineGrid): theta [2,3,4] must be [2, 2, 3] for size [2,3,5,6]"));
  REQUIRE_THROWS_WITH(import(ag({2, 2, 3}, {2, 5, 6})), Contains("size [2,5,6] must be [N, C, H, W] or [N, C, D, H, W]"));
}

TEST_CASE("Col2Im imports to a grouped transposed convolution and names mismatched blocks", "[onnx_sample]") {
  auto c2i = [](std::vector<int64_t> in, std::vector<int64_t> image, std::vector<int64_t> block,
                const std::vector<Pb>& attrs = {}) {
    return one(18, "Col2Im", {{"x", in}}, attrs,
               {tensor_i64("image", {int64_t(image.size())}, image), tensor_i64("block", {int64_t(block.size())}, block)},
               {"image", "block"});
  };
  CHECK(out_type(c2i({1, 10, 6}, {3, 6}, {1, 5})) == "float32[1,2,3,6]");
  CHECK(out_type(c2i({2, 4, 9}, {5, 5}, {2, 2}, {attr_ints("strides", {2, 2}), attr_ints("pads", {1, 1, 0, 0})})) ==
        "float32[2,1,5,5]");
  REQUIRE_THROWS_WITH(import(c2i({1, 10, 7}, {3, 6}, {1, 5})),
                      Contains("'n1' (Col2Im): input has 7 blocks, image_shape [3,6] with these strides, pads and "
                               "dilations makes 6"));
  REQUIRE_THROWS_WITH(import(c2i({1, 9, 6}, {3, 6}, {1, 5})),
                      Contains("input channels 9 must be a multiple of prod(block_shape) = 5"));
  REQUIRE_THROWS_WITH(import(c2i({1, 10, 6}, {3, 6}, {1, 5, 1})), Contains("must have one entry per spatial axis"));
  REQUIRE_THROWS_WITH(import(c2i({1, 10, 6}, {3, 4}, {1, 5})), Contains("block 5 (dilated 5) does not fit axis 1"));
  REQUIRE_THROWS_AS(import(c2i({1, 1, 1}, {1, 1, 1, 1}, {1, 1, 1, 1})), UnsupportedError);
}

TEST_CASE("DFT imports forward, inverse and one-sided transforms and names bad axes and lengths", "[onnx_sample]") {
  auto dft = [](int opset, std::vector<int64_t> x, const std::vector<Pb>& attrs, std::vector<int64_t> axis = {},
                std::vector<int64_t> length = {}) {
    std::vector<Pb> inits;
    std::vector<std::string> names = {length.empty() ? "" : "len"};
    if (!length.empty()) inits.push_back(tensor_i64("len", {}, length));
    if (!axis.empty()) {
      inits.push_back(tensor_i64("axis", {}, axis));
      names.push_back("axis");
    }
    std::vector<Pb> vin = {value("x", FLOAT, x)};
    std::vector<std::string> in = {"x"};
    in.insert(in.end(), names.begin(), names.end());
    return model(opset, {node("DFT", in, {"y"}, "n1", attrs)}, vin, {value("y", FLOAT, {})}, inits);
  };
  CHECK(out_type(dft(20, {2, 8, 1}, {})) == "float32[2,8,2]");
  CHECK(out_type(dft(20, {2, 8, 1}, {attr_i("onesided", 1)})) == "float32[2,5,2]");
  CHECK(out_type(dft(19, {2, 8, 3, 2}, {attr_i("inverse", 1)}, {}, {6})) == "float32[2,6,3,2]");
  CHECK(out_type(dft(20, {2, 5, 2}, {attr_i("inverse", 1), attr_i("onesided", 1)})) == "float32[2,8,1]");
  CHECK(out_type(dft(20, {4, 3, 1}, {}, {0})) == "float32[4,3,2]");
  REQUIRE_THROWS_WITH(import(dft(20, {2, 8, 1}, {}, {2})),
                      Contains("'n1' (DFT): axis 2 is out of range [-3, -2] U [0, 1] for input [2,8,1]"));
  REQUIRE_THROWS_WITH(import(dft(19, {2, 8, 1}, {attr_i("axis", -1)})), Contains("axis -1 is out of range"));
  REQUIRE_THROWS_WITH(import(dft(20, {2, 8, 3}, {})), Contains("the last axis of input [2,8,3] must be 1 (real) or 2"));
  REQUIRE_THROWS_WITH(import(dft(20, {2, 8, 1}, {}, {}, {0})), Contains("dft_length 0 must be positive"));
  std::string runtime_len =
      model(20, {node("DFT", {"x", "len"}, {"y"}, "n1")}, {value("x", FLOAT, {2, 8, 1}), value("len", INT64, {})},
            {value("y", FLOAT, {})});
  REQUIRE_THROWS_WITH(import(runtime_len), Contains("'n1' (DFT): input 1 (dft_length) is graph input 'len'"));
}

TEST_CASE("STFT and MelWeightMatrix import and name bad frames, windows and edges", "[onnx_sample]") {
  auto stft = [](std::vector<int64_t> window, int64_t step, int64_t frame, const std::vector<Pb>& attrs = {}) {
    std::vector<Pb> inits = {tensor_i64("step", {}, {step})};
    std::vector<std::string> in = {"x", "step", window.empty() ? "" : "w"};
    std::vector<Pb> vin = {value("x", FLOAT, {1, 64, 1})};
    if (!window.empty()) vin.push_back(value("w", FLOAT, window));
    if (frame > 0) {
      inits.push_back(tensor_i64("frame", {}, {frame}));
      in.push_back("frame");
    }
    return model(17, {node("STFT", in, {"y"}, "n1", attrs)}, vin, {value("y", FLOAT, {})}, inits);
  };
  CHECK(out_type(stft({}, 8, 16)) == "float32[1,7,9,2]");
  CHECK(out_type(stft({16}, 8, 0, {attr_i("onesided", 0)})) == "float32[1,7,16,2]");
  REQUIRE_THROWS_WITH(import(stft({12}, 8, 16)), Contains("'n1' (STFT): window [12] must be [frame_length] = [16]"));
  REQUIRE_THROWS_WITH(import(stft({}, 0, 16)), Contains("frame_step 0 must be positive"));
  REQUIRE_THROWS_WITH(import(stft({}, 8, 65)), Contains("frame_length 65 must be in [1, signal_length 64]"));
  auto mel = [](int64_t bins, float lo, float hi) {
    std::vector<Pb> inits = {tensor_i64("m", {}, {bins}), tensor_i64("n", {}, {64}), tensor_i64("r", {}, {8000}),
                             tensor_f32("lo", {}, {lo}), tensor_f32("hi", {}, {hi})};
    return model(17, {node("MelWeightMatrix", {"m", "n", "r", "lo", "hi"}, {"y"}, "n1")}, {}, {value("y", FLOAT, {})},
                 inits);
  };
  CHECK(out_type(mel(8, 0, 4000)) == "float32[33,8]");
  REQUIRE_THROWS_WITH(import(mel(8, 100, 50)), Contains("'n1' (MelWeightMatrix): the edges must satisfy"));
  REQUIRE_THROWS_WITH(import(mel(8, 0, 9000)), Contains("lies above the Nyquist frequency of sample_rate 8000"));
}

TEST_CASE("DeformConv and RoiAlign import and name bad offsets, groups and sampling", "[onnx_sample]") {
  auto dc = [](std::vector<int64_t> x, std::vector<int64_t> w, std::vector<int64_t> off, const std::vector<Pb>& attrs) {
    return one(22, "DeformConv", {{"x", x}, {"w", w}, {"off", off}}, attrs);
  };
  CHECK(out_type(dc({1, 4, 5, 5}, {6, 2, 3, 3}, {1, 36, 3, 3}, {attr_i("group", 2), attr_i("offset_group", 2)})) ==
        "float32[1,6,3,3]");
  REQUIRE_THROWS_WITH(import(dc({1, 4, 5, 5}, {6, 4, 3, 3}, {1, 18, 2, 3}, {})),
                      Contains("'n1' (DeformConv): offset [1,18,2,3]: output axis 0 must be 3"));
  REQUIRE_THROWS_WITH(import(dc({1, 4, 5, 5}, {6, 4, 3, 3}, {1, 20, 3, 3}, {})),
                      Contains("offset [1,20,3,3] must have offset_group * kH * kW * 2 = 18 channels"));
  REQUIRE_THROWS_WITH(import(dc({1, 4, 5, 5}, {6, 4, 3, 3}, {1, 18, 3, 3}, {attr_i("group", 3)})),
                      Contains("group 3 does not fit X [1,4,5,5] and W [6,4,3,3]"));
  REQUIRE_THROWS_AS(import(dc({1, 4, 5}, {6, 4, 3}, {1, 6, 3}, {})), UnsupportedError);
  auto ra = [](const std::vector<Pb>& attrs, std::vector<int64_t> rois = {3, 4}) {
    std::vector<Pb> vin = {value("x", FLOAT, {1, 2, 8, 8}), value("r", FLOAT, rois), value("b", INT64, {3})};
    return model(16, {node("RoiAlign", {"x", "r", "b"}, {"y"}, "n1", attrs)}, vin, {value("y", FLOAT, {})});
  };
  CHECK(out_type(ra({attr_i("sampling_ratio", 2), attr_i("output_height", 4), attr_i("output_width", 5)})) ==
        "float32[3,2,4,5]");
  REQUIRE_THROWS_AS(import(ra({})), UnsupportedError);
  REQUIRE_THROWS_WITH(import(ra({})), Contains("'n1' (RoiAlign): sampling_ratio=0 (a sampling grid sized by each roi"));
  REQUIRE_THROWS_WITH(import(ra({attr_i("sampling_ratio", 2), attr_s("mode", "min")})), Contains("unknown mode 'min'"));
  REQUIRE_THROWS_WITH(import(ra({attr_i("sampling_ratio", 2)}, {3, 5})),
                      Contains("rois [3,5] must be [R, 4] and batch_indices [3] [R]"));
}
