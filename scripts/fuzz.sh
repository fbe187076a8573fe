#!/usr/bin/env bash
# Builds every libFuzzer target (tests/fuzz/fuzz_*.cc) with clang (ASan+UBSan) into ./build-fuzz and runs each one for
# SECONDS (default 30) from its corpus. A crash fails the script and leaves the input in
# build-fuzz/findings/: add it to tests/fuzz/corpus/<target>/ once fixed.
#   scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
scripts/install-deps.sh fuzz
# -O1 with line tables only, as the sanitizer builds of scripts/test.sh: libFuzzer's own advice,
# and a faster build than RelWithDebInfo's -O2 -g.
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DALPA_BUILD_FUZZ=ON -DALPA_BUILD_BENCH=OFF >/dev/null
# Every target: one per tests/fuzz/fuzz_*.cc, so that a new target is never left out.
targets=()
for source in tests/fuzz/fuzz_*.cc; do targets+=("$(basename "$source" .cc)"); done
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]}"
mkdir -p build-fuzz/findings
for t in "${targets[@]}"; do
  work=$(mktemp -d)
  echo "fuzz: $t for ${seconds}s"
  dict=tests/fuzz/json.dict
  if [[ -f tests/fuzz/$t.dict ]]; then dict=tests/fuzz/$t.dict; fi
  build-fuzz/bin/"$t" -max_total_time="$seconds" -dict="$dict" \
    -artifact_prefix=build-fuzz/findings/"$t"- -print_final_stats=1 "$work" \
    tests/fuzz/corpus/"$t" 2>&1 | grep -E "^(stat::number_of_executed_units|==|SUMMARY)|ERROR" || true
  rm -rf "$work"
  if compgen -G "build-fuzz/findings/$t-*" >/dev/null; then
    echo "fuzz: $t found a crash: $(ls build-fuzz/findings/"$t"-*)"
    exit 1
  fi
done
echo "fuzz: no crashes"
