// Schedule creation and stage lookup.
#include "kiln/schedule/schedule.h"

#include <functional>
#include <unordered_set>

#include "kiln/support/error.h"

namespace kiln::schedule {

namespace {
Stage make_stage(const te::Operation& op, const std::shared_ptr<ScheduleNode>& sch) {
  auto n = std::make_shared<StageNode>();
  n->op = op;
  n->origin_op = op;
  if (auto* c = op.as<te::ComputeOpNode>()) {
    n->all_iter_vars = c->axis;
    n->all_iter_vars.insert(n->all_iter_vars.end(), c->reduce_axis.begin(), c->reduce_axis.end());
    n->leaf_iter_vars = n->all_iter_vars;
  }
  n->schedule = sch;
  return Stage(n);
}
}  // namespace

Schedule create(const std::vector<te::Tensor>& outputs) {
  KILN_USER_CHECK(!outputs.empty()) << "schedule::create: no output tensors";
  auto sch = std::make_shared<ScheduleNode>();
  sch->outputs = outputs;
  std::unordered_set<const te::OperationNode*> visited;
  // Post-DFS: every producer gets its stage before any of its consumers.
  std::function<void(const te::Operation&)> visit = [&](const te::Operation& op) {
    if (!visited.insert(op.get()).second) return;
    for (const te::Tensor& t : op.input_tensors()) visit(t.op());
    Stage s = make_stage(op, sch);
    sch->stages.push_back(s);
    sch->stage_of_op.emplace(op.get(), s);
    sch->keep_alive.push_back(op);
  };
  for (const te::Tensor& t : outputs) {
    KILN_USER_CHECK(t.defined()) << "schedule::create: undefined output tensor";
    KILN_USER_CHECK(t.op().as<te::ComputeOpNode>())
        << "schedule::create: output '" << t.name() << "' is a placeholder; outputs must be computed";
    visit(t.op());
  }
  for (const te::Tensor& t : outputs) sch->stage_of_op.at(t.op().get())->is_output = true;
  return Schedule(sch);
}

Stage Schedule::operator[](const te::Operation& op) const {
  KILN_USER_CHECK(op.defined()) << "schedule: undefined operation";
  auto it = node_->stage_of_op.find(op.get());
  KILN_USER_CHECK(it != node_->stage_of_op.end())
      << "schedule: operation '" << op.name() << "' is not part of this schedule";
  return it->second;
}

Stage Schedule::operator[](const te::Tensor& t) const {
  KILN_USER_CHECK(t.defined()) << "schedule: undefined tensor";
  auto it = node_->stage_of_op.find(t.op().get());
  KILN_USER_CHECK(it != node_->stage_of_op.end()) << "schedule: tensor '" << t.name() << "' is not part of this schedule";
  return it->second;
}

// ---------------------------------------------------------------------------------------------
// Stage accessors

ir::IterVar Stage::op_axis(int i) const {
  std::vector<ir::IterVar> ax = op_axis();
  KILN_USER_CHECK(i >= 0 && i < static_cast<int>(ax.size()))
      << "op_axis: stage '" << name() << "' has " << ax.size() << " axes, no axis " << i;
  return ax[i];
}

std::vector<ir::IterVar> Stage::op_axis() const {
  auto* c = node_->op.as<te::ComputeOpNode>();
  return c ? c->axis : std::vector<ir::IterVar>{};
}

ir::IterVar Stage::reduce_axis(int i) const {
  std::vector<ir::IterVar> ax = reduce_axis();
  KILN_USER_CHECK(i >= 0 && i < static_cast<int>(ax.size()))
      << "reduce_axis: stage '" << name() << "' has " << ax.size() << " reduce axes, no reduce axis " << i;
  return ax[i];
}

std::vector<ir::IterVar> Stage::reduce_axis() const {
  auto* c = node_->op.as<te::ComputeOpNode>();
  return c ? c->reduce_axis : std::vector<ir::IterVar>{};
}

}  // namespace kiln::schedule
