#!/usr/bin/env bash
# Installs the Debian packages one command needs, skipping those already present.
#   scripts/install-deps.sh run      build the library and the `alpa` program (scripts/run.sh),
#                                    with Open MPI (the MPI communicator, `mpirun ... alpa run`)
#   scripts/install-deps.sh test     + GoogleTest, Google Benchmark, pkg-config (the install test),
#                                    ccache (the bindings rebuild the library),
#                                    python3 (bench table tests) and chromium (the timeline SVG
#                                    rendering test) (scripts/test.sh; its --sanitize and --tsan
#                                    builds need nothing more)
#   scripts/install-deps.sh fuzz     the test build's packages + clang (libFuzzer; scripts/fuzz.sh)
#   scripts/install-deps.sh format   clang-format (scripts/check-format.sh)
#   scripts/install-deps.sh ci       all of the above (what .ci/run ends up using); the default
set -euo pipefail
mode=${1:-ci}
build=(cmake make g++ zlib1g-dev libglpk-dev nlohmann-json3-dev libcli11-dev)
# Open MPI: its headers and library build the MPI communicator (ALPA_WITH_MPI), mpirun runs
# the MPI tests and multi-process runs.
mpi_build=(libopenmpi-dev)
mpi_run=(openmpi-bin)
test_build=(libgtest-dev libgmock-dev libbenchmark-dev pkg-config ccache "${mpi_build[@]}")
test_run=(python3 chromium "${mpi_run[@]}")
case $mode in
  run) packages=("${build[@]}" "${mpi_build[@]}" "${mpi_run[@]}") ;;
  test) packages=("${build[@]}" "${test_build[@]}" "${test_run[@]}") ;;
  fuzz) packages=("${build[@]}" "${test_build[@]}" clang) ;;
  format) packages=(clang-format) ;;
  ci) packages=("${build[@]}" "${test_build[@]}" "${test_run[@]}" clang clang-format) ;;
  *)
    echo "install-deps: unknown mode '$mode' (expected run, test, fuzz, format or ci)" >&2
    exit 1
    ;;
esac
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null ||
    missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  echo "install-deps ($mode): installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
