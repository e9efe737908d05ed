// Culprits grouped by kind, short enough to read in one error: "NonZero (180 nodes: '/NonZero',
// '/NonZero_1', '/NonZero_2', ...)". A detector export can have hundreds of nodes of an op kiln
// lacks; the message names a few of each kind with the kind's count, and a few kinds, so it
// stays under 1,000 characters whatever the model. The ONNX importer's unsupported-operator
// error and compile()'s missing-lowering error both print their lists with it.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace kiln::support {

struct GroupedNamesLimits {
  size_t names_per_kind = 3;  // named culprits of one kind; the rest counted
  size_t kinds = 8;           // kinds listed; the rest counted
  size_t name_chars = 60;     // a longer name is cut, with "..."
};

// "<kind> (<noun> <name>)" for one culprit, "<kind> (<n> <noun>s: <name>, <name>, ...)" for
// more, joined by `separator`, the kinds with the most culprits first (then in the map's order);
// "and N more <what>" after the last listed kind when there are more.
inline std::string grouped_names(const std::map<std::string, std::vector<std::string>>& by_kind, const std::string& noun,
                                 const std::string& separator, const std::string& what = "op types",
                                 const GroupedNamesLimits& limits = GroupedNamesLimits()) {
  auto shortened = [&](const std::string& name) {
    return name.size() <= limits.name_chars ? name : name.substr(0, limits.name_chars) + "...";
  };
  std::vector<const std::pair<const std::string, std::vector<std::string>>*> order;
  for (const auto& entry : by_kind) order.push_back(&entry);
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->second.size() > b->second.size(); });
  std::string out;
  size_t listed = 0;
  for (const auto* entry : order) {
    const std::string& kind = entry->first;
    const std::vector<std::string>& names = entry->second;
    if (listed == limits.kinds) {
      out += separator + "and " + std::to_string(by_kind.size() - listed) + " more " + what;
      break;
    }
    out += (listed++ ? separator : "") + kind + " (";
    if (names.size() == 1) {
      out += noun + " " + shortened(names[0]) + ")";
      continue;
    }
    out += std::to_string(names.size()) + " " + noun + "s: ";
    for (size_t i = 0; i < names.size() && i < limits.names_per_kind; ++i) out += (i ? ", " : "") + shortened(names[i]);
    out += std::string(names.size() > limits.names_per_kind ? ", ...)" : ")");
  }
  return out;
}

}  // namespace kiln::support
