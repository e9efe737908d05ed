#!/usr/bin/env python3
"""fuzz/make_module_seed.py MODULE.so OUT: writes a compiled module's data (version, target, plan,
weights; runtime/module_format.h) in the input form of fuzz/module_data.cc. Regenerate the
seeds under fuzz/seeds/module_data/ when the module format or the plan format changes:

  build/bin/kiln compile examples/tiny_cnn/model.onnx --target "llvm -mcpu=x86-64" -o /tmp/t.so
  python3 fuzz/make_module_seed.py /tmp/t.so fuzz/seeds/module_data/tiny_cnn
"""
import ctypes
import struct
import sys

lib = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_LOCAL)


def cstr(name):
    return ctypes.c_char_p(ctypes.addressof(ctypes.c_char.in_dll(lib, name))).value


def u64(name):
    return ctypes.c_uint64.in_dll(lib, name).value


def blob(name, size):
    return ctypes.string_at(ctypes.addressof(ctypes.c_char.in_dll(lib, name)), size)


plan = blob("kiln_module_plan", u64("kiln_module_plan_size"))
weights = blob("kiln_module_weights", u64("kiln_module_weights_size"))
with open(sys.argv[2], "wb") as f:
    f.write(cstr("kiln_module_version") + b"\0" + cstr("kiln_module_target") + b"\0")
    f.write(b"\0" + struct.pack("<I", len(plan)) + plan + weights)
