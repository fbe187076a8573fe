#!/usr/bin/env bash
# Stages what scripts/gpu-check.sh runs (the alpa program, libalpa and the GPU tests) from a CUDA
# build into one small folder, so that a machine with a GPU runs the checks without building
# first: copy the folder beside the source tree there (a lent machine takes it as a carried
# path) and run `scripts/gpu-check.sh KIT OUT` on it. The build here compiles for sm_80 and
# sm_90 (CMakeLists.txt). KIT/lib holds libalpa and the libraries the programs need that a
# machine without this project's packages may lack (GLPK, zlib, Open MPI and theirs: what ldd
# resolves outside the CUDA toolkit and the C and C++ runtimes); gpu-check.sh puts it on
# LD_LIBRARY_PATH. The machine needs the CUDA runtime libraries (libcudart, cuBLAS, NVRTC;
# NCCL and cuDNN are opened at run time).
#   scripts/gpu-kit.sh [BUILD] [KIT]
#     BUILD  a build with -DALPA_WITH_CUDA=ON (default build); its targets are brought up to date
#     KIT    the folder to fill (default gpu-kit; emptied first), and KIT.tar.xz beside it
# A lent machine carries at most 64 MiB (about 55 for the folder, 15 for the archive): carry
# the archive and run `tar -xJf gpu-kit.tar.xz && scripts/gpu-check.sh gpu-kit "$OUT"`.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
kit=${2:-gpu-kit}
tests=(flash_attention_test kernels_gpu_test cuda_plan_equivalence_test calibration_test
       nccl_communicator_test nccl_devices_test)
if ! grep -q '^ALPA_WITH_CUDA:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
  echo "gpu-kit: $build is not a build with -DALPA_WITH_CUDA=ON" >&2
  exit 2
fi
cmake --build "$build" -j"$(nproc)" --target alpa_cli alpa_shared "${tests[@]}"
rm -rf "$kit"
mkdir -p "$kit/bin" "$kit/lib"
cp "$build/bin/alpa" "${tests[@]/#/$build/bin/}" "$kit/bin/"
cp -P "$build"/lib/libalpa.so* "$kit/lib/"
strip --strip-unneeded "$kit"/bin/* "$kit"/lib/libalpa.so.*.*
# The libraries they load from outside the toolkit and the C / C++ runtimes.
runtime='/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so'
missing=$(ldd "$kit"/bin/* "$kit"/lib/libalpa.so | grep 'not found' | grep -v libalpa || true)
if [[ -n $missing ]]; then
  echo "gpu-kit: libraries not found here:" >&2
  echo "$missing" >&2
  exit 1
fi
ldd "$kit"/bin/* "$kit"/lib/libalpa.so | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u |
  grep -v '^/usr/local/cuda' | grep -Ev "$runtime" | grep -v libalpa |
  while read -r lib; do cp -L "$lib" "$kit/lib/"; done
tar -C "$(dirname "$kit")" -cf - "$(basename "$kit")" | xz -T0 -6 >"$kit.tar.xz"
bytes=$(du -sb "$kit" | cut -f1)
packed=$(stat -c %s "$kit.tar.xz")
echo "gpu-kit: $kit holds $((bytes / 1048576)) MiB ($(ls "$kit/bin" | wc -l) programs, libalpa and" \
  "$(($(ls "$kit/lib" | wc -l) - 3)) other libraries); $kit.tar.xz $((packed / 1048576)) MiB"
if ((packed > 64 * 1048576)); then
  echo "gpu-kit: over the 64 MiB a lent machine carries" >&2
  exit 1
fi
