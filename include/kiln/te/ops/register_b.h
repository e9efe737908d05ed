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

#include <cstddef>
#include <functional>
#include <optional>

#include "kiln/relay/expr.h"
#include "kiln/te/ops/lowering.h"

namespace kiln::te::ops {

// Idempotent; call before looking up lowerings (register_lowerings() calls it).
void register_lowerings_b();

// Compile-time weight packing, for the graph compiler (optional; a pure speed-up).
//
// The conv and dense lowerings repack their weight into the blocked layout their CPU templates
// read (stage "<name>.wpack"), on every call. For resnet18 that is ~44 MB copied per inference,
// several ms. When the weight is a constant, do it once at compile time instead:
//
//   if (auto p = te::ops::weight_prepack(*call); p && call->args[p->input] is a Constant c) {
//     relay::HostTensor packed = p->pack(c->value);   // the kernel's weight argument instead
//     te::Tensor w = te::placeholder(packed.shape(), packed.dtype(), "w");
//     outs = p->lower(inputs_with_w_at_p->input, call->attrs, call->type);
//   }
//
// p->lower is the op's FLower with input `input` already packed; everything else (types,
// schedules: schedule_anchor_cpu) stays the same.
struct WeightPrepack {
  size_t input = 1;
  std::function<relay::HostTensor(const relay::HostTensor&)> pack;
  FLower lower;
};

// The prepacked form of this call, or nullopt where the lowering reads its weight as is
// (depthwise and transposed convolutions, matmul, ...).
// With `winograd`, a float32 3x3 stride-1 conv2d that winograd_applies to takes the Winograd
// form (te/ops/nn_winograd.h) instead of the blocked direct one.
std::optional<WeightPrepack> weight_prepack(const relay::CallNode& call, bool winograd = true);

}  // namespace kiln::te::ops
