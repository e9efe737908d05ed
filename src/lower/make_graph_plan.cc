// make_graph_plan: the runtime's view of a fused, memory-planned module.
#include <cstring>

#include "lower/graph_plan.h"
#include "kiln/lower/schedule_group.h"
#include "kiln/runtime/version.h"
#include "kiln/support/error.h"

namespace kiln::lower {

using namespace relay;  // NOLINT(google-build-using-namespace)

namespace {
constexpr size_t kWeightAlignment = 64;  // kernels assume 64-byte aligned arguments (codegen/build.h)

int64_t entry_bytes(const runtime::GraphEntry& e) {
  int64_t n = (e.dtype.bits + 7) / 8 * e.dtype.lanes;  // bool: one byte
  for (int64_t d : e.shape) n *= d;
  return n;
}
}

DLDataType to_dlpack(DataType t) {
  KILN_CHECK(t.lanes == 1) << "graph values have scalar dtypes, got " << t.str();
  switch (t.code) {
    case ir::TypeCode::Int: return DLDataType{kDLInt, static_cast<uint8_t>(t.bits), 1};
    case ir::TypeCode::UInt: return DLDataType{kDLUInt, static_cast<uint8_t>(t.bits), 1};
    case ir::TypeCode::Float: return DLDataType{kDLFloat, static_cast<uint8_t>(t.bits), 1};
    case ir::TypeCode::BFloat: return DLDataType{kDLBfloat, static_cast<uint8_t>(t.bits), 1};
    case ir::TypeCode::Bool: return DLDataType{kDLUInt, 1, 1};
    case ir::TypeCode::Handle: break;
  }
  KILN_CHECK(false) << "no DLPack type for " << t.str();
  return {};
}

runtime::GraphPlan make_graph_plan(const FusedModule& m, const MemoryPlan& memory,
                                   const std::vector<std::string>& kernel_names, const std::vector<double>& flops,
                                   const Target& target, std::vector<uint8_t>* weights) {
  KILN_CHECK(kernel_names.size() == m.groups.size() && flops.size() == m.groups.size())
      << kernel_names.size() << " kernel names and " << flops.size() << " FLOP counts for " << m.groups.size()
      << " groups";
  runtime::GraphPlan plan;
  plan.kiln_version = KILN_VERSION_STRING;
  plan.target = target.str();
  plan.storage_bytes = memory.storage_bytes;
  plan.has_costs = true;
  weights->clear();
  for (const MemoryPlan::Entry& e : memory.entries) {
    runtime::GraphEntry ge;
    ge.dtype = to_dlpack(e.dtype);
    ge.shape = e.shape;
    ge.storage = e.storage;
    ge.offset = e.offset;
    if (e.kind == MemoryPlan::Entry::Kind::Constant) {
      const HostTensor& v = e.value.as<ConstantNode>()->value;
      size_t at = (weights->size() + kWeightAlignment - 1) / kWeightAlignment * kWeightAlignment;
      weights->resize(at + v.nbytes(), 0);
      if (v.nbytes()) std::memcpy(weights->data() + at, v.data(), v.nbytes());
      ge.storage = -1;
      ge.offset = static_cast<int64_t>(at);
      ge.is_constant = true;
    }
    plan.entries.push_back(std::move(ge));
  }
  for (size_t g = 0; g < m.groups.size(); ++g) {
    const FusedGroup& grp = m.groups[g];
    runtime::GraphNode n;
    n.kernel = kernel_names[g];
    n.label = grp.label();
    for (const Expr& in : grp.inputs) n.args.push_back(memory.entry_of(in));
    for (int e : memory.entries_of.at(grp.root.get())) n.args.push_back(e);
    n.flops = flops[g];
    for (int e : n.args) n.bytes += entry_bytes(plan.entries[e]);
    plan.nodes.push_back(std::move(n));
  }
  std::vector<std::string> in_names = m.module.input_names();
  for (size_t i = 0; i < m.module.params.size(); ++i)
    plan.inputs.push_back({in_names[i], memory.entry_of(m.module.params[i])});
  std::vector<Expr> outs = m.module.outputs();
  for (size_t i = 0; i < outs.size(); ++i) plan.outputs.push_back({m.module.output_names[i], memory.entry_of(outs[i])});
  plan.weights_bytes = static_cast<int64_t>(weights->size());
  plan.weights_checksum = runtime::fnv1a64(weights->data(), weights->size());
  return plan;
}

}  // namespace kiln::lower
