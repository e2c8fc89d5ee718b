#!/usr/bin/env bash
# Builds Tandem (installing missing Debian packages first, see scripts/setup.sh) and runs every
# test suite with ctest.
#
#   scripts/test.sh              tests the Release build in build/
#   scripts/test.sh --sanitize   tests the AddressSanitizer + UBSan build in build-asan/
#
# Exits non-zero when the build or any test fails.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

build_dir="$ROOT/build"
setup_args=()
for arg in "$@"; do
  case "$arg" in
    --sanitize)
      build_dir="$ROOT/build-asan"
      setup_args=(--sanitize)
      ;;
    -h | --help)
      sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      printf '==> [test] error: unknown argument %s (expected --sanitize or --help)\n' "$arg" >&2
      exit 1
      ;;
  esac
done

"$ROOT/scripts/setup.sh" "${setup_args[@]}"

if [[ "$build_dir" == "$ROOT/build-asan" ]]; then
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
fi

printf '==> [test] running ctest in %s\n' "${build_dir#"$ROOT"/}"
# --no-tests=error: a build that registered no tests is a failure, not a pass.
ctest --test-dir "$build_dir" --output-on-failure --no-tests=error -j2
