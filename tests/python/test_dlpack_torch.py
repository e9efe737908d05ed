"""PyTorch tensors read through DLPack (no copy but the runtime's own); skipped without torch."""

import numpy as np
import pytest

from conftest import assert_close

torch = pytest.importorskip("torch")


def test_tiny_cnn_torch_tensor(tiny_cnn, tiny_module):
    _, x, expected = tiny_cnn
    (y,) = tiny_module(input=torch.tensor(x))
    assert isinstance(y, np.ndarray)
    assert_close(y, expected)


def test_strided_torch_tensor(tiny_cnn, tiny_module):
    _, x, expected = tiny_cnn
    # The same values in a channels-last buffer: a permuted view, strides and all.
    view = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 2, 3, 1))).permute(0, 3, 1, 2)
    assert not view.is_contiguous()
    assert_close(tiny_module.run({"input": view})[0], expected)


def test_resnet18_torch_tensor(resnet18, resnet18_module):
    _, x, expected = resnet18
    (y,) = resnet18_module.run({resnet18_module.inputs[0].name: torch.tensor(x)})
    assert_close(y, expected)


def test_torch_wrong_dtype_is_refused(tiny_module):
    import kiln

    with pytest.raises(kiln.KilnError, match="input"):
        tiny_module.run({"input": torch.zeros(1, 3, 32, 32, dtype=torch.float64)})
