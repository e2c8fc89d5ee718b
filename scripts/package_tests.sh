#!/usr/bin/env bash
# Packs the built test programs and `tandem` with the shared libraries they need beyond the C
# runtime and CUDA (LLVM, oneDNN, XGBoost, ONNX, ...) into one tarball, to run the suite on a
# machine that has none of the Debian packages (e.g. a GPU machine with only the CUDA toolkit:
# the cuBLAS test and placement measurements then run for real).
#
# usage: scripts/package_tests.sh OUT.tar.xz
# there: tar -xJf OUT.tar.xz -C /tmp && /tmp/tandem_tests/run_all.sh
#   or, for every GPU check of the CUDA issues in one go (the suite, the models of MODELS_DIR
#   under default_heuristic@cuda and all_cublas@cuda, the operator workloads against cuBLAS):
#   /tmp/tandem_tests/gpu_check.sh MODELS_DIR OUT_DIR
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
for program in "$ROOT"/build/tests/*_tests "$ROOT/build/tools/tandem" \
  "$ROOT/build/bench/tandem_gpu_operator_bench"; do
  cp "$program" "$STAGE/tandem_tests/"
  # (a program may need no library beyond those, so grep finding nothing is no error)
  { ldd "$program" | awk '$3 ~ /^\// {print $3}' |
    grep -v -E '/usr/local/cuda|/(libc|libm|libstdc\+\+|libgcc_s|libdl|libpthread|librt)\.so|ld-linux' ||
    true; } | xargs -r -I{} cp -n -L {} "$STAGE/tandem_tests/lib/"
done
strip "$STAGE"/tandem_tests/*_tests "$STAGE/tandem_tests/tandem" \
  "$STAGE/tandem_tests/tandem_gpu_operator_bench"
# LLVM's optional dependencies Z3 (its static analyzer) and libxml2 (Windows manifests; it pulls
# in ICU) weigh 40 MB and Tandem never calls them: each is replaced by a stub library that
# defines the symbols libLLVM imports from it (functions abort if called), so that the tarball
# fits a device machine's transfer limit.
llvm_library="$(ls "$STAGE"/tandem_tests/lib/libLLVM-*.so* 2>/dev/null | head -1)"
if [[ -n "$llvm_library" ]]; then
  for library in libz3.so.4 libxml2.so.2; do
    prefix="$([[ $library == libz3* ]] && echo 'Z3_' || echo 'xml')"
    nm -D --undefined-only "$llvm_library" | awk '{print $2}' | grep "^$prefix" > "$STAGE/symbols" || true
    {
      echo '#include <stdlib.h>'
      sed 's/@.*//' "$STAGE/symbols" | while read -r name; do
        if [[ $name == xmlFree ]]; then echo "void (*$name)(void*) = free;";
        else echo "void $name(void) { abort(); }"; fi
      done
    } > "$STAGE/stub.c"
    : > "$STAGE/versions.map"
    for version in $(grep -o '@.*' "$STAGE/symbols" | tr -d '@' | sort -u); do
      echo "$version { global: $(grep "@$version\$" "$STAGE/symbols" | sed 's/@.*/;/' | tr '\n' ' ') };" \
        >> "$STAGE/versions.map"
    done
    version_flag=()
    [[ -s "$STAGE/versions.map" ]] && version_flag=("-Wl,--version-script=$STAGE/versions.map")
    rm -f "$STAGE"/tandem_tests/lib/"${library%%.so*}"* "$STAGE"/tandem_tests/lib/libicu*
    gcc -shared -fPIC -o "$STAGE/tandem_tests/lib/$library" "-Wl,-soname,$library" \
      "${version_flag[@]}" "$STAGE/stub.c"
  done
fi
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
# gpu_check.sh MODELS_DIR OUT_DIR: the GPU checks of the CUDA issues in one go, each step's
# output in OUT_DIR (the suite; every model of MODELS_DIR under default_heuristic@cuda and
# all_cublas@cuda, checked against its stored outputs and timed; the operator workloads against
# cuBLAS). A step that fails does not stop the later ones; the exit status says whether any did.
cat > "$STAGE/tandem_tests/gpu_check.sh" <<'CHECK'
#!/usr/bin/env bash
here="$(cd "$(dirname "$0")" && pwd)"
models="${1:?usage: gpu_check.sh MODELS_DIR OUT_DIR}"
out="${2:?usage: gpu_check.sh MODELS_DIR OUT_DIR}"
mkdir -p "$out"
cuda="$(dirname "$(find / -name 'libcublas.so.*' -not -path '/proc/*' 2>/dev/null | head -1)" 2>/dev/null || true)"
export LD_LIBRARY_PATH="$here/lib${cuda:+:$cuda}"
status=0
step() {  # step NAME COMMAND...: runs it, output to OUT/NAME.txt, one summary line
  local name="$1"; shift
  local start=$SECONDS
  if "$@" > "$out/$name.txt" 2>&1; then echo "ok     $name ($((SECONDS - start)) s)";
  else echo "FAILED $name ($((SECONDS - start)) s): tail of $out/$name.txt"; tail -5 "$out/$name.txt"; status=1; fi
}
command -v nvidia-smi > /dev/null && nvidia-smi > "$out/nvidia-smi.txt" 2>&1
step suite "$here/run_all.sh"
for model in "$models"/*/model.onnx; do
  name="$(basename "$(dirname "$model")")"
  for pipeline in default_heuristic all_cublas; do
    step "$name-$pipeline" "$here/tandem" run "$model" --target cuda --pipeline "$pipeline" \
      --inputs "$(dirname "$model")/test_data_set_0" --check "$(dirname "$model")/test_data_set_0"
  done
done
step operators "$here/tandem_gpu_operator_bench"
exit $status
CHECK
chmod +x "$STAGE/tandem_tests/run_all.sh" "$STAGE/tandem_tests/gpu_check.sh"
XZ_OPT=-T0 tar -cJf "$OUT" -C "$STAGE" tandem_tests
echo "wrote $OUT ($(du -h "$OUT" | cut -f1))"
