// plan_memory: static storage for every tensor crossing a kernel boundary.
//
// Inputs and outputs get storages of their own (the runtime binds or copies them by name, and an
// output must survive the whole run); constants live in the weights blob. Intermediates are
// assigned greedily in execution order, as TVM's graph memory planner does: when a kernel runs,
// each output takes a released storage of similar size (the smallest at least as big within 16x,
// else the biggest smaller one within 16x, which grows), or a new one; storages of the kernel's
// inputs are released only after it, so a kernel never writes over what it reads.
#include <fmt/format.h>

#include <map>
#include <set>

#include "../analysis/liveness.h"
#include "kiln/relay/transforms.h"
#include "kiln/support/error.h"

namespace kiln::relay {

namespace {

using analysis::ValueKey;
using analysis::value_key;

constexpr int64_t kMatchRange = 16;

class StoragePool {
 public:
  explicit StoragePool(std::vector<int64_t>* storage_bytes) : bytes_(storage_bytes) {}

  int fresh(int64_t size) {
    bytes_->push_back(size);
    return static_cast<int>(bytes_->size()) - 1;
  }

  int request(int64_t size) {
    // A bigger free storage wastes less than a new one; prefer the closest in size.
    auto hi = free_.upper_bound(size * kMatchRange);
    for (auto it = free_.lower_bound(size); it != hi; ++it) return take(it, size);
    auto lo = free_.lower_bound(size / kMatchRange);
    for (auto it = free_.lower_bound(size); it != lo;) return take(--it, size);
    return fresh(size);
  }

  void release(int storage) { free_.emplace((*bytes_)[storage], storage); }

 private:
  int take(std::multimap<int64_t, int>::iterator it, int64_t size) {
    int s = it->second;
    free_.erase(it);
    (*bytes_)[s] = std::max((*bytes_)[s], size);
    return s;
  }
  std::vector<int64_t>* bytes_;
  std::multimap<int64_t, int> free_;  // size -> storage
};

std::string human_bytes(int64_t b) {
  if (b >= (int64_t(1) << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(b) / (1 << 20));
  if (b >= 1024) return fmt::format("{:.1f} KiB", static_cast<double>(b) / 1024);
  return fmt::format("{} B", b);
}

}  // namespace

int64_t MemoryPlan::Entry::bytes() const { return num_elements(shape) * dtype.bytes(); }

int MemoryPlan::entry_of(const Expr& value) const {
  ValueKey k = value_key(value);
  auto it = entries_of.find(k.first);
  KILN_CHECK(it != entries_of.end() && k.second < static_cast<int>(it->second.size()))
      << "plan_memory: no entry for a " << kind_name(value.kind()) << " of type " << value.type().str();
  return it->second[k.second];
}

std::string MemoryPlan::note() const {
  int n = 0;
  for (const Entry& e : entries) n += e.kind == Entry::Kind::Intermediate;
  std::set<int> storages;
  for (const Entry& e : entries)
    if (e.kind == Entry::Kind::Intermediate) storages.insert(e.storage);
  return fmt::format("plan_memory: {} intermediate tensors, {} without reuse -> {} in {} shared storages", n,
                     human_bytes(intermediate_bytes_unshared), human_bytes(intermediate_bytes_shared),
                     storages.size());
}

std::string MemoryPlan::str() const {
  static const char* kinds[] = {"input", "output", "constant", "intermediate"};
  std::string s;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    std::string what = e.value.as<VarNode>() ? "%" + e.value.as<VarNode>()->name : kind_name(e.value.kind());
    if (const auto* c = e.value.as<CallNode>()) what = c->op_name();
    if (e.value.type().as<TupleTypeNode>()) what += "." + std::to_string(e.field);
    s += fmt::format("e{} = {} : {}{}  {}", i, what, e.dtype.str(), shape_str(e.shape), kinds[static_cast<int>(e.kind)]);
    s += e.kind == Entry::Kind::Constant ? "\n" : fmt::format("  storage {} +{}\n", e.storage, e.offset);
  }
  for (size_t i = 0; i < storage_bytes.size(); ++i) s += fmt::format("storage {}: {} bytes\n", i, storage_bytes[i]);
  return s + note() + "\n";
}

MemoryPlan plan_memory(const FusedModule& m) {
  MemoryPlan plan;
  auto add = [&](const Expr& value, int field, const Type& type, MemoryPlan::Entry::Kind kind) {
    const auto* tt = type.as<TensorTypeNode>();
    KILN_CHECK(tt != nullptr);
    MemoryPlan::Entry e;
    e.value = value;
    e.field = field;
    e.dtype = tt->dtype;
    e.shape = tt->shape;
    e.kind = kind;
    plan.entries.push_back(e);
    auto& slots = plan.entries_of[value.get()];
    if (static_cast<int>(slots.size()) <= field) slots.resize(field + 1, -1);
    slots[field] = static_cast<int>(plan.entries.size()) - 1;
  };
  using Kind = MemoryPlan::Entry::Kind;
  for (const Expr& p : m.module.params) add(p, 0, p.type(), Kind::Input);
  for (const FusedGroup& g : m.groups) {
    for (const Expr& in : g.inputs)
      if (in.as<ConstantNode>() && !plan.entries_of.count(in.get())) add(in, 0, in.type(), Kind::Constant);
    if (const auto* tt = g.root.type().as<TupleTypeNode>()) {
      for (size_t f = 0; f < tt->fields.size(); ++f) add(g.root, static_cast<int>(f), tt->fields[f], Kind::Intermediate);
    } else {
      add(g.root, 0, g.root.type(), Kind::Intermediate);
    }
  }
  for (const Expr& out : m.module.outputs()) {
    KILN_USER_CHECK(out.type().as<TensorTypeNode>())
        << "plan_memory: a model output has tuple type " << out.type().str() << "; outputs must be tensors";
    if (out.as<ConstantNode>() && !plan.entries_of.count(out.get())) add(out, 0, out.type(), Kind::Constant);
    MemoryPlan::Entry& e = plan.entries[plan.entry_of(out)];
    if (e.kind == Kind::Intermediate) e.kind = Kind::Output;
  }

  // Storages of their own for inputs and outputs, the weights for constants.
  StoragePool pool(&plan.storage_bytes);
  for (MemoryPlan::Entry& e : plan.entries) {
    if (e.kind == Kind::Input || e.kind == Kind::Output) e.storage = pool.fresh(e.bytes());
    if (e.kind == Kind::Intermediate) plan.intermediate_bytes_unshared += e.bytes();
  }

  std::map<ValueKey, int> last = analysis::last_uses(m);
  auto intermediate = [&](int entry) { return plan.entries[entry].kind == Kind::Intermediate; };
  for (size_t gi = 0; gi < m.groups.size(); ++gi) {
    const FusedGroup& g = m.groups[gi];
    const std::vector<int>& outs = plan.entries_of.at(g.root.get());
    for (int e : outs)
      if (intermediate(e)) plan.entries[e].storage = pool.request(plan.entries[e].bytes());
    // After the kernel: what it read for the last time, and outputs nobody reads (dead fields).
    std::set<int> released;
    for (const Expr& in : g.inputs) {
      int e = plan.entry_of(in);
      if (intermediate(e) && last.at(value_key(in)) == static_cast<int>(gi) && released.insert(e).second)
        pool.release(plan.entries[e].storage);
    }
    for (size_t f = 0; f < outs.size(); ++f)
      if (intermediate(outs[f]) && !last.count({g.root.get(), static_cast<int>(f)})) pool.release(plan.entries[outs[f]].storage);
  }

  std::set<int> shared;
  for (const MemoryPlan::Entry& e : plan.entries)
    if (e.kind == Kind::Intermediate) shared.insert(e.storage);
  for (int s : shared) plan.intermediate_bytes_shared += plan.storage_bytes[s];
  return plan;
}

}  // namespace kiln::relay
