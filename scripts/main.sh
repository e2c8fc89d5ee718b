#!/usr/bin/env bash
# Builds Tandem (installing missing Debian packages first, see scripts/setup.sh) and runs the
# main job: imports the example ONNX model, prints its graph IR, then optimizes it with the
# default_heuristic pipeline, compiles it through LLVM, runs it, and checks the outputs against
# the reference interpreter and the model's reference test data, printing latency and a
# per-kernel profile.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

scripts/setup.sh

TANDEM=build/tools/tandem
MODEL=examples/models/tiny_cnn/model.onnx
TEST_DATA=examples/models/tiny_cnn/test_data_set_0

printf '==> [main] %s show %s\n' "$TANDEM" "$MODEL"
"$TANDEM" show "$MODEL"

printf '==> [main] %s run %s --pipeline default_heuristic --inputs %s --check %s\n' "$TANDEM" \
  "$MODEL" "$TEST_DATA" "$TEST_DATA"
"$TANDEM" run "$MODEL" --pipeline default_heuristic --inputs "$TEST_DATA" --check "$TEST_DATA"

printf '==> [main] done\n'
