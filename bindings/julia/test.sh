#!/usr/bin/env bash
# CI entry of the Julia binding: bindings/julia/test.sh [PREFIX]
#
# Julia is not installed on the build machines, so nothing here runs Julia. It proves instead,
# with clang's view of the C headers, that the binding agrees with them:
#   1. LibAlpa.jl is what generate.py writes from include/ now (no hand edits, no stale file);
#   2. check.py: every ccall, wrapper, constant, struct (offsets and sizes) and call from Alpa.jl
#      agrees with alpa.h / alpa_experimental.h;
#   3. if PREFIX (an install prefix of libalpa) is given, the same check against its installed
#      headers (PREFIX/include), so the binding matches what users build against;
#   4. mutation_test.py: hand-changed signatures (argument / return types, a dropped argument, a
#      renamed or deleted function, a constant, a struct field, a call from Alpa.jl) and a changed
#      C header each make the checker fail with a message naming the function.
# Needs python3 and clang (installed with apt-get when missing and running as root).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PREFIX="${1:-}"

if ! command -v clang >/dev/null 2>&1 || ! command -v python3 >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang python3 >/dev/null
  else
    echo "test.sh: clang and python3 are needed (apt-get install clang python3)" >&2
    exit 1
  fi
fi

start=$(date +%s)
echo "== 1. LibAlpa.jl up to date"
python3 "$HERE/generate.py" --check --include "$ROOT/include"

echo "== 2. checker on the binding (repository headers)"
python3 "$HERE/check.py" --include "$ROOT/include"

if [ -n "$PREFIX" ]; then
  if [ -f "$PREFIX/include/alpa.h" ] && [ -f "$PREFIX/include/alpa_experimental.h" ]; then
    echo "== 3. checker on the binding (installed headers in $PREFIX/include)"
    python3 "$HERE/check.py" --include "$PREFIX/include"
  else
    echo "test.sh: $PREFIX/include has no alpa.h / alpa_experimental.h" >&2
    exit 1
  fi
fi

echo "== 4. mutation test: the checker catches hand-changed signatures"
python3 "$HERE/mutation_test.py" "$ROOT/include"

echo "== Julia binding checks passed in $(( $(date +%s) - start )) s (the Julia code itself was not run: no Julia here)"
