// remove_dead: computations nobody reads.
//
// Graph modules are built from their outputs, so a node nobody reads is simply not there; the
// dead work that remains hides inside multi-output ops. A split whose parts are not all read
// computes parts for nothing: each part that is read becomes a strided_slice of the split's
// input, and the split (with its dead parts) drops out of the graph.
#include <set>
#include <unordered_map>

#include "kiln/relay/transforms.h"

namespace kiln::relay {

namespace {

// The fields read of every tuple-typed call; a call read whole (not through a get-item) has
// all its fields live.
std::unordered_map<const ExprNode*, std::set<int>> live_fields(const Module& m) {
  std::unordered_map<const ExprNode*, std::set<int>> live;
  for (const Expr& e : post_order({m.body})) {
    for (const Expr& c : children(e)) {
      const auto* tt = c.type().as<TupleTypeNode>();
      if (!tt || !c.as<CallNode>()) continue;
      if (const auto* g = e.as<TupleGetItemNode>()) {
        live[c.get()].insert(g->index);
      } else {
        for (size_t i = 0; i < tt->fields.size(); ++i) live[c.get()].insert(static_cast<int>(i));
      }
    }
  }
  // A tuple-typed call that is itself the body is read whole.
  if (const auto* tt = m.body.type().as<TupleTypeNode>(); tt && m.body.as<CallNode>())
    for (size_t i = 0; i < tt->fields.size(); ++i) live[m.body.get()].insert(static_cast<int>(i));
  return live;
}

class DeadFieldRemover : public ExprMutator {
 public:
  explicit DeadFieldRemover(std::unordered_map<const ExprNode*, std::set<int>> live) : live_(std::move(live)) {}

 protected:
  Expr rewrite_tuple_get_item(const TupleGetItemNode* op, const Expr& self, Expr tuple) override {
    const auto* split = op->tuple.as<CallNode>();
    if (split && split->op_name() == "split" && partly_dead(op->tuple)) {
      // The rewritten split's input: a slice reads it directly.
      const Expr& data = tuple.as<CallNode>()->args[0];
      const Shape& shape = data.tensor_type().shape;
      int64_t axis = split->attrs.get_int("axis");
      const auto& sizes = split->attrs.get_ints("sizes");
      int64_t begin_at = 0;
      for (int i = 0; i < op->index; ++i) begin_at += sizes[i];
      std::vector<int64_t> begin(shape.size(), 0), end(shape), strides(shape.size(), 1);
      begin[axis] = begin_at;
      end[axis] = begin_at + sizes[op->index];
      Attrs a = Attrs().set_ints("begin", begin).set_ints("end", end).set_ints("strides", strides);
      return make_call("strided_slice", {data}, a, split->name);
    }
    return ExprMutator::rewrite_tuple_get_item(op, self, std::move(tuple));
  }

 private:
  bool partly_dead(const Expr& call) const {
    auto it = live_.find(call.get());
    size_t fields = call.type().as<TupleTypeNode>()->fields.size();
    return it != live_.end() && it->second.size() < fields;
  }
  std::unordered_map<const ExprNode*, std::set<int>> live_;
};

}  // namespace

Module remove_dead(const Module& m) {
  Expr body = DeadFieldRemover(live_fields(m)).mutate(m.body);
  return body.same_as(m.body) ? m : m.with_body(body);
}

}  // namespace kiln::relay
