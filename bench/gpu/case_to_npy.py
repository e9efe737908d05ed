"""Test data of a kiln check case as .npy files for kiln-runner (bench/gpu/prepare.sh).

  case_to_npy.py CASE_DIR OUT_DIR     inputs.txt ("NAME FILE" per graph input), input_N.npy,
                                      expected_N.npy from test_data_set_0
  case_to_npy.py --gemm N DTYPE OUT_DIR [nt]
                                      model.onnx: C = MatMul(A, B), A and B DTYPE (float32,
                                      float16) [N, N] inputs; with nt C = A . B^T (Gemm transB=1:
                                      a dense layer's weight layout, [N, K])
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def case(case_dir, out):
    model = onnx.load(os.path.join(case_dir, "model.onnx"), load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    data = os.path.join(case_dir, "test_data_set_0")
    lines = []
    for i, name in enumerate(names):
        t = onnx.TensorProto()
        with open(os.path.join(data, f"input_{i}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        np.save(os.path.join(out, f"input_{i}.npy"), numpy_helper.to_array(t))
        lines.append(f"{name} input_{i}.npy")
    outputs = [o.name for o in model.graph.output]
    for i, name in enumerate(outputs):
        t = onnx.TensorProto()
        with open(os.path.join(data, f"output_{i}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        np.save(os.path.join(out, f"expected_{name}.npy"), numpy_helper.to_array(t))
    with open(os.path.join(out, "inputs.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def gemm(n, dtype, out, layout):
    elem = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16}[dtype]
    a, b, c = (helper.make_tensor_value_info(x, elem, [n, n]) for x in "ABC")
    node = (helper.make_node("Gemm", ["A", "B"], ["C"], transB=1) if layout == "nt"
            else helper.make_node("MatMul", ["A", "B"], ["C"]))
    graph = helper.make_graph([node], "gemm", [a, b], [c])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, os.path.join(out, "model.onnx"))


if __name__ == "__main__":
    if sys.argv[1] == "--gemm":
        gemm(int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5] if len(sys.argv) > 5 else "nn")
    else:
        case(sys.argv[1], sys.argv[2])
