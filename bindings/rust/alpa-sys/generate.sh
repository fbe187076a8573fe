#!/bin/sh
# Regenerates the raw FFI of alpa-sys from the repository's headers with bindgen (the Debian
# package's CLI) and formats it with rustfmt (Debian's, /usr/bin/rustfmt, for output that does not
# depend on the developer's toolchain):
#   src/bindings.rs               include/alpa.h               (the stable C ABI)
#   src/bindings_experimental.rs  include/alpa_experimental.h  (its own declarations only)
# Usage: generate.sh [OUT_DIR]   (default: this crate's src/; test.sh passes a temporary directory
# and diffs). Environment: BINDGEN (default bindgen), RUSTFMT (default /usr/bin/rustfmt when it
# exists), ALPA_INCLUDE (default the repository's include/).
set -euf
here=$(cd "$(dirname "$0")" && pwd)
include=${ALPA_INCLUDE:-$here/../../../include}
out=${1:-$here/src}
bindgen=${BINDGEN:-bindgen}
if [ -z "${RUSTFMT:-}" ]; then
  if [ -x /usr/bin/rustfmt ]; then RUSTFMT=/usr/bin/rustfmt; else RUSTFMT=$(command -v rustfmt); fi
fi
export RUSTFMT
mkdir -p "$out"

common="--size_t-is-usize --default-macro-constant-type signed --with-derive-default"

# shellcheck disable=SC2086
"$bindgen" $common --allowlist-file '.*/alpa\.h' \
  "$include/alpa.h" -o "$out/bindings.rs" -- -I"$include"

# Only what alpa_experimental.h itself declares; the types of alpa.h come from `use super::*`.
# shellcheck disable=SC2086
"$bindgen" $common --allowlist-file '.*/alpa_experimental\.h' --no-recursive-allowlist \
  --raw-line 'use super::*;' \
  "$include/alpa_experimental.h" -o "$out/bindings_experimental.rs" -- -I"$include"
