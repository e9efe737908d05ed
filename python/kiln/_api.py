"""What the kiln package offers (its __init__ re-exports the public names): compile, load, tune,
Module and TensorInfo."""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from . import _kiln


@dataclasses.dataclass(frozen=True)
class TensorInfo:
    """A module input or output: its name, shape and NumPy dtype name ("float32", "int64", "bool")."""

    name: str
    shape: tuple
    dtype: str


class Module:
    """A compiled model, loaded by kiln's runtime."""

    def __init__(self, impl: _kiln.Module):
        self._impl = impl
        self._inputs = [TensorInfo(*info) for info in impl.input_info()]
        self._outputs = [TensorInfo(*info) for info in impl.output_info()]

    @property
    def inputs(self) -> list:
        return list(self._inputs)

    @property
    def outputs(self) -> list:
        return list(self._outputs)

    @property
    def notes(self) -> list:
        """What the compiler said about this module (the tuning log applied, fallbacks); [] when loaded."""
        return list(self._impl.notes)

    def run(self, inputs: Mapping[str, Any]) -> list:
        """Runs the model on every input, by name: NumPy arrays or any object with __dlpack__ (a
        PyTorch tensor is read in place), of the input's dtype and shape; anything else is converted
        with numpy.asarray. Returns the outputs, in order, as NumPy arrays."""
        dtypes = {info.name: info.dtype for info in self._inputs}
        pairs = [(name, _array(value, dtypes.get(name))) for name, value in inputs.items()]
        return self._impl.run(pairs)

    def __call__(self, **inputs: Any) -> list:
        return self.run(inputs)

    def save(self, path: "str | os.PathLike") -> None:
        """Writes the deployable .so (loadable by kiln.load, `kiln run` or the C runtime)."""
        self._impl.save(os.fspath(path))

    def __repr__(self) -> str:
        def sig(infos):
            return ", ".join(f"{i.name}: {i.dtype}{list(i.shape)}" for i in infos)

        return f"kiln.Module(inputs=({sig(self._inputs)}), outputs=({sig(self._outputs)}))"


def _array(value: Any, dtype: Optional[str]) -> Any:
    if hasattr(value, "__dlpack__"):
        return value
    # bfloat16 has no NumPy dtype: such a value must come through DLPack.
    return np.asarray(value, dtype=dtype if dtype not in (None, "bfloat16") else None)


def _source(model: Any) -> "str | bytes":
    """A path, or the bytes of an onnx.ModelProto (or already serialized)."""
    if isinstance(model, (str, os.PathLike)):
        return os.fspath(model)
    if isinstance(model, bytes):
        return model
    if hasattr(model, "SerializeToString"):
        return model.SerializeToString()
    raise TypeError(f"expected a path to an .onnx model or an onnx.ModelProto, got {type(model).__name__}")


def _shapes(input_shapes: Optional[Mapping[str, Sequence[int]]]) -> dict:
    return {name: [int(d) for d in shape] for name, shape in (input_shapes or {}).items()}


def compile(
    model: Any,
    target: str = "llvm",
    tuning_log: "Optional[str | os.PathLike]" = None,
    input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
) -> Module:
    """Compiles an ONNX model (a path or an onnx.ModelProto) for `target` (as `kiln compile
    --target`), applying the best schedules of `tuning_log`; `input_shapes` gives the shapes of
    inputs with symbolic dims ({"input": (1, 3, 224, 224)})."""
    log = None if tuning_log is None else os.fspath(tuning_log)
    return Module(_kiln.compile(_source(model), target, log, _shapes(input_shapes)))


def load(path: "str | os.PathLike") -> Module:
    """Loads a compiled module (.so) with the runtime."""
    return Module(_kiln.Module.load(os.fspath(path)))


def tune(
    model: Any,
    log: "str | os.PathLike",
    trials: int = 32,
    target: str = "llvm",
    input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
    seed: int = 0,
) -> str:
    """Tunes the model's kernels as `kiln tune` does, printing the same progress lines, appending
    every measurement to `log` (resumed when it exists). Returns the log's path, for
    kiln.compile(model, tuning_log=...)."""
    source = _source(model)
    name = source if isinstance(source, str) else "the onnx.ModelProto"
    log = os.fspath(log)
    _kiln.tune(
        source, name, log, trials, target, _shapes(input_shapes), seed,
        lambda line: print(line, flush=True),
        lambda note: print(f"note: {note}", file=sys.stderr, flush=True),
    )
    return log
