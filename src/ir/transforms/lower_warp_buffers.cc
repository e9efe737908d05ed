// lower_warp_buffers: a warp buffer becomes each lane's local part of it (transforms.h).
//
// A buffer of scope "warp" is the tile a warp holds in registers, 1/32 per lane, in the layout
// of the tensor intrinsics that read and write it; they index it per lane, inside kWarpFragment.
// Lowering allocated the whole tile (bound inference sees the tile's logical shape), so every
// lane would get all of it: here each gets its part. An access outside kWarpFragment would
// index the whole tile and is refused.
#include <map>
#include <set>

#include "kiln/ir/functor.h"
#include "kiln/ir/transforms.h"
#include "kiln/support/error.h"

namespace kiln::ir {
namespace {

constexpr int64_t kLanes = 32;

class Lowerer : public StmtMutator {
 public:
  explicit Lowerer(std::string func) : func_(std::move(func)) {}
  bool any = false;
  int64_t widest_x = 0;  // the largest extent bound to threadIdx.x

 protected:
  Stmt visit_allocate(const AllocateNode* op, const Stmt& self) override {
    if (op->buffer->scope != "warp") return StmtMutator::visit_allocate(op, self);
    any = true;
    const int64_t n = op->buffer.num_elements();
    KILN_USER_CHECK(n % kLanes == 0) << "function '" << func_ << "': warp buffer '" << op->buffer->name << "' has "
                                     << n << " elements, not a multiple of a warp's " << kLanes << " lanes";
    auto node = std::make_shared<BufferNode>(*op->buffer.get());
    node->scope = "local";
    node->shape = {make_int(DataType::i32(), n / kLanes)};
    per_lane_[op->buffer->data.get()] = Buffer(node);
    return allocate(per_lane_.at(op->buffer->data.get()), mutate_stmt(op->body));
  }

  Stmt visit_attr(const AttrStmtNode* op, const Stmt& self) override {
    const auto* v = op->node.as<VarNode>();
    const bool fragment = op->key == kWarpFragment && v;
    if (fragment) inside_.insert(v);
    Stmt s = StmtMutator::visit_attr(op, self);
    if (fragment) inside_.erase(v);
    return s;
  }

  Stmt visit_for(const ForNode* op, const Stmt& self) override {
    if (op->for_kind == ForKind::ThreadBinding && op->thread_tag == "threadIdx.x")
      widest_x = std::max(widest_x, as_const_int(op->extent).value_or(0));
    return StmtMutator::visit_for(op, self);
  }

  Expr visit_buffer_load(const BufferLoadNode* op, const Expr& self) override {
    Expr e = StmtMutator::visit_buffer_load(op, self);
    const auto* l = e.as<BufferLoadNode>();
    const Buffer* b = lane_part(l->buffer);
    return b ? Expr(std::make_shared<BufferLoadNode>(l->dtype, *b, l->indices)) : e;
  }

  Stmt visit_buffer_store(const BufferStoreNode* op, const Stmt& self) override {
    Stmt s = StmtMutator::visit_buffer_store(op, self);
    const auto* st = s.as<BufferStoreNode>();
    const Buffer* b = lane_part(st->buffer);
    return b ? buffer_store(*b, st->value, st->indices) : s;
  }

 private:
  // The lane's part of a warp buffer `b` accessed here, or null for another buffer.
  const Buffer* lane_part(const Buffer& b) const {
    auto it = per_lane_.find(b->data.get());
    if (it == per_lane_.end()) return nullptr;
    KILN_USER_CHECK(inside_.count(b->data.get()))
        << "function '" << func_ << "': warp buffer '" << b->name
        << "' is accessed other than by a tensor intrinsic (a stage of scope warp must be computed and read "
           "through tensorize, whose intrinsics know which lane holds which element)";
    return &it->second;
  }

  std::string func_;
  std::map<const VarNode*, Buffer> per_lane_;
  std::set<const VarNode*> inside_;
};

}  // namespace

PrimFunc lower_warp_buffers(const PrimFunc& f) {
  Lowerer lower(f.name);
  PrimFunc out = f;
  out.body = lower.mutate_stmt(f.body);
  KILN_USER_CHECK(!lower.any || lower.widest_x <= kLanes)
      << "function '" << f.name << "': " << lower.widest_x << " threads bound to threadIdx.x, but a warp buffer's "
      << kLanes << " lanes are threadIdx.x 0.." << kLanes - 1 << " (bind warps to threadIdx.y / threadIdx.z)";
  return out;
}

}  // namespace kiln::ir
