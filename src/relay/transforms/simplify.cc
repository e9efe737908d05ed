// simplify: local rewrites that remove work without changing values.
#include <algorithm>

#include "kiln/relay/op.h"
#include "kiln/relay/transforms.h"

namespace kiln::relay {

namespace {

const CallNode* call_of(const Expr& e, const char* op) {
  const auto* c = e.as<CallNode>();
  return c && c->op_name() == op ? c : nullptr;
}

// A constant whose every element equals `v`.
bool is_all(const Expr& e, double v) {
  const auto* k = e.as<ConstantNode>();
  if (!k) return false;
  for (int64_t i = 0; i < k->value.numel(); ++i)
    if (k->value.double_at(i) != v) return false;
  return true;
}

bool is_identity_perm(const std::vector<int64_t>& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<int64_t>(i)) return false;
  return true;
}

class Simplifier : public ExprMutator {
 protected:
  Expr rewrite_call(const CallNode* op, const Expr& self, std::vector<Expr> args) override {
    const std::string& name = op->op_name();
    const Type& out = self.type();
    const Attrs& at = op->attrs;
    if (name == "identity" || name == "nn.dropout") return args[0];
    if (name == "concatenate" && args.size() == 1) return args[0];
    // Ops that change nothing when the type does not change.
    if ((name == "reshape" || name == "cast" || name == "broadcast_to" || name == "strided_slice" ||
         name == "tile" || name == "nn.pad") &&
        args[0].type() == out) {
      bool noop = name != "strided_slice" || std::all_of(at.get_ints("strides").begin(), at.get_ints("strides").end(),
                                                         [](int64_t s) { return s == 1; });
      if (name == "nn.pad") {  // pads of +1 and -1 keep the shape but shift the data
        for (int64_t p : at.get_ints("pad_width")) noop = noop && p == 0;
      }
      if (noop) return args[0];
    }
    if (name == "reshape") {
      // reshape(reshape(x)) is one reshape of x.
      if (const auto* inner = call_of(args[0], "reshape")) {
        if (inner->args[0].type() == out) return inner->args[0];
        return make_call(*op->op, {inner->args[0]}, at, op->name);
      }
    }
    if (name == "transpose") {
      const auto& perm = at.get_ints("axes");
      if (is_identity_perm(perm)) return args[0];
      if (const auto* inner = call_of(args[0], "transpose")) {
        // out[i] = mid[perm[i]] = x[inner_perm[perm[i]]]
        const auto& inner_perm = inner->attrs.get_ints("axes");
        std::vector<int64_t> composed;
        for (int64_t p : perm) composed.push_back(inner_perm[p]);
        if (is_identity_perm(composed)) return inner->args[0];
        return make_call(*op->op, {inner->args[0]}, Attrs().set_ints("axes", composed), op->name);
      }
    }
    // x + 0, x - 0, x * 1, x / 1 where the constant does not broadcast x to something bigger.
    if (args.size() == 2 && args[0].type() == out) {
      if (((name == "add" || name == "subtract") && is_all(args[1], 0)) ||
          ((name == "multiply" || name == "divide") && is_all(args[1], 1)))
        return args[0];
    }
    if (args.size() == 2 && args[1].type() == out) {
      if ((name == "add" && is_all(args[0], 0)) || (name == "multiply" && is_all(args[0], 1))) return args[1];
    }
    return ExprMutator::rewrite_call(op, self, std::move(args));
  }

  Expr rewrite_tuple_get_item(const TupleGetItemNode* op, const Expr& self, Expr tuple) override {
    if (const auto* t = tuple.as<TupleNode>()) return t->fields[op->index];
    return ExprMutator::rewrite_tuple_get_item(op, self, std::move(tuple));
  }
};

}  // namespace

Module simplify(const Module& m) {
  Expr body = Simplifier().mutate(m.body);
  return body.same_as(m.body) ? m : m.with_body(body);
}

}  // namespace kiln::relay
