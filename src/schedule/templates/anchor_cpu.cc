#include "schedule/templates/anchor_cpu.h"

#include <algorithm>
#include <string>

#include "kiln/support/error.h"

namespace kiln::schedule {

namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

const te::ComputeOpNode* compute_of(const Stage& st) { return st->op.as<te::ComputeOpNode>(); }

// Root stages that no template touched get the generic loops.
void finish_untouched(Schedule& s, int64_t lanes) {
  for (const Stage& st : s.stages()) {
    if (!compute_of(st) || st->attach != AttachKind::Root) continue;
    if (!st->relations.empty() || !st->attrs.empty()) continue;
    schedule_loops_cpu(s, st->origin_op.output(0), lanes);
  }
}

}  // namespace

te::Tensor input_with_suffix(const te::Tensor& t, const std::string& suffix) {
  for (const te::Tensor& in : t.op().input_tensors()) {
    if (ends_with(in.op().name(), suffix)) return in;
  }
  return te::Tensor();
}

int64_t largest_divisor(int64_t n, int64_t cap) {
  for (int64_t d = std::min(n, cap); d > 1; --d) {
    if (n % d == 0) return d;
  }
  return 1;
}

int64_t vector_width(int64_t n, int64_t cap) {
  int64_t w = 1;
  while (w * 2 <= cap && n % (w * 2) == 0) w *= 2;
  return w;
}

bool vectorize_innermost(Stage st, int64_t lanes) {
  ir::IterVar inner = st.op_axis().back();
  int64_t e = ir::as_const_int(inner->dom.extent).value_or(0);
  int64_t v = vector_width(e, lanes);
  if (v < 4) return false;
  if (v == e) st.vectorize(inner);
  else st.vectorize(st.split(inner, v).second);
  return true;
}

void keep_rolled(Stage st, const std::vector<ir::IterVar>& loops) {
  for (const ir::IterVar& iv : loops) st.pragma(iv, "unroll", ir::Expr(1));
}

ir::IterVar fuse_parallel(Stage st, const std::vector<ir::IterVar>& axes) {
  KILN_CHECK(!axes.empty()) << "fuse_parallel: no axes";
  ir::IterVar fused = axes[0];
  for (size_t i = 1; i < axes.size(); ++i) fused = st.fuse(fused, axes[i]);
  st.parallel(fused);
  return fused;
}

void compute_root_parallel(Schedule& s, const te::Tensor& t, int64_t lanes) {
  if (!t.defined() || !t.op().as<te::ComputeOpNode>()) return;
  Stage st = s[t];
  st.compute_root();
  auto ax = st.op_axis();
  if (lanes > 1 && ax.size() > 2) vectorize_innermost(st, lanes);
  fuse_parallel(st, {ax[0], ax[1]});
}

void place_pad(Schedule& s, const te::Tensor& pad, Stage consumer, const ir::IterVar& at, bool at_root, int64_t lanes) {
  if (at_root || !pad.defined() || !pad.op().as<te::ComputeOpNode>()) {
    compute_root_parallel(s, pad, lanes);
    return;
  }
  s[pad].compute_at(consumer, at);
  vectorize_innermost(s[pad], lanes);
}

int64_t blocked_task_rows(const Target& target, const te::Tensor& out, const te::Tensor& pad, int64_t ohr) {
  const int64_t oh = out.shape()[2], ow = out.shape()[3];
  const bool padded = pad.defined() && pad.op().as<te::ComputeOpNode>();
  const int64_t row_bytes = (padded ? pad.shape()[3] : ow) * out.shape()[4] * out.dtype().bytes();
  const int64_t stride = oh > 1 && padded ? std::max<int64_t>(1, (pad.shape()[2] - 1) / (oh - 1)) : 1;
  const int64_t tiles = oh / ohr, planes = out.shape()[0] * out.shape()[1];
  int64_t per_task = 1;
  for (int64_t r = 1; r <= tiles; ++r) {
    if (tiles % r != 0) continue;
    bool fits = (r * ohr * stride + 2) * row_bytes * 8 <= target.facts.l2_bytes;
    if (fits && planes * (tiles / r) >= 4 * target.facts.cores) per_task = r;
  }
  return per_task * ohr;
}

ir::IterVar schedule_blocked_window(Schedule& s, const te::Tensor& tiled, const te::Tensor& core, int64_t rows,
                                    int64_t ohr, int64_t nv) {
  Stage out = s[tiled];
  auto ax = out.op_axis();  // n, block, oh, ow, lane
  auto [otask, rin] = out.split(ax[2], rows);
  auto [orow, ohi] = out.split(rin, ohr);
  auto [owo, owi] = out.split(ax[3], nv);
  out.reorder({ax[0], ax[1], otask, orow, owo, ohi, owi, ax[4]});
  out.unroll(ohi);
  out.unroll(owi);
  out.vectorize(ax[4]);
  ir::IterVar task = fuse_parallel(out, {ax[0], ax[1], otask});

  Stage c = s[core];
  c.compute_at(out, owo);
  auto cx = c.op_axis();
  auto r = c.reduce_axis();  // ry, rx
  c.reorder({cx[0], cx[1], r[0], r[1], cx[2], cx[3], cx[4]});
  for (const ir::IterVar& v : {r[0], r[1], cx[2], cx[3]}) c.unroll(v);
  c.vectorize(cx[4]);
  return task;
}

void schedule_loops_cpu(Schedule& s, const te::Tensor& t, int64_t lanes) {
  Stage st = s[t];
  const auto* c = compute_of(st);
  if (!c) return;
  std::vector<ir::IterVar> ax = st.op_axis();
  size_t n = ax.size();
  std::vector<ir::IterVar> outer;
  if (!c->is_reduction()) {
    int64_t e = t.shape().back();
    int64_t v = vector_width(e, lanes);
    if (v >= 4 && (n > 1 || e > v)) {
      auto [io, ii] = st.split(ax.back(), v);
      st.vectorize(ii);
      outer.assign(ax.begin(), ax.end() - 1);
      outer.push_back(io);
    } else {
      outer.assign(ax.begin(), ax.end() - (n > 1 ? 1 : 0));
    }
  } else {
    outer = ax;
  }
  // Enough outer loops for the threads, the rest stay serial inside.
  std::vector<ir::IterVar> par;
  int64_t work = 1;
  for (const ir::IterVar& iv : outer) {
    if (work >= 64) break;
    par.push_back(iv);
    work *= ir::as_const_int(iv->dom.extent).value_or(1);
  }
  if (!par.empty()) fuse_parallel(st, par);
}

void inline_injective(Schedule& s, const std::vector<te::Tensor>& outputs, const std::vector<te::Tensor>& keep) {
  for (const Stage& st : s.stages()) {
    const auto* c = compute_of(st);
    if (!c || c->is_reduction() || st->is_output) continue;
    bool kept = std::any_of(keep.begin(), keep.end(), [&](const te::Tensor& k) { return k.op().same_as(st->origin_op); });
    if (!kept) Stage(st).compute_inline();
  }
  (void)outputs;
}

Schedule schedule_generic_cpu(const std::vector<te::Tensor>& outputs, const Target& target) {
  Schedule s = create(outputs);
  inline_injective(s, outputs, {});
  finish_untouched(s, target.lanes(32));
  return s;
}

// An op computed in a wider type (a float16 matmul accumulates in float32), or over padded rows,
// ends in a cast or slice of its "<name>.acc" stage: the template places the accumulation, the
// cast inlines like an epilogue.
te::Tensor accumulation_of(const te::Tensor& anchor) {
  const auto* c = anchor.op().as<te::ComputeOpNode>();
  std::vector<te::Tensor> in = anchor.op().input_tensors();
  if (!c || c->is_reduction() || in.size() != 1 || in[0].op().name() != anchor.op().name() + ".acc") return anchor;
  return in[0];
}

Schedule schedule_anchor_cpu(const std::vector<te::Tensor>& outputs, const te::Tensor& op_output, AnchorTemplate tmpl,
                             const Target& target, Config& cfg) {
  KILN_USER_CHECK(!outputs.empty() && op_output.defined()) << "schedule_anchor_cpu: no outputs or no anchor";
  if (!tmpl) return schedule_generic_cpu(outputs, target);
  te::Tensor anchor = accumulation_of(op_output);
  Schedule s = create(outputs);
  // The stage that carries the tile loops: the single output when it has the op's shape (the
  // elementwise tail is inlined into it), else the anchor itself (its accumulation may have
  // more rows: a matmul padded to whole register tiles).
  te::Tensor tiled = outputs.size() == 1 && outputs[0].shape() == op_output.shape() ? outputs[0] : anchor;
  // The anchor's own stages stay (its template places them); everything else injective inlines.
  // Its own: named after the op ("<name>.pad" beside "<name>.acc").
  const std::string& own = op_output.op().name();
  std::vector<te::Tensor> keep = {anchor};
  std::vector<te::Tensor> frontier = anchor.op().input_tensors();
  while (!frontier.empty()) {
    te::Tensor t = frontier.back();
    frontier.pop_back();
    if (!t.op().as<te::ComputeOpNode>()) continue;
    const std::string& n = t.op().name();
    if (!starts_with(n, own)) continue;  // a fused producer, not the anchor's own
    if (ends_with(n, ".grouped")) continue;             // a pure view: inline
    keep.push_back(t);
    for (const te::Tensor& in : t.op().input_tensors()) frontier.push_back(in);
  }
  inline_injective(s, outputs, keep);
  tmpl(s, tiled, anchor, target, cfg);
  finish_untouched(s, target.lanes(32));
  return s;
}

}  // namespace kiln::schedule
