#!/usr/bin/env python3
"""Writes static control-flow cases beside this file, in the node suite's layout: what the node
suite leaves out (Scan-8 and Scan-9 in reverse along other axes, a Loop that its body's condition
ends, an If nested in a Loop body reading the iteration number), with reference outputs from
onnxruntime. Run it with a Python that has onnx, numpy and onnxruntime; the outputs are
committed, so the tests need none of them."""
import os
import shutil

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(5)
F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
vi = helper.make_tensor_value_info


def case(name, opset, nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, name, [vi(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape) for n, a in inputs],
                              [vi(o, F, None) for o in outputs], [numpy_helper.from_array(a, n) for n, a in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=7,
                              producer_name="kiln control cases")
    results = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, dict(inputs))
    for o, r in zip(model.graph.output, results):
        o.type.tensor_type.shape.CopyFrom(helper.make_tensor_type_proto(F, r.shape).tensor_type.shape)
    d = os.path.join(HERE, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save(model, os.path.join(d, "model.onnx"))
    for kind, vals in (("input", inputs), ("output", list(zip(outputs, results)))):
        for i, (n, a) in enumerate(vals):
            with open(os.path.join(d, "test_data_set_0", f"{kind}_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(a, n).SerializeToString())


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# body(s, v): s' = s * 0.5 + v, out = s' - v * v
body = helper.make_graph(
    [helper.make_node("Mul", ["s", "half"], ["sh"]), helper.make_node("Add", ["sh", "v"], ["s2"]),
     helper.make_node("Mul", ["v", "v"], ["vv"]), helper.make_node("Sub", ["s2", "vv"], ["o"])],
    "body", [vi("s", F, [3]), vi("v", F, [3])], [vi("s2", F, [3]), vi("o", F, [3])],
    [numpy_helper.from_array(np.array(0.5, np.float32), "half")])

# Scan-8: batch axis 0, the scan input read in reverse.
case("test_scan8_reverse", 8,
     [helper.make_node("Scan", ["", "init", "xs"], ["final", "all"], num_scan_inputs=1, body=body, directions=[1])],
     [("init", f32(2, 3)), ("xs", f32(2, 4, 3))], ["final", "all"])

# Scan-9+: the scan input along axis 1 in reverse, the scan output stacked along axis 1 in reverse.
case("test_scan_axes_reverse", 16,
     [helper.make_node("Scan", ["init", "xs"], ["final", "all"], num_scan_inputs=1, body=body, scan_input_axes=[1],
                       scan_input_directions=[1], scan_output_axes=[1], scan_output_directions=[1])],
     [("init", f32(3)), ("xs", f32(3, 5))], ["final", "all"])

# Loop with M = 10 whose body stops it: cond' = i < 3, so 4 iterations run.
loop_body = helper.make_graph(
    [helper.make_node("Less", ["i", "three"], ["c2"]), helper.make_node("Cast", ["i"], ["fi"], to=F),
     helper.make_node("Mul", ["acc", "fi"], ["m"]), helper.make_node("Add", ["m", "x"], ["acc2"]),
     helper.make_node("Identity", ["acc2"], ["scan"])],
    "loop_body", [vi("i", I64, []), vi("c", B, []), vi("acc", F, [2])],
    [vi("c2", B, []), vi("acc2", F, [2]), vi("scan", F, [2])],
    [numpy_helper.from_array(np.array(3, np.int64), "three")])
case("test_loop_body_condition_ends", 16,
     [helper.make_node("Loop", ["M", "", "acc0"], ["final", "all"], body=loop_body)],
     [("x", f32(2)), ("acc0", f32(2))], ["final", "all"], [("M", np.array(10, np.int64))])

# An If in a Loop body on the iteration number: odd iterations add x, even ones subtract it.
then_g = helper.make_graph([helper.make_node("Add", ["acc", "x"], ["t"])], "then", [], [vi("t", F, [2])])
else_g = helper.make_graph([helper.make_node("Sub", ["acc", "x"], ["e"])], "else", [], [vi("e", F, [2])])
nested_body = helper.make_graph(
    [helper.make_node("Mod", ["i", "two"], ["r"]), helper.make_node("Equal", ["r", "one"], ["odd"]),
     helper.make_node("If", ["odd"], ["acc2"], then_branch=then_g, else_branch=else_g),
     helper.make_node("Identity", ["c"], ["c2"])],
    "nested_body", [vi("i", I64, []), vi("c", B, []), vi("acc", F, [2])], [vi("c2", B, []), vi("acc2", F, [2])],
    [numpy_helper.from_array(np.array(2, np.int64), "two"), numpy_helper.from_array(np.array(1, np.int64), "one")])
case("test_loop_nested_if", 16,
     [helper.make_node("Loop", ["M", "", "acc0"], ["final"], body=nested_body)],
     [("x", f32(2)), ("acc0", f32(2))], ["final"], [("M", np.array(5, np.int64))])
