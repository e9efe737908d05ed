// The nn half of the op library's lowering table: fills the lowering slot (te/ops/lowering.h,
// FLower) of every graph op it implements:
//
//   nn.conv1d/2d/3d (groups, depthwise), nn.conv1d/2d/3d_transpose, nn.max/avg/lp_pool1d/2d/3d,
//   nn.global_avg_pool, nn.global_max_pool, nn.dense, nn.matmul, einsum, nn.batch_norm,
//   nn.layer_norm, nn.instance_norm, nn.group_norm, nn.lrn, nn.softmax, nn.log_softmax,
//   image.resize, cumsum, topk, scatter_elements, scatter_nd
//
// Each lowering reads the op's attributes as its attrs_doc describes them (src/relay/op/*.cc)
// and throws kiln::Error naming the op for what it does not support. A relay scalar (shape [])
// is lowered as a one-element tensor of shape [1] (te tensors have at least one dim).
// The CPU schedules for these ops are schedule/templates/anchor_cpu.h.
#pragma once

namespace kiln::te::ops {

// Idempotent; call before looking up lowerings (register_lowerings() calls it).
void register_lowerings_b();

}  // namespace kiln::te::ops
