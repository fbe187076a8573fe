#!/usr/bin/env bash
# Runs the language bindings' test suites (Python, Rust, Go, and the Julia signature checker)
# against a built libalpa, installed first into BUILD_DIR/prefix. Each binding's own
# bindings/<lang>/test.sh installs what it needs.
#   scripts/test-bindings.sh build                  every binding against the Release build
#   scripts/test-bindings.sh --asan build-asan build
#                                                   the Go suite once more against the
#                                                   ASan+UBSan build (it also needs the Release
#                                                   prefix to compile against); the Python suite
#                                                   runs under ASan by hand with
#                                                   bindings/python/test.sh build-asan/prefix
#                                                   (161 s more in CI, where the Release phase
#                                                   runs it)
set -euo pipefail
cd "$(dirname "$0")/.."

install_prefix() {
  cmake --install "$1" --prefix "$1/prefix" >/dev/null
  echo "$1/prefix"
}

run() {
  echo "== bindings: $1"
  shift
  "$@"
}

if [[ ${1:-} == --asan ]]; then
  asan_prefix=$(install_prefix "${2:?usage: test-bindings.sh --asan ASAN_BUILD_DIR BUILD_DIR}")
  release_prefix="${3:?usage: test-bindings.sh --asan ASAN_BUILD_DIR BUILD_DIR}/prefix"
  [[ -d $release_prefix ]] || release_prefix=$(install_prefix "$3")
  run "go (ASan)" bindings/go/test.sh "$release_prefix" "$asan_prefix"
  exit 0
fi

prefix=$(install_prefix "${1:?usage: test-bindings.sh BUILD_DIR}")
run python bindings/python/test.sh "$prefix"
run rust bindings/rust/test.sh "$prefix"
run go bindings/go/test.sh "$prefix"
run "julia (signature checker; Julia itself is not installed)" bindings/julia/test.sh "$prefix"
