"""Fixtures of the kiln Python tests: the bundled tiny_cnn (always), the shared models (skipped
where ../shared/models is absent; KILN_SHARED_MODELS overrides where to look)."""

import os
import pathlib

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SHARED_MODELS = pathlib.Path(os.environ.get("KILN_SHARED_MODELS", REPO.parent / "shared" / "models"))
RTOL, ATOL = 1e-3, 1e-4


def read_pb(path):
    onnx = pytest.importorskip("onnx")
    from onnx import numpy_helper

    tensor = onnx.TensorProto()
    tensor.ParseFromString(pathlib.Path(path).read_bytes())
    return numpy_helper.to_array(tensor)


def model_case(directory):
    """(model path, input array, expected output array) of a model folder's test_data_set_0."""
    data = directory / "test_data_set_0"
    return directory / "model.onnx", read_pb(data / "input_0.pb"), read_pb(data / "output_0.pb")


@pytest.fixture(scope="session")
def tiny_cnn():
    return model_case(REPO / "examples" / "tiny_cnn")


@pytest.fixture(scope="session")
def resnet18():
    directory = SHARED_MODELS / "resnet18"
    if not (directory / "model.onnx").exists():
        pytest.skip(f"no shared models at {SHARED_MODELS}")
    return model_case(directory)


@pytest.fixture(scope="session")
def tiny_module(tiny_cnn):
    import kiln

    return kiln.compile(tiny_cnn[0])


@pytest.fixture(scope="session")
def resnet18_module(resnet18):
    import kiln

    return kiln.compile(resnet18[0])


def assert_close(actual, expected):
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL)
