#!/usr/bin/env bash
# CI entry of the Python binding: bindings/python/test.sh PREFIX
#
#   1. pip installs the package from the repository into a fresh venv, bundling PREFIX's libalpa
#      and alpa program (CMAKE_ARGS=-DALPA_PREBUILT_PREFIX=PREFIX: nothing is compiled twice;
#      building them from the sources again took 724 s of stop 43's CI), after checking that the
#      package's own build from the sources (what a plain `pip install ./bindings/python` does)
#      configures; ALPA_PY_FROM_SOURCE=1 builds them from the sources instead. jax, jaxlib, torch
#      and transformers from PyPI too (about 2.5 minutes and 6 GB on a fresh machine; skipped,
#      saying so, with less than 10 GiB free);
#   2. runs the pytest suite and the examples against that package;
#   3. runs the binding's own tests (test_binding.py, test_solve.py, test_import_order.py) once
#      more against PREFIX's libalpa (ALPA_LIBRARY=PREFIX/lib/libalpa.so): the same sources as the
#      bundled one, so this checks that ALPA_LIBRARY picks the library, not the library again
#      (the whole suite there took 147 s of stop 42's CI).
# When PREFIX's libalpa is an ASan build, only step 3 runs, under ASan, with the whole suite and
# the package's Python sources from the repository (PYTHONPATH): the Release run has built and
# tested the package.
# The venv is removed at the end (ALPA_PY_KEEP_VENV=1 keeps it). Exits non-zero on any failure.
set -euo pipefail

# links LIB NAME: whether LIB links a library whose path contains NAME. grep reads all of ldd's
# output (no -q): under pipefail, an early exit would give ldd SIGPIPE and the test a false "no".
links() { ldd "$1" | grep "$2" >/dev/null; }

PREFIX=${1:?usage: bindings/python/test.sh PREFIX (an install prefix of libalpa)}
PREFIX=$(cd "$PREFIX" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
WORK=${ALPA_PY_WORK:-$HERE/build/ci}
mkdir -p "$WORK"

step() { printf '\n==== %s\n' "$*"; }

# ---- system packages (Debian bookworm) ----
need=()
command -v cmake >/dev/null || need+=(cmake)
command -v g++ >/dev/null || need+=(g++)
command -v ninja >/dev/null || need+=(ninja-build)
[ -f /usr/include/glpk.h ] || need+=(libglpk-dev)
[ -f /usr/include/nlohmann/json.hpp ] || need+=(nlohmann-json3-dev)
[ -f /usr/include/CLI/CLI.hpp ] || need+=(libcli11-dev)
[ -f /usr/include/zlib.h ] || need+=(zlib1g-dev)
command -v python3 >/dev/null || need+=(python3)
python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  step "apt-get install ${need[*]}"
  if [ "$(id -u)" != 0 ]; then echo "missing ${need[*]} and not root" >&2; exit 1; fi
  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}"
fi

# ---- a fresh venv, the package built from the repository ----
step "venv in $WORK/venv"
rm -rf "$WORK/venv"
python3 -m venv "$WORK/venv"
PY=$WORK/venv/bin/python
"$PY" -m pip install -q --no-cache-dir --upgrade pip
"$PY" -m pip install -q --no-cache-dir pytest tqdm

# The frameworks whose models the package imports and hands plans back to (jax, jaxlib, torch,
# transformers; CPU use): their tests skip where they are missing. They are installed for the
# Release run only (ALPA_PY_FRAMEWORKS=0 leaves them out): under ASan the interpreter preloads
# the sanitizer runtime, which those packages' own native code was not built for.
LIB=""
for d in lib lib64 lib/x86_64-linux-gnu; do
  if [ -e "$PREFIX/$d/libalpa.so" ]; then LIB=$PREFIX/$d/libalpa.so; break; fi
done
if [ -z "$LIB" ]; then echo "no libalpa.so under $PREFIX" >&2; exit 1; fi
frameworks=${ALPA_PY_FRAMEWORKS:-1}
if links "$LIB" libasan; then frameworks=0; fi
# They take about 6 GB installed (torch from PyPI brings the CUDA libraries), and pip's download
# cache would double that (--no-cache-dir; the install peaks near 9 GB). A machine with less than
# ALPA_PY_FRAMEWORKS_GIB (10) GiB free skips them, saying so, rather than fill the disk halfway
# through the install.
free_gib() { df -Pk "$1" | awk 'NR == 2 { print int($4 / 1048576) }'; }
if [ "$frameworks" = 1 ]; then
  need_gib=${ALPA_PY_FRAMEWORKS_GIB:-10}
  avail_gib=$(free_gib "$WORK")
  tmp_gib=$(free_gib "${TMPDIR:-/tmp}")
  if [ "$tmp_gib" -lt "$avail_gib" ]; then avail_gib=$tmp_gib; fi
  if [ "$avail_gib" -lt "$need_gib" ]; then
    step "SKIPPED: pip install jax jaxlib torch transformers"
    echo "only $avail_gib GiB free on $WORK or ${TMPDIR:-/tmp}, the frameworks need about" \
         "$need_gib GiB: the JAX and PyTorch tests skip" >&2
    frameworks=0
  fi
fi
if [ "$frameworks" = 1 ]; then
  step "pip install jax jaxlib torch transformers ($avail_gib GiB free)"
  start=$(date +%s)
  "$PY" -m pip install -q --no-cache-dir jax jaxlib torch transformers
  echo "frameworks install took $(( $(date +%s) - start )) s"
fi

asan=0
if links "$LIB" libasan; then asan=1; fi

if [ "$asan" = 0 ]; then
  if [ "${ALPA_PY_FROM_SOURCE:-0}" = 1 ]; then
    if command -v ccache >/dev/null; then
      export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(dirname "$REPO")}
      export CMAKE_ARGS="${CMAKE_ARGS:-} -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache"
    fi
    what="builds libalpa from the sources"
  else
    step "the package's build from the sources configures (cmake -S bindings/python)"
    rm -rf "$WORK/configure-check"
    cmake -S "$HERE" -B "$WORK/configure-check" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
    rm -rf "$WORK/configure-check"
    export CMAKE_ARGS="${CMAKE_ARGS:-} -DALPA_PREBUILT_PREFIX=$PREFIX"
    what="bundles $PREFIX's libalpa"
  fi
  step "pip install ./bindings/python ($what; CMAKE_ARGS=${CMAKE_ARGS:-})"
  start=$(date +%s)
  (cd "$REPO" && "$PY" -m pip install --no-cache-dir ./bindings/python)
  echo "pip install took $(( $(date +%s) - start )) s"

  # Run from outside the source tree so that `import alpa` is the installed package.
  cd "$WORK"
  step "import alpa (bundled libalpa)"
  "$PY" -c 'import alpa; print(alpa.LIBRARY_PATH, alpa.version())'
  "$PY" -m alpa --version

  step "pytest (bundled libalpa)"
  "$PY" -m pytest -q -p no:cacheprovider "$HERE/tests"

  step "examples"
  "$PY" "$HERE/examples/solve_iopddl.py" | tee "$WORK/solve.out"
  grep -q "objective 445 assignment \[0, 0, 2, 1, 0\]" "$WORK/solve.out"
  "$PY" "$HERE/examples/plan_gpt.py" | tee "$WORK/plan.out"
  grep -q "^Plan: " "$WORK/plan.out"
fi

# ---- the same tests against the prefix's libalpa ($LIB, found above) ----
extra_env=()
if [ "$asan" = 1 ]; then
  # Python is not built with ASan: preload the runtime; CPython's own allocations are not ours
  # to report, so leak detection is off (the tests count handles instead).
  # libstdc++ is preloaded too: the interpreter does not link it, and ASan's __cxa_throw
  # interceptor must find the real one when it starts (else the first C++ exception inside
  # libalpa fails ASan's CHECK "real___cxa_throw != 0").
  extra_env=(LD_PRELOAD="$(g++ -print-file-name=libasan.so) $(g++ -print-file-name=libstdc++.so.6)"
             ASAN_OPTIONS=detect_leaks=0 PYTHONPATH="$HERE/src")
  # The package is not installed in this run: install its runtime dependency (pyproject.toml).
  "$PY" -m pip install -q --no-cache-dir numpy
  cd "$WORK"
  step "pytest against $LIB (ASan build)"
else
  step "pytest against $LIB"
fi
# A CUDA-built libalpa opens NCCL only when an NCCL communicator is created, so the PyTorch tests
# run here too (PyTorch's CUDA wheel brings its own libnccl.so.2; test_import_order.py checks
# that `import alpa` then `import torch` works).
# The package loads the library ALPA_LIBRARY names, not its bundled one.
loaded=$(env ALPA_LIBRARY="$LIB" "${extra_env[@]}" "$PY" -c 'import alpa; print(alpa.LIBRARY_PATH)')
if [ "$loaded" != "$LIB" ]; then
  echo "ALPA_LIBRARY=$LIB but the package loaded $loaded" >&2
  exit 1
fi
tests=("$HERE/tests")
if [ "$asan" != 1 ]; then
  tests=("$HERE/tests/test_binding.py" "$HERE/tests/test_solve.py" "$HERE/tests/test_import_order.py")
fi
env ALPA_LIBRARY="$LIB" "${extra_env[@]}" "$PY" -m pytest -q -p no:cacheprovider "${tests[@]}"

# The venv holds the frameworks (about 6 GB): the phases after this one need the disk more.
if [ "${ALPA_PY_KEEP_VENV:-0}" != 1 ]; then rm -rf "$WORK/venv"; fi
step "python binding: all passed"
