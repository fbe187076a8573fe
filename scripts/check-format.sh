#!/usr/bin/env bash
# Fails when a C/C++ file of the tree is not clang-formatted.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh format
mapfile -t files < <(git ls-files '*.c' '*.cc' '*.h' '*.cu' '*.cuh')
clang-format --dry-run -Werror "${files[@]}"
echo "check-format: ${#files[@]} files formatted"
