// A CompiledModel built by hand (te schedules -> kiln::loop_ir -> codegen::build, a plan, weights) for the
// export/runtime tests, until the graph compiler's kiln::compile exists; and a plain C++
// reference of what it computes.
//
//   x [B, I] (input)   W [I, H], bias [H] (constants in the weights blob)
//   h = relu(x W + bias)       kernel k_dense (parallel over rows)   intermediate entry
//   y = 0.5 h + 1              kernel k_half (vectorized)             output "y" [B, H]
//   s[i] = sum_j h[i, j]       kernel k_rowsum                        output "s" [B]
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "kiln/pipeline.h"
#include "kiln/compiler.h"
#include "kiln/te/operation.h"
#include "kiln/te/reduce.h"

namespace kiln::test_export {

constexpr int64_t kB = 4, kI = 16, kH = 8;

inline std::vector<float> pattern(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 12345u;
  for (float& f : v) {
    s = s * 1664525u + 1013904223u;
    f = static_cast<float>((s >> 8) & 0xFFFF) / 65536.0f - 0.5f;
  }
  return v;
}

inline int64_t align64(int64_t n) { return (n + 63) / 64 * 64; }

struct DenseModel {
  CompiledModel model;
  std::vector<float> W = pattern(kI * kH, 1), bias = pattern(kH, 2);

  // alias_input: memory planning puts output y over input x (x is dead once h exists), so the
  // executor must keep a copy of x to run twice.
  // bias_offset: where the bias lives in the weights blob (default: right after W), to test
  // constants far into a big blob.
  explicit DenseModel(bool alias_input = false, const std::string& target = "", int64_t bias_offset = 0) {
    ir::DataType f32 = ir::DataType::f32();
    {
      te::Tensor x = te::placeholder({kB, kI}, f32, "x");
      te::Tensor w = te::placeholder({kI, kH}, f32, "W");
      te::Tensor b = te::placeholder({kH}, f32, "bias");
      te::IterVar k = te::reduce_axis(kI, "k");
      te::Tensor acc = te::compute({kB, kH}, [&](ir::Var i, ir::Var j) { return te::sum(x(i, k) * w(k, j), {k}); },
                                   "acc");
      te::Tensor h = te::compute({kB, kH}, [&](ir::Var i, ir::Var j) {
        return ir::max(acc(i, j) + b(j), ir::make_zero(f32));
      }, "h");
      auto s = schedule::create({h});
      s[h].parallel(s[h].op_axis(0));
      model.kernels.push_back(kiln::loop_ir(s, {x, w, b, h}, "k_dense"));
    }
    {
      te::Tensor h = te::placeholder({kB, kH}, f32, "h");
      te::Tensor y = te::compute({kB, kH}, [&](ir::Var i, ir::Var j) {
        return h(i, j) * ir::make_const(f32, 0.5) + ir::make_const(f32, 1.0);
      }, "y");
      auto s = schedule::create({y});
      s[y].vectorize(s[y].op_axis(1));
      model.kernels.push_back(kiln::loop_ir(s, {h, y}, "k_half"));
    }
    {
      te::Tensor h = te::placeholder({kB, kH}, f32, "h");
      te::IterVar j = te::reduce_axis(kH, "j");
      te::Tensor r = te::compute({kB}, [&](ir::Var i) { return te::sum(h(i, j), {j}); }, "s");
      auto s = schedule::create({r});
      model.kernels.push_back(kiln::loop_ir(s, {h, r}, "k_rowsum"));
    }
    model.target = target.empty() ? Target::host() : Target::parse(target);
    compile_kernels();
    runtime::GraphPlan& p = model.plan;
    p.target = target.empty() ? "" : model.target.str();
    int64_t w_bytes = kI * kH * 4, b_off = std::max(align64(w_bytes), bias_offset);
    model.weights.resize(b_off + kH * 4);
    std::copy_n(reinterpret_cast<const uint8_t*>(W.data()), w_bytes, model.weights.data());
    std::copy_n(reinterpret_cast<const uint8_t*>(bias.data()), kH * 4, model.weights.data() + b_off);
    DLDataType f{kDLFloat, 32, 1};
    p.storage_bytes = {kB * kI * 4, kB * kH * 4, kB * kH * 4, kB * 4};
    p.entries = {
        {f, {kB, kI}, 0, 0, false},     // 0 x
        {f, {kI, kH}, -1, 0, true},     // 1 W
        {f, {kH}, -1, b_off, true},     // 2 bias
        {f, {kB, kH}, 1, 0, false},     // 3 h
        {f, {kB, kH}, alias_input ? 0 : 2, 0, false},  // 4 y
        {f, {kB}, 3, 0, false},         // 5 s
    };
    p.nodes = {{"k_dense", {0, 1, 2, 3}, "dense+add+relu"}, {"k_half", {3, 4}, "multiply+add"},
               {"k_rowsum", {3, 5}, "sum"}};
    p.inputs = {{"x", 0}};
    p.outputs = {{"y", 4}, {"s", 5}};
  }

  // The kernels' machine code, as compile() makes it (again after a test changed them).
  void compile_kernels() { model.cpu = codegen::build(model.kernels, model.target); }

  // The reference outputs y and s for input x, in double.
  void reference(const std::vector<float>& x, std::vector<float>* y, std::vector<float>* s) const {
    y->assign(kB * kH, 0.f);
    s->assign(kB, 0.f);
    for (int64_t i = 0; i < kB; ++i) {
      double sum = 0;
      for (int64_t j = 0; j < kH; ++j) {
        double a = bias[j];
        for (int64_t k = 0; k < kI; ++k) a += double(x[i * kI + k]) * W[k * kH + j];
        double h = std::max(a, 0.0);
        (*y)[i * kH + j] = static_cast<float>(0.5 * h + 1.0);
        sum += h;
      }
      (*s)[i] = static_cast<float>(sum);
    }
  }
};

// A scratch directory for one test, removed with its files at the end.
struct ScratchDir {
  std::string path;
  ScratchDir() {
    char tmpl[] = "/tmp/kiln_test_export_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~ScratchDir() {
    std::string cmd = "rm -rf '" + path + "'";
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", path.c_str());
  }
  std::string operator/(const std::string& name) const { return path + "/" + name; }
};

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Runs a shell command and returns its standard output.
inline std::string shell(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

}  // namespace kiln::test_export
