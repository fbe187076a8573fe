#!/usr/bin/env bash
# The checks that need a GPU, in one command, on a machine with one (issue 16): the CUDA kernels
# against the interpreter, the part-1 equality cases on the CUDA backend, the one-GPU NCCL tests,
# a one-process run over NCCL (--devices nccl), the calibration's measurement (with the runner's
# own fused kernels), a profiled step of one GPT layer (and with the fused attention kernels),
# a WResNet step with its convolutions on
# cuDNN and on the direct kernel, then the GPT-layer benchmark
# (bench/gpu/run.sh). Each part has its own time limit; logs go to OUT.
#   scripts/gpu-check.sh [BUILD] [OUT] [-- BENCH_ARGS...]
#     BUILD  a build with -DALPA_WITH_CUDA=ON (default build-cuda); its bin/ holds the tests
#     OUT    where the logs go (default $OUT, else gpu-check-out)
# Build first, e.g.:
#   cmake -S . -B build-cuda -DALPA_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90
#   cmake --build build-cuda -j --target alpa_cli alpa_shared kernels_gpu_test \
#     flash_attention_test cuda_plan_equivalence_test nccl_communicator_test nccl_devices_test \
#     calibration_test
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-cuda}
out=${2:-${OUT:-gpu-check-out}}
shift $(($# > 2 ? 2 : $#))
[[ ${1:-} == -- ]] && shift
mkdir -p "$out"
# The build's RUNPATH names the build machine's folders: a copied build finds libalpa beside it.
export LD_LIBRARY_PATH="$(cd "$build" && pwd)/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
status=0

part() {  # part NAME SECONDS COMMAND...: runs COMMAND under a limit, logs it, prints its end
  local name=$1 seconds=$2
  shift 2
  echo "=== $name"
  local start=$SECONDS
  timeout "$seconds" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "rc $rc after $((SECONDS - start)) s"
  tail -n 25 "$out/$name.log"
  [[ $rc -eq 0 ]] || status=1
}

nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader || true
for t in kernels_gpu_test flash_attention_test nccl_communicator_test nccl_devices_test \
    calibration_test cuda_plan_equivalence_test; do
  part "$t" 300 "$build/bin/$t" --gtest_brief=1
done
# Where a GPT layer's step goes (the waits after every instruction slow it: not a timing).
model=gpt:layers=1,embed=0,hidden=4096,heads=32,seq=2048,batch=2,dtype=bf16
part plan_gpt_layer 60 "$build/bin/alpa" plan --model "$model" --cluster dgx-h100:devices_per_host=1 \
  -B 1 --remat off -o "$out/gpt_layer_b2.json" -q --deterministic
part profile_gpt_layer 180 env ALPA_CUDA_PROFILE=1 "$build/bin/alpa" run "$out/gpt_layer_b2.json" \
  --backend cuda --steps 2
# The same step with the fused attention kernels (opt-in until they have run here): its losses
# against the run without them (the same synthetic data and initial weights; bf16 scores and
# probabilities against the kernels' f32 ones: within 2 %), and its profile.
part gpt_layer_flash 180 env ALPA_CUDA_FLASH_ATTENTION=1 "$build/bin/alpa" run \
  "$out/gpt_layer_b2.json" --backend cuda --steps 4 --json
part gpt_layer_no_flash 180 "$build/bin/alpa" run "$out/gpt_layer_b2.json" --backend cuda \
  --steps 4 --json
part flash_losses 10 python3 - "$out/gpt_layer_flash.log" "$out/gpt_layer_no_flash.log" <<'PY'
import json, sys
def losses(path):
    return [json.loads(l)["loss"] for l in open(path) if l.startswith("{")]
flash, plain = losses(sys.argv[1]), losses(sys.argv[2])
print("flash", flash, "\nwithout", plain)
assert flash and len(flash) == len(plain), "missing steps"
for a, b in zip(flash, plain):
    assert abs(a - b) <= 0.02 * abs(b), f"losses differ: {a} vs {b}"
print("losses agree within 2 %")
PY
part profile_gpt_layer_flash 180 env ALPA_CUDA_FLASH_ATTENTION=1 ALPA_CUDA_PROFILE=1 \
  "$build/bin/alpa" run "$out/gpt_layer_b2.json" --backend cuda --steps 2
# Convolutions: a WResNet step (bf16) on cuDNN, then on the direct kernel (ALPA_CUDA_CUDNN=0);
# the profile labels each convolution with the path it took.
wres=wresnet:layers=50,channels=64,width=2,image=64,batch=16,dtype=bf16
part plan_wresnet 60 "$build/bin/alpa" plan --model "$wres" --cluster dgx-h100:devices_per_host=1 \
  -B 1 --remat off -o "$out/wresnet.json" -q --deterministic
part wresnet_cudnn 180 "$build/bin/alpa" run "$out/wresnet.json" --backend cuda --steps 5
part wresnet_direct 300 env ALPA_CUDA_CUDNN=0 "$build/bin/alpa" run "$out/wresnet.json" \
  --backend cuda --steps 5
part profile_wresnet 180 env ALPA_CUDA_PROFILE=1 "$build/bin/alpa" run "$out/wresnet.json" \
  --backend cuda --steps 2
part bench 600 bash bench/gpu/run.sh "$build/bin/alpa" "$out" "$@"
exit $status
