#!/usr/bin/env bash
# Installs what is missing, builds into ./build (Release) and runs every test with ctest.
#   scripts/test.sh               the README's test command
#   scripts/test.sh --sanitize    the same under ASan+UBSan, in ./build-asan
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)
if [[ ${1:-} == --sanitize ]]; then
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DALPA_SANITIZE="address;undefined" \
        -DALPA_BUILD_BENCH=OFF
  cmake --build build-asan -j"$jobs"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j"$jobs"
else
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
  cmake --build build -j"$jobs"
  ctest --test-dir build --output-on-failure -j"$jobs"
fi
