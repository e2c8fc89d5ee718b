#!/usr/bin/env python3
"""Creates the hostile files of the hostile-file CLI tests (tools/CMakeLists.txt) under WORK_DIR:
a named pipe in place of input_0.pb and of a model, a regular file where a directory belongs, and
a model whose output is identical to the expected one but holds +inf and -inf.

Usage: hostile_files_setup.py WORK_DIR
"""
import os
import shutil
import struct
import sys

work = sys.argv[1]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(os.path.join(work, "fifo_inputs"))
os.mkfifo(os.path.join(work, "fifo_inputs", "input_0.pb"))
os.mkfifo(os.path.join(work, "fifo_model.tir"))
with open(os.path.join(work, "existing_file"), "w") as f:
    f.write("not a directory\n")


def varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def tensor_proto(values):
    """An ONNX TensorProto of f32[len(values)]: dims (1), data_type FLOAT (2), raw_data (9)."""
    raw = struct.pack("<%df" % len(values), *values)
    return (b"\x08" + varint(len(values)) + b"\x10\x01" + b"\x4a" + varint(len(raw)) + raw)


inf = float("inf")
for name, values in (("inputs/input_0.pb", [inf, -inf, 1.0]),
                     ("expected/output_0.pb", [inf, -inf, 2.0]),
                     ("nan_expected/output_0.pb", [inf, -inf, float("nan")])):
    path = os.path.join(work, "inf", name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(tensor_proto(values))
with open(os.path.join(work, "inf", "model.tir"), "w") as f:
    f.write("module {\ngraph @main(%x: f32[3]) -> f32[3] {\n  %y = add(%x, %x) : f32[3]\n"
            "  return %y\n}\n}\n")
