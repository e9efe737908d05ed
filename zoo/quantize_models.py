"""Quantized versions of the shared models, made with ONNX Runtime's own quantization tools, with
ONNX Runtime's outputs as their test data (the reference kiln's int8 path is held to).

  resnet18_int8, mobilenet_v2_int8   quantize_static, QDQ format, per-channel int8 weights,
                                     int8 activations (ORT's defaults), calibrated on
                                     CALIBRATION random normal inputs
  bert_mini_int8                     quantize_dynamic (DynamicQuantizeLinear + MatMulInteger),
                                     int8 weights

Each goes to OUT/NAME/model.onnx with test_data_set_0..N-1 (seeded random inputs of the fp32
model's shape, outputs computed by ONNX Runtime on this CPU, one thread, in its exact mode (see
EXACT below), and float_output_0.pb:
ORT's output of the float model, whose difference is the quantization's own error) and
quant.json, which records the output's quantization step (the scale of the last
DequantizeLinear that feeds the graph output; null for dynamic models, whose output is float).

Usage: python zoo/quantize_models.py [--shared DIR] [--out DIR] [--sets N] [--models a,b]
"""
import argparse
import json
import os
import shutil
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic,
                                      quantize_static)
from onnxruntime.quantization.shape_inference import quant_pre_process

CALIBRATION = 8
# ORT's int8 GEMM on AVX2 without VNNI multiplies uint8 x int8 with vpmaddubsw by default, whose
# 16-bit pair sums saturate: on such a CPU its outputs move by several output steps from the
# exact sums (resnet18_int8 on a Zen 3: up to 3 steps). This session option makes it sum
# exactly (a no-op where VNNI is used); the reference is ORT computing what the model says.
EXACT = ("session.x64quantprecision", "1")


def random_input(model_dir, rng):
    """A random input like test_data_set_0/input_0.pb: normal images, or token ids in its range."""
    ref = numpy_helper.to_array(onnx.load_tensor(os.path.join(model_dir, "test_data_set_0", "input_0.pb")))
    if ref.dtype == np.int64:
        return rng.integers(0, int(ref.max()) + 1, size=ref.shape, dtype=np.int64)
    return rng.standard_normal(ref.shape).astype(ref.dtype)


class RandomReader(CalibrationDataReader):
    def __init__(self, model_dir, name, count, seed):
        rng = np.random.default_rng(seed)
        self.items = iter([{name: random_input(model_dir, rng)} for _ in range(count)])

    def get_next(self):
        return next(self.items, None)


def output_step(model_path):
    """The scale of the DequantizeLinear producing the (single) graph output, if any."""
    m = onnx.load(model_path)
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    out = m.graph.output[0].name
    for n in m.graph.node:
        if n.op_type == "DequantizeLinear" and n.output[0] == out and n.input[1] in inits:
            return float(inits[n.input[1]].reshape(-1)[0])
    return None


def make(name, shared, out, sets):
    base = name[: -len("_int8")]
    src_dir = os.path.join(shared, base)
    dst = os.path.join(out, name)
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    model_path = os.path.join(dst, "model.onnx")
    input_name = onnx.load(os.path.join(src_dir, "model.onnx")).graph.input[0].name
    with tempfile.TemporaryDirectory() as tmp:
        prepared = os.path.join(tmp, "prepared.onnx")
        quant_pre_process(os.path.join(src_dir, "model.onnx"), prepared)
        if base == "bert_mini":
            quantize_dynamic(prepared, model_path, weight_type=QuantType.QInt8)
        else:
            quantize_static(prepared, model_path, RandomReader(src_dir, input_name, CALIBRATION, seed=1),
                            quant_format=QuantFormat.QDQ, per_channel=True,
                            activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.add_session_config_entry(*EXACT)
    sess = ort.InferenceSession(model_path, opts, providers=["CPUExecutionProvider"])
    float_sess = ort.InferenceSession(os.path.join(src_dir, "model.onnx"), opts, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(2026)
    out_name = sess.get_outputs()[0].name
    for i in range(sets):
        x = random_input(src_dir, rng)
        y = sess.run(None, {input_name: x})[0]
        d = os.path.join(dst, f"test_data_set_{i}")
        os.makedirs(d)
        onnx.save_tensor(numpy_helper.from_array(x, input_name), os.path.join(d, "input_0.pb"))
        onnx.save_tensor(numpy_helper.from_array(y, out_name), os.path.join(d, "output_0.pb"))
        yf = float_sess.run(None, {input_name: x})[0]
        onnx.save_tensor(numpy_helper.from_array(yf, out_name), os.path.join(d, "float_output_0.pb"))
    ops = sorted({n.op_type for n in onnx.load(model_path).graph.node})
    with open(os.path.join(dst, "quant.json"), "w") as f:
        json.dump({"output_step": output_step(model_path), "ops": ops, "ort": ort.__version__,
                   "ort_session_config": dict([EXACT])}, f, indent=1)
    print(f"{name}: {sets} data sets, output step {output_step(model_path)}, ops {' '.join(ops)}")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shared", default=os.path.join(here, "..", "..", "shared", "models"))
    p.add_argument("--out", default=os.path.join(here, "..", "build", "quantized"))
    p.add_argument("--sets", type=int, default=20)
    p.add_argument("--models", default="resnet18_int8,mobilenet_v2_int8,bert_mini_int8")
    a = p.parse_args()
    for name in a.models.split(","):
        make(name, a.shared, a.out, a.sets)


if __name__ == "__main__":
    main()
