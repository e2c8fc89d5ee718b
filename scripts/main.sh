#!/usr/bin/env bash
# Builds Tandem (installing missing Debian packages first, see scripts/setup.sh) and runs the
# main job: tunes a model with the `joint` pipeline (layout, backend placement and kernel
# schedules tuned together) under a small trial budget, recording every measurement and the
# run's decisions in a SQLite tuning database; then builds the model under default_heuristic,
# default_tuning (same budget), joint and all_onednn, checks each against the reference
# interpreter and times them in turns; replays the tuned model from the database and checks it
# against the model's stored outputs; and writes the HTML tuning report.
#
# usage: scripts/main.sh [MODEL.onnx [TRIALS]]   (default: the bundled tiny_cnn, 200 trials)
# Run again, the database answers: nothing is tuned twice and the job takes seconds.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

scripts/setup.sh

TANDEM=build/tools/tandem
MODEL="${1:-examples/models/tiny_cnn/model.onnx}"
TRIALS="${2:-200}"
TEST_DATA="$(dirname "$MODEL")/test_data_set_0"
mkdir -p out
NAME="$(basename "$(dirname "$MODEL")")"
DB="out/$NAME.tandem.db"
REPORT="out/$NAME.report.html"

step() { printf '==> [main] %s\n' "$*"; }

step "$TANDEM tune $MODEL --pipeline joint --trials $TRIALS --db $DB"
"$TANDEM" tune "$MODEL" --pipeline joint --trials "$TRIALS" --db "$DB"

step "$TANDEM bench $MODEL --configs default_heuristic,default_tuning,joint,all_onednn --trials $TRIALS --db $DB"
"$TANDEM" bench "$MODEL" --configs default_heuristic,default_tuning,joint,all_onednn \
  --trials "$TRIALS" --db "$DB"

if [[ -f "$TEST_DATA/input_0.pb" ]]; then
  step "$TANDEM run $MODEL --pipeline joint --db $DB --inputs $TEST_DATA --check $TEST_DATA"
  "$TANDEM" run "$MODEL" --pipeline joint --db "$DB" --inputs "$TEST_DATA" --check "$TEST_DATA" \
    --repeat 20
fi

if "$TANDEM" report --help >/dev/null 2>&1; then
  step "$TANDEM report --db $DB --output $REPORT"
  "$TANDEM" report --db "$DB" --output "$REPORT"
  step "tuning report written to $REPORT"
fi
step "tuning database: $DB (run again to reuse it)"
step "done"
