#!/usr/bin/env python3
"""Writes the small ONNX and TensorProto files the CLI user-error tests read (tests/CMakeLists.txt).

The files are committed; this script says how they were made (run it from tests/cli/). It encodes
protobuf by hand so that it needs nothing beyond Python.
"""
import os
import struct


def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(num, value):
    """A protobuf field: an int is a varint, bytes/str are length-delimited."""
    if isinstance(value, int):
        return varint(num << 3) + varint(value)
    if isinstance(value, str):
        value = value.encode()
    return varint((num << 3) | 2) + varint(len(value)) + value


FLOAT, INT64 = 1, 7


def tensor(name, dtype, dims, raw):  # TensorProto: dims=1, data_type=2, name=8, raw_data=9
    return b"".join(field(1, d) for d in dims) + field(2, dtype) + field(8, name) + field(9, raw)


def value_info(name, dtype, dims):  # ValueInfoProto{name=1, type=2{tensor_type=1{elem_type=1, shape=2{dim=1{dim_value=1}}}}}
    shape = b"".join(field(1, field(1, d)) for d in dims)
    return field(1, name) + field(2, field(1, field(1, dtype) + field(2, shape)))


def node(op, inputs, outputs, name):  # NodeProto: input=1, output=2, name=3, op_type=4
    return b"".join(field(1, i) for i in inputs) + b"".join(field(2, o) for o in outputs) + field(3, name) + field(4, op)


def model(nodes, inputs, outputs, opset=13, inits=()):  # ModelProto: ir_version=1, graph=7, opset_import=8
    graph = b"".join(field(1, n) for n in nodes) + field(2, "g") + b"".join(field(5, t) for t in inits)
    graph += b"".join(field(11, v) for v in inputs) + b"".join(field(12, v) for v in outputs)
    return field(1, 8) + field(7, graph) + field(8, field(2, opset))


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


# Two unsupported op types (one made up, one real that needs strings), one of them on two nodes: the
# error must list all three nodes at once.
write("fixtures/unsupported_ops.onnx", model(
    [node("FancyOp", ["x"], ["a"], "fancy1"), node("Relu", ["a"], ["b"], "relu1"),
     node("FancyOp", ["b"], ["c"], "fancy2"), node("StringNormalizer", ["c"], ["y"], "strnorm1")],
    [value_info("x", FLOAT, [2, 3])], [value_info("y", FLOAT, [2, 3])]))
# Inputs for the node suite's test_relu model (x: float32[3,4,5]) that it must refuse.
write("fixtures/x_wrong_shape.pb", tensor("x", FLOAT, [2, 2], struct.pack("<4f", 1, -1, 2, -2)))
write("fixtures/x_wrong_dtype.pb", tensor("x", INT64, [3, 4, 5], struct.pack("<60q", *range(60))))
write("fixtures/malformed.pb", b"\xff\xff\xff\xff this is not a TensorProto\n")

# A Reshape whose shape is a graph input: it must be bound at compile time (kiln compile --bind,
# kiln check binds it from each data set; the two sets differ, so check compiles twice).
reshape = model([node("Reshape", ["x", "shape"], ["y"], "reshape1")],
                [value_info("x", FLOAT, [2, 6]), value_info("shape", INT64, [2])], [value_info("y", FLOAT, [])])
write("fixtures/reshape_input.onnx", reshape)
xs = struct.pack("<12f", *[i - 5.5 for i in range(12)])
write("fixtures/x_2x6.pb", tensor("x", FLOAT, [2, 6], xs))
write("fixtures/shape_3x4.pb", tensor("shape", INT64, [2], struct.pack("<2q", 3, -1)))
for s, dims in ((0, [3, 4]), (1, [4, 3])):
    d = "fixtures/reshape_case/test_data_set_%d" % s

    os.makedirs(d, exist_ok=True)
    write(d + "/input_0.pb", tensor("x", FLOAT, [2, 6], xs))
    write(d + "/input_1.pb", tensor("shape", INT64, [2], struct.pack("<2q", *dims)))
    write(d + "/output_0.pb", tensor("y", FLOAT, dims, xs))
write("fixtures/reshape_case/model.onnx", reshape)

# y = x + w with a weight whose bytes are easy to find in the compiled library (0x4b1d4b1d...):
# the tamper test flips one of them, and loading must fail on the weights checksum.
marker = struct.pack("<4I", 0x4B1D4B1D, 0x4B1D4B1E, 0x4B1D4B1F, 0x4B1D4B20)
write("fixtures/add_weight.onnx", model([node("Add", ["x", "w"], ["y"], "add1")],
                                        [value_info("x", FLOAT, [4])], [value_info("y", FLOAT, [4])],
                                        inits=[tensor("w", FLOAT, [4], marker)]))

# The same model with wrong expected outputs in both data sets, set 0 further off than set 1:
# the failure must be reported at set 0 (the worst over both compiled modules).
for s, dims, wrong in ((0, [3, 4], lambda v: v + 1.0), (1, [4, 3], lambda v: v * 1.01)):
    d = "fixtures/reshape_case_wrong/test_data_set_%d" % s
    os.makedirs(d, exist_ok=True)
    write(d + "/input_0.pb", tensor("x", FLOAT, [2, 6], xs))
    write(d + "/input_1.pb", tensor("shape", INT64, [2], struct.pack("<2q", *dims)))
    write(d + "/output_0.pb", tensor("y", FLOAT, dims, struct.pack("<12f", *[wrong(i - 5.5) for i in range(12)])))
write("fixtures/reshape_case_wrong/model.onnx", reshape)
