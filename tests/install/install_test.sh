#!/usr/bin/env bash
# Installs the build into a temporary prefix, then checks what a user of the install meets:
#   - the installed `alpa` program starts without LD_LIBRARY_PATH (its RPATH finds libalpa.so.0);
#   - a C project and a C++ project link alpa::alpa_shared and alpa::alpa_static through
#     find_package(alpa) and run;
#   - a C program links through pkg-config, shared and (--static) static, and runs.
# The static programs must not depend on libalpa.so. The prefix is moved after installing, so
# every check also covers a relocated install.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR C_COMPILER CXX_COMPILER VERSION
set -euo pipefail
build=$1
source=$2
cc=$3
cxx=$4
project_version=$5
problem=$source/tests/golden/iopddl_example.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/installed" >/dev/null
mv "$tmp/installed" "$tmp/prefix"
prefix=$tmp/prefix
libdir=$(dirname "$(find "$prefix" -name 'libalpa.so' | head -n 1)")
unset LD_LIBRARY_PATH

fail() {
  echo "install test: $*" >&2
  exit 1
}

# Fails unless binary $1 is linked statically against libalpa ($2 = static) or dynamically.
expect_linkage() {
  local needed
  needed=$(readelf -d "$1" | grep NEEDED || true)
  if [[ $2 == static ]]; then
    [[ $needed != *libalpa.so* ]] || fail "$1 should not need libalpa.so: $needed"
  else
    [[ $needed == *libalpa.so.0* ]] || fail "$1 should need libalpa.so.0: $needed"
  fi
}

echo "install test: the installed alpa program"
version=$("$prefix/bin/alpa" --version) || fail "installed alpa --version did not start"
[[ $version == *"$project_version"* ]] || fail "alpa --version printed '$version'"
models=$("$prefix/bin/alpa" models) || fail "installed alpa models failed"
[[ $models == *gpt* ]] || fail "alpa models lists no gpt model: $models"

for lang in c cxx; do
  echo "install test: find_package(alpa) from a ${lang} project"
  cmake -S "$source/tests/install/${lang}_consumer" -B "$tmp/${lang}_consumer" \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
  cmake --build "$tmp/${lang}_consumer" >/dev/null
  for kind in shared static; do
    program=$tmp/${lang}_consumer/${lang}_consumer_${kind}
    expect_linkage "$program" "$kind"
    "$program" "$problem" >/dev/null || fail "$program failed"
  done
done

echo "install test: pkg-config"
export PKG_CONFIG_PATH=$libdir/pkgconfig
# shellcheck disable=SC2046
"$cc" "$source/tests/install/c_consumer/main.c" $(pkg-config --cflags --libs alpa) \
  -Wl,-rpath,"$libdir" -o "$tmp/pc_shared"
expect_linkage "$tmp/pc_shared" shared
"$tmp/pc_shared" "$problem" >/dev/null || fail "pkg-config shared consumer failed"
# --static adds Libs.private; -l:libalpa.a picks the archive over the shared library beside it.
static_flags=$(pkg-config --static --cflags --libs alpa)
# shellcheck disable=SC2086
"$cc" "$source/tests/install/c_consumer/main.c" ${static_flags/-lalpa/-l:libalpa.a} \
  -o "$tmp/pc_static"
expect_linkage "$tmp/pc_static" static
"$tmp/pc_static" "$problem" >/dev/null || fail "pkg-config static consumer failed"
echo "install test passed: alpa program, find_package (C, C++; shared, static), pkg-config"
