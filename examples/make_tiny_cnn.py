"""Builds examples/tiny_cnn: a small classification CNN in ONNX (opset 17), with a random
seeded input and the output ONNX Runtime computes for it (test_data_set_0, the node-test
layout). kiln's README main-job command compiles and runs this model.

Needs the onnx, onnxruntime and numpy packages (pip); the generated files are committed, so
building kiln never runs this script.
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "tiny_cnn")
rng = np.random.default_rng(17)


def const(name, shape, scale=0.2):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


inits = [
    const("conv1.w", (16, 3, 3, 3)), const("conv1.b", (16,), 0.05),
    const("bn.scale", (16,), 0.1), const("bn.bias", (16,), 0.1),
    const("bn.mean", (16,), 0.1), numpy_helper.from_array(rng.uniform(0.5, 1.5, 16).astype(np.float32), "bn.var"),
    const("conv2.w", (32, 16, 3, 3), 0.1), const("conv2.b", (32,), 0.05),
    const("fc.w", (10, 32), 0.3), const("fc.b", (10,), 0.05),
]
nodes = [
    helper.make_node("Conv", ["input", "conv1.w", "conv1.b"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
    helper.make_node("BatchNormalization", ["c1", "bn.scale", "bn.bias", "bn.mean", "bn.var"], ["b1"], name="bn1"),
    helper.make_node("Relu", ["b1"], ["r1"], name="relu1"),
    helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2], name="pool1"),
    helper.make_node("Conv", ["p1", "conv2.w", "conv2.b"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2], name="conv2"),
    helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
    helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
    helper.make_node("Flatten", ["g"], ["f"], axis=1, name="flatten"),
    helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["logits"], transB=1, name="fc"),
    helper.make_node("Softmax", ["logits"], ["probabilities"], axis=1, name="softmax"),
]
graph = helper.make_graph(
    nodes, "tiny_cnn",
    [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 32, 32])],
    [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [1, 10])],
    inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="kiln examples")
model.ir_version = 8
onnx.checker.check_model(model)

os.makedirs(os.path.join(OUT, "test_data_set_0"), exist_ok=True)
onnx.save(model, os.path.join(OUT, "model.onnx"))
x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
sess = ort.InferenceSession(os.path.join(OUT, "model.onnx"), providers=["CPUExecutionProvider"])
(y,) = sess.run(None, {"input": x})
for name, arr in (("input_0.pb", x), ("output_0.pb", y)):
    t = numpy_helper.from_array(arr, "input" if name.startswith("input") else "probabilities")
    with open(os.path.join(OUT, "test_data_set_0", name), "wb") as f:
        f.write(t.SerializeToString())
print("wrote", OUT, "top class", int(y.argmax()), "p =", float(y.max()))
