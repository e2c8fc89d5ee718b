#!/usr/bin/env bash
# Packs the built test programs and `tandem` with the shared libraries they need beyond the C
# runtime and CUDA (LLVM, oneDNN, XGBoost, ONNX, ...) into one tarball, to run the suite on a
# machine that has none of the Debian packages (e.g. a GPU machine with only the CUDA toolkit:
# the cuBLAS test and placement measurements then run for real).
#
# usage: scripts/package_tests.sh OUT.tar.xz
# there: tar -xJf OUT.tar.xz -C /tmp && /tmp/tandem_tests/run_all.sh
#   (run_all.sh sets LD_LIBRARY_PATH to the packed libraries and CUDA's; tests needing the
#   shared models or Chromium skip.) Test programs look for source files under the path they
#   were built in: link the checkout there (ln -s CHECKOUT /work/main) for the tests that read
#   tests/ data.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:?usage: $0 OUT.tar.xz}"
STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/tandem_tests/lib"
for program in "$ROOT"/build/tests/*_tests "$ROOT/build/tools/tandem"; do
  cp "$program" "$STAGE/tandem_tests/"
  ldd "$program" | awk '$3 ~ /^\// {print $3}' |
    grep -v -E '/usr/local/cuda|/(libc|libm|libstdc\+\+|libgcc_s|libdl|libpthread|librt)\.so|ld-linux' |
    xargs -r -I{} cp -n -L {} "$STAGE/tandem_tests/lib/"
done
strip "$STAGE"/tandem_tests/*_tests "$STAGE/tandem_tests/tandem"
cat > "$STAGE/tandem_tests/run_all.sh" <<'RUN'
#!/usr/bin/env bash
here="$(cd "$(dirname "$0")" && pwd)"
cuda="$(dirname "$(find / -name 'libcublas.so.*' -not -path '/proc/*' 2>/dev/null | head -1)" 2>/dev/null || true)"
export LD_LIBRARY_PATH="$here/lib${cuda:+:$cuda}"
status=0
for program in "$here"/*_tests; do
  echo "== $(basename "$program")"
  "$program" --gtest_brief=1 || status=1
done
exit $status
RUN
chmod +x "$STAGE/tandem_tests/run_all.sh"
XZ_OPT=-T0 tar -cJf "$OUT" -C "$STAGE" tandem_tests
echo "wrote $OUT ($(du -h "$OUT" | cut -f1))"
