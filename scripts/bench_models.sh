#!/usr/bin/env bash
# The end-to-end comparison of issue 8: each model built under default_heuristic,
# default_tuning, sequential, joint (the same trial budget each, measurements not shared between
# pipelines: `tandem bench --isolate`) and all_onednn, checked against the reference interpreter
# and timed in turns, with ONNX Runtime and OpenVINO in the same turns when interpreters with
# them are given (they are not Debian packages: see bench/engine_latency.py).
#
# usage: scripts/bench_models.sh [--trials N] [--ort-python PYTHON] [--openvino-python PYTHON]
#                                [--db FILE] MODEL_DIR...
#   MODEL_DIR            holds model.onnx and test_data_set_0/ (e.g. ../shared/models/resnet18)
#   --trials N           trial budget of each tuning pipeline (default 300)
#   --ort-python PY      a Python with onnxruntime, onnx, numpy: ONNX Runtime as a contender
#   --openvino-python PY a Python with openvino, onnx, numpy: OpenVINO as a contender
#                        (both may be the same virtual environment)
#   --db FILE            tuning database (default out/bench_models/tandem.db)
# Results: a table per model on standard output, CSV files under out/bench_models/MODEL.csv.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TRIALS=300
ORT_PYTHON=""
OPENVINO_PYTHON=""
DB="$ROOT/out/bench_models/tandem.db"
MODELS=()
help() { sed -n "$1"'s/^# \{0,1\}//p' "$0"; }
usage() { help 8,16; }
while (($#)); do
  case "$1" in
    --trials|--ort-python|--openvino-python|--db)
      (($# >= 2)) || { echo "$0: $1 needs a value" >&2; exit 2; } ;;&
    --trials) TRIALS="$2"; shift 2 ;;
    --ort-python) ORT_PYTHON="$2"; shift 2 ;;
    --openvino-python) OPENVINO_PYTHON="$2"; shift 2 ;;
    --db) DB="$2"; shift 2 ;;
    -h|--help) help 2,16; exit 0 ;;
    -*) echo "$0: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) MODELS+=("$1"); shift ;;
  esac
done
((${#MODELS[@]})) || { usage >&2; exit 2; }
for dir in "${MODELS[@]}"; do
  [[ -f "$dir/model.onnx" ]] || { echo "$0: no model.onnx in $dir" >&2; exit 2; }
done

# An interpreter that cannot import its engine fails here, not after the tuning.
check_python() {  # PYTHON MODULE
  "$1" -c "import $2, onnx, numpy" 2>/dev/null && return
  echo "$0: $1 cannot import $2, onnx and numpy; install them: $1 -m pip install $2 onnx numpy" >&2
  exit 2
}
[[ -z "$ORT_PYTHON" ]] || check_python "$ORT_PYTHON" onnxruntime
[[ -z "$OPENVINO_PYTHON" ]] || check_python "$OPENVINO_PYTHON" openvino

TANDEM="$ROOT/build/tools/tandem"
[[ -x "$TANDEM" ]] || "$ROOT/scripts/setup.sh"
mkdir -p "$(dirname "$DB")" "$ROOT/out/bench_models"

for dir in "${MODELS[@]}"; do
  name="$(basename "$dir")"
  printf '==> %s: tandem bench (trial budget %s per tuning pipeline)\n' "$name" "$TRIALS"
  # The other engines, when given, are timed in the same turns as Tandem's configurations
  # (external contenders of tandem bench: bench/engine_latency.py --serve), so that the changing
  # load of these shared machines meets all alike.
  EXTERNAL=()
  SERVE="$ROOT/bench/engine_latency.py --serve --threads 2"
  if [[ -n "$ORT_PYTHON" ]]; then
    EXTERNAL+=(--external "onnxruntime=$ORT_PYTHON $SERVE --engine onnxruntime $dir")
  fi
  if [[ -n "$OPENVINO_PYTHON" ]]; then
    EXTERNAL+=(--external "openvino=$OPENVINO_PYTHON $SERVE --engine openvino $dir")
  fi
  "$TANDEM" bench "$dir/model.onnx" --isolate --trials "$TRIALS" --db "$DB" \
    --configs default_heuristic,default_tuning,sequential,joint,all_onednn \
    --repeat 10 --rounds 7 "${EXTERNAL[@]}" --csv "$ROOT/out/bench_models/$name.csv"
done
