#include "liveness.h"

namespace kiln::relay::analysis {

std::map<ValueKey, int> last_uses(const FusedModule& m) {
  std::map<ValueKey, int> last;
  for (size_t g = 0; g < m.groups.size(); ++g)
    for (const Expr& in : m.groups[g].inputs) last[value_key(in)] = static_cast<int>(g);
  return last;
}

}  // namespace kiln::relay::analysis
