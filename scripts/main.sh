#!/usr/bin/env bash
# Builds Tandem (installing missing Debian packages first, see scripts/setup.sh) and runs the
# main job: imports the example ONNX model, prints its graph IR, then runs it on the reference
# interpreter and checks the outputs against the model's reference test data.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

scripts/setup.sh

TANDEM=build/tools/tandem
MODEL=examples/models/tiny_cnn/model.onnx
TEST_DATA=examples/models/tiny_cnn/test_data_set_0

printf '==> [main] %s show %s\n' "$TANDEM" "$MODEL"
"$TANDEM" show "$MODEL"

printf '==> [main] %s interpret %s --inputs %s --check %s\n' "$TANDEM" "$MODEL" "$TEST_DATA" \
  "$TEST_DATA"
"$TANDEM" interpret "$MODEL" --inputs "$TEST_DATA" --check "$TEST_DATA"

printf '==> [main] done\n'
