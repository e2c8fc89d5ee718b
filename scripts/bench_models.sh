#!/usr/bin/env bash
# The end-to-end comparison of issue 8: each model built under default_heuristic,
# default_tuning, sequential, joint (the same trial budget each, measurements not shared between
# pipelines: `tandem bench --isolate`) and all_onednn, checked against the reference interpreter
# and timed in turns, with ONNX Runtime in the same turns when an interpreter with onnxruntime is
# given (it is not a Debian package: see bench/ort_latency.py).
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

for dir in "${MODELS[@]}"; do
  name="$(basename "$dir")"
  printf '==> %s: tandem bench (trial budget %s per tuning pipeline)\n' "$name" "$TRIALS"
  # ONNX Runtime, when given, is timed in the same turns as Tandem's configurations (an external
  # contender of tandem bench: bench/ort_latency.py --serve), so that the changing load of these
  # shared machines meets both alike.
  EXTERNAL=()
  if [[ -n "$ORT_PYTHON" ]]; then
    EXTERNAL=(--external "onnxruntime=$ORT_PYTHON $ROOT/bench/ort_latency.py --serve --threads 2 $dir")
  fi
  "$TANDEM" bench "$dir/model.onnx" --isolate --trials "$TRIALS" --db "$DB" \
    --configs default_heuristic,default_tuning,sequential,joint,all_onednn \
    --repeat 10 --rounds 7 "${EXTERNAL[@]}" --csv "$ROOT/out/bench_models/$name.csv"
done
