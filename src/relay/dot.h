// Graphviz DOT pictures of the graph IR (`kiln compile --dump-dot STAGE FILE`; render with
// `dot -Tsvg FILE -o FILE.svg`). Nodes are the ops, labelled with the op and the type of its
// value; edges are the data flow; graph inputs and outputs are ellipses; weights and other
// non-scalar constants are small grey boxes showing their type only (scalars, compiled into the
// kernels as immediates, are left out). A fused module draws each group as a cluster.
#pragma once

#include <string>
#include <vector>

#include "kiln/relay/module.h"
#include "kiln/relay/transforms.h"

namespace kiln::relay {

struct DotOptions {
  std::string title;  // the picture's caption ("tiny_cnn after fuse_ops")
  // Fused modules, per group in order: the cluster's label (the kernel name the compiled module
  // uses: the graph layer does not know it); empty: "group N".
  std::vector<std::string> group_names;
  // Fused modules, per group: its share of the profiled time (0..1), added to the cluster's
  // label; the fill gets redder with the share (the heaviest group the reddest). Empty: no shares.
  std::vector<double> group_shares;
};

std::string to_dot(const Module& m, const DotOptions& opts = {});
// Each group as `subgraph cluster_N` (N its index) holding its ops.
std::string to_dot(const FusedModule& m, const DotOptions& opts = {});

}  // namespace kiln::relay
