#!/usr/bin/env python3
"""Writes the opset 1 to 6 cases beside this file, in the node suite's layout (model.onnx,
test_data_set_0/{input,output}_N.pb): tiny models in the attribute forms those opsets had, with
reference outputs computed here by numpy. Run it with a Python that has onnx and numpy; the
outputs are committed, so the tests need neither."""
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(7)
F = TensorProto.FLOAT


def case(name, opset, nodes, inputs, outputs, inits=()):
    """inputs, outputs: (name, array); inits: (name, array) constants of the graph."""
    vi = lambda n, a: helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
    graph = helper.make_graph(nodes, name, [vi(n, a) for n, a in inputs], [vi(n, a) for n, a in outputs],
                              [numpy_helper.from_array(a, n) for n, a in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=3,
                              producer_name="kiln old_opsets")
    d = os.path.join(HERE, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save(model, os.path.join(d, "model.onnx"))
    for kind, vals in (("input", inputs), ("output", outputs)):
        for i, (n, a) in enumerate(vals):
            with open(os.path.join(d, "test_data_set_0", f"{kind}_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(a, n).SerializeToString())


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# Binary ops: B broadcasts only with broadcast=1, aligned to A at `axis` (default: trailing dims).
a, b = f32(2, 3, 4), f32(3)
case("test_add_broadcast_axis_opset6", 6,
     [helper.make_node("Add", ["a", "b"], ["y"], broadcast=1, axis=1)], [("a", a), ("b", b)],
     [("y", a + b.reshape(3, 1))])
a, b = f32(2, 3, 4), f32(3, 4)
case("test_mul_broadcast_suffix_opset1", 1,
     [helper.make_node("Mul", ["a", "b"], ["y"], broadcast=1, consumed_inputs=[0, 0])], [("a", a), ("b", b)],
     [("y", a * b)])
a, b = f32(2, 3), f32(2, 3)
case("test_sub_same_shape_opset6", 6, [helper.make_node("Sub", ["a", "b"], ["y"])], [("a", a), ("b", b)],
     [("y", a - b)])

# BatchNormalization-6, inference (is_test=1) with spatial=0: parameters per feature [C, D].
x = f32(2, 3, 4)
s, bias, mean = f32(3, 4), f32(3, 4), f32(3, 4)
var = np.abs(f32(3, 4)) + 0.5
eps = 1e-3
case("test_batchnorm_spatial0_opset6", 6,
     [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], spatial=0, is_test=1, epsilon=eps,
                       consumed_inputs=[0, 0, 0, 1, 1])],
     [("x", x)], [("y", ((x - mean) / np.sqrt(var + eps) * s + bias).astype(np.float32))],
     [("s", s), ("b", bias), ("m", mean), ("v", var)])

# Cast-1 names its target type.
x = (f32(3, 4) * 10).astype(np.float32)
case("test_cast_type_name_opset1", 1, [helper.make_node("Cast", ["x"], ["y"], to="INT32")], [("x", x)],
     [("y", x.astype(np.int32))])

# Reshape-1: the shape is an attribute (0 copies a dim, -1 is inferred).
x = f32(2, 3, 4)
case("test_reshape_attribute_opset1", 1, [helper.make_node("Reshape", ["x"], ["y"], shape=[0, -1])], [("x", x)],
     [("y", x.reshape(2, 12))])

# Pad-1: paddings.
x = f32(1, 2, 3, 3)
case("test_pad_paddings_reflect_opset1", 1,
     [helper.make_node("Pad", ["x"], ["y"], paddings=[0, 0, 1, 2, 0, 0, 2, 1], mode="reflect")], [("x", x)],
     [("y", np.pad(x, [(0, 0), (0, 0), (1, 2), (2, 1)], mode="reflect"))])

# Upsample-1: height_scale and width_scale, nearest.
x = f32(1, 2, 2, 3)
case("test_upsample_scales_opset1", 1,
     [helper.make_node("Upsample", ["x"], ["y"], height_scale=2.0, width_scale=3.0, mode="nearest")], [("x", x)],
     [("y", x.repeat(2, axis=2).repeat(3, axis=3))])

# Tile-1: copies along one axis, both given as (constant) inputs.
x = f32(2, 3)
case("test_tile_axis_opset1", 1, [helper.make_node("Tile", ["x", "t", "ax"], ["y"])], [("x", x)],
     [("y", np.tile(x, (1, 3)))], [("t", np.array(3, np.int64)), ("ax", np.array(1, np.int64))])

# PRelu-6: a slope per channel (axis 1).
x, slope = f32(2, 3, 4), np.array([0.1, 0.2, 0.3], np.float32)
case("test_prelu_channel_opset6", 6, [helper.make_node("PRelu", ["x", "slope"], ["y"])], [("x", x)],
     [("y", np.where(x < 0, x * slope.reshape(3, 1), x))], [("slope", slope)])

# Dropout-6 in inference: the identity, and a mask of the input's type.
x = f32(3, 4)
case("test_dropout_mask_opset6", 6, [helper.make_node("Dropout", ["x"], ["y", "mask"], is_test=1, ratio=0.3)],
     [("x", x)], [("y", x), ("mask", np.ones_like(x))])

# Concat-1 (axis 1 by default), Split-1 (sizes as an input).
a, b = f32(2, 2), f32(2, 3)
case("test_concat_default_axis_opset1", 1, [helper.make_node("Concat", ["a", "b"], ["y"])], [("a", a), ("b", b)],
     [("y", np.concatenate([a, b], axis=1))])
x = f32(2, 5)
case("test_split_input_opset1", 1, [helper.make_node("Split", ["x", "s"], ["p", "q"], axis=1)], [("x", x)],
     [("p", x[:, :2]), ("q", x[:, 2:])], [("s", np.array([2, 3], np.int64))])

# MaxPool as the first exporters wrote it: one symmetric pad per spatial axis.
x = f32(1, 1, 4, 4)
xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)], constant_values=-np.inf)
ref = np.array([[xp[0, 0, i * 2:i * 2 + 3, j * 2:j * 2 + 3].max() for j in range(2)] for i in range(2)], np.float32)
case("test_maxpool_symmetric_pads_opset1", 1,
     [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1])], [("x", x)],
     [("y", ref.reshape(1, 1, 2, 2))])

# Gemm-6 with broadcast=1: C [N] added to every row.
a, w, c = f32(2, 3), f32(3, 4), f32(4)
case("test_gemm_broadcast_opset6", 6,
     [helper.make_node("Gemm", ["a", "w", "c"], ["y"], broadcast=1, alpha=0.5, beta=2.0)], [("a", a)],
     [("y", (0.5 * a @ w + 2.0 * c).astype(np.float32))], [("w", w), ("c", c)])
