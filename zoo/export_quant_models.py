"""Writes the quantized test models of tests/models (quant_*) as `kiln check` case folders.

    OUT/NAME/model.onnx
    OUT/NAME/test_data_set_0/input_N.pb    seeded inputs
    OUT/NAME/test_data_set_0/output_N.pb   the reference outputs

The node suite has one small case per quantization operator; these are larger, so that the CPU
templates (channel-blocked and depthwise int32 convs, packed int32 dense panels, the matmul
template, vectorized quantize/dequantize) and the GPU templates run on them:

  quant_qdq_net     a QDQ network as ONNX Runtime's quantizer writes one: Q/DQ around a conv
                    (int8 weight per output channel, int32 bias), relu, a matmul (int8 weight)
  quant_qdq_axis    per-axis int8 QuantizeLinear/DequantizeLinear over [2,16,9,7] with rounding
                    ties and saturation; float16 by a float16 scale to int16 and back
  quant_integer     ConvInteger (groups 1, strided groups 2, depthwise; per-channel weight zero
                    points) and MatMulInteger (constant B with per-row / per-column zero points;
                    batched runtime operands)
  quant_qlinear     QLinearConv (per-channel weight scales, int32 bias), QLinearMatMul (3-D)
  quant_contrib     com.microsoft QLinearAdd (broadcast), QLinearMul, QLinearGlobalAveragePool
                    (NCHW and channels_last)

References: ONNX's reference implementation (onnx.reference), which the node suite's outputs
come from; its MatMulInteger lacks the per-row zero point the spec allows, added below. The
com.microsoft ops have no ONNX reference: ONNX Runtime's outputs, on inputs drawn so that no
exact result lies within 1e-3 of a rounding tie (kiln dequantizes, computes in float32 and
quantizes; ONNX Runtime requantizes integers with one multiplier: the two agree away from ties).

Needs onnx, numpy and onnxruntime, e.g. with /work/venv-torch (zoo/export_user_models.py):
    /work/venv-torch/bin/python zoo/export_quant_models.py --out /tmp/qm
    for d in /tmp/qm/*/; do build/bin/kiln check "$d"; done
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh
from onnx.reference import ReferenceEvaluator
from onnx.reference.op_run import OpRun


class MatMulInteger(OpRun):
    """The spec's MatMulInteger: a 1-d zero point of A with one entry per row ([M] for A [M, K])."""

    op_domain = ""

    def _run(self, A, B, a_zero_point=None, b_zero_point=None):
        a = A.astype(np.int32)
        if a_zero_point is not None:
            az = a_zero_point.astype(np.int32)
            if az.ndim == 1 and az.size > 1:
                az = az.reshape(-1, 1)
            a = a - az
        b = B.astype(np.int32)
        if b_zero_point is not None:
            b = b - b_zero_point.astype(np.int32)
        return (np.matmul(a, b),)


def vi(name, dtype, shape=None):
    return h.make_tensor_value_info(name, dtype, shape)


def write(out, name, model, inputs, outputs):
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for i, (k, v) in enumerate(inputs.items()):
        with open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
            f.write(nh.from_array(v, k).SerializeToString())
    for i, (o, v) in enumerate(zip(model.graph.output, outputs)):
        with open(os.path.join(d, "test_data_set_0", f"output_{i}.pb"), "wb") as f:
            f.write(nh.from_array(np.asarray(v), o.name).SerializeToString())
    print(name, [np.asarray(v).shape for v in outputs])


def make_model(graph, opset, domains=()):
    m = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)] + [h.make_opsetid(d, 1) for d in domains])
    m.ir_version = 9
    return m


def reference(model, inputs):
    return ReferenceEvaluator(model, new_ops=[MatMulInteger]).run(None, inputs)


def near_tie(r):
    """Where a value to be rounded lies within 1e-3 of a tie (x.5): there float32 rounding
    differences (summation order, FMA contraction) may round it either way."""
    return np.abs(np.abs(r - np.floor(r)) - 0.5) <= 1e-3


def tie_free(draw, exact, tries=100):
    """Draws inputs until no value `exact` computes from them lies near a rounding tie."""
    for _ in range(tries):
        v = draw()
        if not np.any(near_tie(exact(v))):
            return v
    raise RuntimeError("no tie-free inputs found")


def quantized_values(model, inputs, pairs):
    """The values QuantizeLinear rounds, value / scale, for (value, scale) name pairs of the
    model: the values as the reference computes them (float32), divided in float64."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    del m.graph.output[:]
    m.graph.output.extend([vi(v, TP.FLOAT) for v, _ in pairs])
    values = ReferenceEvaluator(m).run(None, inputs)
    scales = {i.name: nh.to_array(i) for i in model.graph.initializer}
    return np.concatenate([(v.astype(np.float64) / scales[sc].astype(np.float64)).ravel()
                           for v, (_, sc) in zip(values, pairs)])


def qdq_net(rng):
    w = rng.integers(-127, 128, (8, 4, 3, 3), dtype=np.int8)
    ws = (rng.random(8) * 0.01 + 0.002).astype(np.float32)
    nodes = [
        h.make_node("QuantizeLinear", ["x", "s_in", "z_in"], ["xq"]),
        h.make_node("DequantizeLinear", ["xq", "s_in", "z_in"], ["xf"]),
        h.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], axis=0),
        h.make_node("Mul", ["s_in", "ws"], ["bs"]),
        h.make_node("DequantizeLinear", ["bias", "bs"], ["bf"], axis=0),
        h.make_node("Conv", ["xf", "wf", "bf"], ["c"], pads=[1, 1, 1, 1]),
        h.make_node("Relu", ["c"], ["r"]),
        h.make_node("QuantizeLinear", ["r", "s_mid", "z_mid"], ["rq"]),
        h.make_node("DequantizeLinear", ["rq", "s_mid", "z_mid"], ["rf"]),
        h.make_node("DequantizeLinear", ["w2", "s_w2"], ["w2f"]),
        h.make_node("MatMul", ["rf", "w2f"], ["m"]),
        h.make_node("QuantizeLinear", ["m", "s_out", "z_out"], ["y"]),
    ]
    inits = [nh.from_array(np.array(0.03, np.float32), "s_in"), nh.from_array(np.array(-3, np.int8), "z_in"),
             nh.from_array(w, "w"), nh.from_array(ws, "ws"), nh.from_array(np.zeros(8, np.int8), "wz"),
             nh.from_array(rng.integers(-500, 500, (8,), dtype=np.int32), "bias"),
             nh.from_array(np.array(0.02, np.float32), "s_mid"), nh.from_array(np.array(0, np.uint8), "z_mid"),
             nh.from_array(rng.integers(-127, 128, (8, 10), dtype=np.int8), "w2"),
             nh.from_array(np.array(0.01, np.float32), "s_w2"), nh.from_array(np.array(0.05, np.float32), "s_out"),
             nh.from_array(np.array(5, np.int8), "z_out")]
    m = make_model(h.make_graph(nodes, "qdq_net", [vi("x", TP.FLOAT, [1, 4, 8, 8])], [vi("y", TP.INT8)], inits), 21)
    pairs = [("x", "s_in"), ("r", "s_mid"), ("m", "s_out")]
    x = tie_free(lambda: rng.standard_normal((1, 4, 8, 8)).astype(np.float32),
                 lambda x: quantized_values(m, {"x": x}, pairs))
    return m, {"x": x}, reference(m, {"x": x})


def qdq_axis(rng):
    x = (rng.standard_normal((2, 16, 9, 7)) * 3).astype(np.float32)
    x.flat[:8] = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1e5, -1e5]  # ties and saturation (scale < 1)
    s = (rng.random(16) * 0.05 + 0.01).astype(np.float32)
    s[0] = 1  # the ties stay ties
    z = rng.integers(-10, 10, (16,), dtype=np.int8)
    x16 = (rng.standard_normal((3, 33)) * 1000).astype(np.float16)
    nodes = [h.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1),
             h.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1),
             h.make_node("QuantizeLinear", ["x16", "s16"], ["q16"], output_dtype=TP.INT16),
             h.make_node("DequantizeLinear", ["q16", "s16"], ["y16"])]
    g = h.make_graph(nodes, "qdq_axis",
                     [vi("x", TP.FLOAT, x.shape), vi("s", TP.FLOAT, s.shape), vi("z", TP.INT8, z.shape),
                      vi("x16", TP.FLOAT16, x16.shape), vi("s16", TP.FLOAT16, [])],
                     [vi("q", TP.INT8), vi("y", TP.FLOAT), vi("q16", TP.INT16), vi("y16", TP.FLOAT16)])
    m = make_model(g, 21)
    inputs = {"x": x, "s": s, "z": z, "x16": x16, "s16": np.array(0.37, np.float16)}
    return m, inputs, reference(m, inputs)


def integer_ops(rng):
    nodes, inits, outs = [], [], []
    x = rng.integers(0, 256, (1, 16, 14, 14), dtype=np.uint8)
    inits.append(nh.from_array(np.array(128, np.uint8), "xz"))
    for tag, groups, cout, strides in [("g1", 1, 32, [1, 1]), ("g2", 2, 32, [2, 2]), ("dw", 16, 16, [1, 1])]:
        inits.append(nh.from_array(rng.integers(-128, 128, (cout, 16 // groups, 3, 3), dtype=np.int8), "w_" + tag))
        inits.append(nh.from_array(rng.integers(-5, 6, (cout,), dtype=np.int8), "wz_" + tag))
        nodes.append(h.make_node("ConvInteger", ["x", "w_" + tag, "xz", "wz_" + tag], ["conv_" + tag],
                                 pads=[1, 1, 1, 1], group=groups, strides=strides))
        outs.append(vi("conv_" + tag, TP.INT32))
    a = rng.integers(0, 256, (64, 96), dtype=np.uint8)
    inits += [nh.from_array(rng.integers(-128, 128, (96, 80), dtype=np.int8), "b"),
              nh.from_array(rng.integers(100, 156, (64,), dtype=np.uint8), "az"),
              nh.from_array(rng.integers(-3, 4, (80,), dtype=np.int8), "bz"),
              nh.from_array(np.array(3, np.int8), "a3z")]
    a3 = rng.integers(-128, 128, (2, 24, 40), dtype=np.int8)
    b3 = rng.integers(0, 256, (2, 40, 36), dtype=np.uint8)
    nodes += [h.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["mm_const"]),
              h.make_node("MatMulInteger", ["a3", "b3", "a3z"], ["mm_batched"])]
    outs += [vi("mm_const", TP.INT32), vi("mm_batched", TP.INT32)]
    g = h.make_graph(nodes, "integer_ops",
                     [vi("x", TP.UINT8, x.shape), vi("a", TP.UINT8, a.shape), vi("a3", TP.INT8, a3.shape),
                      vi("b3", TP.UINT8, b3.shape)], outs, inits)
    m = make_model(g, 21)
    inputs = {"x": x, "a": a, "a3": a3, "b3": b3}
    return m, inputs, reference(m, inputs)


def qlinear_ops(rng):
    f64 = lambda v: np.asarray(v, np.float32).astype(np.float64)  # a float32 scale, exactly
    w = rng.integers(-127, 128, (16, 8, 3, 3), dtype=np.int8)
    ws = (rng.random(16) * 0.01 + 0.001).astype(np.float32)
    bias = rng.integers(-2000, 2000, (16,), dtype=np.int32)
    inits = [nh.from_array(np.array(0.02, np.float32), "xs"), nh.from_array(np.array(120, np.uint8), "xz"),
             nh.from_array(w, "w"), nh.from_array(ws, "ws"), nh.from_array(np.zeros(16, np.int8), "wz"),
             nh.from_array(np.array(0.05, np.float32), "ys"), nh.from_array(np.array(100, np.uint8), "yz"),
             nh.from_array(bias, "bias"),
             nh.from_array(np.array([0.04], np.float32), "as"), nh.from_array(np.array([3], np.int8), "az"),
             nh.from_array(np.array([0.03], np.float32), "bs"), nh.from_array(np.array([-2], np.int8), "bz"),
             nh.from_array(np.array([0.9], np.float32), "ms"), nh.from_array(np.array([1], np.int8), "mz")]
    nodes = [h.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "bias"], ["conv"],
                         pads=[1, 1, 1, 1]),
             h.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ms", "mz"], ["mm"])]
    shapes = {"x": (1, 8, 8, 8), "a": (2, 5, 32), "b": (2, 32, 12)}
    g = h.make_graph(nodes, "qlinear_ops", [vi("x", TP.UINT8, shapes["x"]), vi("a", TP.INT8, shapes["a"]),
                                            vi("b", TP.INT8, shapes["b"])],
                     [vi("conv", TP.UINT8), vi("mm", TP.INT8)], inits)
    m = make_model(g, 21)
    # The exact values the two nodes round: the int32 sums (ConvInteger's, with the bias) times
    # the requantization multiplier in float64.
    acc = make_model(h.make_graph([h.make_node("ConvInteger", ["x", "w", "xz"], ["acc"], pads=[1, 1, 1, 1])], "acc",
                                  [vi("x", TP.UINT8, shapes["x"])], [vi("acc", TP.INT32)], inits[1:3]), 21)

    def exact(v):
        x, a, b = v
        s = ReferenceEvaluator(acc).run(None, {"x": x})[0].astype(np.float64) + bias[None, :, None, None]
        conv = s * (f64(0.02) * f64(ws)[None, :, None, None] / f64(0.05))
        mm = (a.astype(np.float64) - 3) @ (b.astype(np.float64) + 2) * (f64(0.04) * f64(0.03) / f64(0.9))
        return np.concatenate([conv.ravel(), mm.ravel()])

    x, a, b = tie_free(lambda: (rng.integers(0, 256, shapes["x"], dtype=np.uint8),
                                rng.integers(-128, 128, shapes["a"], dtype=np.int8),
                                rng.integers(-128, 128, shapes["b"], dtype=np.int8)), exact)
    inputs = {"x": x, "a": a, "b": b}
    return m, inputs, reference(m, inputs)


def contrib_ops(rng):
    import onnxruntime as ort

    f32 = lambda v: np.float64(np.float32(v))  # the scales as the model stores them
    sa, za, sb, zb = f32(0.05), 128, f32(0.03), 100
    add_c, mul_c, cz = f32(0.07), f32(0.3), 110
    xs, xz, ys, yz = f32(0.05), 128, f32(0.01), 120

    def exact(v):
        a, b, x, xl = (t.astype(np.float64) for t in v)
        add = ((a - za) * sa + (b - zb) * sb) / add_c
        mul = ((a - za) * sa) * ((b - zb) * sb) / mul_c
        gap = (x - xz).mean(axis=(2, 3)) * xs / ys
        gapl = (xl - xz).mean(axis=(1, 2)) * xs / ys
        return np.concatenate([add.ravel(), mul.ravel(), gap.ravel(), gapl.ravel()])

    a, b, x, xl = tie_free(lambda: (rng.integers(0, 256, (1, 8, 5, 5), dtype=np.uint8),
                                    rng.integers(0, 256, (8, 1, 1), dtype=np.uint8),
                                    rng.integers(0, 256, (1, 8, 7, 7), dtype=np.uint8),
                                    rng.integers(0, 256, (1, 7, 7, 8), dtype=np.uint8)), exact)
    c = lambda v, n: nh.from_array(np.array(v, np.float32 if isinstance(v, float) else np.uint8), n)
    inits = [c(0.05, "as"), c(128, "az"), c(0.03, "bs"), c(100, "bz"), c(0.07, "add_s"), c(0.3, "mul_s"), c(110, "cz"),
             c(0.05, "xs"), c(128, "xz"), c(0.01, "ys"), c(120, "yz")]
    ms = "com.microsoft"
    nodes = [h.make_node("QLinearAdd", ["a", "as", "az", "b", "bs", "bz", "add_s", "cz"], ["add"], domain=ms),
             h.make_node("QLinearMul", ["a", "as", "az", "b", "bs", "bz", "mul_s", "cz"], ["mul"], domain=ms),
             h.make_node("QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"], ["gap"], domain=ms, channels_last=0),
             h.make_node("QLinearGlobalAveragePool", ["xl", "xs", "xz", "ys", "yz"], ["gap_nhwc"], domain=ms,
                         channels_last=1)]
    g = h.make_graph(nodes, "contrib_ops",
                     [vi("a", TP.UINT8, a.shape), vi("b", TP.UINT8, b.shape), vi("x", TP.UINT8, x.shape),
                      vi("xl", TP.UINT8, xl.shape)],
                     [vi("add", TP.UINT8), vi("mul", TP.UINT8), vi("gap", TP.UINT8), vi("gap_nhwc", TP.UINT8)], inits)
    m = make_model(g, 17, [ms])
    inputs = {"a": a, "b": b, "x": x, "xl": xl}
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    outs = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, inputs)
    # Away from ties ONNX Runtime rounds the exact result: check that before trusting it.
    want = np.clip(np.rint(exact((a, b, x, xl))) + np.repeat([cz, cz, yz, yz], [a.size, a.size, 8, 8]), 0, 255)
    assert np.array_equal(np.concatenate([o.ravel() for o in outs]), want), "ONNX Runtime differs from the exact result"
    return m, inputs, outs


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    for name, make in [("quant_qdq_net", qdq_net), ("quant_qdq_axis", qdq_axis), ("quant_integer", integer_ops),
                       ("quant_qlinear", qlinear_ops), ("quant_contrib", contrib_ops)]:
        m, inputs, outputs = make(np.random.default_rng(0))
        write(args.out, name, m, inputs, outputs)


if __name__ == "__main__":
    main()
