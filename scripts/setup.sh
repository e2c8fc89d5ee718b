#!/usr/bin/env bash
# Installs the Debian 12 packages Tandem needs (only the missing ones) and builds the project.
#
#   scripts/setup.sh              Release build in build/
#   scripts/setup.sh --sanitize   AddressSanitizer + UBSan build (RelWithDebInfo) in build-asan/
#   scripts/setup.sh --fuzz       only the packages, plus clang and its libFuzzer runtime
#                                 (scripts/fuzz.sh builds the fuzzers)
#
# Safe to run any number of times: installed packages are left alone and the build is
# incremental.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# chromium renders the tuning report in its browser test (the test skips without it);
# libonnx-testdata holds ONNX's backend node tests, which the ONNX node test runs; pybind11-dev
# and python3-dev build the Python package (python/), python3-pytest and python3-numpy run its tests.
PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  llvm-16-dev libsqlite3-dev libgtest-dev libgmock-dev libonnx-testdata libboost-graph-dev
  libxgboost-dev libdnnl-dev libonnx-dev libprotobuf-dev protobuf-compiler nlohmann-json3-dev
  libcli11-dev libfmt-dev clang-format zlib1g-dev chromium
  pybind11-dev python3-dev python3-pytest python3-numpy
)

log() { printf '==> [setup] %s\n' "$*"; }
die() { printf '==> [setup] error: %s\n' "$*" >&2; exit 1; }

sanitize=0
fuzz=0
for arg in "$@"; do
  case "$arg" in
    --sanitize) sanitize=1 ;;
    --fuzz)
      fuzz=1
      PACKAGES+=(clang-14 libclang-rt-14-dev)
      ;;
    -h | --help)
      sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) die "unknown argument '$arg' (expected --sanitize, --fuzz or --help)" ;;
  esac
done

# --- Debian packages -------------------------------------------------------------------------
missing=()
for package in "${PACKAGES[@]}"; do
  status="$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null || true)"
  [[ "$status" == installed ]] || missing+=("$package")
done

if ((${#missing[@]} == 0)); then
  log "all ${#PACKAGES[@]} Debian packages are installed"
else
  log "missing Debian packages: ${missing[*]}"
  if [[ "$(id -u)" -eq 0 ]]; then
    as_root=()
  elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
  else
    die "installing packages needs root: run as root or install sudo"
  fi
  log "apt-get update"
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  log "apt-get install ${missing[*]}"
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q "${missing[@]}"
fi

((fuzz)) && exit 0

# --- Configure and build ---------------------------------------------------------------------
if ((sanitize)); then
  build_dir="$ROOT/build-asan"
  cmake_args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTANDEM_SANITIZE=ON)
else
  build_dir="$ROOT/build"
  cmake_args=(-DCMAKE_BUILD_TYPE=Release)
fi

jobs="$(nproc)"
log "configuring ${build_dir#"$ROOT"/} (${cmake_args[*]})"
cmake -S "$ROOT" -B "$build_dir" -G Ninja "${cmake_args[@]}"
log "building ${build_dir#"$ROOT"/} with $jobs jobs"
cmake --build "$build_dir" -j"$jobs"
log "build finished: ${build_dir#"$ROOT"/}"
