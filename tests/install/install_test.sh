#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds a consumer with find_package(alpa) and
# another with pkg-config, and runs both.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR C_COMPILER
set -euo pipefail
build=$1
source=$2
cc=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
libdir=$(dirname "$(find "$tmp/prefix" -name 'libalpa.so' | head -n 1)")
cmake -S "$source/tests/install/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  -DCMAKE_C_COMPILER="$cc" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
LD_LIBRARY_PATH=$libdir "$tmp/consumer/consumer"
pc=$(find "$tmp/prefix" -name alpa.pc | head -n 1)
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs alpa)
# shellcheck disable=SC2086
"$cc" "$source/tests/install/consumer/main.c" $flags -o "$tmp/pc_consumer"
LD_LIBRARY_PATH=$libdir "$tmp/pc_consumer"
echo "install test passed: find_package and pkg-config"
