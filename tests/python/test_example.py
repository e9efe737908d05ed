"""examples/python_resnet18.py runs and agrees with ONNX Runtime (needs torch and onnxruntime)."""

import subprocess
import sys

import pytest

from conftest import REPO

pytest.importorskip("torch")
pytest.importorskip("onnxruntime")


def test_python_resnet18_example(resnet18):
    out = subprocess.run([sys.executable, str(REPO / "examples" / "python_resnet18.py"), str(resnet18[0])],
                         capture_output=True, text=True, check=True).stdout
    assert out.count("allclose: True") == 2, out
