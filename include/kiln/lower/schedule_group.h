// A group's schedule by its strategy's template (the pipeline's schedule_group stage), where
// its knobs come from (ScheduleChooser: defaults or a tuning log), and its kernel's name.
#pragma once

#include <string>
#include <vector>

#include "kiln/lower/group_to_te.h"
#include "kiln/lower/prepack_weights.h"
#include "kiln/lower/strategy.h"
#include "kiln/relay/transforms.h"
#include "kiln/schedule/config.h"
#include "kiln/schedule/schedule.h"
#include "kiln/target/target.h"

namespace kiln::lower {

// The group's schedule on `target` by its strategy's template, with the knobs `cfg` answers (a
// default Config: the template's defaults; a recording one fills the search space).
schedule::Schedule schedule_group(const GroupProgram& program, const relay::FusedGroup& group, const Strategy& strategy,
                                  const Target& target, schedule::Config& cfg);

// "fused_nn_conv2d_add_nn_relu_3": a valid C symbol naming the ops, unique by the group index.
std::string kernel_name(const relay::FusedGroup& group, int index);

// Where compile() takes each kernel's knobs from (TVM's ApplyHistoryBest): the template defaults
// when none is given, a tuning log (autotune/apply_log.h) otherwise.
class ScheduleChooser {
 public:
  virtual ~ScheduleChooser() = default;
  // True and *cfg set: build `group` (strategy `strategy`, weights packed as `prepacked` says)
  // with these knobs; false: the template's defaults.
  virtual bool config_for(const relay::FusedGroup& group, const Strategy& strategy, const PrepackedWeights& prepacked,
                          schedule::Config* cfg) = 0;
  // What the chooser did, for the user (compile notes).
  virtual std::vector<std::string> notes() const = 0;
};

}  // namespace kiln::lower
