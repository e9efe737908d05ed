#!/usr/bin/env python3
"""The data of tensor files, for the .npy round-trip test (no NumPy or onnx package needed).

  tensor_data.py to-npy IN.pb OUT.npy   writes a TensorProto's raw_data as a .npy file
  tensor_data.py same A B               exit 0 when two .pb/.npy files hold the same shape, dtype
                                        and values (float32 within 1e-6 relative), else 1 saying where

Reads TensorProtos written with raw_data (kiln's and onnx.numpy_helper's), .npy files version 1."""
import ast
import struct
import sys

# TensorProto.DataType -> (.npy descr, struct format)
TYPES = {1: ("<f4", "f"), 6: ("<i4", "i"), 7: ("<i8", "q"), 11: ("<f8", "d")}


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def read_pb(path):
    b = open(path, "rb").read()
    dims, dtype, raw, i = [], None, None, 0
    while i < len(b):
        key, i = varint(b, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = varint(b, i)
            if field == 1:
                dims.append(v)
            elif field == 2:
                dtype = v
        elif wire == 2:
            n, i = varint(b, i)
            chunk, i = b[i:i + n], i + n
            if field == 9:
                raw = chunk
            elif field == 1:  # packed dims
                j = 0
                while j < len(chunk):
                    v, j = varint(chunk, j)
                    dims.append(v)
        else:
            sys.exit("%s: unexpected wire type %d" % (path, wire))
    if raw is None or dtype not in TYPES:
        sys.exit("%s: no raw_data of a known dtype (data_type %s)" % (path, dtype))
    return TYPES[dtype][0], tuple(dims), raw


def read_npy(path):
    b = open(path, "rb").read()
    assert b[:6] == b"\x93NUMPY" and b[6] == 1, path + ": not a version 1 .npy file"
    n = struct.unpack("<H", b[8:10])[0]
    h = ast.literal_eval(b[10:10 + n].decode())
    return h["descr"], tuple(h["shape"]), b[10 + n:]


def read(path):
    return read_npy(path) if path.endswith(".npy") else read_pb(path)


def main():
    if sys.argv[1] == "to-npy":
        descr, shape, raw = read_pb(sys.argv[2])
        shape_s = "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"
        header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape_s)
        header += " " * ((10 + len(header) + 1 + 63) // 64 * 64 - 10 - len(header) - 1) + "\n"
        with open(sys.argv[3], "wb") as f:
            f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + raw)
        return 0
    (da, sa, a), (db, sb, b) = read(sys.argv[2]), read(sys.argv[3])
    if (da, sa) != (db, sb):
        print("%s %s vs %s %s" % (da, sa, db, sb))
        return 1
    if da != "<f4":
        print("same bytes" if a == b else "the bytes differ")
        return 0 if a == b else 1
    fa, fb = struct.unpack("<%df" % (len(a) // 4), a), struct.unpack("<%df" % (len(b) // 4), b)
    for k, (x, y) in enumerate(zip(fa, fb)):
        close = x == y or abs(x - y) <= 1e-6 * max(abs(x), abs(y))  # False for one NaN
        if not close and not (x != x and y != y):
            print("element %d: %r vs %r" % (k, x, y))
            return 1
    print("same: %d float32 values of shape %s" % (len(fa), sa))
    return 0


if __name__ == "__main__":
    sys.exit(main())
