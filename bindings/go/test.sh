#!/usr/bin/env bash
# CI entry of the Go binding: bindings/go/test.sh PREFIX [ASAN_PREFIX]
#   PREFIX       an install prefix of libalpa (lib/libalpa.so, lib/pkgconfig/alpa.pc, bin/alpa)
#   ASAN_PREFIX  optional: a prefix (or build directory) of libalpa built with
#                -DALPA_SANITIZE=address; the Go tests then run a second time against it.
# Installs golang-go (Debian bookworm: Go 1.19) when `go` is missing, then runs go vet, the tests
# under GODEBUG=cgocheck=2 and both examples. Needs no network besides apt: the module has no
# dependencies (GOPROXY=off, GOFLAGS=-mod=mod not needed).
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 PREFIX [ASAN_PREFIX]" >&2
  exit 2
fi
PREFIX=$(cd "$1" && pwd)
ASAN_PREFIX=${2:+$(cd "$2" && pwd)}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)

if ! command -v go >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    echo "== installing golang-go"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go pkg-config >/dev/null
  else
    echo "go is not installed and this is not root: install golang-go" >&2
    exit 1
  fi
fi
command -v pkg-config >/dev/null 2>&1 || { echo "pkg-config is missing" >&2; exit 1; }
go version

export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LD_LIBRARY_PATH="$PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GOPROXY=off GOFLAGS= GO111MODULE=on CGO_ENABLED=1
export GOCACHE="${GOCACHE:-${TMPDIR:-/tmp}/alpa-go-cache}"
export ALPA_CLI="$PREFIX/bin/alpa" ALPA_REPO_ROOT="$REPO"
pkg-config --exists alpa || { echo "alpa.pc not found under $PREFIX/lib/pkgconfig" >&2; exit 1; }

cd "$HERE"
echo "== gofmt"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "not gofmt-ed: $unformatted" >&2
  exit 1
fi
echo "== go vet"
go vet ./...
echo "== go test (GODEBUG=cgocheck=2)"
GODEBUG=cgocheck=2 ALPA_REQUIRE_CGOCHECK2=1 go test -count=1 -v ./... 2>&1 | tee "${TMPDIR:-/tmp}/alpa-go-test.log" | grep -E '^(=== RUN|--- |PASS|FAIL|ok|panic)|alpa_test.go' || true
test "${PIPESTATUS[0]}" = 0 || { echo "go test failed" >&2; exit 1; }

echo "== example: solve"
out=$(go run ./examples/solve "$REPO/tests/golden/iopddl_example.json")
echo "$out"
grep -q "objective   445" <<<"$out" || { echo "solve example: no 445" >&2; exit 1; }
echo "== example: plan (gpt-2.6b on p3.16xlarge:2)"
go run ./examples/plan -model gpt-2.6b -cluster p3.16xlarge:2

if [ -n "$ASAN_PREFIX" ]; then
  echo "== go test against the ASan build of libalpa ($ASAN_PREFIX)"
  libasan=$(gcc -print-file-name=libasan.so)
  [ -f "$libasan" ] || { echo "libasan.so not found (gcc -print-file-name)" >&2; exit 1; }
  [ -f "$ASAN_PREFIX/lib/libalpa.so.0" ] || { echo "no lib/libalpa.so.0 under $ASAN_PREFIX" >&2; exit 1; }
  testbin="${TMPDIR:-/tmp}/alpa-go-asan.test"
  # Built against PREFIX's headers; the ASan library (same soname and ABI) is loaded in its
  # place. libasan must come first in the process (the Go executable is not instrumented), the
  # Go runtime's own signal handling stays in charge of SIGSEGV/SIGBUS/SIGFPE, and LSan is off:
  # it cannot see the Go heap and reports Go-owned C allocations as leaks. Leaks of libalpa
  # handles are checked by the tests' own handle counts instead.
  go test -c -o "$testbin" ./alpa
  (cd alpa && env LD_LIBRARY_PATH="$ASAN_PREFIX/lib:$LD_LIBRARY_PATH" LD_PRELOAD="$libasan" \
      ASAN_OPTIONS=detect_leaks=0:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:allow_user_segv_handler=1:abort_on_error=0:halt_on_error=1 \
      GODEBUG=cgocheck=2 ALPA_REQUIRE_CGOCHECK2=1 "$testbin" -test.count=1 -test.v 2>&1 |
      tee "${TMPDIR:-/tmp}/alpa-go-asan.log" | grep -E '^(=== RUN|--- |PASS|FAIL|ok|panic)|ERROR: AddressSanitizer' || true
   test "${PIPESTATUS[0]}" = 0) || { echo "go test under ASan failed (log: ${TMPDIR:-/tmp}/alpa-go-asan.log)" >&2; exit 1; }
  if grep -q "ERROR: AddressSanitizer" "${TMPDIR:-/tmp}/alpa-go-asan.log"; then
    echo "AddressSanitizer reported an error" >&2
    exit 1
  fi
fi
echo "== Go binding: all checks passed"
