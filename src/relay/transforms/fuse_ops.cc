// fuse_ops: partitions the graph's calls into kernels (TVM's FuseOps).
//
// Each call starts in a group of its own. Visiting calls in post order, a call is merged with its
// immediate post-dominator (with every node on the paths between them) when the patterns allow:
//   phase 0  an out-elementwise-fusable group (conv, dense, pooling) takes its post-dominator when
//            the edge is elementwise and every op on the way is elementwise or broadcast; an
//            elementwise/broadcast group joins an injective, reduction or anchor post-dominator
//            when the ops on the way are at most injective;
//   phase 1  injective groups join injective (or reduction) post-dominators, after phase 0 so
//            that anchors have taken their epilogues first.
// Merging a node with its post-dominator means every other reader of the intermediate values is
// inside the group too, so each group has exactly one value leaving it: its root.
#include <algorithm>
#include <map>
#include <set>

#include "../analysis/liveness.h"
#include "../analysis/post_dominator.h"
#include "kiln/relay/transforms.h"
#include "kiln/support/error.h"

namespace kiln::relay {

namespace {

using analysis::IndexedGraph;
using analysis::PostDominatorTree;
using analysis::value_key;

// A generous cap: kernels with hundreds of ops compile slowly and gain nothing more.
constexpr int kMaxFusedOps = 256;
// Inlined into one kernel, an op is computed once per path from it to the group's root, so a
// chain of ops that each read the previous value twice (y = x * x, z = y + y, ...) grows as 2^n
// and lowering it never ends. A group stops growing before its expression would apply more ops
// than this; real epilogues, with their few repeated reads (SiLU's x * sigmoid(x)), stay far below.
constexpr int64_t kMaxInlinedOps = 4096;

class Fuser {
 public:
  Fuser(const IndexedGraph& g, const PostDominatorTree& pd) : g_(g), pd_(pd) {
    size_t n = g.nodes.size();
    parent_.resize(n);
    pattern_.resize(n);
    size_.assign(n, 1);
    members_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      parent_[i] = static_cast<int>(i);
      pattern_[i] = g.nodes[i].pattern;
      members_[i] = {static_cast<int>(i)};
    }
  }

  void run() {
    for (int phase = 0; phase < 2; ++phase)
      for (size_t i = 0; i < g_.nodes.size(); ++i) visit(static_cast<int>(i), phase);
  }

  int find(int i) {
    while (parent_[i] != i) i = parent_[i] = parent_[parent_[i]];
    return i;
  }

 private:
  void visit(int i, int phase) {
    // The node's own group record: updated while it is a root, so a conv that took an add is
    // seen as out-elementwise-fusable when the add's consumers are considered next.
    OpPattern kind = pattern_[i];
    if (kind == OpPattern::Opaque) return;
    const PostDominatorTree::Node& dom = pd_.nodes[i];
    if (dom.parent < 0) return;
    int sink = dom.parent;
    if (find(i) == find(sink)) return;
    if (size_[find(i)] + size_[find(sink)] > kMaxFusedOps) return;

    if (kind == OpPattern::OutElementwiseFusable) {
      if (phase != 0 || dom.pattern != OpPattern::Elementwise) return;
      if (check_path(i, sink, [](OpPattern k, bool) { return k <= OpPattern::Broadcast; })) commit(i, sink);
    } else if (kind <= OpPattern::Broadcast) {
      if (phase != 0) return;
      if (!(dom.pattern <= OpPattern::Injective || dom.pattern == OpPattern::CommReduce)) return;
      auto ok = [](OpPattern k, bool is_sink) {
        // Injective ops on parallel branches may join an elementwise anchor; the sink may already
        // be an anchor's group (its epilogue reads this value too).
        if (!is_sink) return k <= OpPattern::Injective;
        return k <= OpPattern::CommReduce || k == OpPattern::OutElementwiseFusable;
      };
      if (check_path(i, sink, ok)) commit(i, sink);
    } else if (kind == OpPattern::Injective) {
      if (phase != 1) return;
      // Unlike TVM, a reduction takes injective producers too (transpose -> sum reads through the
      // transpose's index map instead of materializing it).
      auto ok = [](OpPattern k, bool is_sink) {
        return k <= OpPattern::Injective || (is_sink && k == OpPattern::CommReduce);
      };
      if (check_path(i, sink, ok)) commit(i, sink);
    }
    // A reduction never joins its consumers: they read the whole reduced value.
  }

  // Whether every node on the paths from src's consumers to sink (sink included) passes `ok`.
  // Explicit stacks here and below: those paths can be as long as the graph.
  template <typename F>
  bool check_path(int src, int sink, F ok) {
    visited_.clear();
    std::vector<int> stack;
    for (const auto& use : g_.nodes[src].uses) stack.push_back(use.consumer);
    while (!stack.empty()) {
      int n = stack.back();
      stack.pop_back();
      if (!visited_.insert(n).second) continue;
      if (!ok(pattern_[find(n)], n == sink)) return false;
      if (n == sink) continue;
      for (const auto& use : g_.nodes[n].uses) stack.push_back(use.consumer);
    }
    return true;
  }

  // src and every node on its paths to sink (sink excluded): what commit merges into sink's group.
  std::vector<int> nodes_before(int src, int sink) {
    visited_.clear();
    std::vector<int> out, stack = {src};
    while (!stack.empty()) {
      int n = stack.back();
      stack.pop_back();
      if (n == sink || !visited_.insert(n).second) continue;
      out.push_back(n);
      for (const auto& use : g_.nodes[n].uses) stack.push_back(use.consumer);
    }
    return out;
  }

  void commit(int src, int sink) {
    std::vector<int> nodes = nodes_before(src, sink);
    if (inlined_ops(nodes, sink) > kMaxInlinedOps) return;
    int target = find(sink);
    for (int n : nodes) merge(n, target);
  }

  // The op applications of the group that merging `nodes` into sink's would make, all inlined:
  // each member counts once per path to the root (tree sizes over the members, an in-group
  // argument added once per read). Saturates above the cap.
  int64_t inlined_ops(const std::vector<int>& merged, int sink) {
    std::set<int> groups = {find(sink)};
    for (int n : merged) groups.insert(find(n));
    std::vector<int> nodes;
    for (int grp : groups) nodes.insert(nodes.end(), members_[grp].begin(), members_[grp].end());
    std::sort(nodes.begin(), nodes.end());  // post order: producers first
    std::map<int, int64_t> tree;
    int64_t most = 0;
    for (int n : nodes) {
      int64_t t = 1;
      if (const auto* call = g_.nodes[n].expr.as<CallNode>()) {
        for (const Expr& a : call->args) {
          auto idx = g_.index_of.find(a.get());
          auto k = idx == g_.index_of.end() ? tree.end() : tree.find(idx->second);
          if (k != tree.end()) t = std::min(t + k->second, kMaxInlinedOps + 1);
        }
      }
      tree[n] = t;
      most = std::max(most, t);
    }
    return most;
  }
  void merge(int child, int parent) {
    child = find(child);
    parent = find(parent);
    if (child == parent) return;
    parent_[child] = parent;
    size_[parent] += size_[child];
    members_[parent].insert(members_[parent].end(), members_[child].begin(), members_[child].end());
    members_[child].clear();
    pattern_[parent] = std::max(pattern_[parent], pattern_[child]);
  }

  const IndexedGraph& g_;
  const PostDominatorTree& pd_;
  std::vector<int> parent_;
  std::vector<OpPattern> pattern_;
  std::vector<int> size_;
  std::vector<std::vector<int>> members_;  // by group root: the nodes of the group
  std::set<int> visited_;
};

}  // namespace

bool is_inlined_constant(const Expr& e) {
  const auto* c = e.as<ConstantNode>();
  return c != nullptr && c->value.rank() == 0;
}

std::string FusedGroup::label() const {
  std::string s;
  for (const Expr& c : calls) s += (s.empty() ? "" : "+") + c.as<CallNode>()->op_name();
  return s;
}

FusedModule fuse_ops(const Module& m) {
  IndexedGraph g = analysis::index_graph(m);
  PostDominatorTree pd = analysis::post_dominators(g);
  Fuser fuser(g, pd);
  fuser.run();

  FusedModule out;
  out.module = m;
  // Groups in the order of their roots: a group's root is its last member in post order and the
  // only value others read, so this order runs every producer before its consumers.
  std::map<int, std::vector<int>> members;  // root index -> member indices
  for (const auto& n : g.nodes)
    if (n.expr.as<CallNode>()) members[fuser.find(n.index)].push_back(n.index);
  std::vector<std::pair<int, int>> by_last;  // (last member, root)
  for (const auto& [root, ms] : members) by_last.push_back({ms.back(), root});
  std::sort(by_last.begin(), by_last.end());

  for (const auto& [last, root] : by_last) {
    const std::vector<int>& ms = members[root];
    int gi = static_cast<int>(out.groups.size());
    FusedGroup grp;
    for (int i : ms) {
      grp.calls.push_back(g.nodes[i].expr);
      out.group_of[g.nodes[i].expr.get()] = gi;
    }
    grp.root = grp.calls.back();
    grp.pattern = OpPattern::Elementwise;
    for (int i : ms) {
      // The op's own kind (split is injective), not its fusion kind (tuple-typed: opaque): it
      // is what picks the group's schedule.
      OpPattern p = g.nodes[i].expr.as<CallNode>()->op->pattern;
      if (!grp.anchor.defined() || p > grp.pattern) {
        grp.pattern = std::max(grp.pattern, p);
        grp.anchor = g.nodes[i].expr;
      }
    }
    // Only the root may be read outside the group.
    for (int i : ms) {
      if (i == last) continue;
      KILN_CHECK(!g.nodes[i].extern_ref) << "fuse_ops: a module output was fused into a group it does not end";
      for (const auto& use : g.nodes[i].uses)
        KILN_CHECK(fuser.find(use.consumer) == root)
            << "fuse_ops: " << g.nodes[i].expr.as<CallNode>()->op_name() << " is read outside its group";
    }
    std::set<std::pair<const ExprNode*, int>> seen;
    for (const Expr& c : grp.calls) {
      for (const Expr& a : c.as<CallNode>()->args) {
        if (a.as<CallNode>() && fuser.find(g.index(a)) == root) continue;
        if (is_inlined_constant(a)) continue;
        KILN_USER_CHECK(a.type().as<TensorTypeNode>())
            << "fuse_ops: " << c.as<CallNode>()->op_name() << " reads a tuple-typed value; only tensors can cross "
            << "kernel boundaries";
        if (seen.insert(value_key(a)).second) grp.inputs.push_back(a);
      }
    }
    out.groups.push_back(std::move(grp));
  }
  return out;
}

}  // namespace kiln::relay
