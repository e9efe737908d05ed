"""kiln: compile ONNX models into deployable shared libraries, tune them, run them.

    import kiln
    m = kiln.compile("model.onnx")                  # or an onnx.ModelProto
    (y,) = m.run({"input": x})                       # NumPy arrays, or PyTorch tensors via DLPack
    m.save("model.so")                               # the deployable library
    m = kiln.load("model.so")                        # the runtime alone

Errors are kiln.KilnError (a RuntimeError) carrying kiln's message; valid models using what kiln
does not implement raise its subclass kiln.UnsupportedError.
"""

from ._api import Module, TensorInfo, compile, load, tune
from ._kiln import InternalError, KilnError, UnsupportedError, __version__

# Their home for help() and reprs is the package: kiln.Module, not kiln._api.Module.
Module.__module__ = TensorInfo.__module__ = __name__

__all__ = ["compile", "load", "tune", "Module", "TensorInfo", "KilnError", "UnsupportedError", "InternalError"]
