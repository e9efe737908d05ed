// Dataflow-graph analyses behind fuse_ops (private to src/relay).
//
// IndexedGraph numbers every node of a module in post order and records, for each node, its
// consumers with the *edge pattern* of each use: the consumer's fusion kind, except that a
// broadcast op reading an argument of its own output shape is elementwise on that edge (conv ->
// add(conv, bias) is an elementwise edge for the conv). A module output has an external use
// (`extern_ref`), which nothing can be fused across.
//
// PostDominatorTree gives each node its immediate post-dominator: the nearest node every path
// from it to the outputs goes through, with the strongest edge pattern met on the way. A node
// used by an output (or by nothing) has none. This is TVM's FuseOps analysis.
#pragma once

#include <unordered_map>
#include <vector>

#include "kiln/relay/module.h"
#include "kiln/relay/op.h"

namespace kiln::relay::analysis {

struct GraphNode {
  Expr expr;
  int index = 0;
  OpPattern pattern = OpPattern::Opaque;  // how this node may fuse (Opaque for vars, constants, tuples)
  bool extern_ref = false;                // read outside the graph (a module output)
  struct Use {
    int consumer;
    OpPattern edge;
  };
  std::vector<Use> uses;  // consumers in post order, one entry per distinct consumer
};

struct IndexedGraph {
  std::vector<GraphNode> nodes;  // post order: producers before consumers
  std::unordered_map<const ExprNode*, int> index_of;
  int index(const Expr& e) const { return index_of.at(e.get()); }
};

// The fusion kind of a node: its op's pattern for tensor-typed calls; Opaque for tuple-typed
// calls (their outputs leave through get-items, which fuse_ops keeps outside kernels), vars,
// constants, tuples and get-items.
OpPattern node_pattern(const Expr& e);

IndexedGraph index_graph(const Module& m);

struct PostDominatorTree {
  struct Node {
    int parent = -1;  // immediate post-dominator, -1 for none
    int depth = 0;
    OpPattern pattern = OpPattern::Elementwise;  // strongest edge on the paths to `parent`
  };
  std::vector<Node> nodes;  // by graph index
};

PostDominatorTree post_dominators(const IndexedGraph& g);

// max() of two patterns: the combination of edges on a path.
inline OpPattern combine(OpPattern a, OpPattern b) { return a > b ? a : b; }

}  // namespace kiln::relay::analysis
