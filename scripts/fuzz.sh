#!/usr/bin/env bash
# Builds the libFuzzer programs of the fuzz targets (fuzz/fuzz_targets.h) with clang under
# AddressSanitizer + UBSan in build-fuzz/, and runs each for a bounded time from its committed
# seed corpus (fuzz/corpus/<target>/). New inputs and any crash reproducer go to out/fuzz/.
#
#   scripts/fuzz.sh [--seconds N] [TARGET...]   (default: 600 s per target, every target)
#
# Prints per target: executions, executions per second, corpus size; exits non-zero when a
# target found something (its reproducer is out/fuzz/<target>/crash-*).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log() { printf '==> [fuzz] %s\n' "$*"; }

seconds=600
targets=()
while (($#)); do
  case "$1" in
    --seconds)
      seconds="${2:?--seconds needs a number}"
      shift 2
      ;;
    -h | --help)
      sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      targets+=("$1")
      shift
      ;;
  esac
done
((${#targets[@]})) || targets=(onnx_importer pipeline_text graph_text kernel_text records)

"$ROOT/scripts/setup.sh" --fuzz
build_dir="$ROOT/build-fuzz"
flags="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined"
flags+=" -fno-omit-frame-pointer -gline-tables-only"
log "configuring ${build_dir#"$ROOT"/} (clang, ASan + UBSan)"
CC=clang-14 CXX=clang++-14 cmake -S "$ROOT" -B "$build_dir" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DTANDEM_FUZZ=ON -DTANDEM_BUILD_TESTS=OFF -DTANDEM_BUILD_BENCH=OFF \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" >/dev/null
programs=()
for target in "${targets[@]}"; do programs+=("tandem_fuzz_$target"); done
log "building ${programs[*]}"
cmake --build "$build_dir" -j"$(nproc)" --target "${programs[@]}"

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
status=0
printf '%-16s %12s %10s %8s %s\n' target executions exec/s corpus result
for target in "${targets[@]}"; do
  work="$ROOT/out/fuzz/$target"
  mkdir -p "$work/corpus"
  log "$target: ${seconds} s"
  result=ok
  if ! "$build_dir/fuzz/tandem_fuzz_$target" "$work/corpus" "$ROOT/fuzz/corpus/$target" \
    -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$work/" >"$work.log" 2>&1; then
    result="FOUND (see $work.log and $work/)"
    status=1
  fi
  executions="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work.log" | grep -o '[0-9]*$' || echo '?')"
  rate="$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$work.log" | grep -o '[0-9]*$' || echo '?')"
  corpus="$(find "$work/corpus" -type f | wc -l)"
  printf '%-16s %12s %10s %8s %s\n' "$target" "$executions" "$rate" "$corpus" "$result"
done
exit $status
