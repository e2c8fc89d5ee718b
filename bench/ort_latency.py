#!/usr/bin/env python3
"""Times ONNX models with ONNX Runtime (CPU provider), for side-by-side comparison with Tandem.

Not part of the build or the tests (ONNX Runtime is not a Debian package): install it in a
virtual environment (python3 -m venv /tmp/ort && /tmp/ort/bin/pip install onnxruntime onnx)
and pass that interpreter to scripts/bench_models.sh --ort-python.

Prints one CSV line per model: model,ort_version,threads,median_ms,min_ms. Timing: warm-up runs,
then blocks of runs; the latency is the median of the blocks' medians, as in `tandem bench`.

With --serve (one model folder) it is an external contender of `tandem bench --external`
(bench/external_contender.h): it loads and checks the model, prints "ready", then answers each
"run N" line on standard input with the N times in seconds on one line, until "quit".
"""
import argparse
import statistics
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", help="model folders (model.onnx, test_data_set_0/)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=10, help="runs per block")
    parser.add_argument("--rounds", type=int, default=5, help="blocks")
    parser.add_argument("--serve", action="store_true",
                        help="answer 'run N' requests on stdin (one model; see the docstring)")
    args = parser.parse_args()
    if args.serve:
        if len(args.models) != 1:
            sys.exit("--serve takes one model folder")
        serve(*load(args.models[0], args.threads))
        return
    print("model,ort_version,threads,median_ms,min_ms")
    for folder in args.models:
        session, feed = load(folder, args.threads)
        medians, best = [], float("inf")
        for _ in range(args.rounds):
            block = time_runs(session, feed, args.repeat)
            medians.append(statistics.median(block))
            best = min(best, min(block))
        name = folder.rstrip("/").split("/")[-1]
        print(f"{name},{ort.__version__},{args.threads},{statistics.median(medians) * 1e3:.3f},"
              f"{best * 1e3:.3f}")


def time_runs(session, feed, n):
    times = []
    for _ in range(n):
        start = time.perf_counter()
        session.run(None, feed)
        times.append(time.perf_counter() - start)
    return times


def serve(session, feed):
    print("ready", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            break
        if words[0] != "run" or len(words) != 2 or not words[1].isdigit():
            sys.exit(f"unknown request {line.strip()!r}")
        times = time_runs(session, feed, int(words[1]))
        print(" ".join(f"{t:.9f}" for t in times), flush=True)


def load(folder, threads):
    """An ONNX Runtime session of the model in `folder` and its stored input, checked against the
    stored output and warmed up."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(f"{folder}/model.onnx", options,
                                   providers=["CPUExecutionProvider"])
    tensor = onnx.TensorProto()
    with open(f"{folder}/test_data_set_0/input_0.pb", "rb") as f:
        tensor.ParseFromString(f.read())
    feed = {session.get_inputs()[0].name: numpy_helper.to_array(tensor)}
    expected = onnx.TensorProto()
    with open(f"{folder}/test_data_set_0/output_0.pb", "rb") as f:
        expected.ParseFromString(f.read())
    out = session.run(None, feed)[0]
    ref = numpy_helper.to_array(expected)
    error = np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-30)
    if error > 1e-3:
        sys.exit(f"{folder}: ONNX Runtime's output differs from the stored one ({error:.3g})")
    for _ in range(10):
        session.run(None, feed)
    return session, feed


if __name__ == "__main__":
    main()
