#!/bin/sh
# CI entry of the Rust bindings: bindings/rust/test.sh PREFIX
#   PREFIX: an install prefix of libalpa (lib/libalpa.so, lib/pkgconfig/alpa.pc, include/, bin/alpa).
# Installs what it needs with apt-get (Debian bookworm: cargo, rustc, bindgen, rustfmt, pkg-config,
# valgrind) when missing, then:
#   1. regenerates alpa-sys's bindings with generate.sh into a temporary directory and diffs them
#      against the checked-in ones (the bindgen version line normalized);
#   2. cargo test --offline (both crates; no crate registry is used: zero dependencies);
#   3. runs the two examples (solve -> 445; plan gpt-2.6b on p3.16xlarge:2 -> the stage table;
#      plan --json on a small model);
#   4. runs a few fast tests of the alpa crate once under valgrind (definite leaks are errors).
set -eu
if [ $# -ne 1 ]; then
  echo "usage: $0 PREFIX" >&2
  exit 2
fi
PREFIX=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"

missing=""
command -v cargo >/dev/null 2>&1 || missing="$missing cargo rustc"
command -v bindgen >/dev/null 2>&1 || missing="$missing bindgen"
[ -x /usr/bin/rustfmt ] || command -v rustfmt >/dev/null 2>&1 || missing="$missing rustfmt"
command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
command -v valgrind >/dev/null 2>&1 || missing="$missing valgrind"
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "== apt-get install$missing"
    apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
  else
    echo "test.sh: missing$missing (not root or no apt-get); continuing with what there is" >&2
  fi
fi

export ALPA_DIR="$PREFIX"
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}"
cargo --version
rustc --version

echo "== alpa-sys bindings up to date"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
./alpa-sys/generate.sh "$tmp"
stale=0
for f in bindings.rs bindings_experimental.rs; do
  sed '1s/rust-bindgen [0-9][0-9.]*/rust-bindgen VERSION/' "$tmp/$f" > "$tmp/$f.new"
  sed '1s/rust-bindgen [0-9][0-9.]*/rust-bindgen VERSION/' "alpa-sys/src/$f" > "$tmp/$f.old"
  if ! diff -u "$tmp/$f.old" "$tmp/$f.new" > "$tmp/$f.diff"; then
    echo "alpa-sys/src/$f is stale: run bindings/rust/alpa-sys/generate.sh" >&2
    head -40 "$tmp/$f.diff" >&2
    stale=1
  fi
done
[ "$stale" = 0 ] || exit 1
echo "up to date"

echo "== cargo test --offline"
cargo test --offline

echo "== examples"
out=$(cargo run --offline -q --example solve)
echo "$out"
echo "$out" | tail -1 | grep -qx 445 || { echo "solve example did not print 445" >&2; exit 1; }
out=$(cargo run --offline -q --example plan)
echo "$out"
echo "$out" | grep -q "^stage " || { echo "plan example printed no stage table" >&2; exit 1; }
out=$(cargo run --offline -q --example plan -- --json --cluster p3.16xlarge:1 \
  --model "gpt:hidden=256,layers=4,heads=4,seq=128,vocab=1000,batch=16")
echo "$out"
echo "$out" | grep -Eq '^\{"iteration_seconds": [0-9.e+-]+, "compile_seconds": [0-9.e+-]+\}$' || { echo "plan --json: unexpected output" >&2; exit 1; }

if command -v valgrind >/dev/null 2>&1; then
  echo "== valgrind (leaks of handles)"
  bin=$(cargo test --offline -p alpa --test api --no-run 2>&1 | sed -n 's/.*Executable.*(\(.*\)).*/\1/p' | tail -1)
  case "$bin" in /*) ;; *) bin="$here/$bin" ;; esac
  [ -x "$bin" ] || { echo "could not find the api test binary" >&2; exit 1; }
  valgrind --quiet --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=1 \
    --suppressions="$here/valgrind.supp" "$bin" --test-threads=1 solve_ graph_from_slices \
    bad_model_spec option_errors progress_callback cancel_from
else
  echo "== valgrind not available: leak check skipped" >&2
fi
echo "== Rust bindings: OK"
