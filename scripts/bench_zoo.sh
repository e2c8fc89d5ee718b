#!/usr/bin/env bash
# The model-zoo benchmark: scripts/bench_models.sh on every model folder given (and on every
# folder with a model.onnx under each --root), then one Markdown table of all of them
# (bench/zoo_table.py): per model the latency of each Tandem configuration and of each peer
# engine, the best peer, joint against it (above 1: Tandem faster), and the geomean of that ratio.
#
# usage: scripts/bench_zoo.sh [--trials N] [--ort-python PYTHON] [--openvino-python PYTHON]
#                             [--db FILE] [--root DIR]... [MODEL_DIR]...
#   MODEL_DIR            holds model.onnx and test_data_set_0/ (e.g. ../shared/models/resnet18)
#   --root DIR           every folder DIR/*/ that holds a model.onnx (e.g. ../shared/models)
#   --trials N, --ort-python PY, --openvino-python PY, --db FILE: as scripts/bench_models.sh
#                        (without a peer Python the table has no peer and no ratio)
# Output: the table on standard output (also out/bench_zoo/table.md); each model's tandem bench
# log in out/bench_zoo/MODEL.log, its CSV in out/bench_models/MODEL.csv. A model whose bench
# fails is reported and shown as far as it got; the exit status is then 1.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
help() { sed -n "$1"'s/^# \{0,1\}//p' "$0"; }
usage() { help 7,16; }
PASS=()   # options handed to bench_models.sh
MODELS=()
while (($#)); do
  case "$1" in
    --trials|--ort-python|--openvino-python|--db|--root)
      (($# >= 2)) || { echo "$0: $1 needs a value" >&2; exit 2; } ;;&
    --trials|--ort-python|--openvino-python|--db) PASS+=("$1" "$2"); shift 2 ;;
    --root)
      [[ -d "$2" ]] || { echo "$0: --root $2 is not a folder" >&2; exit 2; }
      found=0
      for dir in "$2"/*/; do
        if [[ -f "$dir/model.onnx" ]]; then MODELS+=("${dir%/}"); found=1; fi
      done
      ((found)) || { echo "$0: no folder with a model.onnx under $2" >&2; exit 2; }
      shift 2 ;;
    -h|--help) help 2,16; exit 0 ;;
    -*) echo "$0: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) MODELS+=("$1"); shift ;;
  esac
done
((${#MODELS[@]})) || { usage >&2; exit 2; }
declare -A SEEN=()
for dir in "${MODELS[@]}"; do
  [[ -f "$dir/model.onnx" ]] || { echo "$0: no model.onnx in $dir" >&2; exit 2; }
  name="$(basename "$dir")"
  # bench_models.sh names its CSV after the folder: two models of one name would share it.
  [[ -z "${SEEN[$name]:-}" ]] || { echo "$0: two model folders named $name" >&2; exit 2; }
  SEEN[$name]=1
done

OUT="$ROOT/out/bench_zoo"
mkdir -p "$OUT"
CSVS=()
failed=0
for dir in "${MODELS[@]}"; do
  name="$(basename "$dir")"
  csv="$ROOT/out/bench_models/$name.csv"
  rm -f "$csv"  # never a table from an earlier run's file
  echo "==> $name (log: $OUT/$name.log)" >&2
  if ! "$ROOT/scripts/bench_models.sh" "${PASS[@]}" "$dir" >"$OUT/$name.log" 2>&1; then
    echo "$0: the bench of $name failed; the end of its log:" >&2
    tail -n 5 "$OUT/$name.log" >&2
    failed=1
  fi
  if [[ -f "$csv" ]]; then CSVS+=("$csv"); fi
done
((${#CSVS[@]})) || { echo "$0: no model's bench wrote its CSV" >&2; exit 1; }
python3 "$ROOT/bench/zoo_table.py" "${CSVS[@]}" | tee "$OUT/table.md"
exit "$failed"
