// The indexed dataflow graph and its post-dominator tree (see post_dominator.h).
#include "post_dominator.h"

#include "kiln/support/error.h"

namespace kiln::relay::analysis {

OpPattern node_pattern(const Expr& e) {
  const auto* c = e.as<CallNode>();
  if (c == nullptr || !c->type.as<TensorTypeNode>()) return OpPattern::Opaque;
  return c->op->pattern;
}

namespace {

// How `consumer` uses its argument `arg`.
OpPattern edge_pattern(const Expr& consumer, const Expr& arg) {
  OpPattern p = node_pattern(consumer);
  if (p == OpPattern::Broadcast) {
    // Reading an operand of the output's own shape is elementwise for that operand: that is
    // what lets a conv take `add(conv, bias)` as an elementwise epilogue.
    const auto* out = consumer.type().as<TensorTypeNode>();
    const auto* in = arg.type().as<TensorTypeNode>();
    if (out && in && out->shape == in->shape) return OpPattern::Elementwise;
  }
  return p;
}

int lca(const PostDominatorTree& t, int a, int b, OpPattern* pattern) {
  while (a != b) {
    if (a < 0 || b < 0) return -1;
    const auto &na = t.nodes[a], &nb = t.nodes[b];
    if (na.depth < nb.depth) {
      *pattern = combine(*pattern, nb.pattern);
      b = nb.parent;
    } else if (nb.depth < na.depth) {
      *pattern = combine(*pattern, na.pattern);
      a = na.parent;
    } else {
      *pattern = combine(*pattern, combine(na.pattern, nb.pattern));
      a = na.parent;
      b = nb.parent;
    }
  }
  return a;
}

}  // namespace

IndexedGraph index_graph(const Module& m) {
  IndexedGraph g;
  std::vector<Expr> order = post_order({m.body});
  // Params nobody reads are still inputs of the model; index them too so every value has a node.
  for (const Expr& p : m.params) {
    bool seen = false;
    for (const Expr& e : order) seen = seen || e.same_as(p);
    if (!seen) order.insert(order.begin(), p);
  }
  g.nodes.resize(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    g.nodes[i].expr = order[i];
    g.nodes[i].index = static_cast<int>(i);
    g.nodes[i].pattern = node_pattern(order[i]);
    g.index_of[order[i].get()] = static_cast<int>(i);
  }
  for (size_t i = 0; i < order.size(); ++i) {
    std::vector<Expr> args = children(order[i]);
    for (size_t a = 0; a < args.size(); ++a) {
      GraphNode& producer = g.nodes[g.index(args[a])];
      OpPattern edge = edge_pattern(order[i], args[a]);
      // A call reading the same value twice (x * x) is one use, with the stronger edge.
      if (!producer.uses.empty() && producer.uses.back().consumer == static_cast<int>(i)) {
        producer.uses.back().edge = combine(producer.uses.back().edge, edge);
      } else {
        producer.uses.push_back({static_cast<int>(i), edge});
      }
    }
  }
  for (const Expr& out : m.outputs()) g.nodes[g.index(out)].extern_ref = true;
  // The tuple holding several outputs is no computation; its fields are what leaves the graph.
  g.nodes[g.index(m.body)].extern_ref = true;
  return g;
}

PostDominatorTree post_dominators(const IndexedGraph& g) {
  PostDominatorTree t;
  t.nodes.resize(g.nodes.size());
  // Consumers come later in post order, so walking backwards sees every consumer first.
  for (int i = static_cast<int>(g.nodes.size()) - 1; i >= 0; --i) {
    const GraphNode& n = g.nodes[i];
    PostDominatorTree::Node& d = t.nodes[i];
    if (n.extern_ref || n.uses.empty()) {
      d.parent = -1;
      d.depth = 1;
      d.pattern = OpPattern::Opaque;
      continue;
    }
    OpPattern pattern = n.uses[0].edge;
    int parent = n.uses[0].consumer;
    for (size_t u = 1; u < n.uses.size(); ++u) {
      parent = lca(t, parent, n.uses[u].consumer, &pattern);
      pattern = combine(pattern, n.uses[u].edge);
    }
    d.parent = parent;
    d.depth = parent >= 0 ? t.nodes[parent].depth + 1 : 1;
    d.pattern = pattern;
  }
  return t;
}

}  // namespace kiln::relay::analysis
