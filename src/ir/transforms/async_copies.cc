// make_async_copies (async_copies.h).
#include "async_copies.h"

#include <cmath>

#include "kiln/ir/functor.h"
#include "kiln/ir/structural.h"
#include "kiln/ir/transforms.h"

namespace kiln::ir::detail {
namespace {

Expr i32(int64_t v) { return make_int(DataType::i32(), v); }

// A (lane-wise) zero of e's type: +0, what cp.async fills with (a select's -0 stays a plain copy).
bool positive_zero(const Expr& e) {
  const auto* b = e.as<BroadcastNode>();
  const Expr& v = b ? b->value : e;
  if (auto f = as_const_float(v)) return *f == 0.0 && !std::signbit(*f);
  return is_const_int(v, 0);
}

bool multiple_of(const Expr& e, int lanes, const arith::Analyzer& ana) {
  return ana.can_prove(eq(floormod(e, make_int(e.dtype(), lanes)), make_zero(e.dtype())));
}

// Whether a vector index is a ramp of stride 1 whose first element is a multiple of `lanes`: the
// lanes are one aligned block of lanes * element bytes.
bool aligned_block(const Expr& index, int lanes, const arith::Analyzer& ana) {
  const auto* r = index.as<RampNode>();
  return r && is_one(r->stride) && multiple_of(r->base, lanes, ana);
}

// A lane mask as one scalar condition for all `lanes` lanes, or undefined: broadcasts, their
// conjunctions, and ramp(b, 1, lanes) < broadcast(c) with b and c multiples of the lanes (the
// block is wholly below c or wholly not).
Expr uniform(const Expr& mask, int lanes, const arith::Analyzer& ana) {
  if (mask.dtype().is_scalar()) return mask;
  if (const auto* b = mask.as<BroadcastNode>()) return b->value;
  const auto* op = mask.as<BinaryNode>();
  if (op && op->kind == ExprKind::And) {
    Expr a = uniform(op->a, lanes, ana), c = uniform(op->b, lanes, ana);
    return a.defined() && c.defined() ? logical_and(a, c) : Expr();
  }
  if (op && op->kind == ExprKind::LT) {
    const auto* r = op->a.as<RampNode>();
    const auto* bound = op->b.as<BroadcastNode>();
    if (r && bound && aligned_block(op->a, lanes, ana) && multiple_of(bound->value, lanes, ana)) return r->base < bound->value;
  }
  return Expr();
}

class AsyncCopies : public StmtMutator {
 public:
  explicit AsyncCopies(arith::Analyzer ana) : ana_(std::move(ana)) {}
  int converted = 0;

 protected:
  Stmt visit_buffer_store(const BufferStoreNode* op, const Stmt& self) override {
    const int lanes = op->value.dtype().lanes;
    // A masked store (vectorize_loops' form of a guard: the lanes where the mask fails keep
    // their old value), its mask one condition for the whole block.
    Expr value = op->value, guard;
    if (const auto* s = value.as<SelectNode>()) {
      const auto* old = s->false_value.as<BufferLoadNode>();
      if (old && old->buffer->data.same_as(op->buffer->data) && old->indices.size() == 1 && op->indices.size() == 1 &&
          structural_equal(old->indices[0], op->indices[0])) {
        guard = uniform(s->condition, lanes, ana_);
        if (!guard.defined()) return self;
        value = s->true_value;
      }
    }
    Stmt copy = async_copy(op->buffer, op->indices, value);
    if (!copy.defined()) return self;
    ++converted;
    return guard.defined() ? if_then_else(guard, copy) : copy;
  }

  Stmt visit_let_stmt(const LetStmtNode* op, const Stmt& self) override {
    if (op->var.dtype().is_integer() && op->var.dtype().is_scalar()) ana_.bind_value(op->var, op->value);
    return StmtMutator::visit_let_stmt(op, self);
  }

 private:
  // The store buffer[indices] = value as a kAsyncCopy, or undefined where cp.async cannot do it.
  Stmt async_copy(const Buffer& buffer, const std::vector<Expr>& indices, const Expr& value) const {
    const DataType t = buffer->dtype;
    const int lanes = value.dtype().lanes;
    const int64_t bytes = t.bytes() * lanes;
    Expr source = value, condition;
    if (const auto* s = value.as<SelectNode>(); s && positive_zero(s->false_value)) {
      condition = uniform(s->condition, lanes, ana_);
      if (!condition.defined()) return Stmt();
      source = s->true_value;
    }
    const auto* load = source.as<BufferLoadNode>();
    const bool ok = buffer->scope == "shared" && load && load->buffer->scope == "global" && load->buffer->dtype == t &&
                    (bytes == 4 || bytes == 8 || bytes == 16) && indices.size() == 1 && load->indices.size() == 1 &&
                    (lanes == 1 || (aligned_block(indices[0], lanes, ana_) && aligned_block(load->indices[0], lanes, ana_)));
    if (!ok) return Stmt();
    Expr v = condition.defined() ? select(broadcast(condition, lanes), source, broadcast(make_zero(t), lanes)) : source;
    return attr_stmt(kAsyncCopy, buffer->data, i32(bytes), buffer_store(buffer, v, indices));
  }

  arith::Analyzer ana_;
};

}  // namespace

Stmt make_async_copies(const Stmt& producer, const arith::Analyzer& ana, int* converted) {
  AsyncCopies pass(ana);
  Stmt out = pass.mutate_stmt(producer);
  *converted += pass.converted;
  return out;
}

}  // namespace kiln::ir::detail
