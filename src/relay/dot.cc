// Graphviz DOT text of a module or a fused module (dot.h). Deterministic, like the printers:
// nodes are numbered in post order, so tests can assert on the text.
#include "relay/dot.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "kiln/support/error.h"

namespace kiln::relay {

namespace {

// A DOT string literal; "\n" in `s` becomes a line break of the label.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '\n') out += "\\n";
    else if (ch == '"' || ch == '\\') out += std::string("\\") + ch;
    else out += ch;
  }
  return out + "\"";
}

class DotWriter {
 public:
  DotWriter(const Module& m, const FusedModule* fused, const DotOptions& opts) : m_(m), fused_(fused), opts_(opts) {}

  std::string write() {
    std::vector<Expr> outputs = m_.outputs();
    std::vector<Expr> order = post_order(outputs);
    for (const Expr& e : order)
      if (!is_inlined_constant(e)) ids_[e.get()] = "n" + std::to_string(ids_.size());

    std::string caption = opts_.title;
    if (!opts_.group_shares.empty()) caption += "\n(a kernel's share of the profiled time; redder: more)";
    out_ += "digraph kiln {\n";
    out_ += "  graph [fontname=\"Helvetica\", fontsize=12, labelloc=t, label=" + quoted(caption) + "];\n";
    out_ += "  node [shape=box, style=\"rounded,filled\", fillcolor=white, fontname=\"Helvetica\", fontsize=10];\n";
    out_ += "  edge [color=\"#555555\", arrowsize=0.6];\n";
    std::vector<bool> in_cluster(order.size(), false);
    if (fused_) clusters(order, &in_cluster);
    for (size_t i = 0; i < order.size(); ++i)
      if (!in_cluster[i] && ids_.count(order[i].get())) node(order[i], "  ");
    for (const Expr& e : order)
      for (const Expr& c : children(e))
        if (ids_.count(c.get())) out_ += "  " + ids_.at(c.get()) + " -> " + ids_.at(e.get()) + ";\n";
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::string name = i < m_.output_names.size() ? m_.output_names[i] : "output " + std::to_string(i);
      out_ += fmt::format("  out{} [shape=ellipse, fillcolor=\"#e3f0dc\", label={}];\n", i,
                          quoted(name + "\n" + outputs[i].type().str()));
      // A scalar constant output has no node of its own: its label says it all.
      if (ids_.count(outputs[i].get())) out_ += fmt::format("  {} -> out{};\n", ids_.at(outputs[i].get()), i);
    }
    out_ += "}\n";
    return out_;
  }

 private:
  // Each group as a cluster declaring its member calls, in group order.
  void clusters(const std::vector<Expr>& order, std::vector<bool>* in_cluster) {
    const std::vector<FusedGroup>& groups = fused_->groups;
    KILN_CHECK(opts_.group_names.empty() || opts_.group_names.size() == groups.size())
        << opts_.group_names.size() << " group names for " << groups.size() << " groups";
    KILN_CHECK(opts_.group_shares.empty() || opts_.group_shares.size() == groups.size())
        << opts_.group_shares.size() << " group shares for " << groups.size() << " groups";
    std::vector<std::vector<size_t>> members(groups.size());
    for (size_t i = 0; i < order.size(); ++i) {
      auto it = fused_->group_of.find(order[i].get());
      if (it == fused_->group_of.end()) continue;
      members.at(static_cast<size_t>(it->second)).push_back(i);
      (*in_cluster)[i] = true;
    }
    double heaviest = 0;
    for (double s : opts_.group_shares) heaviest = std::max(heaviest, s);
    for (size_t g = 0; g < groups.size(); ++g) {
      std::string label = opts_.group_names.empty() ? "group " + std::to_string(g) : opts_.group_names[g];
      std::string fill = "#f1f1fa";
      if (!opts_.group_shares.empty()) {
        double share = opts_.group_shares[g];
        label += fmt::format("\n{:.1f}%", 100.0 * share);
        // Saturation by the share relative to the heaviest: the hot spots stand out whatever
        // the spread; hue 0 is red.
        fill = fmt::format("0.000 {:.3f} 1.000", heaviest > 0 ? 0.05 + 0.6 * share / heaviest : 0.05);
      }
      out_ += fmt::format("  subgraph cluster_{} {{\n    label={}; style=\"rounded,filled\"; fillcolor={}; "
                          "color=\"#8a8aa8\"; fontsize=10;\n",
                          g, quoted(label), quoted(fill));
      for (size_t i : members[g]) node(order[i], "    ");
      out_ += "  }\n";
    }
  }

  void node(const Expr& e, const char* indent) {
    std::string attrs;
    if (auto* c = e.as<CallNode>()) {
      attrs = "label=" + quoted(c->op_name() + "\n" + e.type().str());
    } else if (auto* v = e.as<VarNode>()) {
      attrs = "shape=ellipse, fillcolor=\"#dde8f7\", label=" + quoted(v->name + "\n" + e.type().str());
    } else if (e.as<ConstantNode>()) {
      // Weights: the type alone, small and grey, so they do not crowd out the ops.
      attrs = "fontsize=8, color=\"#aaaaaa\", fillcolor=\"#eeeeee\", label=" + quoted(e.type().str());
    } else if (e.as<TupleNode>()) {
      attrs = "shape=box, fontsize=8, label=\"tuple\"";
    } else if (auto* g = e.as<TupleGetItemNode>()) {
      attrs = "shape=box, fontsize=8, label=" + quoted("." + std::to_string(g->index));
    }
    out_ += std::string(indent) + ids_.at(e.get()) + " [" + attrs + "];\n";
  }

  const Module& m_;
  const FusedModule* fused_;
  const DotOptions& opts_;
  std::unordered_map<const ExprNode*, std::string> ids_;
  std::string out_;
};

}  // namespace

std::string to_dot(const Module& m, const DotOptions& opts) { return DotWriter(m, nullptr, opts).write(); }

std::string to_dot(const FusedModule& m, const DotOptions& opts) { return DotWriter(m.module, &m, opts).write(); }

}  // namespace kiln::relay
