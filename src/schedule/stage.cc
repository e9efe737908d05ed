// Stage primitives: loop transformations, loop annotations and attachment. They only record
// decisions; lowering (lower.cc) carries them out. Each validates what it is given.
#include <algorithm>
#include <functional>
#include <unordered_set>

#include "kiln/schedule/schedule.h"
#include "kiln/support/error.h"

namespace kiln::schedule {
namespace {

const std::string& iv_name(const ir::IterVar& iv) { return iv->var.name(); }

// Position of iv among the stage's leaves; kiln::Error if it is not one.
size_t leaf_pos(const StageNode& s, const ir::IterVar& iv, const char* prim) {
  KILN_USER_CHECK(iv.defined()) << prim << ": undefined axis for stage '" << s.origin_op.name() << "'";
  for (size_t i = 0; i < s.leaf_iter_vars.size(); ++i) {
    if (s.leaf_iter_vars[i].same_as(iv)) return i;
  }
  KILN_THROW() << prim << ": axis '" << iv_name(iv) << "' is not a leaf axis of stage '" << s.origin_op.name()
               << "'";
  return 0;
}

void require_compute(const StageNode& s, const char* prim) {
  KILN_USER_CHECK(s.op.as<te::ComputeOpNode>())
      << prim << ": stage '" << s.origin_op.name() << "' is a placeholder, which has no loops to schedule";
}

// Static extent of an axis when known from its domain (informative: bound inference computes
// the extents actually used).
ir::Range static_range(int64_t extent) { return ir::Range(0, static_cast<int>(extent)); }
int64_t static_extent(const ir::IterVar& iv) {
  auto e = ir::as_const_int(iv->dom.extent);
  return e ? *e : 0;
}

std::pair<ir::IterVar, ir::IterVar> do_split(StageNode& s, const ir::IterVar& iv, int64_t factor, int64_t nparts,
                                             const char* prim) {
  require_compute(s, prim);
  size_t pos = leaf_pos(s, iv, prim);
  int64_t ext = static_extent(iv), inner_ext = factor, outer_ext = nparts;
  if (factor > 0 && ext > 0) outer_ext = (ext + factor - 1) / factor;
  if (nparts > 0 && ext > 0) inner_ext = (ext + nparts - 1) / nparts;
  ir::IterVar outer = ir::IterVar::make(ir::Var(iv_name(iv) + ".outer"), static_range(std::max<int64_t>(outer_ext, 1)),
                                        iv->iter_kind);
  ir::IterVar inner = ir::IterVar::make(ir::Var(iv_name(iv) + ".inner"), static_range(std::max<int64_t>(inner_ext, 1)),
                                        iv->iter_kind);
  IterVarRelation r;
  r.kind = IterVarRelation::Kind::Split;
  r.parent = iv;
  r.outer = outer;
  r.inner = inner;
  r.factor = factor;
  r.nparts = nparts;
  s.relations.push_back(r);
  s.all_iter_vars.push_back(outer);
  s.all_iter_vars.push_back(inner);
  s.leaf_iter_vars[pos] = outer;
  s.leaf_iter_vars.insert(s.leaf_iter_vars.begin() + static_cast<long>(pos) + 1, inner);
  return {outer, inner};
}

void annotate(StageNode& s, const ir::IterVar& iv, const char* prim, const char* done, ir::ForKind kind,
              bool reduce_ok, const std::string& tag = "") {
  require_compute(s, prim);
  leaf_pos(s, iv, prim);
  KILN_USER_CHECK(reduce_ok || iv->iter_kind != ir::IterKind::Reduce)
      << prim << ": axis '" << iv_name(iv) << "' of stage '" << s.origin_op.name()
      << "' is a reduction axis; only data-parallel loops can be " << done;
  IterVarAttr& a = s.attrs[iv.get()];
  a.for_kind = kind;
  a.thread_tag = tag;
}

// True if `consumer` reads `producer`'s op directly or through other stages.
bool reads_transitively(const ScheduleNode& sch, const StageNode* consumer, const StageNode* producer) {
  std::unordered_set<const StageNode*> seen;
  std::function<bool(const StageNode*)> visit = [&](const StageNode* s) {
    if (!seen.insert(s).second) return false;
    for (const te::Tensor& t : s->op.input_tensors()) {
      auto it = sch.stage_of_op.find(t.op().get());
      if (it == sch.stage_of_op.end()) continue;
      const StageNode* in = it->second.get();
      if (in == producer || visit(in)) return true;
    }
    return false;
  };
  return visit(consumer);
}

}  // namespace

std::pair<ir::IterVar, ir::IterVar> Stage::split(const ir::IterVar& iv, int64_t factor) {
  KILN_USER_CHECK(factor > 0) << "split: factor must be positive, got " << factor << " (stage '" << name() << "')";
  return do_split(*node_, iv, factor, 0, "split");
}

std::pair<ir::IterVar, ir::IterVar> Stage::split_nparts(const ir::IterVar& iv, int64_t nparts) {
  KILN_USER_CHECK(nparts > 0) << "split_nparts: nparts must be positive, got " << nparts << " (stage '" << name()
                              << "')";
  return do_split(*node_, iv, 0, nparts, "split_nparts");
}

std::vector<ir::IterVar> Stage::tile(const ir::IterVar& x, const ir::IterVar& y, int64_t x_factor, int64_t y_factor) {
  KILN_USER_CHECK(x.defined() && y.defined() && !x.same_as(y))
      << "tile: needs two distinct axes of stage '" << name() << "'";
  KILN_USER_CHECK(x_factor > 0 && y_factor > 0)
      << "tile: factors must be positive, got " << x_factor << " and " << y_factor << " (stage '" << name() << "')";
  leaf_pos(*node_, x, "tile");
  leaf_pos(*node_, y, "tile");
  auto [xo, xi] = do_split(*node_, x, x_factor, 0, "tile");
  auto [yo, yi] = do_split(*node_, y, y_factor, 0, "tile");
  reorder({xo, yo, xi, yi});
  return {xo, yo, xi, yi};
}

ir::IterVar Stage::fuse(const ir::IterVar& outer, const ir::IterVar& inner) {
  require_compute(*node_, "fuse");
  size_t po = leaf_pos(*node_, outer, "fuse"), pi = leaf_pos(*node_, inner, "fuse");
  KILN_USER_CHECK(pi == po + 1) << "fuse: axes '" << iv_name(outer) << "' and '" << iv_name(inner)
                                << "' are not adjacent in stage '" << name()
                                << "' (the inner axis must immediately follow the outer one)";
  KILN_USER_CHECK(outer->iter_kind == inner->iter_kind)
      << "fuse: cannot fuse axes '" << iv_name(outer) << "' and '" << iv_name(inner) << "' of stage '" << name()
      << "': one is a reduction axis and the other is not";
  int64_t ext = static_extent(outer) * static_extent(inner);
  ir::IterVar fused = ir::IterVar::make(ir::Var(iv_name(outer) + "." + iv_name(inner) + ".fused"),
                                        static_range(std::max<int64_t>(ext, 1)), outer->iter_kind);
  IterVarRelation r;
  r.kind = IterVarRelation::Kind::Fuse;
  r.outer = outer;
  r.inner = inner;
  r.fused = fused;
  node_->relations.push_back(r);
  node_->all_iter_vars.push_back(fused);
  auto& leaves = node_->leaf_iter_vars;
  leaves[po] = fused;
  leaves.erase(leaves.begin() + static_cast<long>(pi));
  return fused;
}

void Stage::reorder(const std::vector<ir::IterVar>& order) {
  require_compute(*node_, "reorder");
  std::vector<size_t> pos;
  for (size_t i = 0; i < order.size(); ++i) {
    pos.push_back(leaf_pos(*node_, order[i], "reorder"));
    for (size_t j = 0; j < i; ++j) {
      KILN_USER_CHECK(!order[j].same_as(order[i]))
          << "reorder: axis '" << iv_name(order[i]) << "' appears more than once (stage '" << name() << "')";
    }
  }
  std::vector<size_t> slots = pos;
  std::sort(slots.begin(), slots.end());
  std::vector<ir::IterVar> leaves = node_->leaf_iter_vars;
  for (size_t i = 0; i < order.size(); ++i) leaves[slots[i]] = order[i];
  node_->leaf_iter_vars = leaves;
}

void Stage::vectorize(const ir::IterVar& iv) { annotate(*node_, iv, "vectorize", "vectorized", ir::ForKind::Vectorized, false); }
void Stage::unroll(const ir::IterVar& iv) { annotate(*node_, iv, "unroll", "unrolled", ir::ForKind::Unrolled, true); }
void Stage::parallel(const ir::IterVar& iv) { annotate(*node_, iv, "parallel", "parallelized", ir::ForKind::Parallel, false); }

void Stage::bind(const ir::IterVar& iv, const std::string& thread_tag) {
  static const char* kTags[] = {"blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z",
                                "vthread"};
  bool known = std::find(std::begin(kTags), std::end(kTags), thread_tag) != std::end(kTags);
  KILN_USER_CHECK(known) << "bind: unknown thread tag '" << thread_tag << "' for axis '"
                         << (iv.defined() ? iv_name(iv) : "?") << "' of stage '" << name()
                         << "' (expected blockIdx.[xyz], threadIdx.[xyz] or vthread)";
  annotate(*node_, iv, "bind", "bound to threads", ir::ForKind::ThreadBinding, false, thread_tag);
}

void Stage::partial_sums(const ir::IterVar& iv) {
  require_compute(*node_, "partial_sums");
  leaf_pos(*node_, iv, "partial_sums");
  const auto* c = node_->op.as<te::ComputeOpNode>();
  KILN_USER_CHECK(c->is_reduction()) << "partial_sums: stage '" << name() << "' is not a reduction";
  for (auto& [other, a] : node_->attrs) a.partial_sum = false;  // one level of partial sums
  node_->attrs[iv.get()].partial_sum = true;
}

void Stage::pragma(const ir::IterVar& iv, const std::string& key, ir::Expr value) {
  require_compute(*node_, "pragma");
  leaf_pos(*node_, iv, "pragma");
  KILN_USER_CHECK(!key.empty()) << "pragma: empty key for axis '" << iv_name(iv) << "' of stage '" << name() << "'";
  node_->attrs[iv.get()].pragmas.emplace_back(key, std::move(value));
}

void Stage::tensorize(const ir::IterVar& iv, const TensorIntrin& intrin) {
  require_compute(*node_, "tensorize");
  leaf_pos(*node_, iv, "tensorize");
  KILN_USER_CHECK(intrin.decl.defined() && intrin.decl.op().as<te::ComputeOpNode>())
      << "tensorize: intrinsic '" << intrin.name << "' needs a compute declaration";
  KILN_USER_CHECK(static_cast<bool>(intrin.body)) << "tensorize: intrinsic '" << intrin.name << "' has no body";
  node_->attrs[iv.get()].tensor_intrin = std::make_shared<const TensorIntrin>(intrin);
}

void Stage::compute_at(const Stage& parent, const ir::IterVar& iv) {
  require_compute(*node_, "compute_at");
  KILN_USER_CHECK(parent.defined()) << "compute_at: undefined parent stage for '" << name() << "'";
  KILN_USER_CHECK(!parent.same_as(*this)) << "compute_at: stage '" << name() << "' cannot be attached to itself";
  KILN_USER_CHECK(!node_->is_output) << "compute_at: stage '" << name()
                                     << "' is an output of the schedule; outputs are computed at the root";
  auto sch = node_->schedule.lock();
  KILN_USER_CHECK(sch && sch == parent->schedule.lock())
      << "compute_at: stages '" << name() << "' and '" << parent.name() << "' belong to different schedules";
  leaf_pos(*parent.get(), iv, "compute_at");
  KILN_USER_CHECK(parent->attach != AttachKind::Inline)
      << "compute_at: stage '" << parent.name() << "' is inlined, so it has no loops to attach '" << name()
      << "' to; attach to one of its consumers instead";
  KILN_USER_CHECK(reads_transitively(*sch, parent.get(), node_.get()))
      << "compute_at: stage '" << parent.name() << "' does not consume stage '" << name() << "'";
  node_->attach = AttachKind::At;
  node_->attach_stage = parent.node();
  node_->attach_ivar = iv;
}

void Stage::compute_inline() {
  require_compute(*node_, "compute_inline");
  KILN_USER_CHECK(!node_->is_output) << "compute_inline: stage '" << name()
                                     << "' is an output of the schedule and cannot be inlined";
  auto* c = node_->op.as<te::ComputeOpNode>();
  KILN_USER_CHECK(!c->is_reduction()) << "compute_inline: stage '" << name()
                                      << "' is a reduction and cannot be inlined";
  KILN_USER_CHECK(c->num_outputs() == 1) << "compute_inline: stage '" << name()
                                         << "' has several outputs and cannot be inlined";
  node_->attach = AttachKind::Inline;
  node_->attach_stage.reset();
  node_->attach_ivar = ir::IterVar();
}

void Stage::compute_root() {
  require_compute(*node_, "compute_root");
  node_->attach = AttachKind::Root;
  node_->attach_stage.reset();
  node_->attach_ivar = ir::IterVar();
}

void Stage::set_scope(const std::string& scope) {
  KILN_USER_CHECK(scope == "global" || scope == "local" || scope == "shared" || scope == "warp")
      << "set_scope: unknown scope '" << scope << "' for stage '" << name() << "' (global, local, shared or warp)";
  node_->scope = scope;
}

void Stage::double_buffer(int buffers) {
  KILN_USER_CHECK(node_->scope == "shared")
      << "double_buffer: stage '" << name() << "' has scope '" << node_->scope
      << "'; only a shared-memory stage can be double-buffered (cache_read it into \"shared\" first)";
  KILN_USER_CHECK(buffers >= 2 && buffers <= 8)
      << "double_buffer: stage '" << name() << "': buffers=" << buffers << ", not 2 to 8";
  node_->double_buffer = buffers;
}

void Stage::core_matrix_layout() {
  KILN_USER_CHECK(node_->scope == "shared") << "core_matrix_layout: stage '" << name() << "' has scope '"
                                           << node_->scope << "'; only a shared-memory stage is read by wgmma";
  node_->tile_layout = ir::TileLayout::kCoreMatrices;
}

void Stage::swizzle_128b_layout() {
  KILN_USER_CHECK(node_->scope == "shared") << "swizzle_128b_layout: stage '" << name() << "' has scope '"
                                           << node_->scope << "'; only a shared-memory stage is read by wgmma";
  node_->tile_layout = ir::TileLayout::kSwizzle128B;
}

void Stage::pad_rows(int64_t elements) {
  KILN_USER_CHECK(node_->scope == "shared")
      << "pad_rows: stage '" << name() << "' has scope '" << node_->scope
      << "'; only a shared-memory stage's rows meet bank conflicts (cache_read it into \"shared\" first)";
  KILN_USER_CHECK(elements >= 0) << "pad_rows: stage '" << name() << "': " << elements << " elements of padding";
  node_->row_pad = elements;
}

}  // namespace kiln::schedule
