#!/usr/bin/env python3
"""Writes the RNN / GRU / LSTM cases beside this file, in the node suite's layout: the forms the
ONNX node suite leaves out (reverse and bidirectional directions, clip, activations,
linear_before_reset=1, peepholes with initial states, a uniform sequence_lens shorter than the
sequence, input_forget), with reference outputs from onnxruntime. Run it with a Python that has
onnx, numpy and onnxruntime; the outputs are committed, so the tests need none of them."""
import os
import shutil

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(11)


def f32(*shape):
    return (rng.standard_normal(shape) * 0.5).astype(np.float32)


def case(name, node, inputs, consts, n_out):
    vi = lambda n, a: helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
    outs = [o for o in node.output if o][:n_out]
    graph = helper.make_graph([node], name, [vi(n, a) for n, a in inputs],
                              [helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT, None) for o in outs],
                              [numpy_helper.from_array(a, n) for n, a in consts])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8,
                              producer_name="kiln rnn cases")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    results = sess.run(None, dict(inputs))
    d = os.path.join(HERE, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    for o, r in zip(model.graph.output, results):  # the outputs' shapes, now known
        o.type.tensor_type.shape.CopyFrom(helper.make_tensor_type_proto(1, r.shape).tensor_type.shape)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for kind, vals in (("input", inputs), ("output", list(zip(outs, results)))):
        for i, (n, a) in enumerate(vals):
            with open(os.path.join(d, "test_data_set_0", f"{kind}_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(a, n).SerializeToString())


seq, batch, inp, hid = 4, 2, 3, 3
x = f32(seq, batch, inp)

# LSTM, both directions, clip, peepholes, initial states.
d = 2
case("test_lstm_bidirectional_clip_peepholes",
     helper.make_node("LSTM", ["x", "w", "r", "b", "", "h0", "c0", "p"], ["y", "yh", "yc"], hidden_size=hid,
                      direction="bidirectional", clip=0.7),
     [("x", x)],
     [("w", f32(d, 4 * hid, inp)), ("r", f32(d, 4 * hid, hid)), ("b", f32(d, 8 * hid)), ("h0", f32(d, batch, hid)),
      ("c0", f32(d, batch, hid)), ("p", f32(d, 3 * hid))], 3)

# LSTM, input_forget (f = 1 - i).
case("test_lstm_input_forget",
     helper.make_node("LSTM", ["x", "w", "r", "b"], ["y", "yh", "yc"], hidden_size=hid, input_forget=1),
     [("x", x)], [("w", f32(1, 4 * hid, inp)), ("r", f32(1, 4 * hid, hid)), ("b", f32(1, 8 * hid))], 3)

# GRU, reverse, linear_before_reset=1, initial state.
case("test_gru_reverse_linear_before_reset",
     helper.make_node("GRU", ["x", "w", "r", "b", "", "h0"], ["y", "yh"], hidden_size=hid, direction="reverse",
                      linear_before_reset=1),
     [("x", x)],
     [("w", f32(1, 3 * hid, inp)), ("r", f32(1, 3 * hid, hid)), ("b", f32(1, 6 * hid)), ("h0", f32(1, batch, hid))], 2)

# GRU, both directions, other activations per direction.
case("test_gru_bidirectional_activations",
     helper.make_node("GRU", ["x", "w", "r", "b"], ["y", "yh"], hidden_size=hid, direction="bidirectional",
                      activations=["Sigmoid", "Tanh", "HardSigmoid", "Relu"], activation_alpha=[0.3],
                      activation_beta=[0.4]),
     [("x", x)], [("w", f32(2, 3 * hid, inp)), ("r", f32(2, 3 * hid, hid)), ("b", f32(2, 6 * hid))], 2)

# RNN, both directions, Relu one way and Tanh the other, a uniform sequence_lens of 3 < 4.
case("test_rnn_bidirectional_seq_lens",
     helper.make_node("RNN", ["x", "w", "r", "b", "lens"], ["y", "yh"], hidden_size=hid, direction="bidirectional",
                      activations=["Relu", "Tanh"]),
     [("x", x)],
     [("w", f32(2, hid, inp)), ("r", f32(2, hid, hid)), ("b", f32(2, 2 * hid)), ("lens", np.array([3, 3], np.int32))],
     2)
