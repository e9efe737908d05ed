// Injective lowerings (op library part A) compiled end to end, naive and default schedules,
// against relay::evaluate_call where it knows the op, else index-by-index references here.
// Every check is exact: these ops only move elements.
#include <catch2/catch.hpp>

#include "test_ops_a_util.h"

using namespace kiln;
using namespace kiln::opsa;
using relay::Attrs;

namespace {

const DataType f32 = DataType::f32();

// Runs op under both schedules and compares each output with want(call, inputs).
void check(const std::string& op, const std::vector<HostTensor>& in, const Attrs& attrs,
           const std::function<std::vector<HostTensor>(const relay::Expr&)>& want) {
  for (Sched m : {Sched::Naive, Sched::Default}) {
    CallResult r = run_call(op, in, attrs, m);
    std::vector<HostTensor> w = want(r.call);
    REQUIRE(w.size() == r.outputs.size());
    for (size_t i = 0; i < w.size(); ++i) {
      INFO(op << " " << attrs.str() << " output " << i << (m == Sched::Naive ? " (naive)" : " (default)"));
      CHECK(mismatch(r.outputs[i], w[i], 0, 0) == "");
    }
  }
}

void check_eval(const std::string& op, const std::vector<HostTensor>& in, const Attrs& attrs) {
  check(op, in, attrs, [&](const relay::Expr& call) { return std::vector<HostTensor>{evaluate(call, in)}; });
}

// A reference that maps every output coordinate to the input element it copies (or -1: fill).
HostTensor gather_ref(const HostTensor& x, const Shape& out, const std::function<int64_t(const std::vector<int64_t>&)>& src,
                      double fill = 0) {
  auto v = x.to_doubles();
  std::vector<double> o(static_cast<size_t>(relay::num_elements(out)));
  for_each_index(out, [&](int64_t f, const std::vector<int64_t>& c) {
    int64_t s = src(c);
    o[f] = s < 0 ? fill : v[s];
  });
  return HostTensor::from_doubles(x.dtype(), out, o);
}

}  // namespace

TEST_CASE("ops_a: reshape, transpose, broadcast_to, tile, strided_slice, take, concatenate", "[ops_a]") {
  HostTensor x = random_tensor(f32, {2, 3, 4, 5}, 1);
  for (auto shape : {Shape{6, 20}, Shape{2, 60}, Shape{120}, Shape{1, 2, 1, 3, 20, 1}, Shape{4, 30}, Shape{5, 4, 6}}) {
    check_eval("reshape", {x}, Attrs().set_ints("newshape", shape));
  }
  check_eval("reshape", {HostTensor::scalar(DataType::i64(), 42)}, Attrs().set_ints("newshape", {1, 1}));
  check_eval("reshape", {random_tensor(DataType::i32(), {1, 1}, 2, -9, 9)}, Attrs().set_ints("newshape", {}));
  for (auto axes : {std::vector<int64_t>{0, 2, 3, 1}, {3, 2, 1, 0}, {1, 0, 2, 3}}) {
    check_eval("transpose", {x}, Attrs().set_ints("axes", axes));
  }
  check_eval("broadcast_to", {random_tensor(DataType::i8(), {3, 1}, 3, -9, 9)}, Attrs().set_ints("shape", {2, 3, 16}));
  check_eval("tile", {random_tensor(DataType::i64(), {2, 1, 3}, 4, -9, 9)}, Attrs().set_ints("reps", {2, 5, 3}));
  // Slices with steps, negative ones included (normalized as the relay op keeps them).
  check_eval("strided_slice", {x},
             Attrs().set_ints("begin", {0, 2, 1, 4}).set_ints("end", {2, -1, 4, 0}).set_ints("strides", {1, -1, 2, -2}));
  check_eval("strided_slice", {x},
             Attrs().set_ints("begin", {1, 0, 0, 1}).set_ints("end", {2, 3, 4, 5}).set_ints("strides", {1, 2, 3, 1}));
  HostTensor idx = HostTensor::from_int64s(DataType::i64(), {2, 2}, {0, -1, 3, 1});
  check_eval("take", {x, idx}, Attrs().set_int("axis", 2));
  check_eval("take", {x, HostTensor::from_int64s(DataType::i32(), {3}, {2, 0, -2})}, Attrs().set_int("axis", 1));
  check_eval("take", {x, HostTensor::scalar(DataType::i64(), -1)}, Attrs().set_int("axis", 3));  // scalar index
  HostTensor a = random_tensor(f32, {2, 3, 5}, 5), b = random_tensor(f32, {2, 1, 5}, 6),
             c = random_tensor(f32, {2, 4, 5}, 7);
  check_eval("concatenate", {a, b, c}, Attrs().set_int("axis", 1));
  check_eval("concatenate", {a, random_tensor(f32, {2, 3, 11}, 8)}, Attrs().set_int("axis", 2));
  check_eval("concatenate", {a}, Attrs().set_int("axis", 0));
}

TEST_CASE("ops_a: split returns one tensor per piece", "[ops_a]") {
  HostTensor x = random_tensor(DataType::i32(), {3, 10, 2}, 9, -99, 99);
  std::vector<int64_t> sizes{2, 5, 3};
  check("split", {x}, Attrs().set_int("axis", 1).set_ints("sizes", sizes), [&](const relay::Expr&) {
    std::vector<HostTensor> out;
    int64_t off = 0;
    for (int64_t s : sizes) {
      out.push_back(gather_ref(x, {3, s, 2}, [&](const std::vector<int64_t>& c) {
        return flat_index(x.shape(), {c[0], c[1] + off, c[2]});
      }));
      off += s;
    }
    return out;
  });
}

TEST_CASE("ops_a: pad in constant, reflect, edge and wrap modes, with crops", "[ops_a]") {
  HostTensor x = random_tensor(f32, {2, 4, 5}, 10);
  const std::vector<int64_t> pads{0, 2, -1, 1, 3, 2};  // begins then ends; -1 crops
  for (const char* mode : {"constant", "reflect", "edge", "wrap"}) {
    Attrs a = Attrs().set_ints("pad_width", pads).set_str("mode", mode).set_float("pad_value", 1.5);
    Shape out{2 + 0 + 1, 4 + 2 + 3, 5 - 1 + 2};
    std::string m = mode;
    check("nn.pad", {x}, a, [&](const relay::Expr&) {
      return std::vector<HostTensor>{gather_ref(x, out, [&](const std::vector<int64_t>& c) {
        std::vector<int64_t> s(3);
        for (int d = 0; d < 3; ++d) {
          int64_t n = x.shape()[d], i = c[d] - pads[d];
          if (i >= 0 && i < n) {
            s[d] = i;
          } else if (m == "constant") {
            return int64_t{-1};
          } else if (m == "edge") {
            s[d] = i < 0 ? 0 : n - 1;
          } else if (m == "reflect") {
            s[d] = i < 0 ? -i : 2 * (n - 1) - i;
          } else {
            s[d] = ((i % n) + n) % n;
          }
        }
        return flat_index(x.shape(), s);
      }, 1.5)};
    });
  }
}

TEST_CASE("ops_a: depth_to_space (DCR, CRD), space_to_depth, trilu", "[ops_a]") {
  HostTensor x = random_tensor(f32, {2, 8, 3, 2}, 11);
  for (const char* mode : {"DCR", "CRD"}) {
    std::string m = mode;
    check("nn.depth_to_space", {x}, Attrs().set_int("block_size", 2).set_str("mode", mode), [&](const relay::Expr&) {
      return std::vector<HostTensor>{gather_ref(x, {2, 2, 6, 4}, [&](const std::vector<int64_t>& c) {
        int64_t bh = c[2] % 2, bw = c[3] % 2;
        int64_t ic = m == "DCR" ? (bh * 2 + bw) * 2 + c[1] : c[1] * 4 + bh * 2 + bw;
        return flat_index(x.shape(), {c[0], ic, c[2] / 2, c[3] / 2});
      })};
    });
  }
  HostTensor y = random_tensor(DataType::i64(), {1, 3, 4, 6}, 12, -50, 50);
  check("nn.space_to_depth", {y}, Attrs().set_int("block_size", 2), [&](const relay::Expr&) {
    return std::vector<HostTensor>{gather_ref(y, {1, 12, 2, 3}, [&](const std::vector<int64_t>& c) {
      int64_t ch = c[1] % 3, t = c[1] / 3;
      return flat_index(y.shape(), {c[0], ch, c[2] * 2 + t / 2, c[3] * 2 + t % 2});
    })};
  });
  HostTensor z = random_tensor(f32, {2, 4, 5}, 13);
  for (int upper : {0, 1}) {
    for (int64_t k : {-1, 0, 2, 100}) {
      check("trilu", {z}, Attrs().set_int("upper", upper).set_int("k", k), [&](const relay::Expr&) {
        return std::vector<HostTensor>{gather_ref(z, z.shape(), [&](const std::vector<int64_t>& c) {
          int64_t d = c[2] - c[1];
          bool keep = upper ? d >= k : d <= k;
          return keep ? flat_index(z.shape(), c) : -1;
        })};
      });
    }
  }
}

TEST_CASE("ops_a: gather_elements, gather_nd, one_hot", "[ops_a]") {
  HostTensor x = random_tensor(f32, {3, 4, 5}, 14);
  HostTensor ie = random_tensor(DataType::i64(), {3, 2, 5}, 15, -4, 3);
  check("gather_elements", {x, ie}, Attrs().set_int("axis", 1), [&](const relay::Expr&) {
    auto iv = ie.to_int64s();
    return std::vector<HostTensor>{gather_ref(x, ie.shape(), [&](const std::vector<int64_t>& c) {
      int64_t i = iv[flat_index(ie.shape(), c)];
      return flat_index(x.shape(), {c[0], i < 0 ? i + 4 : i, c[2]});
    })};
  });
  // batch_dims 1: indices [3, 2, 1] pick rows of each batch's [4, 5].
  HostTensor in = HostTensor::from_int64s(DataType::i64(), {3, 2, 1}, {0, 3, 1, -1, 2, 2});
  check("gather_nd", {x, in}, Attrs().set_int("batch_dims", 1), [&](const relay::Expr&) {
    auto iv = in.to_int64s();
    return std::vector<HostTensor>{gather_ref(x, {3, 2, 5}, [&](const std::vector<int64_t>& c) {
      int64_t i = iv[c[0] * 2 + c[1]];
      return flat_index(x.shape(), {c[0], i < 0 ? i + 4 : i, c[2]});
    })};
  });
  HostTensor in2 = HostTensor::from_int64s(DataType::i64(), {2, 3}, {0, 1, 2, 2, 3, 4});
  check("gather_nd", {x, in2}, Attrs().set_int("batch_dims", 0), [&](const relay::Expr&) {
    auto iv = in2.to_int64s();
    return std::vector<HostTensor>{gather_ref(x, {2}, [&](const std::vector<int64_t>& c) {
      return flat_index(x.shape(), {iv[c[0] * 3], iv[c[0] * 3 + 1], iv[c[0] * 3 + 2]});
    })};
  });
  HostTensor oi = HostTensor::from_int64s(DataType::i64(), {2, 3}, {0, 4, -1, 2, 9, 1});
  HostTensor values = HostTensor::from_doubles(f32, {2}, {-2, 7});
  for (int64_t axis : {0, 1, 2}) {
    check("one_hot", {oi, values}, Attrs().set_int("depth", 5).set_int("axis", axis), [&](const relay::Expr& call) {
      const Shape& out = call.tensor_type().shape;
      auto iv = oi.to_int64s();
      std::vector<double> o;
      for_each_index(out, [&](int64_t, const std::vector<int64_t>& c) {
        std::vector<int64_t> ic;
        for (int d = 0; d < 3; ++d)
          if (d != axis) ic.push_back(c[d]);
        int64_t v = iv[flat_index(oi.shape(), ic)];
        if (v < 0) v += 5;
        o.push_back(v == c[axis] ? 7 : -2);
      });
      return std::vector<HostTensor>{HostTensor::from_doubles(f32, out, o)};
    });
  }
}
