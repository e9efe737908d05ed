// Feature extraction from a lowered loop program (see features.h for what and why).
#include "kiln/autotune/features.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "ir/arith.h"
#include "kiln/ir/functor.h"
#include "kiln/ir/transforms.h"
#include "kiln/support/error.h"

namespace kiln::autotune {
namespace {

using namespace kiln::ir;

struct Loop {
  const VarNode* var;
  double extent;
  ForKind kind;
  bool thread_x;  // bound to threadIdx.x: its neighbours are a warp's neighbouring threads
};

// 32-byte memory sectors one warp-wide execution of an access touches, from the access's
// coefficient along threadIdx.x (nullopt: not affine, counted as a gather of 32).
double warp_sectors(std::optional<int64_t> coeff_x, int64_t elem_bytes) {
  constexpr double kWarp = 32, kSector = 32;
  if (!coeff_x) return kWarp;
  const double span = static_cast<double>(std::abs(*coeff_x)) * (kWarp - 1) * elem_bytes + elem_bytes;
  return std::min(kWarp, std::ceil(span / kSector));
}

// Coefficient of loop variable v in e (of the vector lane when v is null), when e is affine in
// it; nullopt when e depends on it in another way (floordiv, a product of two loop vars, a
// gather). Let-bound variables have been substituted before.
std::optional<int64_t> coeff(const Expr& e, const VarNode* v) {
  auto both = [&](const BinaryNode* b, int sign) -> std::optional<int64_t> {
    auto ca = coeff(b->a, v), cb = coeff(b->b, v);
    if (!ca || !cb) return std::nullopt;
    return *ca + sign * *cb;
  };
  switch (e.kind()) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm:
    case ExprKind::StringImm:
      return 0;
    case ExprKind::Var:
      return v && e.get() == v ? 1 : 0;
    case ExprKind::Add:
      return both(e.as<BinaryNode>(), 1);
    case ExprKind::Sub:
      return both(e.as<BinaryNode>(), -1);
    case ExprKind::Mul: {
      const auto* b = e.as<BinaryNode>();
      auto ka = as_const_int(b->a), kb = as_const_int(b->b);
      auto ca = coeff(b->a, v), cb = coeff(b->b, v);
      if (ka && cb) return *ka * *cb;
      if (kb && ca) return *kb * *ca;
      if (ca && cb && *ca == 0 && *cb == 0) return 0;
      return std::nullopt;
    }
    case ExprKind::Ramp: {
      const auto* r = e.as<RampNode>();
      auto cb = coeff(r->base, v);
      if (!cb) return std::nullopt;
      if (v) {
        auto cs = coeff(r->stride, v);
        if (!cs || *cs != 0) return std::nullopt;
        return *cb;
      }
      auto s = as_const_int(r->stride);
      if (!s) return std::nullopt;
      return *cb + *s;
    }
    case ExprKind::Broadcast:
      return v ? coeff(e.as<BroadcastNode>()->value, v) : std::optional<int64_t>(0);
    case ExprKind::Cast:
      return coeff(e.as<CastNode>()->value, v);
    default:
      break;
  }
  if (!v) return e.dtype().is_scalar() ? std::optional<int64_t>(0) : std::nullopt;
  return uses_var(e, [v](const VarNode* x) { return x == v; }) ? std::nullopt : std::optional<int64_t>(0);
}

// Row-major flat index of a (possibly multi-dimensional) access, so that features read the same
// before and after flatten_storage.
Expr flat_index(const Buffer& b, const std::vector<Expr>& indices) {
  if (indices.size() == 1) return indices[0];
  Expr flat;
  for (size_t d = 0; d < indices.size(); ++d) {
    Expr idx = indices[d];
    if (flat.defined()) {
      auto ext = as_const_int(b->shape[d]);
      Expr scaled = mul(flat, make_int(flat.dtype(), ext ? *ext : 1));
      if (idx.dtype().lanes != scaled.dtype().lanes) {
        if (idx.dtype().is_scalar()) idx = broadcast(idx, scaled.dtype().lanes);
        else scaled = broadcast(scaled, idx.dtype().lanes);
      }
      if (idx.dtype() != scaled.dtype()) idx = cast(scaled.dtype(), idx);
      flat = add(scaled, idx);
    } else {
      flat = idx;
    }
  }
  return flat;
}

// Counts instructions of an expression (the stored value, the indices).
class OpCounter : public ExprVisitor {
 public:
  explicit OpCounter(StmtFeatures* f) : f_(f) {}
  std::vector<const BufferLoadNode*> loads;

 protected:
  void visit_binary(const BinaryNode* op) override {
    const DataType t = op->a.dtype();
    const double lanes = t.lanes;
    if (t.is_floating()) {
      const BinaryNode* m = nullptr;
      if (op->kind == ExprKind::Add || op->kind == ExprKind::Sub) {
        // a*b + c is one fused multiply-add on every target we generate for.
        m = op->a.as<BinaryNode>();
        if (!m || m->kind != ExprKind::Mul) m = op->b.as<BinaryNode>();
        if (m && m->kind != ExprKind::Mul) m = nullptr;
      }
      if (m) {
        ++f_->float_fma;
        f_->flops += 2 * lanes;
        const Expr& other = op->a.get() == m ? op->b : op->a;
        visit(m->a);
        visit(m->b);
        visit(other);
        return;
      }
      switch (op->kind) {
        case ExprKind::Add: case ExprKind::Sub: ++f_->float_addsub; f_->flops += lanes; break;
        case ExprKind::Mul: ++f_->float_mul; f_->flops += lanes; break;
        case ExprKind::Div: case ExprKind::FloorDiv: ++f_->float_div; f_->flops += lanes; break;
        case ExprKind::Min: case ExprKind::Max: ++f_->float_other; f_->flops += lanes; break;
        default: ++f_->float_other; break;
      }
    } else if (t.is_integer()) {
      switch (op->kind) {
        case ExprKind::Div: case ExprKind::Mod: case ExprKind::FloorDiv: case ExprKind::FloorMod:
          ++f_->int_divmod;
          break;
        case ExprKind::Add: case ExprKind::Sub: case ExprKind::Mul: case ExprKind::Min: case ExprKind::Max:
          ++f_->int_arith;
          break;
        default:
          break;  // comparisons feed selects and conditions; their cost is negligible
      }
    }
    ExprVisitor::visit_binary(op);
  }
  void visit_select(const SelectNode* op) override {
    if (op->dtype.is_floating()) ++f_->float_other;
    ExprVisitor::visit_select(op);
  }
  void visit_cast(const CastNode* op) override {
    if (op->dtype.is_floating() || op->value.dtype().is_floating()) ++f_->float_other;
    ExprVisitor::visit_cast(op);
  }
  void visit_call(const CallNode* op) override {
    if (op->call_kind == CallKind::Extern) {
      ++f_->extern_calls;
    } else if (op->name == "fma") {
      ++f_->float_fma;
      f_->flops += 2.0 * op->dtype.lanes;
    } else {
      ++f_->intrinsic_calls;
    }
    ExprVisitor::visit_call(op);
  }
  void visit_buffer_load(const BufferLoadNode* op) override {
    loads.push_back(op);
    ExprVisitor::visit_buffer_load(op);
  }

 private:
  StmtFeatures* f_;
};

class Extractor {
 public:
  std::vector<StmtFeatures> out;

  void walk(const Stmt& s, int block_size) {
    if (!s.defined()) return;
    switch (s.kind()) {
      case StmtKind::For: {
        const auto* op = s.as<ForNode>();
        analyzer_.bind(op->loop_var, Range(op->min, op->extent));
        double ext = 1;
        if (auto c = as_const_int(op->extent)) {
          ext = static_cast<double>(*c);
        } else {
          // A tail loop's extent (min(...)) is bounded by what encloses it.
          auto b = analyzer_.const_int_bound(op->extent);
          if (b.max_value != arith::IntBound::kPosInf && b.max_value > 0) ext = static_cast<double>(b.max_value);
        }
        loops_.push_back({op->loop_var.get(), std::max(ext, 0.0), op->for_kind, op->thread_tag == "threadIdx.x"});
        walk(op->body, 1);
        loops_.pop_back();
        return;
      }
      case StmtKind::LetStmt: {
        const auto* op = s.as<LetStmtNode>();
        lets_[op->var.get()] = substitute(op->value, lets_);
        walk(op->body, block_size);
        return;
      }
      case StmtKind::AttrStmt: walk(s.as<AttrStmtNode>()->body, block_size); return;
      case StmtKind::Allocate: walk(s.as<AllocateNode>()->body, block_size); return;
      case StmtKind::IfThenElse: {
        const auto* op = s.as<IfThenElseNode>();
        walk(op->then_case, 1);
        walk(op->else_case, 1);
        return;
      }
      case StmtKind::Seq: {
        const auto* op = s.as<SeqStmtNode>();
        int stores = 0;
        for (const Stmt& c : op->seq) stores += c.kind() == StmtKind::BufferStore;
        for (const Stmt& c : op->seq) walk(c, std::max(stores, 1));
        return;
      }
      case StmtKind::BufferStore: store(s.as<BufferStoreNode>(), block_size); return;
      case StmtKind::Evaluate: return;
    }
  }

 private:
  AccessFeatures access(const Buffer& b, const std::vector<Expr>& indices, int lanes, bool is_store) {
    AccessFeatures a;
    a.buffer = b->name;
    a.is_store = is_store;
    a.elem_bytes = b->dtype.bytes();
    Expr idx = substitute(flat_index(b, indices), lets_);
    const bool vector_stmt = lanes > 1;
    std::optional<int64_t> lane_c = vector_stmt ? coeff(idx, nullptr) : std::optional<int64_t>(0);
    const bool lane_dep = !lane_c || *lane_c != 0;
    std::vector<std::optional<int64_t>> c(loops_.size());
    std::vector<bool> dep(loops_.size());
    for (size_t i = 0; i < loops_.size(); ++i) {
      c[i] = coeff(idx, loops_[i].var);
      dep[i] = !c[i] || *c[i] != 0;
    }
    // Footprint over the innermost m loops: the points it visits, capped by the span an affine
    // index covers (overlapping windows such as A[i + k] touch less than the product).
    for (int m = 1; m <= 3; ++m) {
      double points = lane_dep ? lanes : 1;
      double span = lane_c ? std::abs(*lane_c) * (lanes - 1.0) + 1 : -1;
      for (size_t i = loops_.size(); i-- > 0 && loops_.size() - i <= static_cast<size_t>(m);) {
        if (!dep[i]) continue;
        points *= loops_[i].extent;
        if (span >= 0 && c[i]) span += std::abs(*c[i]) * std::max(loops_[i].extent - 1, 0.0);
        else span = -1;
      }
      a.bytes_inner[m - 1] = (span >= 0 ? std::min(points, span) : points) * a.elem_bytes;
    }
    a.reuse = vector_stmt && !lane_dep ? lanes : 1;
    for (size_t i = 0; i < loops_.size(); ++i) {
      if (!dep[i]) a.reuse *= std::max(loops_[i].extent, 1.0);
    }
    for (size_t i = 0; i < loops_.size(); ++i)
      if (loops_[i].thread_x && b->scope == "global") a.warp_sectors = warp_sectors(c[i], a.elem_bytes);
    std::optional<int64_t> inner = vector_stmt ? lane_c : loops_.empty() ? std::optional<int64_t>(0) : c.back();
    if (!inner) {
      a.stride_kind = StrideKind::Strided;
      a.stride = -1;
    } else {
      a.stride = std::abs(*inner);
      a.stride_kind = a.stride == 0 ? StrideKind::Broadcast : a.stride == 1 ? StrideKind::Contiguous : StrideKind::Strided;
    }
    return a;
  }

  void store(const BufferStoreNode* op, int block_size) {
    StmtFeatures f;
    f.buffer = op->buffer->name;
    f.block_size = block_size;
    f.lanes = op->value.dtype().lanes;
    f.loops = static_cast<int>(loops_.size());
    for (const Loop& l : loops_) {
      f.count *= l.extent;
      switch (l.kind) {
        case ForKind::Serial: ++f.serial; f.prod_serial *= l.extent; break;
        case ForKind::Parallel: ++f.parallel; f.prod_parallel *= l.extent; break;
        case ForKind::Vectorized: ++f.vectorized; f.prod_vectorized *= l.extent; break;
        case ForKind::Unrolled: ++f.unrolled; f.prod_unrolled *= l.extent; break;
        case ForKind::ThreadBinding: ++f.thread_bound; break;
      }
    }
    if (!loops_.empty()) f.innermost_extent = loops_.back().extent;
    OpCounter counter(&f);
    counter.visit(op->value);
    for (const Expr& i : op->indices) counter.visit(i);
    f.store = access(op->buffer, op->indices, f.lanes, true);
    f.warp_sectors = f.store.warp_sectors;
    f.store_bytes = static_cast<double>(op->buffer->dtype.bytes()) * f.lanes;
    // Loads of one buffer merge: the largest footprint, the least reuse, the worst stride.
    std::vector<AccessFeatures> merged;
    for (const BufferLoadNode* l : counter.loads) {
      f.load_bytes += static_cast<double>(l->buffer->dtype.bytes()) * l->dtype.lanes;
      AccessFeatures a = access(l->buffer, l->indices, f.lanes, false);
      f.warp_sectors += a.warp_sectors;
      auto it = std::find_if(merged.begin(), merged.end(), [&](const AccessFeatures& m) { return m.buffer == a.buffer; });
      if (it == merged.end()) {
        merged.push_back(a);
        continue;
      }
      for (int m = 0; m < 3; ++m) it->bytes_inner[m] = std::max(it->bytes_inner[m], a.bytes_inner[m]);
      it->reuse = std::min(it->reuse, a.reuse);
      if (static_cast<int>(a.stride_kind) > static_cast<int>(it->stride_kind) ||
          (a.stride_kind == it->stride_kind && (a.stride < 0 || (it->stride >= 0 && a.stride > it->stride)))) {
        it->stride_kind = a.stride_kind;
        it->stride = a.stride;
      }
    }
    std::stable_sort(merged.begin(), merged.end(), [](const AccessFeatures& x, const AccessFeatures& y) {
      return x.bytes_inner[0] != y.bytes_inner[0] ? x.bytes_inner[0] > y.bytes_inner[0] : x.buffer < y.buffer;
    });
    f.loads = std::move(merged);
    out.push_back(std::move(f));
  }

  std::vector<Loop> loops_;
  VarMap<Expr> lets_;
  arith::Analyzer analyzer_;
};

constexpr int kLoadSlots = 3;
const char* const kAccessFields[] = {"bytes_l1", "bytes_l2", "bytes_l3", "reuse", "broadcast", "contiguous", "strided", "stride"};
constexpr int kAccessFieldCount = 8;

// Intensive features: the mean over statements weighted by how often each runs.
const char* const kMeanFields[] = {"loops", "loops_serial", "loops_parallel", "loops_vectorized", "loops_unrolled",
                                   "loops_thread", "prod_serial", "prod_parallel", "prod_vectorized", "prod_unrolled",
                                   "innermost_extent", "lanes", "block_size"};
// Extensive features: totals over one run of the function.
const char* const kSumFields[] = {"executions", "float_addsub", "float_mul", "float_fma", "float_div", "float_other",
                                  "int_arith", "int_divmod", "intrinsic_calls", "extern_calls", "flops",
                                  "bytes_loaded", "bytes_stored"};
const char* const kFuncFields[] = {"num_stores", "num_allocs", "alloc_bytes", "arith_intensity"};
// GPU kernels (0 for CPU functions): the largest block's threads and grid's blocks, the shared
// and local (register) bytes allocated, and the global-memory sectors of one run (each
// warp-wide access counted by the 32-byte sectors it touches: coalescing).
// On CUDA, ptxas's registers per thread and spill bytes, which with the threads and shared
// bytes decide how many blocks a multiprocessor holds (extract_features' PtxasReport).
// Tensor-core work (gpu_mma_flops): the flops of the warps' mma.sync products in one run; the
// mma's reference loops also count in the float features, as any lowering's loops do, but only
// this says the products run on tensor cores (schedule/mma_intrin.h).
// The shared bytes of double-buffered tiles (Stage::double_buffer): their loads overlap the
// compute (asynchronously with cp.async on CUDA sm_80+, ir::inject_double_buffer), and their
// second halves, which the lowered program does not allocate yet, count in gpu_shared_bytes.
// Hopper's wgmma knobs: the flops of the wgmma left in flight into the next K slice
// (wgmma_in_flight), and the shared bytes in its 128-byte swizzle (wgmma_swizzle).
const char* const kGpuFields[] = {"gpu_threads",     "gpu_blocks",              "gpu_shared_bytes",
                                  "gpu_local_bytes", "gpu_sectors",             "gpu_registers",
                                  "gpu_spill_bytes", "gpu_double_buffer_bytes", "gpu_mma_flops",
                                  "gpu_wgmma_in_flight_flops", "gpu_swizzled_shared_bytes"};

std::vector<std::string> make_names() {
  std::vector<std::string> n;
  for (const char* f : kMeanFields) n.emplace_back(f);
  for (const char* f : kSumFields) n.emplace_back(f);
  for (int s = 0; s <= kLoadSlots; ++s) {
    std::string slot = s == 0 ? "store." : "load" + std::to_string(s - 1) + ".";
    for (const char* f : kAccessFields) n.push_back(slot + f);
  }
  for (const char* f : kFuncFields) n.emplace_back(f);
  for (const char* f : kGpuFields) n.emplace_back(f);
  return n;
}

void access_values(const AccessFeatures& a, double* out) {
  out[0] = a.bytes_inner[0];
  out[1] = a.bytes_inner[1];
  out[2] = a.bytes_inner[2];
  out[3] = a.reuse;
  out[4] = a.stride_kind == StrideKind::Broadcast;
  out[5] = a.stride_kind == StrideKind::Contiguous;
  out[6] = a.stride_kind == StrideKind::Strided;
  out[7] = std::max<double>(a.stride, 0);  // non-affine shows as strided with stride 0
}

struct AllocStats {
  double count = 0, bytes = 0, shared_bytes = 0, local_bytes = 0;
  double double_buffer_bytes = 0;  // both halves of the double-buffered shared tiles
  double swizzled_bytes = 0;       // shared tiles in TileLayout::kSwizzle128B, all their buffers
};

AllocStats alloc_stats(const Stmt& s) {
  class V : public StmtVisitor {
   public:
    AllocStats st;
    std::unordered_map<const VarNode*, double> shared;  // bytes per shared buffer
    std::unordered_set<const VarNode*> swizzled;
    void visit_allocate(const AllocateNode* op) override {
      double e = 1;
      for (const Expr& d : op->buffer->shape) e *= static_cast<double>(as_const_int(d).value_or(1));
      const double bytes = e * op->buffer->dtype.bytes();
      st.count += 1;
      st.bytes += bytes;
      if (op->buffer->scope == "shared") st.shared_bytes += shared[op->buffer->data.get()] = bytes;
      if (op->buffer->scope == "shared" && op->buffer->layout == TileLayout::kSwizzle128B) {
        st.swizzled_bytes += bytes;
        swizzled.insert(op->buffer->data.get());
      }
      if (op->buffer->scope == "local") st.local_bytes += bytes;
      if (op->buffer->scope == "warp") st.local_bytes += bytes / 32;  // each lane's part (ir::lower_warp_buffers)
      StmtVisitor::visit_allocate(op);
    }
    // The marker sits on the producer, inside the tile's allocation.
    void visit_attr(const AttrStmtNode* op) override {
      const auto* v = op->node.as<VarNode>();
      if (op->key == kDoubleBufferScope && v && shared.count(v)) {
        const int64_t buffers = double_buffers(*op);
        st.double_buffer_bytes += buffers * shared[v];
        st.shared_bytes += (buffers - 1) * shared[v];
        if (swizzled.count(v)) st.swizzled_bytes += (buffers - 1) * shared[v];
        shared.erase(v);  // one marker per tile (a producer of several stores is one)
      }
      StmtVisitor::visit_attr(op);
    }
  } v;
  v.visit_stmt(s);
  return v.st;
}

// The most threads per block and blocks per grid among the function's kernels (0 and 0 when
// it has none: a CPU function).
struct LaunchStats {
  double threads = 0, blocks = 0;
};

// Flops of the mma.sync products one run executes: ir::kMmaSync marks one lane's share of a
// warp's 16 x 8 x 16 product (2 * 16 * 8 * 16 flops), so `runs` (the product of the enclosing
// loops' extents, the 32 lanes included) / 32 products. ir::kWgmma marks one lane's share of a
// warp's 16 x N x 16 part of its warpgroup's product, N twice the lane's accumulators (its
// call's arguments less the kWgmmaOperands after them). With `in_flight_only`, those of the
// wgmma whose call says in_flight (its last operand) alone.
double mma_flops(const Stmt& s, bool in_flight_only = false, double runs = 1) {
  if (!s.defined()) return 0;
  switch (s.kind()) {
    case StmtKind::For: {
      const auto* op = s.as<ForNode>();
      return mma_flops(op->body, in_flight_only, runs * static_cast<double>(as_const_int(op->extent).value_or(1)));
    }
    case StmtKind::AttrStmt: {
      const auto* op = s.as<AttrStmtNode>();
      if (op->key == kMmaSync) return in_flight_only ? 0 : runs / 32 * 2 * 16 * 8 * 16;
      if (op->key == kWgmma) {
        const auto* call = op->value.as<CallNode>();
        if (!call || call->args.size() < kWgmmaOperands) return 0;
        if (in_flight_only && is_zero(call->args.back())) return 0;
        const double n = 2.0 * static_cast<double>(call->args.size() - kWgmmaOperands);
        return runs / 32 * 2 * 16 * n * 16;
      }
      return mma_flops(op->body, in_flight_only, runs);
    }
    case StmtKind::LetStmt: return mma_flops(s.as<LetStmtNode>()->body, in_flight_only, runs);
    case StmtKind::Allocate: return mma_flops(s.as<AllocateNode>()->body, in_flight_only, runs);
    case StmtKind::IfThenElse: {
      const auto* op = s.as<IfThenElseNode>();
      return mma_flops(op->then_case, in_flight_only, runs) + mma_flops(op->else_case, in_flight_only, runs);
    }
    case StmtKind::Seq: {
      double f = 0;
      for (const Stmt& c : s.as<SeqStmtNode>()->seq) f += mma_flops(c, in_flight_only, runs);
      return f;
    }
    default: return 0;
  }
}

LaunchStats launch_stats(const Stmt& s) {
  class V : public StmtVisitor {
   public:
    double threads = 1, blocks = 1;
    LaunchStats most;
    void visit_for(const ForNode* op) override {
      const std::string& tag = op->thread_tag;
      double* scale = tag.rfind("threadIdx.", 0) == 0 ? &threads : tag.rfind("blockIdx.", 0) == 0 ? &blocks : nullptr;
      const double ext = static_cast<double>(as_const_int(op->extent).value_or(1));
      if (scale) {
        *scale *= ext;
        most.threads = std::max(most.threads, threads);
        most.blocks = std::max(most.blocks, blocks);
      }
      StmtVisitor::visit_for(op);
      if (scale) *scale /= ext;
    }
  } v;
  v.visit_stmt(s);
  return v.most;
}

}  // namespace

std::vector<StmtFeatures> extract_stmt_features(const ir::PrimFunc& f) {
  Extractor x;
  x.walk(f.body, 1);
  return std::move(x.out);
}

const std::vector<std::string>& feature_names() {
  static const std::vector<std::string> names = make_names();
  return names;
}

size_t feature_index(const std::string& name) {
  const auto& n = feature_names();
  auto it = std::find(n.begin(), n.end(), name);
  KILN_USER_CHECK(it != n.end()) << "unknown feature '" << name << "'";
  return static_cast<size_t>(it - n.begin());
}

std::vector<float> extract_features(const ir::PrimFunc& f, const PtxasReport* ptxas) {
  const std::vector<StmtFeatures> stmts = extract_stmt_features(f);
  const size_t n_mean = std::size(kMeanFields), n_sum = std::size(kSumFields);
  const size_t n_access = (kLoadSlots + 1) * kAccessFieldCount;
  std::vector<double> raw(feature_names().size(), 0.0);
  double total = 0;
  for (const StmtFeatures& s : stmts) {
    const double w = s.count;
    total += w;
    const double mean[] = {double(s.loops), double(s.serial), double(s.parallel), double(s.vectorized),
                           double(s.unrolled), double(s.thread_bound), s.prod_serial, s.prod_parallel,
                           s.prod_vectorized, s.prod_unrolled, s.innermost_extent, double(s.lanes),
                           double(s.block_size)};
    const double sum[] = {1.0, double(s.float_addsub), double(s.float_mul), double(s.float_fma), double(s.float_div),
                          double(s.float_other), double(s.int_arith), double(s.int_divmod), double(s.intrinsic_calls),
                          double(s.extern_calls), s.flops, s.load_bytes, s.store_bytes};
    for (size_t i = 0; i < n_mean; ++i) raw[i] += w * mean[i];
    for (size_t i = 0; i < n_sum; ++i) raw[n_mean + i] += w * sum[i];
    double acc[kAccessFieldCount];
    for (int slot = 0; slot <= kLoadSlots; ++slot) {
      const AccessFeatures* a = slot == 0 ? &s.store : slot - 1 < static_cast<int>(s.loads.size()) ? &s.loads[slot - 1] : nullptr;
      if (!a) continue;
      access_values(*a, acc);
      for (int i = 0; i < kAccessFieldCount; ++i) raw[n_mean + n_sum + slot * kAccessFieldCount + i] += w * acc[i];
    }
  }
  if (total > 0) {
    for (size_t i = 0; i < n_mean; ++i) raw[i] /= total;
    for (size_t i = 0; i < n_access; ++i) raw[n_mean + n_sum + i] /= total;
  }
  const size_t fn = n_mean + n_sum + n_access;
  raw[fn + 0] = static_cast<double>(stmts.size());
  const AllocStats allocs = alloc_stats(f.body);
  raw[fn + 1] = allocs.count;
  raw[fn + 2] = allocs.bytes;
  const double moved = raw[feature_index("bytes_loaded")] + raw[feature_index("bytes_stored")];
  raw[fn + 3] = moved > 0 ? raw[feature_index("flops")] / moved : 0;
  const size_t gpu = fn + std::size(kFuncFields);
  const LaunchStats launch = launch_stats(f.body);
  raw[gpu + 0] = launch.threads;
  raw[gpu + 1] = launch.blocks;
  raw[gpu + 2] = allocs.shared_bytes;
  raw[gpu + 3] = allocs.local_bytes;
  for (const StmtFeatures& st : stmts) raw[gpu + 4] += st.count / 32 * st.warp_sectors;
  if (ptxas) {
    raw[gpu + 5] = ptxas->registers;
    raw[gpu + 6] = ptxas->spill_bytes;
  }
  raw[gpu + 7] = allocs.double_buffer_bytes;
  raw[gpu + 8] = mma_flops(f.body);
  raw[gpu + 9] = mma_flops(f.body, true);
  raw[gpu + 10] = allocs.swizzled_bytes;
  std::vector<float> out(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) out[i] = static_cast<float>(std::log2(1.0 + std::max(raw[i], 0.0)));
  return out;
}

}  // namespace kiln::autotune
