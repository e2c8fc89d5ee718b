#!/usr/bin/env python3
"""Times ONNX models with another engine (ONNX Runtime or OpenVINO, CPU), beside Tandem.

Not part of the build or the tests (neither engine is a Debian package): install them in a
virtual environment (python3 -m venv /tmp/engines && /tmp/engines/bin/pip install onnxruntime
openvino onnx numpy) and pass that interpreter to scripts/bench_models.sh --ort-python or
--openvino-python.

Engines and their settings (batch 1 as the stored input, fp32, --threads inference threads):
  onnxruntime  CPU execution provider, all graph optimizations, inter-op threads 1.
  openvino     CPU plugin, INFERENCE_PRECISION_HINT=f32, PERFORMANCE_HINT=LATENCY,
               INFERENCE_NUM_THREADS=threads, input shapes fixed to the stored input's.
Before timing, every output is checked against test_data_set_0/output_*.pb (relative L2 error at
most 1e-3); a mismatch is an error and a non-zero exit.

Prints one CSV line per model: model,engine,version,threads,median_ms,min_ms. Timing: warm-up
runs, then blocks of runs; the latency is the median of the blocks' medians, as in `tandem bench`.

With --serve (one model folder) it is an external contender of `tandem bench --external`
(bench/external_contender.h): it loads and checks the model, prints "ready", then answers each
"run N" line on standard input with the N times in seconds on one line, until "quit".
"""
import argparse
import glob
import importlib
import os
import statistics
import sys
import time

# Engine name -> (module to import, what to pip install).
ENGINES = {"onnxruntime": ("onnxruntime", "onnxruntime"), "openvino": ("openvino", "openvino")}
MAX_RELATIVE_ERROR = 1e-3
WARMUP_RUNS = 10


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[2:]))
    parser.add_argument("models", nargs="+", help="model folders (model.onnx, test_data_set_0/)")
    parser.add_argument("--engine", choices=sorted(ENGINES), required=True)
    parser.add_argument("--threads", type=int, default=2, help="inference threads")
    parser.add_argument("--repeat", type=int, default=10, help="runs per block")
    parser.add_argument("--rounds", type=int, default=5, help="blocks")
    parser.add_argument("--test-data", default="test_data_set_0",
                        help="the folder of stored inputs and outputs inside each model folder")
    parser.add_argument("--serve", action="store_true",
                        help="answer 'run N' requests on stdin (one model; see above)")
    args = parser.parse_args()
    if args.threads < 1:
        fail(f"--threads must be at least 1, not {args.threads}")
    engine = import_engine(args.engine)
    if args.serve:
        if len(args.models) != 1:
            fail("--serve takes one model folder")
        serve(load(engine, args.models[0], args.threads, args.test_data))
        return
    print("model,engine,version,threads,median_ms,min_ms")
    for folder in args.models:
        infer = load(engine, folder, args.threads, args.test_data)
        medians, best = [], float("inf")
        for _ in range(args.rounds):
            block = time_runs(infer, args.repeat)
            medians.append(statistics.median(block))
            best = min(best, min(block))
        name = os.path.basename(os.path.normpath(folder))
        print(f"{name},{args.engine},{engine.version},{args.threads},"
              f"{statistics.median(medians) * 1e3:.3f},{best * 1e3:.3f}", flush=True)


def fail(message):
    sys.exit(f"engine_latency.py: {message}")


class Engine:
    """An imported engine: its name, version and a function (model path, inputs, threads) ->
    infer, where infer() runs the model once on the inputs and returns its outputs."""

    def __init__(self, name, version, prepare):
        self.name, self.version, self.prepare = name, version, prepare


def import_engine(name):
    module_name, package = ENGINES[name]
    modules = {}
    for module in (module_name, "onnx", "numpy"):
        try:
            modules[module] = importlib.import_module(module)
        except ImportError as error:
            fail(f"--engine {name} needs the Python module '{module}', which {sys.executable} "
                 f"cannot import ({error}); install it: {sys.executable} -m pip install "
                 f"{package} onnx numpy")
    engine = modules[module_name]
    if name == "onnxruntime":
        return Engine(name, engine.__version__, lambda *a: prepare_onnxruntime(engine, *a))
    return Engine(name, engine.__version__.split("-")[0], lambda *a: prepare_openvino(engine, *a))


def prepare_onnxruntime(ort, path, inputs, threads):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    if len(names) != len(inputs):
        fail(f"{path}: the model has {len(names)} inputs, the test data {len(inputs)}")
    feed = dict(zip(names, inputs))
    return lambda: session.run(None, feed)


def prepare_openvino(ov, path, inputs, threads):
    core = ov.Core()
    model = core.read_model(path)
    if len(model.inputs) != len(inputs):
        fail(f"{path}: the model has {len(model.inputs)} inputs, the test data {len(inputs)}")
    # Static shapes, as Tandem compiles them: those of the stored inputs.
    model.reshape({port: ov.PartialShape(list(x.shape)) for port, x in zip(model.inputs, inputs)})
    compiled = core.compile_model(model, "CPU", {
        "INFERENCE_PRECISION_HINT": "f32",
        "PERFORMANCE_HINT": "LATENCY",
        "INFERENCE_NUM_THREADS": str(threads),
    })
    request = compiled.create_infer_request()
    for index, x in enumerate(inputs):
        request.set_input_tensor(index, ov.Tensor(x))
    count = len(compiled.outputs)

    def infer():
        request.infer()
        return [request.get_output_tensor(i).data for i in range(count)]

    return infer


def read_tensors(folder, prefix, test_data="test_data_set_0"):
    """The tensors TEST_DATA/PREFIX_<i>.pb in index order, as numpy arrays."""
    import onnx
    from onnx import numpy_helper
    paths = glob.glob(os.path.join(folder, test_data, f"{prefix}_*.pb"))
    paths.sort(key=lambda p: int(os.path.basename(p)[len(prefix) + 1:-3]))
    if not paths:
        fail(f"{folder}: no {test_data}/{prefix}_0.pb")
    tensors = []
    for path in paths:
        tensor = onnx.TensorProto()
        with open(path, "rb") as f:
            tensor.ParseFromString(f.read())
        tensors.append(numpy_helper.to_array(tensor))
    return tensors


def load(engine, folder, threads, test_data="test_data_set_0"):
    """infer() of the model in `folder` on its stored inputs, its outputs checked against the
    stored ones and warmed up."""
    import numpy as np
    path = os.path.join(folder, "model.onnx")
    if not os.path.isfile(path):
        fail(f"{folder}: no model.onnx")
    inputs = read_tensors(folder, "input", test_data)
    expected = read_tensors(folder, "output", test_data)
    infer = engine.prepare(path, inputs, threads)
    outputs = infer()
    if len(outputs) < len(expected):
        fail(f"{folder}: {engine.name} gave {len(outputs)} outputs, the test data has "
             f"{len(expected)}")
    for index, (out, ref) in enumerate(zip(outputs, expected)):
        out = np.asarray(out)
        if out.shape != ref.shape:
            fail(f"{folder}: {engine.name}'s output {index} has shape {out.shape}, the stored one "
                 f"{ref.shape}")
        error = np.linalg.norm((out - ref).astype(np.float64)) / max(np.linalg.norm(ref), 1e-30)
        if not error <= MAX_RELATIVE_ERROR:
            fail(f"{folder}: {engine.name}'s output {index} differs from the stored one "
                 f"(relative error {error:.3g} > {MAX_RELATIVE_ERROR:g})")
    for _ in range(WARMUP_RUNS):
        infer()
    return infer


def time_runs(infer, n):
    times = []
    for _ in range(n):
        start = time.perf_counter()
        infer()
        times.append(time.perf_counter() - start)
    return times


def serve(infer):
    print("ready", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            break
        if words[0] != "run" or len(words) != 2 or not words[1].isdigit():
            fail(f"unknown request {line.strip()!r}")
        times = time_runs(infer, int(words[1]))
        print(" ".join(f"{t:.9f}" for t in times), flush=True)


if __name__ == "__main__":
    main()
