// schedule_group: a group's schedule, by its strategy's template.
#include "kiln/lower/group_to_te.h"
#include "kiln/lower/schedule_group.h"
#include "kiln/support/error.h"

namespace kiln::lower {

schedule::Schedule schedule_group(const GroupProgram& p, const relay::FusedGroup& group, const Strategy& strategy,
                                  const Target& target, schedule::Config& cfg) {
  KILN_CHECK(static_cast<bool>(strategy.schedule)) << "strategy '" << strategy.template_name << "' has no schedule";
  return strategy.schedule(p.outputs, anchor_tensor(p, group), target, cfg);
}

}  // namespace kiln::lower
