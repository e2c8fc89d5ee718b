#!/usr/bin/env python3
"""Tuning and building by buckets from the command line (tools/dynamic_build.cc):
`tandem tune --dynamic --buckets` tunes each bucket at its bound into one database and saves the
buckets with their schedules as a trace file; `tandem compile --dynamic --trace` rebuilds exactly
the modules that the database gives; `tandem run --dynamic --trace` runs a length in the bucket
holding it to the stored outputs; the same with two symbols (the batch's range whole in each
bucket of the sequence's); a trace recorded for other buckets or other ranges, a trace of one
size, and a tuning pipeline without --db are errors that say so.

usage: dynamic_buckets_cli_test.py TANDEM MODEL_DIR WORKDIR
"""
import json
import os
import shutil
import subprocess
import sys


def run(command, expect_ok=True):
    result = subprocess.run(command, capture_output=True, text=True, timeout=500)
    if (result.returncode == 0) != expect_ok:
        sys.exit(f"FAILED ({result.returncode}): {' '.join(command)}\n{result.stdout}\n"
                 f"{result.stderr}")
    return result.stdout, result.stderr


def expect_error(command, text):
    _, err = run(command, expect_ok=False)
    if text not in err:
        sys.exit(f"FAILED: {' '.join(command)} does not say '{text}':\n{err}")


def main():
    tandem, model_dir, workdir = sys.argv[1:4]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    model = os.path.join(model_dir, "model.onnx")
    db = os.path.join(workdir, "tuning.db")
    trace = os.path.join(workdir, "buckets.json")
    common = [model, "--symbol", "batch=1", "--dynamic", "sequence=1:128"]

    # 1. Tune both buckets (a small budget each) and save the trace.
    out, err = run([tandem, "tune", *common, "--buckets", "32,128", "--pipeline",
                    "default_tuning", "--trials", "24", "--db", db,
                    "--save-trace", trace])
    for expected in ["bucket sequence in [1, 32]: tuning the model at sequence=32",
                     "bucket sequence in [33, 128]: tuning the model at sequence=128",
                     "trace: " + trace + " (2 buckets)"]:
        if expected not in err:
            sys.exit(f"FAILED: tune does not say '{expected}':\n{err}")
    for expected in ["dynamic build with the tuned schedules", "sequence=1      bucket [1, 32]",
                     "sequence=128    bucket [33, 128]"]:
        if expected not in out:
            sys.exit(f"FAILED: tune does not print '{expected}':\n{out}")
    with open(trace, encoding="utf-8") as f:
        instructions = json.load(f)["trace"]["instructions"]
    bounds = [(i["kind"], i["attrs"]["minimum"], i["attrs"]["bound"]) for i in instructions]
    if bounds != [("DynamicBucket", 1, 32), ("DynamicBucket", 33, 128)]:
        sys.exit(f"FAILED: the trace's buckets are {bounds}")
    if not all(i.get("nested") for i in instructions):
        sys.exit("FAILED: a bucket of the trace carries no kernel schedule")

    # 2. The trace rebuilds what the database gives, with no database.
    from_db, _ = run([tandem, "compile", *common, "--buckets", "32,128", "--pipeline",
                      "default_tuning", "--db", db])
    from_trace, _ = run([tandem, "compile", *common, "--trace", trace])
    if from_db != from_trace or "// bucket sequence in [33, 128]" not in from_trace:
        sys.exit("FAILED: compile --trace differs from compile --db")

    # 3. Running from the trace: each length in its bucket, to the stored outputs.
    for length, bucket in [(16, "[1, 32]"), (77, "[33, 128]")]:
        data = os.path.join(model_dir, f"test_data_seq{length}")
        out, _ = run([tandem, "run", *common, "--trace", trace, "--inputs", data, "--check", data,
                      "--repeat", "2"])
        if f"sequence={length} (bucket {bucket})" not in out:
            sys.exit(f"FAILED: length {length} did not run in the bucket {bucket}:\n{out}")

    # 4. Errors.
    expect_error([tandem, "run", *common, "--buckets", "64,128", "--trace", trace],
                 "was recorded for sequence in [1, 128] with the buckets 32,128; --dynamic asks "
                 "for sequence in [1, 128] with the buckets 64,128")
    expect_error([tandem, "run", model, "--symbol", "batch=1", "--dynamic", "sequence=1:64",
                  "--trace", trace], "--dynamic asks for sequence in [1, 64]")
    expect_error([tandem, "run", *common, "--pipeline", "default_tuning"],
                 "a dynamic build does not tune inside")
    expect_error([tandem, "tune", *common, "--pipeline", "default_tuning", "--trials", "4"],
                 "tune --dynamic needs --db")
    expect_error([tandem, "run", *common, "--buckets", "32,64"],
                 "the buckets '32,64' end at 64 but the range of sequence ends at 128")
    one_size = os.path.join(workdir, "one_size.json")
    run([tandem, "tune", model, "--symbol", "batch=1", "--symbol", "sequence=16", "--pipeline",
         "default_tuning", "--trials", "2", "--repeats", "1", "--db", db, "--save-trace",
         one_size])
    expect_error([tandem, "run", *common, "--trace", one_size],
                 "holds the decisions for one size")

    # 5. Two symbols: the batch's whole range travels with each bucket of the sequence's.
    two = [model, "--dynamic", "sequence=1:32", "--dynamic", "batch=1:2"]
    two_trace = os.path.join(workdir, "two_symbols.json")
    _, err = run([tandem, "tune", *two, "--buckets", "16,32", "--pipeline", "default_tuning",
                  "--trials", "4", "--db", db, "--save-trace", two_trace])
    if "trace: " + two_trace + " (2 buckets)" not in err:
        sys.exit(f"FAILED: tune with two symbols does not save its trace:\n{err}")
    with open(two_trace, encoding="utf-8") as f:
        others = [i["attrs"].get("others") for i in json.load(f)["trace"]["instructions"]]
    if others != ["batch=1:2", "batch=1:2"]:
        sys.exit(f"FAILED: the two-symbol trace's other ranges are {others}")
    from_db, _ = run([tandem, "compile", *two, "--buckets", "16,32", "--pipeline",
                      "default_tuning", "--db", db])
    from_trace, _ = run([tandem, "compile", *two, "--trace", two_trace])
    if from_db != from_trace:
        sys.exit("FAILED: compile --trace differs from compile --db with two symbols")
    data = os.path.join(model_dir, "test_data_seq16")
    out, _ = run([tandem, "run", *two, "--trace", two_trace, "--inputs", data, "--check", data,
                  "--repeat", "2"])
    if "sequence=16, batch=1 (bucket [1, 16])" not in out:
        sys.exit(f"FAILED: the two-symbol run does not name its sizes and bucket:\n{out}")
    expect_error([tandem, "run", model, "--dynamic", "sequence=1:32", "--dynamic", "batch=1:4",
                  "--trace", two_trace],
                 "was recorded for sequence in [1, 32], batch in [1, 2] with the buckets 16,32")
    print("ok: buckets tuned, traced, rebuilt and run (one and two symbols); mismatches refused")


if __name__ == "__main__":
    main()
