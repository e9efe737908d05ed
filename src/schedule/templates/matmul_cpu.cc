#include "kiln/schedule/templates/matmul_cpu.h"

#include <algorithm>

#include "kiln/te/reduce.h"

namespace kiln::schedule {

using ir::Var;

namespace {
// The largest divisor of n that is at most cap (1 if none larger).
int64_t divisor_at_most(int64_t n, int64_t cap) {
  for (int64_t d = std::min(n, cap); d > 1; --d) if (n % d == 0) return d;
  return 1;
}
}  // namespace

MatmulProgram matmul_cpu(int64_t m, int64_t n, int64_t k, Config& cfg) {
  const auto f32 = ir::DataType::f32();
  int64_t bi = divisor_at_most(m, 8), bj = divisor_at_most(n, 32), bk = divisor_at_most(k, 4);
  int64_t mr = cfg.define_split("tile_i", m, 2, {m / bi, bi}, 32)[1];
  int64_t nr = cfg.define_split("tile_j", n, 2, {n / bj, bj}, 64)[1];
  int64_t ku = cfg.define_split("tile_k", k, 2, {k / bk, bk}, 16)[1];
  int64_t order = cfg.define_knob("order", {0, 1}, 1);

  MatmulProgram p;
  p.a = te::placeholder({m, k}, f32, "A");
  p.b = te::placeholder({k, n}, f32, "B");
  // B packed into panels of nr columns: a micro-kernel reads one contiguous panel row per k.
  te::Tensor bp = te::compute({n / nr, k, nr}, [&](Var jo, Var kk, Var ji) {
    return p.b(kk, jo * static_cast<int>(nr) + ji);
  }, "B.packed", {"jo", "k", "ji"});
  auto kk = te::reduce_axis(k, "k");
  p.c = te::compute({m, n}, [&](Var i, Var j) {
    return te::sum(p.a(i, kk) * bp(j / static_cast<int>(nr), kk, j % static_cast<int>(nr)), {kk});
  }, "C", {"i", "j"});

  p.sched = create({p.c});
  Schedule& s = p.sched;
  // Accumulate an mr x nr tile in registers, then store it.
  te::Tensor cc = s.cache_write(p.c, "local");
  auto t = s[p.c].tile(s[p.c].op_axis(0), s[p.c].op_axis(1), mr, nr);  // io, jo, ii, ji
  ir::IterVar outer = t[0], inner_tile = t[1];
  if (order == 1) {
    s[p.c].reorder({t[1], t[0]});
    outer = t[1];
    inner_tile = t[0];
  }
  s[p.c].vectorize(t[3]);
  s[cc].compute_at(s[p.c], inner_tile);
  auto ci = s[cc].op_axis(0), cj = s[cc].op_axis(1);
  auto [ko, ki] = s[cc].split(s[cc].reduce_axis(0), ku);
  s[cc].reorder({ko, ki, ci, cj});
  s[cc].vectorize(cj);
  s[cc].unroll(ci);
  s[cc].unroll(ki);
  s[p.c].parallel(outer);

  s[bp].vectorize(s[bp].op_axis(2));
  s[bp].parallel(s[bp].op_axis(0));
  return p;
}

}  // namespace kiln::schedule
