#!/usr/bin/env bash
# The end-to-end comparison of issue 8: each model built under default_heuristic,
# default_tuning, sequential, joint (the same trial budget each, measurements not shared between
# pipelines: `tandem bench --isolate`) and all_onednn, checked against the reference interpreter
# and timed in turns; then ONNX Runtime on the same models in the same run, when an interpreter
# with onnxruntime is given (it is not a Debian package: see bench/ort_latency.py).
#
# usage: scripts/bench_models.sh [--trials N] [--ort-python PYTHON] [--db FILE] MODEL_DIR...
#   MODEL_DIR holds model.onnx and test_data_set_0/ (e.g. ../shared/models/resnet18)
# Results: a table per model on standard output, CSV files under out/bench_models/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TRIALS=300
ORT_PYTHON=""
DB="$ROOT/out/bench_models/tandem.db"
MODELS=()
while (($#)); do
  case "$1" in
    --trials) TRIALS="$2"; shift 2 ;;
    --ort-python) ORT_PYTHON="$2"; shift 2 ;;
    --db) DB="$2"; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) MODELS+=("$1"); shift ;;
  esac
done
((${#MODELS[@]})) || { echo "usage: $0 [--trials N] [--ort-python PYTHON] MODEL_DIR..." >&2; exit 2; }

TANDEM="$ROOT/build/tools/tandem"
[[ -x "$TANDEM" ]] || "$ROOT/scripts/setup.sh"
mkdir -p "$(dirname "$DB")" "$ROOT/out/bench_models"

ORT_CSV="$ROOT/out/bench_models/onnxruntime.csv"
rm -f "$ORT_CSV"
for dir in "${MODELS[@]}"; do
  name="$(basename "$dir")"
  printf '==> %s: tandem bench (trial budget %s per tuning pipeline)\n' "$name" "$TRIALS"
  "$TANDEM" bench "$dir/model.onnx" --isolate --trials "$TRIALS" --db "$DB" \
    --configs default_heuristic,default_tuning,sequential,joint,all_onednn \
    --repeat 10 --rounds 7 --csv "$ROOT/out/bench_models/$name.csv"
  # Right after Tandem's timing of the same model: the load of these shared machines changes
  # over minutes, so ONNX Runtime timed at the end of the whole run would meet another machine.
  if [[ -n "$ORT_PYTHON" ]]; then
    printf '==> %s: ONNX Runtime (2 threads)\n' "$name"
    if [[ -f "$ORT_CSV" ]]; then
      "$ORT_PYTHON" "$ROOT/bench/ort_latency.py" --threads 2 "$dir" | tail -n +2 | tee -a "$ORT_CSV"
    else
      "$ORT_PYTHON" "$ROOT/bench/ort_latency.py" --threads 2 "$dir" | tee "$ORT_CSV"
    fi
  fi
done
