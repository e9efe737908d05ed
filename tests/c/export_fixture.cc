// Fixture of the C deploy tests: exports a small classifier and the data to check it with.
//
//   kiln_export_fixture DIR   writes DIR/model.so, DIR/input.raw and DIR/expected_top5.txt
//
// The classifier is built by hand from te schedules (until kiln::compile lands it can be an
// ONNX model): image [1, 3, 8, 8] -> hidden = relu(flatten(image) W1 + b1) [1, 32] (parallel)
// -> logits = hidden W2 + b2 [1, 10] (output "logits"). expected_top5.txt holds the five best
// classes of a double-precision reference, best first, one per line.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <numeric>

#include "kiln/compiler.h"
#include "kiln/pipeline.h"
#include "kiln/te/operation.h"
#include "kiln/te/reduce.h"

using namespace kiln;

namespace {

constexpr int64_t kC = 3, kS = 8, kIn = kC * kS * kS, kHidden = 32, kClasses = 10;

std::vector<float> pattern(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 12345u;
  for (float& f : v) {
    s = s * 1664525u + 1013904223u;
    f = static_cast<float>((s >> 8) & 0xFFFF) / 65536.0f - 0.5f;
  }
  return v;
}

CompiledModel classifier(const std::vector<float>& w1, const std::vector<float>& b1, const std::vector<float>& w2,
                         const std::vector<float>& b2) {
  CompiledModel m;
  ir::DataType f32 = ir::DataType::f32();
  {
    te::Tensor x = te::placeholder({1, kC, kS, kS}, f32, "image");
    te::Tensor w = te::placeholder({kIn, kHidden}, f32, "W1");
    te::Tensor b = te::placeholder({kHidden}, f32, "b1");
    te::IterVar rc = te::reduce_axis(kC, "rc"), ry = te::reduce_axis(kS, "ry"), rx = te::reduce_axis(kS, "rx");
    te::Tensor acc = te::compute({1, kHidden}, [&](ir::Var n, ir::Var j) {
      ir::Expr flat = (rc.var() * ir::Expr(int(kS)) + ry.var()) * ir::Expr(int(kS)) + rx.var();
      return te::sum(x(n, rc, ry, rx) * w(flat, j), {rc, ry, rx});
    }, "acc");
    te::Tensor h = te::compute({1, kHidden}, [&](ir::Var n, ir::Var j) {
      return ir::max(acc(n, j) + b(j), ir::make_zero(f32));
    }, "hidden");
    auto s = schedule::create({h});
    s[h].parallel(s[h].op_axis(1));
    m.kernels.push_back(kiln::loop_ir(s, {x, w, b, h}, "classifier_hidden"));
  }
  {
    te::Tensor h = te::placeholder({1, kHidden}, f32, "hidden");
    te::Tensor w = te::placeholder({kHidden, kClasses}, f32, "W2");
    te::Tensor b = te::placeholder({kClasses}, f32, "b2");
    te::IterVar k = te::reduce_axis(kHidden, "k");
    te::Tensor acc = te::compute({1, kClasses}, [&](ir::Var n, ir::Var c) { return te::sum(h(n, k) * w(k, c), {k}); },
                                 "acc");
    te::Tensor logits = te::compute({1, kClasses}, [&](ir::Var n, ir::Var c) { return acc(n, c) + b(c); }, "logits");
    auto s = schedule::create({logits});
    m.kernels.push_back(kiln::loop_ir(s, {h, w, b, logits}, "classifier_logits"));
  }
  // Weights: W1, b1, W2, b2, each at a 64-byte aligned offset.
  std::vector<int64_t> offsets;
  for (const std::vector<float>* v : {&w1, &b1, &w2, &b2}) {
    int64_t off = (static_cast<int64_t>(m.weights.size()) + 63) / 64 * 64;
    offsets.push_back(off);
    m.weights.resize(off + v->size() * 4);
    std::copy_n(reinterpret_cast<const uint8_t*>(v->data()), v->size() * 4, m.weights.data() + off);
  }
  DLDataType f{kDLFloat, 32, 1};
  runtime::GraphPlan& p = m.plan;
  p.storage_bytes = {kIn * 4, 256, 64};
  p.entries = {{f, {1, kC, kS, kS}, 0, 0, false},  {f, {kIn, kHidden}, -1, offsets[0], true},
               {f, {kHidden}, -1, offsets[1], true}, {f, {1, kHidden}, 1, 0, false},
               {f, {kHidden, kClasses}, -1, offsets[2], true}, {f, {kClasses}, -1, offsets[3], true},
               {f, {1, kClasses}, 2, 0, false}};
  p.nodes = {{"classifier_hidden", {0, 1, 2, 3}, "dense+add+relu"}, {"classifier_logits", {3, 4, 5, 6}, "dense+add"}};
  p.inputs = {{"image", 0}};
  p.outputs = {{"logits", 6}};
  m.target = Target::host();
  m.cpu = codegen::build(m.kernels, m.target);
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  std::string dir = argv[1];
  std::vector<float> w1 = pattern(kIn * kHidden, 11), b1 = pattern(kHidden, 12), w2 = pattern(kHidden * kClasses, 13),
                     b2 = pattern(kClasses, 14), image = pattern(kIn, 15);
  try {
    export_library(classifier(w1, b1, w2, b2), dir + "/model.so");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "export failed: %s\n", e.what());
    return 1;
  }
  std::ofstream(dir + "/input.raw", std::ios::binary)
      .write(reinterpret_cast<const char*>(image.data()), static_cast<std::streamsize>(image.size() * 4));

  std::vector<double> hidden(kHidden), logits(kClasses);
  for (int64_t j = 0; j < kHidden; ++j) {
    double a = b1[j];
    for (int64_t i = 0; i < kIn; ++i) a += double(image[i]) * w1[i * kHidden + j];
    hidden[j] = std::max(a, 0.0);
  }
  for (int64_t c = 0; c < kClasses; ++c) {
    double a = b2[c];
    for (int64_t j = 0; j < kHidden; ++j) a += hidden[j] * w2[j * kClasses + c];
    logits[c] = a;
  }
  std::vector<int> order(kClasses);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  // A near tie could legitimately flip in float32; the data must not have one.
  for (int i = 0; i < 5; ++i) {
    if (logits[order[i]] - logits[order[i + 1]] < 1e-3) {
      std::fprintf(stderr, "fixture data has a near tie between classes %d and %d\n", order[i], order[i + 1]);
      return 1;
    }
  }
  std::ofstream top(dir + "/expected_top5.txt");
  for (int i = 0; i < 5; ++i) top << order[i] << "\n";
  std::printf("wrote %s/model.so, input.raw, expected_top5.txt\n", dir.c_str());
  return 0;
}
