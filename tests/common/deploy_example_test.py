#!/usr/bin/env python3
"""The deployment path end to end: `cmake --install` of this build into a fresh prefix,
examples/deploy built against the installed package (find_package(Tandem)), a model exported by
the installed `tandem export`, run by the example on the model's stored inputs. Its outputs must
equal those of `tandem run` (the JIT build of the same pipeline, same thread count) bit for bit,
and match the stored outputs. The same model exported with --format object and linked into the
example must give the same outputs again.

Usage: deploy_example_test.py CMAKE BUILD_DIR SOURCE_DIR MODEL_DIR WORK_DIR [PIPELINE | trace=FILE]
(a trace file of `tandem tune --save-trace` rebuilds the tuned model for both the export and
`tandem run`).
"""
import os
import shutil
import struct
import subprocess
import sys

cmake = sys.argv[1]
build, source, model_dir, work = (os.path.abspath(a) for a in sys.argv[2:6])
choice = sys.argv[6] if len(sys.argv) > 6 else "default_heuristic"
optimize = (["--trace", os.path.abspath(choice[len("trace="):])] if choice.startswith("trace=")
            else ["--pipeline", choice])
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
prefix = os.path.join(work, "prefix")


def run(args, **kwargs):
    print("+", " ".join(args), flush=True)
    result = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            **kwargs)
    print(result.stdout, flush=True)
    if result.returncode != 0:
        sys.exit(f"FAILED ({result.returncode}): {' '.join(args)}")
    return result.stdout


def varint(data, at):
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def read_tensor(path):
    """The float32 elements of an ONNX TensorProto file (raw_data or float_data)."""
    data = open(path, "rb").read()
    at, raw, floats = 0, None, []
    while at < len(data):
        key, at = varint(data, at)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, at = varint(data, at)
            if field == 2 and value != 1:
                sys.exit(f"{path}: element type {value}, this test reads float32 only")
        elif wire == 2:
            length, at = varint(data, at)
            chunk = data[at:at + length]
            at += length
            if field == 9:
                raw = chunk
            elif field == 4:
                floats += struct.unpack(f"<{length // 4}f", chunk)
        elif wire == 5:
            if field == 4:
                floats.append(struct.unpack("<f", data[at:at + 4])[0])
            at += 4
        elif wire == 1:
            at += 8
        else:
            sys.exit(f"{path}: unexpected wire type {wire}")
    return raw if raw is not None else struct.pack(f"<{len(floats)}f", *floats)


# 1. Install into a fresh prefix and build the example against it.
run([cmake, "--install", build, "--prefix", prefix])
example_build = os.path.join(work, "example")
run([cmake, "-S", os.path.join(source, "examples", "deploy"), "-B", example_build,
     f"-DCMAKE_PREFIX_PATH={prefix}"])
run([cmake, "--build", example_build])
example = os.path.join(example_build, "run_exported_model")
tandem = os.path.join(prefix, "bin", "tandem")

# 2. Export with the installed compiler; run the export and the JIT build on the stored inputs.
model = os.path.join(model_dir, "model.onnx")
data = os.path.join(model_dir, "test_data_set_0")
artifact = os.path.join(work, "model.so")
run([tandem, "export", model] + optimize + ["-o", artifact])
inputs = sorted(f for f in os.listdir(data) if f.startswith("input_"))
outputs = sorted(f for f in os.listdir(data) if f.startswith("output_"))
raw_inputs = []
for name in inputs:
    raw = os.path.join(work, name.replace(".pb", ".bin"))
    open(raw, "wb").write(read_tensor(os.path.join(data, name)))
    raw_inputs.append(raw)
raw_outputs = [os.path.join(work, name.replace(".pb", ".bin")) for name in outputs]
run([example, artifact, "2"] + raw_inputs + ["--"] + raw_outputs)
jit_dir = os.path.join(work, "jit")
run([tandem, "run", model] + optimize + ["--inputs", data, "--outputs", jit_dir, "--threads", "2",
     "--repeat", "1", "--no-reference"])

# 3. Bit for bit against the JIT build; within 1e-4 (relative L2) of the stored outputs.
for name, raw in zip(outputs, raw_outputs):
    got = open(raw, "rb").read()
    jit = read_tensor(os.path.join(jit_dir, name))
    if got != jit:
        sys.exit(f"{name}: the exported model's output differs from tandem run's")
    want = struct.unpack(f"<{len(got) // 4}f", read_tensor(os.path.join(data, name)))
    have = struct.unpack(f"<{len(got) // 4}f", got)
    error = sum((a - b) ** 2 for a, b in zip(have, want)) ** 0.5
    norm = sum(b * b for b in want) ** 0.5
    print(f"{name}: identical to tandem run; relative error {error / norm:.2e} to the stored output")
    if error > 1e-4 * norm:
        sys.exit(f"{name}: relative error {error / norm:.2e} to the stored output")
# 4. The same model as an object linked into the example.
linked = os.path.join(work, "deployed_model.o")
run([tandem, "export", model] + optimize + ["--format", "object", "--name", "deployed_model",
                                            "-o", linked])
run([cmake, "-S", os.path.join(source, "examples", "deploy"), "-B", example_build,
     f"-DCMAKE_PREFIX_PATH={prefix}", f"-DTANDEM_LINKED_MODEL={linked}",
     "-DTANDEM_LINKED_MODEL_NAME=deployed_model"])
run([cmake, "--build", example_build])
linked_outputs = [raw.replace(".bin", ".linked.bin") for raw in raw_outputs]
run([os.path.join(example_build, "run_linked_model"), "-", "2"] + raw_inputs + ["--"] +
    linked_outputs)
for name, raw, other in zip(outputs, raw_outputs, linked_outputs):
    if open(raw, "rb").read() != open(other, "rb").read():
        sys.exit(f"{name}: the linked model's output differs from the shared library's")
    print(f"{name}: the linked model gives the same bytes")
print("PASSED")
