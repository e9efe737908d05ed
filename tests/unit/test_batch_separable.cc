// check_batch_separable (relay/batch_separable.h): graphs built at one and at two samples; the
// ones that keep samples apart pass, the ones that mix them are refused naming the node.
#include <catch2/catch.hpp>

#include <functional>

#include "relay/batch_separable.h"
#include "kiln/support/error.h"

using namespace kiln::relay;
using kiln::ir::DataType;

namespace {

// The model `body` builds on x: float32[rows * batch, 8], at batch 1 and 2.
void check(const std::function<Expr(const Expr&)>& body, int64_t rows = 1) {
  auto build = [&](int64_t batch) {
    Expr x = make_var("x", tensor_type(DataType::f32(), {rows * batch, 8}));
    return Module::make({x}, {body(x)}, {"y"});
  };
  check_batch_separable(build(1), build(2));
}

Attrs axis(int64_t a) { return Attrs().set_int("axis", a); }

}  // namespace

TEST_CASE("check_batch_separable: row-wise graphs pass, graphs that mix samples are refused", "[relay][dynamic_batch]") {
  using Catch::Matchers::Contains;
  // Elementwise, softmax over the features, reshape keeping a sample's rows together.
  CHECK_NOTHROW(check([](const Expr& x) { return make_call("nn.relu", {x}, {}, "relu1"); }));
  CHECK_NOTHROW(check([](const Expr& x) { return make_call("nn.softmax", {x}, axis(1), "softmax1"); }, 4));
  CHECK_NOTHROW(check([](const Expr& x) {
    Shape s = x.tensor_type().shape;
    return make_call("reshape", {x}, Attrs().set_ints("newshape", {s[0] * 2, 4}), "reshape1");
  }, 3));
  // Softmax over the batch axis keeps the shapes but mixes samples: the op rule refuses it.
  CHECK_THROWS_AS(check([](const Expr& x) { return make_call("nn.softmax", {x}, axis(0), "softmax0"); }),
                  kiln::UnsupportedError);
  CHECK_THROWS_WITH(check([](const Expr& x) { return make_call("nn.softmax", {x}, axis(0), "softmax0"); }),
                    Contains("nn.softmax (node 'softmax0') works along the batch axis (axis 0)"));
  // A transpose moving the batch axis: its value is not one sample's rows per sample.
  CHECK_THROWS_WITH(check([](const Expr& x) { return make_call("transpose", {x}, Attrs().set_ints("axes", {1, 0}), "t1"); }),
                    Contains("transpose (node 't1') mixes the samples of a batch: its value is float32[8,1] at batch 1 "
                             "and float32[8,2] at batch 2"));
}
