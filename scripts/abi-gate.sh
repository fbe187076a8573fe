#!/usr/bin/env bash
# The ABI gate: usage scripts/abi-gate.sh BUILD_DIR
#
# 1. Every alpa_* function declared in include/alpa.h and include/alpa_experimental.h is defined
#    and exported by BUILD_DIR/lib/libalpa.so, and the library exports no other function or
#    object (nm -D --defined-only against the declarations).
# 2. The headers parse cleanly for bindgen (the Rust binding generator); where bindgen cannot be
#    installed, clang's own parser checks them instead (-fsyntax-only -Xclang -ast-dump), and the
#    script says so.
# Exit status 0: the gate passes; 1: it fails (each finding printed); 2: bad usage or no library.
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build_dir=$1
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
headers=("$root/include/alpa.h" "$root/include/alpa_experimental.h")
library=$build_dir/lib/libalpa.so
if [[ ! -e $library ]]; then
  echo "abi-gate: $library not found (build the shared library first)" >&2
  exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0

# ---- 1. Declarations against exports ------------------------------------------------------
# Declared functions: the name before "(" on every ALPA_API declaration (declarations may wrap,
# so the headers are joined into one line first; the #define of ALPA_API itself names no alpa_
# function).
cat "${headers[@]}" | tr '\n' ' ' | grep -oE 'ALPA_API [A-Za-z0-9_ *]*[ *]alpa_[a-z0-9_]+\(' |
  sed -E 's/.*[ *](alpa_[a-z0-9_]+)\($/\1/' | sort -u >"$work/declared"
# Exported symbols with their types; T/t = functions, anything else (data) must not exist.
nm -D --defined-only "$library" | awk '{print $2, $3}' | sed 's/@.*//' | sort -u >"$work/exports"
awk '$1 == "T" {print $2}' "$work/exports" | sort -u >"$work/exported_functions"
awk '$1 != "T" {print $1, $2}' "$work/exports" >"$work/exported_other"

if [[ ! -s $work/declared ]]; then
  echo "abi-gate: found no ALPA_API declarations in the headers" >&2
  exit 2
fi
missing=$(comm -23 "$work/declared" "$work/exported_functions")
extra=$(comm -13 "$work/declared" "$work/exported_functions")
if [[ -n $missing ]]; then
  echo "abi-gate: declared but not exported by $library:"
  sed 's/^/  /' <<<"$missing"
  failed=1
fi
if [[ -n $extra ]]; then
  echo "abi-gate: exported by $library but declared in no public header:"
  sed 's/^/  /' <<<"$extra"
  failed=1
fi
# The version node ALPA_0 shows up as an absolute symbol; anything else is a leak.
other=$(grep -v '^A ALPA_0$' "$work/exported_other" || true)
if [[ -n $other ]]; then
  echo "abi-gate: exported symbols that are not functions of the C ABI:"
  sed 's/^/  /' <<<"$other"
  failed=1
fi
echo "abi-gate: $(wc -l <"$work/declared") declared functions, $(wc -l <"$work/exported_functions") exported"

# ---- 2. The headers through bindgen ----------------------------------------------------------
ensure_bindgen() {
  command -v bindgen >/dev/null 2>&1 && return 0
  [[ $(id -u) -eq 0 ]] || return 1
  command -v apt-get >/dev/null 2>&1 || return 1
  echo "abi-gate: installing bindgen (apt-get)"
  { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      bindgen; } >"$work/apt.log" 2>&1 || return 1
  command -v bindgen >/dev/null 2>&1
}

for header in "${headers[@]}"; do
  name=$(basename "$header")
  if ensure_bindgen; then
    # Functions, types and constants of the C ABI only; warnings from libclang fail the gate.
    if ! bindgen "$header" --allowlist-function 'alpa_.*' --allowlist-type 'alpa_.*' \
        --allowlist-var 'ALPA_.*' -o "$work/${name%.h}.rs" -- -I"$root/include" \
        >"$work/bindgen.log" 2>&1 || grep -qi 'warning\|error' "$work/bindgen.log"; then
      echo "abi-gate: bindgen failed on $name:"
      sed 's/^/  /' "$work/bindgen.log"
      failed=1
    else
      echo "abi-gate: bindgen parses $name ($(grep -c 'pub fn alpa_' "$work/${name%.h}.rs") functions)"
    fi
  else
    echo "abi-gate: bindgen is not installed and could not be (not root, no apt-get, or the" \
      "install failed); checking $name with clang's parser instead"
    if ! clang -x c -std=c99 -Wall -Wextra -pedantic -Werror -fsyntax-only -Xclang -ast-dump \
        -I"$root/include" "$header" >"$work/ast.txt" 2>"$work/clang.log"; then
      echo "abi-gate: clang cannot parse $name:"
      sed 's/^/  /' "$work/clang.log"
      failed=1
    else
      echo "abi-gate: clang parses $name ($(grep -c 'FunctionDecl.* alpa_' "$work/ast.txt") functions)"
    fi
  fi
done

if [[ $failed -ne 0 ]]; then
  echo "abi-gate: FAILED"
  exit 1
fi
echo "abi-gate: passed"
