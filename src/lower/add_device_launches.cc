// add_device_launches: a GPU module's plan, one node per kernel launch (graph_plan.h).
#include "lower/graph_plan.h"
#include "kiln/support/error.h"

namespace kiln::lower {

void add_device_launches(runtime::GraphPlan* plan, const std::vector<ir::DeviceProgram>& programs, int32_t device_type) {
  KILN_CHECK(programs.size() == plan->nodes.size())
      << programs.size() << " device programs for " << plan->nodes.size() << " plan nodes";
  plan->device_type = device_type;
  std::vector<runtime::GraphNode> nodes;
  for (size_t n = 0; n < programs.size(); ++n) {
    const ir::DeviceProgram& p = programs[n];
    const runtime::GraphNode& group = plan->nodes[n];
    KILN_CHECK(group.args.size() == p.params.size())
        << "node " << n << " has " << group.args.size() << " arguments, its kernel " << p.params.size() << " parameters";
    std::vector<int> buffers = group.args;  // the program's buffers as plan entries: params, then workspace
    for (const ir::Buffer& w : p.workspace) {
      runtime::GraphEntry e;
      e.dtype = to_dlpack(w->dtype);
      const int64_t numel = w.num_elements();
      e.shape = {numel};
      e.storage = static_cast<int>(plan->storage_bytes.size());
      plan->storage_bytes.push_back(numel * w->dtype.bytes());
      buffers.push_back(static_cast<int>(plan->entries.size()));
      plan->entries.push_back(e);
    }
    // A group split over several launches has no cost per launch: the plan then carries none.
    if (p.launches.size() > 1) plan->has_costs = false;
    for (size_t k = 0; k < p.launches.size(); ++k) {
      const ir::KernelLaunch& l = p.launches[k];
      runtime::GraphNode node;
      node.kernel = l.kernel;
      node.label = p.launches.size() == 1 ? group.label
                                          : group.label + " (" + std::to_string(k + 1) + "/" +
                                                std::to_string(p.launches.size()) + ")";
      for (int a : l.args) node.args.push_back(buffers.at(a));
      for (int i = 0; i < 3; ++i) {
        node.launch.grid[i] = static_cast<uint32_t>(l.grid[i]);
        node.launch.block[i] = static_cast<uint32_t>(l.block[i]);
      }
      node.launch.dynamic_shared_bytes = static_cast<uint32_t>(l.dynamic_shared_bytes);
      node.flops = group.flops;
      node.bytes = group.bytes;
      nodes.push_back(std::move(node));
    }
  }
  plan->nodes = std::move(nodes);
}

}  // namespace kiln::lower
