// Registration functions of the op families, one per file in src/relay/op/ (private).
#pragma once

namespace kiln::relay {
void register_elemwise_ops();   // elemwise.cc: unary math, activations, cast, reinterpret, identity
void register_broadcast_ops();  // broadcast.cc: binary math, comparisons, where, prelu, bias_add
void register_reduce_ops();     // reduce.cc: sum mean max min prod, argmax argmin
void register_conv_ops();       // conv.cc: convolution and transposed convolution, 1D to 3D
void register_matmul_ops();     // matmul.cc: dense, matmul, einsum
void register_pool_ops();       // pool.cc: max/avg/lp pooling, global pooling
void register_norm_ops();       // norm.cc: batch/layer/instance/group norm, lrn, softmax
void register_transform_ops();  // transform.cc: reshape transpose concatenate split slice pad ...
void register_gather_ops();     // gather.cc: take, gather_elements/nd, scatter_elements/nd, one_hot
void register_sort_ops();       // sort.cc: cumsum, cumprod, topk
void register_image_ops();      // image.cc: resize, grid_sample, roi_align
void register_integer_ops();    // integer.cc: integer conv2d and dense of quantized models
void register_layout_ops();     // layout.cc: layout_transform, nn.conv2d_NCHWc (made by alter_layout)
void register_quantize_ops();   // quantize.cc: quantize, dequantize
}  // namespace kiln::relay
