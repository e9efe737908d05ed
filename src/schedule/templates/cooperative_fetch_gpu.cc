#include "schedule/templates/cooperative_fetch_gpu.h"

#include <algorithm>

#include "ir/arith.h"
#include "kiln/ir/functor.h"

namespace kiln::schedule {

te::Tensor window_sum(const te::Tensor& conv, size_t reduce_axes) {
  auto is_sum = [&](const te::Tensor& t) {
    const auto* c = t.op().as<te::ComputeOpNode>();
    return c && c->is_reduction() && c->reduce_axis.size() == reduce_axes && t.ndim() == 4;
  };
  if (is_sum(conv)) return conv;
  std::vector<te::Tensor> in = conv.op().input_tensors();
  return in.size() == 1 && is_sum(in[0]) ? in[0] : te::Tensor();
}

int64_t staged_elements(const te::Tensor& sum, const te::Tensor& t, const std::vector<int64_t>& box,
                        const std::vector<int64_t>& reduce_box) {
  const auto& c = *sum.op().as<te::ComputeOpNode>();
  ir::arith::Analyzer ana;
  for (size_t d = 0; d < box.size(); ++d) ana.bind(c.axis[d]->var, ir::Range(ir::Expr(0), ir::Expr(box[d])));
  for (size_t r = 0; r < c.reduce_axis.size(); ++r) {
    const ir::Range& whole = c.reduce_axis[r]->dom;
    // A slice wider than the axis reads only the axis (lowering clips it to the tensor).
    if (r < reduce_box.size())
      ana.bind(c.reduce_axis[r]->var,
               ir::Range(ir::Expr(0), ir::Expr(std::min(reduce_box[r], *ir::as_const_int(whole.extent)))));
    else
      ana.bind(c.reduce_axis[r]->var, whole);
  }
  int64_t elements = 1;
  ir::post_order_visit(c.body[0], [&](const ir::Expr& e) {
    const auto* load = e.as<ir::ProducerLoadNode>();
    if (!load || !te::Tensor::from_producer(load->producer).same_as(t)) return;
    elements = 1;
    for (size_t d = 0; d < load->indices.size(); ++d) {
      ir::arith::IntBound b = ana.const_int_bound(load->indices[d]);
      elements *= std::min(b.max_value - b.min_value + 1, t.shape()[d]);
    }
  });
  return elements;
}

void cooperative_fetch(Stage st, int64_t ty, int64_t tx, int64_t lanes) {
  std::vector<ir::IterVar> ax = st.op_axis();
  if (lanes > 1) {
    // The vector split off the row itself: its index stays a ramp (cp.async needs one).
    auto [row, v] = st.split(ax.back(), lanes);
    st.vectorize(v);
    ax.back() = row;
  }
  ir::IterVar f = ax[0];
  for (size_t i = 1; i < ax.size(); ++i) f = st.fuse(f, ax[i]);
  auto [rest, x] = st.split(f, tx);
  auto [serial, y] = st.split(rest, ty);
  st.bind(y, "threadIdx.y");
  st.bind(x, "threadIdx.x");
  (void)serial;
}

}  // namespace kiln::schedule
