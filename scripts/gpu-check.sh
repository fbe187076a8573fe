#!/usr/bin/env bash
# The checks that need a GPU, in one command, on a machine with one (issue 16), most needed
# first: the fused attention kernels against their host run, a GPT layer's step with and without
# them (losses within 2 %), without merged kernels and with feeds from pinned memory (losses
# equal), with the weight gradients' transposes as kernels of their own (within 0.1 %), the
# GPT-layer benchmark (bench/gpu/run.sh: calibration, MFU, predicted / measured step), the
# part-1 equality cases on the CUDA backend, the CUDA kernels against the interpreter, profiled
# steps, a WResNet step with its convolutions on cuDNN and on the direct kernel, the one-GPU
# NCCL tests and the calibration's test. Each part has its own time limit, cut to what is left
# of the budget; a part that would start with under 20 s left is skipped and named. Logs go to OUT; the last lines list every part's outcome.
#   scripts/gpu-check.sh [BUILD] [OUT] [-- BENCH_ARGS...]
#     BUILD  a build with -DALPA_WITH_CUDA=ON, or a kit of one (scripts/gpu-kit.sh: what a lent
#            machine carries, nothing to build there); default build-cuda; its bin/ holds the
#            programs
#     OUT    where the logs go (default $OUT, else gpu-check-out)
#     BENCH_ARGS  for bench/gpu/gpt_layer_bench.py (default: --batch 8 --quick-calibration)
#   ALPA_GPU_CHECK_BUDGET  seconds for all parts (default 540: a lent machine's 15 minutes of
#                          device time leave room for its start and one rerun of a part)
# Build first, e.g.:
#   cmake -S . -B build-cuda -DALPA_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90
#   cmake --build build-cuda -j --target alpa_cli alpa_shared kernels_gpu_test \
#     flash_attention_test cuda_plan_equivalence_test nccl_communicator_test nccl_devices_test \
#     calibration_test
# or here, for a lent machine: scripts/gpu-kit.sh build gpu-kit, then carry gpu-kit.tar.xz and
# run `tar -xJf gpu-kit.tar.xz && scripts/gpu-check.sh gpu-kit "$OUT"` there.
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

budget=${ALPA_GPU_CHECK_BUDGET:-540}
outcomes=()
part() {  # part NAME SECONDS COMMAND...: runs COMMAND under a limit, logs it, prints its end
  local name=$1 seconds=$2
  shift 2
  local left=$((budget - SECONDS))
  if ((left < 20)); then
    outcomes+=("$name: skipped (budget spent)")
    status=1
    return
  fi
  ((seconds > left)) && seconds=$left
  echo "=== $name"
  local start=$SECONDS
  timeout "$seconds" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "rc $rc after $((SECONDS - start)) s"
  tail -n 25 "$out/$name.log"
  outcomes+=("$name: rc $rc, $((SECONDS - start)) s")
  [[ $rc -eq 0 ]] || status=1
}
# equal_losses NAME A.log B.log [TOLERANCE]: the runs' losses are equal (within TOLERANCE of
# each other, relative, where given), their step times shown
equal_losses() {
  part "$1" 10 python3 - "$2" "$3" "${4:-0}" <<'PY'
import json, sys
def steps(path):
    return [json.loads(l) for l in open(path) if l.startswith("{")]
a, b, tolerance = steps(sys.argv[1]), steps(sys.argv[2]), float(sys.argv[3])
for name, run in ((sys.argv[1], a), (sys.argv[2], b)):
    print(name, "losses", [s["loss"] for s in run], "step seconds", [s.get("seconds") for s in run])
assert a and len(a) == len(b), "missing steps"
for x, y in zip(a, b):
    assert abs(x["loss"] - y["loss"]) <= tolerance * abs(y["loss"]), f"losses differ: {x} vs {y}"
print("losses equal" if tolerance == 0 else f"losses within {tolerance:g} of each other")
PY
}

nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader || true
bench_args=("$@")
((${#bench_args[@]})) || bench_args=(--batch 8 --quick-calibration)
part flash_attention_test 90 "$build/bin/flash_attention_test" --gtest_brief=1
# A GPT layer's step (bf16, batch 2) with the fused attention kernels (opt-in until they have run
# here) and without: the losses agree (the same synthetic data and initial weights; bf16 scores
# and probabilities against the kernels' f32 ones: within 2 %).
model=gpt:layers=1,embed=0,hidden=4096,heads=32,seq=2048,batch=2,dtype=bf16
part plan_gpt_layer 60 "$build/bin/alpa" plan --model "$model" --cluster dgx-h100:devices_per_host=1 \
  -B 1 --remat off -o "$out/gpt_layer_b2.json" -q --deterministic
part gpt_layer_flash 120 env ALPA_CUDA_FLASH_ATTENTION=1 "$build/bin/alpa" run \
  "$out/gpt_layer_b2.json" --backend cuda --steps 4 --json
part gpt_layer_no_flash 120 "$build/bin/alpa" run "$out/gpt_layer_b2.json" --backend cuda \
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
# The same step with each fused group alone (ALPA_CUDA_MULTI_OUTPUT=0: no merged kernels, the
# Adam updates five kernels a weight): the merged kernels compute the same bits, so the losses
# are equal; the step times show what merging saves.
part gpt_layer_single_output 120 env ALPA_CUDA_MULTI_OUTPUT=0 "$build/bin/alpa" run \
  "$out/gpt_layer_b2.json" --backend cuda --steps 4 --json
equal_losses multi_output_losses "$out/gpt_layer_no_flash.log" "$out/gpt_layer_single_output.log"
# The same step with the next step's feeds copied from pinned memory when they run
# (ALPA_CUDA_DEVICE_FEEDS=0) instead of uploaded ahead on the copy stream: the same bytes, so the
# losses are equal; the step times show what the upload ahead saves.
part gpt_layer_pinned_feeds 120 env ALPA_CUDA_DEVICE_FEEDS=0 "$build/bin/alpa" run \
  "$out/gpt_layer_b2.json" --backend cuda --steps 4 --json
equal_losses device_feeds_losses "$out/gpt_layer_no_flash.log" "$out/gpt_layer_pinned_feeds.log"
# The same step with the weight gradients' dot and transpose run as two kernels
# (ALPA_CUDA_TRANSPOSED_PRODUCTS=0) instead of one GEMM of the swapped operands: cuBLASLt may sum
# in another order, so the losses agree within 0.1 %.
part gpt_layer_two_kernel_gradients 120 env ALPA_CUDA_TRANSPOSED_PRODUCTS=0 "$build/bin/alpa" \
  run "$out/gpt_layer_b2.json" --backend cuda --steps 4 --json
equal_losses transposed_products_losses "$out/gpt_layer_no_flash.log" \
  "$out/gpt_layer_two_kernel_gradients.log" 1e-3
part bench 300 bash bench/gpu/run.sh "$build/bin/alpa" "$out" "${bench_args[@]}"
part cuda_plan_equivalence_test 240 "$build/bin/cuda_plan_equivalence_test" --gtest_brief=1
part kernels_gpu_test 120 "$build/bin/kernels_gpu_test" --gtest_brief=1
# Where a GPT layer's step goes (the waits after every instruction slow it: not a timing).
part profile_gpt_layer_flash 120 env ALPA_CUDA_FLASH_ATTENTION=1 ALPA_CUDA_PROFILE=1 \
  "$build/bin/alpa" run "$out/gpt_layer_b2.json" --backend cuda --steps 2
part profile_gpt_layer 120 env ALPA_CUDA_PROFILE=1 "$build/bin/alpa" run "$out/gpt_layer_b2.json" \
  --backend cuda --steps 2
# Convolutions: a WResNet step (bf16) on cuDNN, then on the direct kernel (ALPA_CUDA_CUDNN=0);
# the profile labels each convolution with the path it took.
wres=wresnet:layers=50,channels=64,width=2,image=64,batch=16,dtype=bf16
part plan_wresnet 60 "$build/bin/alpa" plan --model "$wres" --cluster dgx-h100:devices_per_host=1 \
  -B 1 --remat off -o "$out/wresnet.json" -q --deterministic
part wresnet_cudnn 120 "$build/bin/alpa" run "$out/wresnet.json" --backend cuda --steps 5
part profile_wresnet 120 env ALPA_CUDA_PROFILE=1 "$build/bin/alpa" run "$out/wresnet.json" \
  --backend cuda --steps 2
part wresnet_direct 180 env ALPA_CUDA_CUDNN=0 "$build/bin/alpa" run "$out/wresnet.json" \
  --backend cuda --steps 5
for t in nccl_communicator_test nccl_devices_test calibration_test; do
  part "$t" 120 "$build/bin/$t" --gtest_brief=1
done
echo "=== outcomes (budget $budget s, $SECONDS s used)"
printf '%s\n' "${outcomes[@]}"
exit $status
