#!/usr/bin/env python3
"""`tandem tune` ends with a summary of the run in the terminal (tests of report/terminal_summary):
what was decided and what it bought, the kernel search, the evaluations and the failures, in lines
of at most 100 columns; and `tandem tune` and `tandem bench` record one name for one model, so
that `tandem report --model NAME` shows the runs of both.

usage: tune_summary_cli_test.py TANDEM MODEL.onnx WORKDIR
"""
import os
import re
import shutil
import subprocess
import sys


def run(command):
    result = subprocess.run(command, capture_output=True, text=True, timeout=500)
    if result.returncode != 0:
        sys.exit(f"FAILED ({result.returncode}): {' '.join(command)}\n{result.stdout}\n{result.stderr}")
    return result.stdout


def main():
    tandem, model, workdir = sys.argv[1:4]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    db = os.path.join(workdir, "tuning.db")
    name = os.path.basename(os.path.dirname(model)) if os.path.basename(model) == "model.onnx" \
        else os.path.splitext(os.path.basename(model))[0]

    out = run([tandem, "tune", model, "--pipeline", "default_tuning", "--trials", "8",
               "--repeats", "2", "--db", db])
    for expected in [f"tuning summary: {name} (model hash ", "what was decided and what it bought",
                     "kernel search TuneKernels: weighted latency", "evaluations (budget: 8",
                     "failed candidates", "FMA peak measured with the run"]:
        if expected not in out:
            sys.exit(f"FAILED: the summary lacks '{expected}':\n{out}")
    summary = out[out.index("tuning summary"):]
    wide = [line for line in summary.splitlines() if len(line) > 100]
    if wide:
        sys.exit("FAILED: summary lines wider than 100 columns:\n" + "\n".join(wide))

    run([tandem, "bench", model, "--configs", "default_tuning", "--trials", "4", "--repeat", "1",
         "--rounds", "1", "--db", db])
    report = os.path.join(workdir, "report.html")
    run([tandem, "report", "--db", db, "--model", name, "--output", report])
    with open(report, encoding="utf-8") as f:
        html = f.read()
    runs = len(re.findall(r'<a href="#run-', html))
    if runs != 2:
        sys.exit(f"FAILED: `tandem report --model {name}` shows {runs} runs, expected the tune "
                 "and the bench run")
    print(summary)
    print(f"ok: summary within 100 columns; tune and bench both recorded '{name}'")


if __name__ == "__main__":
    main()
