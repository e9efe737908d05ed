"""User errors raise kiln.KilnError (a RuntimeError) carrying kiln's message."""

import numpy as np
import pytest

import kiln


def test_error_types():
    assert issubclass(kiln.KilnError, RuntimeError)
    assert issubclass(kiln.UnsupportedError, kiln.KilnError)


def test_missing_model_file(tmp_path):
    with pytest.raises(kiln.KilnError, match="nope.onnx"):
        kiln.compile(tmp_path / "nope.onnx")


def test_not_a_model():
    with pytest.raises(kiln.KilnError, match="ModelProto"):
        kiln.compile(b"not a model")
    with pytest.raises(TypeError, match="onnx.ModelProto"):
        kiln.compile(42)


def test_missing_module_file(tmp_path):
    with pytest.raises(kiln.KilnError, match="missing.so"):
        kiln.load(tmp_path / "missing.so")


def test_bad_target(tiny_cnn):
    with pytest.raises(kiln.KilnError, match="no-such-target"):
        kiln.compile(tiny_cnn[0], target="no-such-target")


def test_missing_tuning_log(tiny_cnn, tmp_path):
    with pytest.raises(kiln.KilnError, match="absent.json"):
        kiln.compile(tiny_cnn[0], tuning_log=tmp_path / "absent.json")


def test_bad_input_name(tiny_module):
    x = np.zeros((1, 3, 32, 32), np.float32)
    with pytest.raises(kiln.KilnError, match="no input named 'image'.*input"):
        tiny_module.run({"image": x})


def test_missing_input(tiny_module):
    with pytest.raises(kiln.KilnError, match="missing input 'input'"):
        tiny_module.run({})


def test_wrong_shape(tiny_module):
    with pytest.raises(kiln.KilnError, match=r"input.*shape"):
        tiny_module.run({"input": np.zeros((1, 3, 16, 16), np.float32)})


def test_wrong_dtype(tiny_module):
    with pytest.raises(kiln.KilnError, match=r"input.*(dtype|type)"):
        tiny_module.run({"input": np.zeros((1, 3, 32, 32), np.float64)})


def test_not_an_array(tiny_module):
    with pytest.raises(TypeError, match="object"):  # numpy.asarray(value, float32) refuses it
        tiny_module.run({"input": object()})


def test_unwritable_save_path(tiny_module, tmp_path):
    with pytest.raises(kiln.KilnError, match="cannot save"):
        tiny_module.save(tmp_path / "no" / "such" / "dir" / "m.so")


def test_public_names_are_all_that_shows():
    # dir(kiln) once also showed the modules and typing names __init__ imported (np, os, sys, Any).
    public = {n for n in dir(kiln) if not n.startswith("_")}
    assert public == set(kiln.__all__)
    assert kiln.Module.__module__ == "kiln"
