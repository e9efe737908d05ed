// Type relations of the op families (shapes worked out by hand) and the registry's contents.
#include <catch2/catch.hpp>

#include <any>
#include <functional>

#include "kiln/relay/expr.h"
#include "kiln/relay/op.h"

using namespace kiln::relay;
using kiln::ir::DataType;
using Catch::Matchers::Contains;

namespace {
Expr v(Shape s, DataType t = DataType::f32()) { return make_var("v", tensor_type(t, std::move(s))); }
std::string ty(const std::string& op, std::vector<Expr> args, Attrs attrs = {}) {
  return make_call(op, std::move(args), std::move(attrs)).type().str();
}
Attrs window(std::vector<int64_t> strides, std::vector<int64_t> pad, std::vector<int64_t> dil, int64_t groups) {
  return Attrs().set_ints("strides", strides).set_ints("padding", pad).set_ints("dilation", dil).set_int("groups", groups);
}
Attrs pool(std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> p, int64_t ceil) {
  return Attrs().set_ints("kernel", k).set_ints("strides", s).set_ints("padding", p).set_ints("dilation", {1, 1})
      .set_int("ceil_mode", ceil);
}
}  // namespace

TEST_CASE("convolution output sizes: stride, asymmetric pads, dilation, groups, 1-D, transpose", "[relay]") {
  // (in + pads - dil*(k-1) - 1) / stride + 1
  CHECK(ty("nn.conv2d", {v({1, 3, 224, 224}), v({64, 3, 7, 7})}, window({2, 2}, {3, 3, 3, 3}, {1, 1}, 1)) ==
        "float32[1,64,112,112]");
  CHECK(ty("nn.conv2d", {v({2, 8, 10, 9}), v({8, 1, 3, 3})}, window({1, 2}, {0, 1, 2, 0}, {2, 1}, 8)) ==
        "float32[2,8,8,4]");  // depthwise; padding is [H begin, W begin, H end, W end]:
                              // H: (10+0+2 - 5)/1 + 1 = 8, W: (9+1+0 - 3)/2 + 1 = 4
  CHECK(ty("nn.conv1d", {v({1, 4, 50}), v({6, 2, 5})}, window({3}, {2, 2}, {1}, 2)) == "float32[1,6,17]");
  // Transposed: stride*(in-1) + output_padding + dil*(k-1) + 1 - pads; weight is [Cin, Cout/g, k]
  CHECK(ty("nn.conv2d_transpose", {v({1, 4, 5, 5}), v({4, 3, 3, 3})},
           window({2, 2}, {1, 1, 1, 1}, {1, 1}, 2).set_ints("output_padding", {1, 0})) == "float32[1,6,10,9]");
  REQUIRE_THROWS_WITH(ty("nn.conv2d", {v({1, 3, 4, 4}), v({2, 3, 7, 7})}, window({1, 1}, {0, 0, 0, 0}, {1, 1}, 1)),
                      Contains("kernel of extent 7 is larger than the padded input (4) on spatial axis 0"));
  REQUIRE_THROWS_WITH(ty("nn.conv2d", {v({1, 3, 4, 4}), v({2, 3, 1, 1})}, window({1}, {0, 0, 0, 0}, {1, 1}, 1)),
                      Contains("strides [1] must have 2 entries"));
}

TEST_CASE("pooling sizes follow ceil_mode, dropping windows that start in the end padding", "[relay]") {
  CHECK(ty("nn.max_pool2d", {v({1, 64, 111, 111})}, pool({3, 3}, {2, 2}, {0, 0, 0, 0}, 1)) == "float32[1,64,55,55]");
  CHECK(ty("nn.max_pool2d", {v({1, 1, 6, 6})}, pool({3, 3}, {2, 2}, {0, 0, 0, 0}, 0)) == "float32[1,1,2,2]");
  CHECK(ty("nn.max_pool2d", {v({1, 1, 6, 6})}, pool({3, 3}, {2, 2}, {0, 0, 0, 0}, 1)) == "float32[1,1,3,3]");
  // in 5, k 2, s 2, pad 1+1: ceil gives 4 windows, but the 4th starts at 6 >= 5 + 1: dropped.
  CHECK(ty("nn.avg_pool2d", {v({1, 1, 5, 5})}, pool({2, 2}, {2, 2}, {1, 1, 1, 1}, 1).set_int("count_include_pad", 0)) ==
        "float32[1,1,3,3]");
  CHECK(ty("nn.global_avg_pool", {v({2, 7, 3, 4, 5})}) == "float32[2,7,1,1,1]");
  // Blocked data (alter_layout's layout attr) keeps its block axis; the block must match.
  CHECK(ty("nn.max_pool2d", {v({1, 4, 112, 112, 16})}, pool({3, 3}, {2, 2}, {1, 1, 1, 1}, 0).set_str("layout", "NCHW16c")) ==
        "float32[1,4,56,56,16]");
  REQUIRE_THROWS_WITH(ty("nn.max_pool2d", {v({1, 4, 8, 8, 8})}, pool({2, 2}, {2, 2}, {0, 0, 0, 0}, 0).set_str("layout", "NCHW16c")),
                      Contains("data must have rank 5 (N, C blocks and 2 spatial dims, 16 channels of a block), got [1,4,8,8,8]"));
  REQUIRE_THROWS_WITH(ty("nn.max_pool2d", {v({1, 4, 8, 8})}, pool({2, 2}, {2, 2}, {0, 0, 0, 0}, 0).set_str("layout", "NHWC")),
                      Contains("layout 'NHWC' is not NCHW or NCHW<x>c"));
}

TEST_CASE("matmul broadcasts batch dims and treats 1-D operands as vectors", "[relay]") {
  CHECK(ty("nn.matmul", {v({2, 1, 3, 4}), v({5, 4, 6})}) == "float32[2,5,3,6]");
  CHECK(ty("nn.matmul", {v({4}), v({2, 4, 6})}) == "float32[2,6]");
  CHECK(ty("nn.matmul", {v({3, 4}), v({4})}) == "float32[3]");
  CHECK(ty("nn.matmul", {v({4}), v({4})}) == "float32[]");
  REQUIRE_THROWS_WITH(ty("nn.matmul", {v({3, 4}), v({5, 6})}), Contains("reduction dims differ: [3,4] x [5,6]"));
  CHECK(ty("nn.dense", {v({8, 16}), v({10, 16})}) == "float32[8,10]");
  REQUIRE_THROWS_WITH(ty("nn.dense", {v({8, 16}), v({10, 15})}), Contains("data [8,16] has K=16, weight [10,15] has K=15"));
}

TEST_CASE("einsum shapes: explicit, implicit and ellipsis outputs", "[relay]") {
  auto e = [](const std::string& eq, std::vector<Expr> args) {
    return ty("einsum", std::move(args), Attrs().set_str("equation", eq));
  };
  CHECK(e("bij,bjk->bik", {v({2, 3, 4}), v({2, 4, 5})}) == "float32[2,3,5]");
  CHECK(e("ij->ji", {v({3, 4})}) == "float32[4,3]");
  CHECK(e("i,i", {v({7}), v({7})}) == "float32[]");
  CHECK(e("ij,jk", {v({3, 4}), v({4, 2})}) == "float32[3,2]");  // implicit: labels used once, sorted
  CHECK(e("...ii->...i", {v({2, 5, 3, 3})}) == "float32[2,5,3]");
  CHECK(e("...ij,...jk", {v({2, 1, 3, 4}), v({6, 4, 5})}) == "float32[2,6,3,5]");
  REQUIRE_THROWS_WITH(e("ij,jk->ik", {v({3, 4}), v({5, 2})}), Contains("label 'j' has size 4 and 5"));
}

TEST_CASE("broadcast, reduce, gather and layout relations", "[relay]") {
  CHECK(ty("add", {v({4, 1, 3}), v({5, 1})}) == "float32[4,5,3]");
  CHECK(ty("less", {v({2, 3}), v({3})}) == "bool[2,3]");
  CHECK(ty("where", {v({2, 1}, DataType::boolean()), v({3}), v({1, 1})}) == "float32[2,3]");
  CHECK(ty("power", {v({2, 3}), v({}, DataType::i64())}) == "float32[2,3]");
  REQUIRE_THROWS_WITH(ty("add", {v({2}), v({2}, DataType::i64())}), Contains("must have one data type, got float32 and int64"));
  REQUIRE_THROWS_WITH(ty("nn.prelu", {v({2, 3}), v({4, 1, 3})}), Contains("slope [4,1,3] does not broadcast to input [2,3]"));
  Attrs axes = Attrs().set_ints("axes", {0, 2}).set_int("keepdims", 0);
  CHECK(ty("sum", {v({2, 3, 4})}, axes) == "float32[3]");
  CHECK(ty("max", {v({2, 3, 4})}, Attrs(axes).set_int("keepdims", 1)) == "float32[1,3,1]");
  REQUIRE_THROWS_WITH(ty("sum", {v({2, 3})}, Attrs(axes)), Contains("axes [0,2]: 2 is out of range for rank 2"));
  CHECK(ty("argmax", {v({2, 3, 4})}, Attrs().set_int("axis", 1).set_int("keepdims", 0).set_int("select_last_index", 0)) ==
        "int64[2,4]");
  CHECK(ty("take", {v({5, 6, 7}), v({2, 3}, DataType::i64())}, Attrs().set_int("axis", 1)) == "float32[5,2,3,7]");
  CHECK(ty("gather_nd", {v({2, 3, 4}), v({2, 5, 1}, DataType::i64())}, Attrs().set_int("batch_dims", 1)) ==
        "float32[2,5,4]");
  CHECK(ty("transpose", {v({2, 3, 4})}, Attrs().set_ints("axes", {2, 0, 1})) == "float32[4,2,3]");
  CHECK(ty("concatenate", {v({2, 3}), v({2, 5}), v({2, 0})}, Attrs().set_int("axis", 1)) == "float32[2,8]");
  CHECK(ty("split", {v({2, 9})}, Attrs().set_int("axis", 1).set_ints("sizes", {2, 7})) == "(float32[2,2], float32[2,7])");
  // Backward slice 9 down to (not including) -1, step -2: 9 7 5 3 1.
  CHECK(ty("strided_slice", {v({10, 4})}, Attrs().set_ints("begin", {9, 1}).set_ints("end", {-1, 4}).set_ints("strides", {-2, 2})) ==
        "float32[5,2]");
  CHECK(ty("strided_slice", {v({10})}, Attrs().set_ints("begin", {8}).set_ints("end", {3}).set_ints("strides", {1})) ==
        "float32[0]");
  CHECK(ty("nn.pad", {v({2, 3})}, Attrs().set_ints("pad_width", {1, -1, 0, 2}).set_str("mode", "constant").set_float("pad_value", 0)) ==
        "float32[3,4]");
  REQUIRE_THROWS_WITH(ty("nn.pad", {v({2, 3})}, Attrs().set_ints("pad_width", {2, 0, 0, 0}).set_str("mode", "reflect").set_float("pad_value", 0)),
                      Contains("reflect pads [2,0,0,0] must be smaller than dim 0 (2)"));
  CHECK(ty("nn.depth_to_space", {v({1, 8, 2, 3})}, Attrs().set_int("block_size", 2).set_str("mode", "CRD")) == "float32[1,2,4,6]");
  CHECK(ty("nn.space_to_depth", {v({1, 2, 4, 6})}, Attrs().set_int("block_size", 2)) == "float32[1,8,2,3]");
  CHECK(ty("reshape", {v({2, 6})}, Attrs().set_ints("newshape", {3, 4})) == "float32[3,4]");
  REQUIRE_THROWS_WITH(ty("reshape", {v({2, 6})}, Attrs().set_ints("newshape", {5, 2})),
                      Contains("cannot reshape [2,6] (12 elements) to [5,2]"));
  CHECK(ty("full", {}, Attrs().set_ints("shape", {2, 2}).set_tensor("value", HostTensor::scalar(DataType::i32(), 3))) ==
        "int32[2,2]");
  CHECK(ty("cast", {v({2})}, Attrs().set_str("dtype", "float16")) == "float16[2]");
  CHECK(ty("isnan", {v({2})}) == "bool[2]");
  CHECK(ty("topk", {v({3, 10})}, Attrs().set_int("k", 4).set_int("axis", 1).set_int("largest", 1).set_int("sorted", 1)) ==
        "(float32[3,4], int64[3,4])");
  CHECK(ty("one_hot", {v({2, 3}, DataType::i64()), v({2})}, Attrs().set_int("depth", 5).set_int("axis", 1)) ==
        "float32[2,5,3]");
  CHECK(ty("scatter_nd", {v({4, 5, 6}), v({3, 2}, DataType::i64()), v({3, 6})}, Attrs().set_str("reduction", "add")) ==
        "float32[4,5,6]");
  REQUIRE_THROWS_WITH(ty("scatter_nd", {v({4, 5, 6}), v({3, 2}, DataType::i64()), v({3, 5})}, Attrs().set_str("reduction", "none")),
                      Contains("updates must be [3,6], got [3,5]"));
  CHECK(ty("cumsum", {v({2, 3})}, Attrs().set_int("axis", 1).set_int("exclusive", 0).set_int("reverse", 1)) == "float32[2,3]");
}

TEST_CASE("the registry knows every op with a relation and a pattern", "[relay]") {
  std::vector<std::string> ops = list_ops();
  CHECK(ops.size() >= 100);
  for (const std::string& name : ops) {
    const OpDef& op = get_op(name);
    INFO(name);
    CHECK(op.name == name);
    CHECK(static_cast<bool>(op.relation));
  }
  CHECK(get_op("nn.conv2d").pattern == OpPattern::OutElementwiseFusable);
  CHECK(get_op("nn.dense").pattern == OpPattern::OutElementwiseFusable);
  CHECK(get_op("add").pattern == OpPattern::Broadcast);
  CHECK(get_op("exp").pattern == OpPattern::Elementwise);
  CHECK(get_op("reshape").pattern == OpPattern::Injective);
  CHECK(get_op("sum").pattern == OpPattern::CommReduce);
  CHECK(get_op("nn.softmax").pattern == OpPattern::Opaque);
  CHECK(std::string(pattern_name(OpPattern::OutElementwiseFusable)) == "out_elementwise_fusable");
  CHECK(find_op("nn.conv4d") == nullptr);
  // alter_layout's ops are registered with all others.
  CHECK(get_op("layout_transform").pattern == OpPattern::Injective);
  CHECK(get_op("nn.conv2d_NCHWc").pattern == OpPattern::OutElementwiseFusable);
}
