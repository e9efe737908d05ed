// plan_problem: the structural checks a plan must pass before the executor trusts its numbers
// (module_loader.h). A plan comes out of a file, so every index and byte range is checked:
// a bad one must become a clear refusal at load time, not a wild write at run time.
#include <set>

#include "kiln/runtime/module_loader.h"
#include "runtime/module_format.h"
#include "kiln/runtime/ndarray.h"

namespace kiln::runtime {
namespace {

// Bytes of an entry, or -1 if its shape is invalid or its size overflows.
int64_t entry_bytes(const GraphEntry& e) {
  if (e.dtype.bits == 0 || e.dtype.lanes == 0) return -1;
  int64_t n = static_cast<int64_t>(dtype_bytes(e.dtype));
  for (int64_t d : e.shape) {
    if (d < 0 || (d > 0 && n > (int64_t(1) << 50) / d)) return -1;
    n *= d;
  }
  return n;
}

std::string check_io(const std::vector<GraphIO>& list, const char* what, const GraphPlan& plan) {
  std::set<std::string> names;
  for (size_t i = 0; i < list.size(); ++i) {
    const GraphIO& io = list[i];
    std::string where = std::string(what) + " " + std::to_string(i) + " '" + io.name + "'";
    if (io.name.empty()) return where + " has no name";
    if (!names.insert(io.name).second) return where + ": the name is used twice";
    if (io.entry < 0 || io.entry >= static_cast<int>(plan.entries.size()))
      return where + " names entry " + std::to_string(io.entry) + ", which does not exist";
  }
  return "";
}

}  // namespace

std::string plan_problem(const GraphPlan& plan, int64_t weights_bytes) {
  for (size_t s = 0; s < plan.storage_bytes.size(); ++s)
    if (plan.storage_bytes[s] < 0) return "storage " + std::to_string(s) + " has a negative size";
  for (size_t i = 0; i < plan.entries.size(); ++i) {
    const GraphEntry& e = plan.entries[i];
    std::string where = "entry " + std::to_string(i);
    int64_t bytes = entry_bytes(e);
    if (bytes < 0)
      return where + " has an invalid dtype or shape " + shape_str(e.shape.data(), static_cast<int>(e.shape.size()));
    // Kernels assume 64-byte aligned arguments (codegen marks them `align 64`).
    if (e.offset < 0 || e.offset % KILN_MODULE_WEIGHTS_ALIGNMENT != 0)
      return where + " has offset " + std::to_string(e.offset) + ", not a multiple of 64";
    int64_t limit;
    if (e.is_constant) {
      limit = weights_bytes;
      where += " (a constant)";
    } else {
      if (e.storage < 0 || e.storage >= static_cast<int>(plan.storage_bytes.size()))
        return where + " lives in storage " + std::to_string(e.storage) + ", which does not exist";
      limit = plan.storage_bytes[e.storage];
      where += " (in storage " + std::to_string(e.storage) + ")";
    }
    if (e.offset + bytes > limit) {
      return where + ": bytes [" + std::to_string(e.offset) + ", " + std::to_string(e.offset + bytes) +
             ") lie outside the " + std::to_string(limit) + " bytes of " + (e.is_constant ? "the weights" : "its storage");
    }
  }
  for (size_t n = 0; n < plan.nodes.size(); ++n) {
    const GraphNode& node = plan.nodes[n];
    std::string where = "node " + std::to_string(n) + " '" + node.label + "'";
    if (node.kernel.empty()) return where + " names no kernel";
    for (int a : node.args)
      if (a < 0 || a >= static_cast<int>(plan.entries.size()))
        return where + " passes entry " + std::to_string(a) + ", which does not exist";
  }
  std::string io = check_io(plan.inputs, "input", plan);
  if (io.empty()) io = check_io(plan.outputs, "output", plan);
  if (!io.empty()) return io;
  for (const GraphIO& in : plan.inputs)
    if (plan.entries[in.entry].is_constant) return "input '" + in.name + "' is a constant entry";
  if (plan.outputs.empty()) return "the plan has no outputs";
  if (plan.batch_max != 0 || plan.batch_min != 0) {
    // Storages are allocated at batch_max samples: keep that product far from overflowing.
    // Saturating (a damaged plan's sizes may be anything): 2^47 is past every limit below.
    const int64_t big = int64_t{1} << 47;
    int64_t total = 0;
    for (int64_t b : plan.storage_bytes) total = b >= big || total + batch_stride(b) >= big ? big : total + batch_stride(b);
    if (plan.batch_min < 1 || plan.batch_max < plan.batch_min || plan.batch_max > (int64_t{1} << 20) ||
        (total > 0 && plan.batch_max > (int64_t{1} << 46) / total))
      return "bad batch range " + std::to_string(static_cast<uint64_t>(plan.batch_min)) + ".." +
             std::to_string(static_cast<uint64_t>(plan.batch_max));
    for (const auto* list : {&plan.inputs, &plan.outputs})
      for (const GraphIO& io : *list)
        if (plan.entries[io.entry].shape.empty() || plan.entries[io.entry].shape[0] < 1 || plan.entries[io.entry].is_constant)
          return "'" + io.name + "' of a dynamic-batch plan has no batch dim";
  }
  return "";
}

}  // namespace kiln::runtime
