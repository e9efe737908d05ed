// lower: schedule -> ir::PrimFunc. The driver: dataflow with inlining, bound inference,
// storage for every tensor, the root-level pipeline of stages, then index simplification.
#include "kiln/schedule/loop_nest.h"

#include <algorithm>
#include <optional>

#include "kiln/ir/functor.h"
#include "kiln/support/error.h"
#include "detail.h"

namespace kiln::schedule {
namespace {

ir::Expr i32(int64_t v) { return ir::make_int(ir::DataType::i32(), v); }

class ToBuffers : public ir::ExprMutator {
 public:
  ToBuffers(const LowerContext& ctx, const ir::VarMap<ir::Expr>& vmap) : ctx_(ctx), vmap_(vmap) {}

 protected:
  ir::Expr visit_var(const ir::VarNode* op, const ir::Expr& self) override {
    auto it = vmap_.find(op);
    return it == vmap_.end() ? self : it->second;
  }
  ir::Expr visit_producer_load(const ir::ProducerLoadNode* op, const ir::Expr&) override {
    const Storage& st = ctx_.storage_of(te::Tensor::from_producer(op->producer));
    std::vector<ir::Expr> idx;
    for (size_t d = 0; d < op->indices.size(); ++d) {
      ir::Expr i = mutate(op->indices[d]);
      idx.push_back(ir::is_const_int(st.offset[d], 0) ? i : i - st.offset[d]);
    }
    return ir::buffer_load(st.buffer, idx);
  }

 private:
  const LowerContext& ctx_;
  const ir::VarMap<ir::Expr>& vmap_;
};

// Simplifies index arithmetic (indices, loop bounds, conditions) knowing every loop's range, so
// printed nests read like the schedule.
class IndexSimplifier : public ir::StmtMutator {
 public:
  explicit IndexSimplifier(const ir::arith::Analyzer& ana) : ana_(ana) {}

 protected:
  ir::Expr simplify_all(const ir::Expr& e) { return ana_.simplify(e); }
  std::vector<ir::Expr> indices(const std::vector<ir::Expr>& in) {
    std::vector<ir::Expr> out;
    for (const ir::Expr& e : in) out.push_back(ana_.simplify(mutate(e)));
    return out;
  }
  ir::Expr visit_buffer_load(const ir::BufferLoadNode* op, const ir::Expr&) override {
    return ir::buffer_load(op->buffer, indices(op->indices));
  }
  ir::Expr visit_select(const ir::SelectNode* op, const ir::Expr&) override {
    return ir::select(ana_.simplify(mutate(op->condition)), mutate(op->true_value), mutate(op->false_value));
  }
  ir::Stmt visit_buffer_store(const ir::BufferStoreNode* op, const ir::Stmt&) override {
    return ir::buffer_store(op->buffer, mutate(op->value), indices(op->indices));
  }
  ir::Stmt visit_if(const ir::IfThenElseNode* op, const ir::Stmt&) override {
    return ir::if_then_else(ana_.simplify(mutate(op->condition)), mutate_stmt(op->then_case),
                            mutate_stmt(op->else_case));
  }
  ir::Stmt visit_for(const ir::ForNode* op, const ir::Stmt&) override {
    return ir::for_loop(op->loop_var, ana_.simplify(op->min), ana_.simplify(op->extent), op->for_kind,
                        mutate_stmt(op->body), op->thread_tag);
  }

 private:
  const ir::arith::Analyzer& ana_;
};

// Parameters: checks the argument list against what the program reads and writes.
std::vector<ir::Buffer> bind_args(LowerContext& ctx, const Schedule& s, const std::vector<te::Tensor>& args) {
  const Dataflow& g = ctx.g;
  std::vector<ir::Buffer> params;
  std::vector<std::pair<const StageNode*, int>> bound;
  for (const te::Tensor& t : args) {
    KILN_USER_CHECK(t.defined()) << "lower: undefined argument";
    std::vector<ir::Expr> shape, zeros;
    for (int64_t e : t.shape()) {
      shape.push_back(i32(e));
      zeros.push_back(i32(0));
    }
    ir::Buffer buf = ir::Buffer::make(t.name(), t.dtype(), shape, "global");
    // An input the program never reads (an op that needed only its shape) is still a parameter:
    // a graph plan fixes the kernel's signature.
    if (t.op().as<te::PlaceholderOpNode>() && !s->stage_of_op.count(t.op().get())) {
      params.push_back(buf);
      continue;
    }
    const Stage& st = g.stage_of(t);
    bool is_input = st->op.as<te::PlaceholderOpNode>() != nullptr;
    KILN_USER_CHECK(is_input || st->is_output)
        << "lower: argument '" << t.name() << "' is neither an input placeholder nor an output of the schedule";
    std::pair<const StageNode*, int> key{st.get(), t.value_index()};
    KILN_USER_CHECK(std::find(bound.begin(), bound.end(), key) == bound.end())
        << "lower: argument '" << t.name() << "' is given twice";
    bound.push_back(key);
    auto& slots = ctx.storage[st.get()];
    slots.resize(st->op->num_outputs());
    slots[t.value_index()] = Storage{buf, zeros};
    params.push_back(buf);
  }
  // Every output (all of an output operation's tensors) must be an argument.
  for (const Stage& st : g.stages) {
    if (!st->is_output) continue;
    auto it = ctx.storage.find(st.get());
    for (int v = 0; v < st->op->num_outputs(); ++v) {
      KILN_USER_CHECK(it != ctx.storage.end() && it->second[v].buffer.defined())
          << "lower: output '" << st->origin_op.output(v).name() << "' is not in the argument list";
    }
  }
  // Every placeholder some lowered stage reads must be an argument.
  for (const Stage& st : s.stages()) {
    if (!st->op.as<te::PlaceholderOpNode>()) continue;
    auto readers = g.consumers.find(st.get());
    if (readers == g.consumers.end() || readers->second.empty()) continue;
    KILN_USER_CHECK(ctx.storage.count(st.get()))
        << "lower: input '" << st.name() << "' is read by stage '" << readers->second[0].name()
        << "' but is not in the argument list";
  }
  return params;
}

// Buffers of the intermediate stages, shaped like their realized regions (rows padded where
// the schedule asks).
void allocate_intermediates(LowerContext& ctx) {
  for (const Stage& st : ctx.g.stages) {
    if (st->is_output) continue;
    const std::vector<ir::Range>& region = ctx.b.regions.at(st.get());
    std::vector<ir::Expr> shape, offset;
    for (const ir::Range& r : region) {
      shape.push_back(r.extent);
      offset.push_back(r.min);
    }
    // Stage::pad_rows: the rows' stride grows, the region written and read stays.
    if (st->row_pad > 0 && shape.size() >= 2) {
      std::optional<int64_t> row = ir::as_const_int(shape.back());
      KILN_USER_CHECK(row) << "pad_rows: stage '" << st.name() << "' has rows of a varying length";
      shape.back() = ir::make_int(shape.back().dtype(), *row + st->row_pad);
    }
    const char* layout_call = st->tile_layout == ir::TileLayout::kCoreMatrices ? "core_matrix_layout" : "swizzle_128b_layout";
    KILN_USER_CHECK(st->tile_layout == ir::TileLayout::kRows || st->row_pad == 0)
        << layout_call << ": stage '" << st.name() << "' also pads its rows";
    if (st->tile_layout == ir::TileLayout::kSwizzle128B) {
      const std::optional<int64_t> rows = shape.size() >= 2 ? ir::as_const_int(shape[shape.size() - 2]) : std::nullopt;
      const std::optional<int64_t> cols = ir::as_const_int(shape.back());
      const int64_t bytes = st->origin_op.output(0).dtype().bytes();
      KILN_USER_CHECK(rows && cols && *rows % 8 == 0 && bytes <= 16 && *cols * bytes % 128 == 0)
          << "swizzle_128b_layout: stage '" << st.name() << "' is not rows of whole 128-byte panels, a multiple of 8 of them";
    }
    auto& slots = ctx.storage[st.get()];
    for (int v = 0; v < st->op->num_outputs(); ++v) {
      te::Tensor t = st->origin_op.output(v);
      ir::Buffer buffer = ir::Buffer::make(t.name(), t.dtype(), shape, st->scope);
      if (st->tile_layout != ir::TileLayout::kRows) {
        auto node = std::make_shared<ir::BufferNode>(*buffer.get());
        node->layout = st->tile_layout;
        buffer = ir::Buffer(std::move(node));
      }
      slots.push_back(Storage{buffer, offset});
    }
  }
}

}  // namespace

const Storage& LowerContext::storage_of(const te::Tensor& t) const {
  const Stage& st = g.stage_of(t);
  auto it = storage.find(st.get());
  KILN_CHECK(it != storage.end() && it->second[t.value_index()].buffer.defined())
      << "no storage for tensor '" << t.name() << "'";
  return it->second[t.value_index()];
}

ir::Expr LowerContext::to_buffers(const ir::Expr& e, const ir::VarMap<ir::Expr>& vmap) const {
  return ToBuffers(*this, vmap).mutate(e);
}

ir::PrimFunc loop_nest(const Schedule& s, const std::vector<te::Tensor>& args, const std::string& name) {
  Dataflow g = inline_stages(s);
  Bounds b = infer_bound(g);
  LowerContext ctx(g, b);
  std::vector<ir::Buffer> params = bind_args(ctx, s, args);
  allocate_intermediates(ctx);
  // Root stages in reverse: each intermediate's allocation covers everything after it.
  ir::Stmt body;
  for (auto it = g.stages.rbegin(); it != g.stages.rend(); ++it) {
    const StageNode& st = *it->get();
    if (st.attach != AttachKind::Root) continue;
    body = st.is_output ? ir::seq({build_nest(ctx, st), body}) : realize(ctx, st, body);
  }
  body = IndexSimplifier(ctx.ana).mutate_stmt(body);
  return ir::PrimFunc{name, params, body};
}

}  // namespace kiln::schedule
