"""kiln.compile / kiln.load / Module.run on NumPy arrays, checked against the models' reference
outputs (and ONNX Runtime where it is installed)."""

import numpy as np
import onnx
import pytest

import kiln
from conftest import assert_close


def test_tiny_cnn_matches_reference(tiny_cnn, tiny_module):
    _, x, expected = tiny_cnn
    (y,) = tiny_module.run({"input": x})
    assert isinstance(y, np.ndarray) and y.dtype == np.float32
    assert_close(y, expected)
    assert_close(tiny_module(input=x)[0], expected)


def test_inputs_and_outputs(tiny_module):
    assert tiny_module.inputs == [kiln.TensorInfo("input", (1, 3, 32, 32), "float32")]
    assert tiny_module.outputs == [kiln.TensorInfo("probabilities", (1, 10), "float32")]
    assert "input: float32[1, 3, 32, 32]" in repr(tiny_module)


def test_compile_model_proto(tiny_cnn):
    path, x, expected = tiny_cnn
    m = kiln.compile(onnx.load(str(path)))
    assert_close(m.run({"input": x})[0], expected)


def test_inputs_are_converted_or_read_in_place(tiny_cnn, tiny_module):
    _, x, expected = tiny_cnn
    assert_close(tiny_module.run({"input": x.tolist()})[0], expected)  # a list: numpy.asarray, float32
    strided = np.asfortranarray(x)  # not C-contiguous: read through its strides
    assert_close(tiny_module.run({"input": strided})[0], expected)
    frozen = x.copy()
    frozen.flags.writeable = False
    assert_close(tiny_module.run({"input": frozen})[0], expected)


def test_save_load_round_trip(tiny_cnn, tiny_module, tmp_path):
    _, x, expected = tiny_cnn
    path = tmp_path / "tiny_cnn.so"
    tiny_module.save(path)
    loaded = kiln.load(path)
    assert loaded.inputs == tiny_module.inputs and loaded.outputs == tiny_module.outputs
    assert loaded.notes == []
    assert_close(loaded.run({"input": x})[0], expected)
    loaded.save(path)  # onto itself: nothing to do


def test_modules_are_independent(tiny_cnn, tiny_module):
    _, x, _ = tiny_cnn
    other = kiln.compile(tiny_cnn[0], target="llvm -mcpu=x86-64-v3")
    assert_close(other.run({"input": x})[0], tiny_module.run({"input": x})[0])


def test_resnet18_numpy(resnet18, resnet18_module):
    _, x, expected = resnet18
    (y,) = resnet18_module.run({resnet18_module.inputs[0].name: x})
    assert_close(y, expected)


def test_resnet18_matches_onnx_runtime(resnet18, resnet18_module):
    ort = pytest.importorskip("onnxruntime")
    path, x, _ = resnet18
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (expected,) = session.run(None, {session.get_inputs()[0].name: x})
    assert_close(resnet18_module.run({resnet18_module.inputs[0].name: x})[0], expected)
