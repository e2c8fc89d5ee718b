#!/usr/bin/env python3
"""Hostile nesting through the CLI: `tandem show`, `compile` and pipeline options on generated
deep inputs give a clear error naming the limit (exit status 1), never a crash, and a chain within
the limit is shown and compiled.

Usage: deep_input_cli_test.py TANDEM WORK_DIR
"""
import os
import subprocess
import sys

tandem, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
failures = []


def module(expr):
    return ("module {\nkernel @k(%A: f32[4]) -> (%B: f32[4]) {\n  %B[0] = " + expr + "\n}\n"
            "graph @main(%x: f32[4]) -> f32[4] {\n  %y = call_kernel @k(%x) : f32[4]\n"
            "  return %y\n}\n}\n")


def write(name, text):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def check(args, status, expected):
    result = subprocess.run([tandem] + args, capture_output=True, text=True, timeout=300)
    shown = " ".join(a if len(a) < 80 else a[:40] + "..." for a in args)
    if result.returncode != status or expected not in result.stdout + result.stderr:
        failures.append(f"tandem {shown}: exit status {result.returncode} (expected {status}), "
                        f"expected '{expected}' in: {result.stderr[-400:]}")


long_chain = write("chain50000.tir", module(" + ".join(["%A[0]"] * 50000)))
ok_chain = write("chain2000.tir", module(" + ".join(["%A[0]"] * 2000)))
parens = write("parens.tir", module("(" * 100000 + "%A[0]" + ")" * 100000))
types = write("types.tir", "graph @main(%x: " + "(" * 100000 + "f32[1]" + ")" * 100000 + ") -> f32[1] {\n}\n")
pipelines = write("deep.pipelines", "[deep]\npasses = " + "TuneLayout(eval=[" * 100000 + "InferType"
                  + "])" * 100000 + "\n")

check(["show", long_chain], 1, "expression deeper than 2048 levels")
check(["compile", long_chain], 1, "expression deeper than 2048 levels")
check(["show", ok_chain], 0, "%A[0] + %A[0]")
check(["compile", ok_chain], 0, "%A[0] + %A[0]")
check(["show", parens], 1, "expression nested deeper than 200 levels")
check(["show", types], 1, "tuple types nested deeper than 64 levels")
check(["compile", ok_chain, "--pipeline-text",
       "TuneKernels(trials=" + "[" * 100000], 1,  # one argument holds at most 128 KiB
      "a list may hold integers only")
check(["compile", ok_chain, "--pipeline-file", pipelines, "--pipeline", "deep"], 1,
      "eval=[...] nested deeper than 64 levels")

for failure in failures:
    print("FAILED:", failure)
print(f"{8 - len(failures)} of 8 checks passed")
sys.exit(1 if failures else 0)
