// The C-source printer shared by the CUDA and OpenCL dialects (codegen_c.h).
//
// Expressions print fully parenthesized. Expression lets become statements before the
// statement that uses them (their values are pure). Integer floor division and modulo, and
// float min/max (a < b ? a : b, as the LLVM backend: NaN picks the second operand), are helper
// functions of the preamble so no operand is evaluated twice.
//
// Vector IR prints lane by lane through scalar IR (lane_of), so lanes reuse every scalar rule
// (16-bit floats, bools, helpers, race checks); the one vector form printed is the aligned
// contiguous access of a parameter (codegen_c.h). A vector load runs once into registers before
// the statement, unless it sits where C evaluates conditionally (a select's branch, the right
// side of && and ||: a padding guard): those lanes load one by one under their condition. A
// masked store (vectorize_loops' form of a lane-dependent if) stores lane by lane under each
// lane's condition, never a whole vector.
//
// An asynchronous copy (ir::kAsyncCopy) prints as the dialect's (cp.async in CUDA) or, in a
// dialect without them, as its plain store; so the OpenCL text of a kernel with asynchronous
// copies vouches for their indexing.
//
// The race-checking build (print_module's race_check, GpuBuildOptions::race_check) checks and
// updates the buffer's shadow state (kRaceCheckFunctions) at every access of a shared buffer: a
// load through a helper, so that it stays an expression, a store before it; barriers advance a
// per-work-item epoch.
#include "kernel_printer.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "ldmatrix.h"
#include "ir/arith.h"
#include "kiln/ir/functor.h"
#include "ir/shared_storage.h"
#include "kiln/ir/structural.h"
#include "kiln/ir/transforms.h"
#include "kiln/support/error.h"

namespace kiln::codegen::source {
namespace detail {
namespace {

// The buffers a kernel stores to: the others are read-only parameters.
std::unordered_set<const ir::VarNode*> written_buffers(const ir::Stmt& body) {
  struct Scan : ir::StmtVisitor {
    std::unordered_set<const ir::VarNode*> out;
    void visit_buffer_store(const ir::BufferStoreNode* op) override {
      out.insert(op->buffer->data.get());
      ir::StmtVisitor::visit_buffer_store(op);
    }
  } scan;
  scan.visit_stmt(body);
  return scan.out;
}

// Whether a kernel has a warpgroup mma (ir::kWgmma).
bool has_wgmma(const ir::Stmt& body) {
  struct Scan : ir::StmtVisitor {
    bool found = false;
    void visit_attr(const ir::AttrStmtNode* op) override {
      found = found || op->key == ir::kWgmma;
      ir::StmtVisitor::visit_attr(op);
    }
  } scan;
  scan.visit_stmt(body);
  return scan.found;
}

}  // namespace

std::string KernelPrinter::print() {
  std::unordered_set<const ir::VarNode*> written = written_buffers(f_.body);
  wgmma_ = d_.warpgroup_mma() && has_wgmma(f_.body);
  if (wgmma_) helpers_.insert("wgmmadesc_uint64");
  std::string params;
  for (const ir::Buffer& b : f_.params) {
    check_type(b->dtype, "parameter '" + b->name + "'");
    params_.insert(b->data.get());
    params += (params.empty() ? "" : ", ") +
              d_.global_param(d_.type_name(b->dtype), name_of(b->data), !written.count(b->data.get()));
  }
  // Every kernel of a race-checked module takes the record, shared memory or not, so the
  // caller appends it to every launch.
  if (race_check_) params += (params.empty() ? "" : ", ") + d_.global_param("int", "kiln_races", false);
  out_ << d_.kernel_prefix(launch_) << " " << f_.name << "(" << params << ") {\n";
  indent_ = 1;
  // Buffers that share bytes (ir::plan_shared_storage), or dynamic shared memory, are carved
  // out of one byte array; the others are declared each on its own.
  const ir::SharedStorage shared = ir::plan_shared_storage(f_.body);
  const bool dynamic = launch_.dynamic_shared_bytes > 0;
  KILN_CHECK(!dynamic || launch_.dynamic_shared_bytes == shared.bytes)
      << "kernel '" << f_.name << "': launched with " << launch_.dynamic_shared_bytes
      << " bytes of dynamic shared memory, but its buffers take " << shared.bytes;
  // A buffer aligned past 16 bytes is carved out of the pool too, which takes its alignment.
  const bool pooled = dynamic || shared.aliased || shared.alignment > 16;
  if (pooled) line(d_.shared_pool("kiln_shared", dynamic ? 0 : shared.bytes, shared.alignment));
  for (const auto& [b, offset] : shared.buffers) {
    check_type(b->dtype, "shared buffer '" + b->name + "'");
    const std::string type = d_.type_name(b->dtype);
    if (pooled)
      line(d_.shared_view(type, name_of(b->data), "kiln_shared", offset));
    else
      line(fmt::format("{} {} {}[{}];", d_.shared_qualifier(), type, name_of(b->data), b.num_elements()));
    if (!race_check_) continue;
    checked_.push_back(f_.name + "." + name_of(b->data));
    shadows_.push_back({b->data.get(), static_cast<int>(checked_.size()), b.num_elements(), "kiln_rcs_" + name_of(b->data)});
    line(fmt::format("{} int {}[{}];", d_.shared_qualifier(), shadows_.back().name, 4 * shadows_.back().n));
  }
  if (!shadows_.empty()) race_check_prologue();
  stmt(f_.body);
  out_ << "}\n";
  return out_.str();
}

std::string KernelPrinter::name_of(const ir::Var& v) {
  auto it = names_.find(v.get());
  if (it != names_.end()) return it->second;
  return names_[v.get()] = fresh_name(v.name());
}

std::string KernelPrinter::fresh_name(const std::string& name) {
  std::string base;
  for (char c : name) base += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0])) || reserved_name(base)) base = "v_" + base;
  std::string n = base;
  for (int i = 1; used_.count(n); ++i) n = base + "_" + std::to_string(i);
  used_.insert(n);
  return n;
}

void KernelPrinter::check_type(DataType t, const std::string& what) {
  KILN_USER_CHECK(t.is_scalar()) << "kernel '" << f_.name << "': " << what << " has vector type " << t.str()
                                 << " (GPU kernels are printed from scalar IR)";
  if (t.is_floating() && t.bits == 16) uses_float16_ = true;
}

std::string KernelPrinter::type(DataType t) {
  check_type(t, "a value");
  if (t.is_floating() && t.bits == 16) return "float";
  return t.is_bool() ? "bool" : d_.type_name(t);
}

std::string KernelPrinter::round16(DataType t, const std::string& v) {
  return (t.is_bfloat() ? "kiln_round_bf16(" : "kiln_round_f16(") + v + ")";
}

std::string KernelPrinter::from_bits16(DataType t, const std::string& v) {
  return (t.is_bfloat() ? "kiln_bf16_to_f32(" : "kiln_f16_to_f32(") + v + ")";
}

std::string KernelPrinter::to_bits16(DataType t, const std::string& v) {
  return (t.is_bfloat() ? "kiln_f32_to_bf16(" : "kiln_f32_to_f16(") + v + ")";
}

void KernelPrinter::line(const std::string& s) {
  for (int i = 0; i < indent_; ++i) out_ << "  ";
  out_ << s << "\n";
}

const KernelPrinter::Shadow* KernelPrinter::shadow(const ir::Buffer& b) const {
  for (const Shadow& sh : shadows_)
    if (sh.buffer == b->data.get()) return &sh;
  return nullptr;
}

std::string KernelPrinter::race_args(const Shadow& sh, const std::string& index) const {
  return fmt::format("{}, {}, {}, kiln_rc_tid, kiln_rc_epoch, kiln_races, {}", sh.name, sh.n, index, sh.id);
}

void KernelPrinter::race_check_prologue() {
  const auto& b = launch_.block;
  line(fmt::format("const int kiln_rc_tid = (int){} + {} * ((int){} + {} * (int){});", d_.thread_index("threadIdx.x"),
                   b[0], d_.thread_index("threadIdx.y"), b[1], d_.thread_index("threadIdx.z")));
  line("int kiln_rc_epoch = 0;");
  for (const Shadow& sh : shadows_)
    line(fmt::format("for (int kiln_rc_k = kiln_rc_tid; kiln_rc_k < {}; kiln_rc_k += {}) {{ {}[{} + kiln_rc_k] = -1; "
                     "{}[{} + kiln_rc_k] = -1; }}",
                     sh.n, b[0] * b[1] * b[2], sh.name, sh.n, sh.name, 3 * sh.n));
  line(d_.barrier());
}

void KernelPrinter::stmt(const ir::Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
    case ir::StmtKind::Seq: {
      const std::vector<ir::Stmt>& seq = s.as<ir::SeqStmtNode>()->seq;
      for (size_t i = 0; i < seq.size();) {
        size_t end = i;
        while (end < seq.size() && wgmma_ && lane_attr(seq[end], ir::kWgmma)) ++end;
        if (end > i) {
          wgmma_run({seq.begin() + i, seq.begin() + end});
          i = end;
          continue;
        }
        while (end < seq.size() && d_.warp_mma() && lane_mma(seq[end])) ++end;
        if (end - i >= 2) {
          warp_mma_run({seq.begin() + i, seq.begin() + end});
          i = end;
        } else {
          stmt(seq[i++]);
        }
      }
      return;
    }
    case ir::StmtKind::LetStmt: {
      const auto* l = s.as<ir::LetStmtNode>();
      if (l->var.dtype().is_vector()) {
        let_lanes(l->var, lift_vector_lets(l->value));
        end_vector_statement();
      } else {
        std::string v = use(l->value);
        line(fmt::format("const {} {} = {};", type(l->var.dtype()), name_of(l->var), v));
        if (l->var.dtype().is_integer()) analyzer_.bind_value(l->var, l->value);  // for aligned_ramp_base
      }
      stmt(l->body);
      return;
    }
    case ir::StmtKind::AttrStmt: {
      const auto* a = s.as<ir::AttrStmtNode>();
      if (a->key == ir::kAsyncCopy && d_.async_copies()) async_copy(a);
      else if (a->key == ir::kMmaSync && d_.warp_mma()) warp_mma(a);
      else if (a->key == ir::kWgmma && wgmma_) warp_wgmma(a);
      else stmt(a->body);
      return;
    }
    case ir::StmtKind::BufferStore: {
      const auto* st = s.as<ir::BufferStoreNode>();
      KILN_CHECK(st->indices.size() == 1) << "kernel '" << f_.name << "': store to '" << st->buffer->name
                                          << "' is not flattened";
      if (st->indices[0].dtype().is_vector()) {
        vector_store(st);
        end_vector_statement();
        return;
      }
      std::string idx = use(st->indices[0]);
      std::string v = stored(st->buffer->dtype, st->value);
      const std::string buf = name_of(st->buffer->data);
      // Checked, then stored in the kernel itself: PoCL 3.1 miscomputed a helper that did both
      // with a private array's element as the value (the tensor-core GEMM's accumulator
      // store, every output wrong; the same statements inline gave the right ones).
      if (const Shadow* sh = shadow(st->buffer))
        line(fmt::format("{{ const int kiln_rc_i = {}; kiln_rc_write({}, kiln_rc_i, kiln_rc_tid, kiln_rc_epoch, "
                         "kiln_races, {}); {}[kiln_rc_i] = {}; }}",
                         idx, sh->name + ", " + std::to_string(sh->n), sh->id, buf, v));
      else
        line(buf + "[" + idx + "] = " + v + ";");
      return;
    }
    case ir::StmtKind::Allocate: {
      const auto* a = s.as<ir::AllocateNode>();
      const ir::Buffer& b = a->buffer;
      if (b->scope != "shared") {
        check_type(b->dtype, "buffer '" + b->name + "'");
        line(fmt::format("{} {}[{}];", d_.type_name(b->dtype), name_of(b->data), b.num_elements()));
      }
      stmt(a->body);
      return;
    }
    case ir::StmtKind::For: for_loop(s.as<ir::ForNode>()); return;
    case ir::StmtKind::IfThenElse: {
      const auto* i = s.as<ir::IfThenElseNode>();
      line("if (" + use(i->condition) + ") {");
      block(i->then_case);
      if (i->else_case.defined()) {
        line("} else {");
        block(i->else_case);
      }
      line("}");
      return;
    }
    case ir::StmtKind::Evaluate: {
      const ir::Expr& v = s.as<ir::EvaluateNode>()->value;
      if (const auto* c = v.as<ir::CallNode>(); c && c->name == "kiln_barrier") {
        // Shared memory filled by this thread and read by wgmma after the barrier.
        if (wgmma_) line(d_.async_proxy_fence());
        line(d_.barrier());
        if (!shadows_.empty()) line("++kiln_rc_epoch;");  // every work-item passes every barrier
        return;
      }
      // A dialect without async copies stored them plainly: nothing to commit or wait for.
      if (const auto* c = v.as<ir::CallNode>(); c && c->name == ir::kAsyncCommit) {
        if (d_.async_copies()) line(d_.async_copy_commit());
        return;
      }
      if (const auto* c = v.as<ir::CallNode>(); c && c->name == ir::kWgmmaDrain) {
        if (wgmma_)
          for (const std::string& l : d_.wgmma_drain(in_flight_acc_)) line(l);
        return;
      }
      if (const auto* c = v.as<ir::CallNode>(); c && c->name == ir::kAsyncWait) {
        KILN_CHECK(c->args.size() == 1 && ir::as_const_int(c->args[0]))
            << "kernel '" << f_.name << "': " << ir::kAsyncWait << " takes one constant";
        if (d_.async_copies()) line(d_.async_copy_wait(*ir::as_const_int(c->args[0])));
        return;
      }
      if (v.as<ir::IntImmNode>()) return;
      line(use(v) + ";");
      return;
    }
  }
}

void KernelPrinter::async_copy(const ir::AttrStmtNode* a) {
  const auto* st = a->body.as<ir::BufferStoreNode>();
  KILN_CHECK(st && st->indices.size() == 1) << "kernel '" << f_.name << "': an async copy is not one flat store";
  ir::Expr value = st->value, condition;
  if (const auto* sel = value.as<ir::SelectNode>()) {
    const auto* b = sel->condition.as<ir::BroadcastNode>();
    condition = b ? b->value : sel->condition;
    value = sel->true_value;
  }
  const auto* load = value.as<ir::BufferLoadNode>();
  KILN_CHECK(load && load->indices.size() == 1) << "kernel '" << f_.name << "': an async copy does not copy a load";
  auto first = [](const ir::Expr& index) {
    const auto* r = index.as<ir::RampNode>();
    return r ? r->base : index;
  };
  const int bytes = static_cast<int>(*ir::as_const_int(a->value));
  const std::string dst = name_of(st->buffer->data) + " + " + use(first(st->indices[0]));
  if (!condition.defined()) {
    line(d_.async_copy(bytes, dst, name_of(load->buffer->data) + " + " + use(first(load->indices[0])), ""));
    return;
  }
  const std::string ok = fresh_name("copy_ok");
  line(fmt::format("const bool {} = {};", ok, use(condition)));
  const std::string src = fmt::format("{} + ({} ? {} : 0)", name_of(load->buffer->data), ok, use(first(load->indices[0])));
  line(d_.async_copy(bytes, dst, src, fmt::format("({} ? {} : 0)", ok, bytes)));
}

const ir::AttrStmtNode* KernelPrinter::lane_attr(const ir::Stmt& s, const char* key) {
  const auto* loop = s.as<ir::ForNode>();
  if (!loop || loop->for_kind != ir::ForKind::ThreadBinding || loop->thread_tag != "threadIdx.x") return nullptr;
  ir::Stmt body = loop->body;
  while (const auto* a = body.as<ir::AttrStmtNode>()) {
    if (a->key == key) return a;
    if (a->key != ir::kWarpFragment) return nullptr;
    body = a->body;
  }
  return nullptr;
}

void KernelPrinter::wgmma_run(const std::vector<ir::Stmt>& run) {
  line(d_.wgmma_begin());
  wgmma_acc_.emplace();
  wgmma_run_in_flight_ = false;
  for (const ir::Stmt& s : run) stmt(s);
  for (const std::string& l : d_.wgmma_end(*wgmma_acc_, wgmma_run_in_flight_ ? 1 : 0)) line(l);
  if (wgmma_run_in_flight_) add_once(*wgmma_acc_, in_flight_acc_);
  wgmma_acc_.reset();
}

void KernelPrinter::warp_wgmma(const ir::AttrStmtNode* a) {
  const auto* c = a->value.as<ir::CallNode>();
  KILN_CHECK(wgmma_acc_ && c && c->name == ir::kWgmmaCall && c->args.size() > ir::kWgmmaOperands)
      << "kernel '" << f_.name << "': " << ir::kWgmma << " without its call, or outside a run";
  const size_t d = c->args.size() - ir::kWgmmaOperands;
  std::vector<std::string> acc;
  for (size_t i = 0; i < d; ++i) acc.push_back(mma_element(c->args[i]));
  auto desc = [&](const ir::Expr& base, const ir::Expr& lbo, const ir::Expr& sbo) {
    const auto* l = base.as<ir::BufferLoadNode>();
    KILN_CHECK(l && l->indices.size() == 1 && l->buffer->scope == "shared")
        << "kernel '" << f_.name << "': a wgmma operand not in shared memory";
    // The descriptor's layout type: 1, the 128-byte swizzle, or 0, none (core matrices).
    return fmt::format("kiln_wgmmadesc_uint64({} + {}, {}, {}, {})", name_of(l->buffer->data), use(l->indices[0]),
                       use(lbo), use(sbo), l->buffer->layout == ir::TileLayout::kSwizzle128B ? 1 : 0);
  };
  const ir::DataType in = c->args[d].dtype();
  wgmma_run_in_flight_ = wgmma_run_in_flight_ || !ir::is_zero(c->args[d + 7]);
  line(d_.wgmma(in.is_bfloat() ? "bf16" : "f16", static_cast<int64_t>(2 * d), acc,
                desc(c->args[d], c->args[d + 2], c->args[d + 3]), desc(c->args[d + 1], c->args[d + 4], c->args[d + 5]),
                !ir::is_zero(c->args[d + 6])));
  add_once(acc, *wgmma_acc_);
}

void KernelPrinter::add_once(const std::vector<std::string>& names, std::vector<std::string>& to) {
  for (const std::string& x : names)
    if (std::find(to.begin(), to.end(), x) == to.end()) to.push_back(x);
}

void KernelPrinter::warp_mma_run(const std::vector<ir::Stmt>& run) {
  const auto* first = run[0].as<ir::ForNode>();
  std::vector<ir::Stmt> bodies;
  for (const ir::Stmt& s : run) {
    const auto* loop = s.as<ir::ForNode>();
    bodies.push_back(ir::substitute(loop->body, ir::VarMap<ir::Expr>{{loop->loop_var.get(), first->loop_var}}));
  }
  mma_fragments_.emplace();
  stmt(ir::for_loop(first->loop_var, first->min, first->extent, first->for_kind, ir::seq(bodies), first->thread_tag));
  mma_fragments_.reset();
}

std::vector<std::string> KernelPrinter::mma_operand(const std::vector<ir::Expr>& args, size_t first, size_t count,
                                     const char* operand) {
  std::vector<ir::Expr> indices;
  const ir::BufferLoadNode* l0 = args[first].as<ir::BufferLoadNode>();
  std::string why;
  for (size_t i = first; i < first + count; ++i) {
    const auto* l = args[i].as<ir::BufferLoadNode>();
    if (!l || !l0 || !l->buffer->data.same_as(l0->buffer->data) || l->indices.size() != 1) {
      why = "its elements are not loads of one buffer";
      break;
    }
    indices.push_back(l->indices[0]);
  }
  if (why.empty() && l0->buffer->scope != "shared") why = "'" + l0->buffer->name + "' is not in shared memory";
  KILN_CHECK(!lane_vars_.empty()) << "kernel '" << f_.name << "': an mma outside its lanes' loop";
  std::optional<LdmatrixLoad> ld;
  if (why.empty()) ld = ldmatrix_load(indices, lane_vars_.back(), analyzer_, &why);
  if (!ld) {
    line(fmt::format("// {}: loads, not ldmatrix: {}", operand, why));
    std::vector<std::string> regs;
    for (size_t r = 0; r < count / 2; ++r) regs.push_back(pack(args, first + 2 * r));
    return regs;
  }
  const std::string address = name_of(l0->buffer->data) + " + " + use(ld->row);
  const std::string key = fmt::format("{}{} {}", ld->tiles, ld->trans ? "t" : "", address);
  if (mma_fragments_) {
    auto it = mma_fragments_->find(key);
    if (it != mma_fragments_->end()) return it->second;
  }
  std::vector<std::string> regs;
  for (int t = 0; t < ld->tiles; ++t) regs.push_back(fresh_name(std::string("frag_") + operand));
  line(fmt::format("unsigned {};", fmt::join(regs, ", ")));
  line(d_.ldmatrix(ld->tiles, ld->trans, regs, address));
  if (mma_fragments_) (*mma_fragments_)[key] = regs;
  return regs;
}

std::string KernelPrinter::pack(const std::vector<ir::Expr>& args, size_t lo) {
  const auto* x = args[lo].as<ir::BufferLoadNode>();
  const auto* y = args[lo + 1].as<ir::BufferLoadNode>();
  if (x && y && x->buffer->data.same_as(y->buffer->data) && x->indices.size() == 1 && y->indices.size() == 1) {
    const ir::Expr& i = x->indices[0];
    const ir::Expr two = ir::make_int(i.dtype(), 2);
    if (analyzer_.can_prove(ir::eq(y->indices[0] - i, ir::make_int(i.dtype(), 1))) &&
        analyzer_.can_prove(ir::eq(ir::floormod(i, two), ir::make_zero(i.dtype()))))
      return "(*(const unsigned*)(" + name_of(x->buffer->data) + " + " + use(i) + "))";
  }
  return "((unsigned)" + mma_element(args[lo]) + " | ((unsigned)" + mma_element(args[lo + 1]) + " << 16))";
}

std::string KernelPrinter::mma_element(const ir::Expr& e) {
  const auto* l = e.as<ir::BufferLoadNode>();
  KILN_CHECK(l && l->indices.size() == 1) << "kernel '" << f_.name << "': an mma operand is not a flat load";
  return name_of(l->buffer->data) + "[" + use(l->indices[0]) + "]";
}

void KernelPrinter::warp_mma(const ir::AttrStmtNode* a) {
  const auto* c = a->value.as<ir::CallNode>();
  KILN_CHECK(c && c->name == ir::kMmaSyncCall && c->args.size() == 16)
      << "kernel '" << f_.name << "': " << ir::kMmaSync << " without its call of 16 operands";
  const ir::DataType in = c->args[4].dtype();
  KILN_CHECK(in == ir::DataType::f16() || in == ir::DataType::bf16())
      << "kernel '" << f_.name << "': mma inputs of type " << in.str();
  std::vector<std::string> acc;
  for (int i = 0; i < 4; ++i) acc.push_back(mma_element(c->args[i]));
  const std::vector<std::string> regs_a = mma_operand(c->args, 4, 8, "A"), regs_b = mma_operand(c->args, 12, 4, "B");
  line(d_.warp_mma(in.is_bfloat() ? "bf16" : "f16", acc, regs_a, regs_b));
}

void KernelPrinter::block(const ir::Stmt& s) {
  ++indent_;
  stmt(s);
  --indent_;
}

void KernelPrinter::for_loop(const ir::ForNode* op) {
  KILN_USER_CHECK(op->for_kind != ir::ForKind::Parallel)
      << "kernel '" << f_.name << "': loop '" << op->loop_var.name()
      << "' is parallel (CPU threads); bind it to blockIdx/threadIdx on a GPU";
  const std::string v = name_of(op->loop_var);
  const std::string t = type(op->loop_var.dtype());
  if (op->for_kind == ir::ForKind::ThreadBinding) {
    const std::string& tag = op->thread_tag;
    const int axis = tag.back() - 'x';
    const bool block_axis = tag.rfind("blockIdx.", 0) == 0;
    const int64_t launched = block_axis ? launch_.grid[axis] : launch_.block[axis];
    const int64_t ext = ir::as_const_int(op->extent).value_or(-1);
    KILN_CHECK(ir::is_zero(op->min)) << "kernel '" << f_.name << "': thread loop '" << op->loop_var.name()
                                     << "' does not start at 0";
    line("{");
    ++indent_;
    line(fmt::format("const {} {} = ({}){};", t, v, t, d_.thread_index(tag)));
    // The lanes of a warp, for ldmatrix (mma_operand).
    const bool lanes = tag == "threadIdx.x";
    if (lanes) lane_vars_.push_back(op->loop_var);
    if (ext < launched) {
      line(fmt::format("if ({} < {}) {{", v, ext));
      block(op->body);
      line("}");
    } else {
      stmt(op->body);
    }
    if (lanes) lane_vars_.pop_back();
    --indent_;
    line("}");
    return;
  }
  std::string mn = use(op->min), ext = use(op->extent);
  std::string end = ir::is_zero(op->min) ? ext : "(" + mn + " + " + ext + ")";
  line(fmt::format("for ({} {} = {}; {} < {}; ++{}) {{", t, v, mn, v, end, v));
  block(op->body);
  line("}");
}

}  // namespace detail

using detail::KernelPrinter;

const Dialect& dialect(Language lang) { return lang == Language::kCUDA ? cuda_dialect() : opencl_dialect(); }

std::string print_module(const std::vector<ir::DeviceProgram>& programs, const Dialect& d, bool race_check,
                         std::vector<std::string>* checked_buffers) {
  KILN_CHECK(!race_check || d.language() == Language::kOpenCL) << "race checking prints OpenCL C only";
  std::string kernels;
  std::set<std::string> helpers;
  std::vector<std::string> checked;
  bool float16 = false;
  for (const ir::DeviceProgram& p : programs)
    for (size_t k = 0; k < p.kernels.size(); ++k) {
      KernelPrinter printer(d, p.kernels[k], p.launches[k], race_check, checked);
      kernels += printer.print() + "\n";
      helpers.insert(printer.helpers_.begin(), printer.helpers_.end());
      float16 = float16 || printer.uses_float16_;
    }
  if (checked_buffers) *checked_buffers = checked;
  return d.preamble() + (float16 ? float16_helpers(d) : "") + (checked.empty() ? "" : kRaceCheckFunctions) +
         print_helpers(helpers, d) + "\n" + kernels;
}

}  // namespace kiln::codegen::source
