#!/usr/bin/env bash
# The GPU benchmarks of issue 16, in one command (under 3 minutes on an H100):
#   bench/gpu/run.sh [ALPA] [OUT]
#     ALPA  the alpa program of a CUDA build (default build-cuda/bin/alpa)
#     OUT   where the files go (default $OUT, else bench-gpu-out)
# 1. alpa calibrate --out OUT/h100.calibration.json (the table of raw measurements: OUT/calibrate.json)
# 2. one GPT layer's training step (forward, backward, Adam) in bf16 on one GPU through
#    `alpa run --backend cuda`: achieved TFLOP/s and MFU against the bf16 peak
# 3. the planner's predicted step time with the measured calibration against the measured one
# Prints one table; OUT/gpt_layer_bench.json holds every figure. Extra arguments after OUT go to
# bench/gpu/gpt_layer_bench.py (e.g. --hidden 8192 --batch 8).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
alpa=${1:-build-cuda/bin/alpa}
out=${2:-${OUT:-bench-gpu-out}}
shift $(($# > 2 ? 2 : $#))
mkdir -p "$out"
# The build's RUNPATH names the build machine's path: on a machine the tree was copied to,
# libalpa.so is found beside the program instead.
export LD_LIBRARY_PATH="$(cd "$(dirname "$alpa")/.." && pwd)/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,power.limit --format=csv,noheader || true
fi
exec python3 "$here/gpt_layer_bench.py" --alpa "$alpa" --out "$out" "$@"
