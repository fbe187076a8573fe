#!/usr/bin/env bash
# End-to-end checks of `alpa compile` / `alpa run`: plans that `alpa baseline` and `alpa plan`
# write (-o) run for 3 steps equal to one device, on thread devices and, when MPIEXEC is given,
# as one MPI process per device (up to 8); bad input ends every process with a clear message.
#   executor_test.sh PATH_TO_ALPA [MPIEXEC]
set -u
alpa=$1
mpiexec=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
# Waiting processes yield their core (mpirun_test.sh says why).
mpi_flags=(--oversubscribe --mca mpi_yield_when_idle 1)
[[ $(id -u) -eq 0 ]] && mpi_flags+=(--allow-run-as-root)

# expect NAME WANT_EXIT PATTERN -- command...   (WANT_EXIT nz: any non-zero)
expect() {
  local name=$1 want_exit=$2 pattern=$3
  shift 4
  local out rc
  out=$(timeout 120 "$@" 2>&1)
  rc=$?
  if [[ $want_exit == nz && $rc -ne 0 && $rc -ne 124 ]]; then
    :
  elif [[ $want_exit == nz || $rc -ne $want_exit ]]; then
    echo "FAIL $name: exit $rc, expected $want_exit; output:"; echo "$out" | tail -8
    failed=$((failed + 1)); return
  fi
  if ! grep -q -E -- "$pattern" <<<"$out"; then
    echo "FAIL $name: output lacks /$pattern/; output:"; echo "$out" | tail -8
    failed=$((failed + 1)); return
  fi
  passed=$((passed + 1))
}

gpt="gpt:layers=2,hidden=16,heads=2,seq=8,vocab=16,batch=8,dtype=f32,adam_eps=1e-5"
bert="bert:layers=2,hidden=16,heads=2,seq=8,vocab=16,batch=8,dtype=f32,adam_eps=1e-5"
moe="moe:layers=2,hidden=16,heads=2,experts=4,seq=8,vocab=16,batch=8,group=8,dtype=f32,adam_eps=1e-5"
mlp="mlp:layers=4,hidden=16,batch=16,dtype=f32"
wres="wresnet:stages=1-1,channels=4,width=2,classes=10,image=16,batch=8,optimizer=momentum"
cluster4="p3.16xlarge:hosts=1,devices_per_host=4"
cluster8="p3.16xlarge:hosts=2,devices_per_host=4"

# name model cluster devices baseline-or-plan-arguments...
plans=()
make_plan() {
  local name=$1 model=$2 cluster=$3 devices=$4
  shift 4
  if "$alpa" "$@" --model "$model" --cluster "$cluster" --threads 2 -q -o "$tmp/$name.json" \
      >"$tmp/$name.log" 2>&1; then
    plans+=("$name:$devices")
  else
    echo "FAIL make_plan $name:"; tail -5 "$tmp/$name.log"; failed=$((failed + 1))
  fi
}
make_plan gpt_dp2tp2pp2 "$gpt" "$cluster8" 8 baseline --dp 2 --tp 2 --pp 2 -B 4 --zero 1
make_plan gpt_plan8 "$gpt" "$cluster8" 8 plan -B 2
# dp 3 divides the batch but not the vocabulary or the hidden size: the tied embedding crossing
# the stages is replicated over the data-parallel devices.
make_plan gpt_dp3pp2 "gpt:layers=2,hidden=16,heads=2,seq=8,vocab=16,batch=6,dtype=f32,adam_eps=1e-5" \
  "p3.16xlarge:hosts=2,devices_per_host=3" 6 baseline --dp 3 --tp 1 --pp 2 -B 2 --zero 1
make_plan gpt_tp4 "$gpt" "$cluster4" 4 baseline --dp 1 --tp 4 --pp 1 -B 1 --remat on
make_plan bert_dp2tp4 "$bert" "$cluster8" 8 baseline --dp 2 --tp 4 --pp 1 -B 1
make_plan bert_plan4 "$bert" "$cluster4" 4 plan -B 2
make_plan moe_dp2tp2pp2 "$moe" "$cluster8" 8 baseline --dp 2 --tp 2 --pp 2 -B 2
make_plan moe_plan4 "$moe" "$cluster4" 4 plan -B 2 --remat on
make_plan mlp_pp4 "$mlp" "$cluster4" 4 baseline --dp 1 --tp 1 --pp 4 -B 4
make_plan mlp_plan8 "$mlp" "$cluster8" 8 plan -B 4
make_plan wres_dp2tp2pp2 "$wres" "$cluster8" 8 baseline --dp 2 --tp 2 --pp 2 -B 1 --zero 1
make_plan wres_plan4 "$wres" "$cluster4" 4 plan -B 1
# Interleaved 1F1B: 4 layers as 4 stages on 2 device groups (stage s on group s % 2), run by
# default under the plan's own schedule.
make_plan gpt_pp2vp2 "gpt:layers=4,hidden=16,heads=2,seq=8,vocab=16,batch=8,dtype=f32,adam_eps=1e-5" \
  "$cluster4" 4 baseline --dp 1 --tp 2 --pp 2 --virtual-stages 2 -B 4

ok='step 2 .*of the tolerance ok'
for entry in "${plans[@]}"; do
  name=${entry%:*}
  devices=${entry#*:}
  expect "run_$name" 0 "$ok" -- "$alpa" run "$tmp/$name.json" --steps 3 --check
  if [[ -n $mpiexec ]]; then
    expect "mpi_$name" 0 "$ok" -- "$mpiexec" "${mpi_flags[@]}" -np "$devices" \
      "$alpa" run "$tmp/$name.json" --steps 3 --check --devices mpi
  fi
done
expect run_gpipe 0 "$ok" -- "$alpa" run "$tmp/gpt_dp2tp2pp2.json" --steps 3 --check \
  --schedule gpipe
# A GPipe run of a plan file is planned at B microbatches in flight (the plan states 1F1B's).
expect run_gpipe_memory 0 'step 0 .*\(planned [0-9.]+ KiB, (0\.(8[5-9]|9[0-9])|1\.(0[0-9]|1[0-9]))x\)' -- \
  "$alpa" run "$tmp/gpt_dp2tp2pp2.json" --steps 1 --schedule gpipe
# ZB-H1: each backward split into the input gradient and the weight gradient run later.
expect run_zb_h1 0 "$ok" -- "$alpa" run "$tmp/mlp_pp4.json" --steps 3 --check --schedule zb-h1
expect run_zb_h1_gpt 0 "$ok" -- "$alpa" run "$tmp/gpt_dp2tp2pp2.json" --steps 3 --check \
  --schedule zb-h1
expect run_json 0 '^\{"step": 0, "loss": .*"passed": true\}$' -- \
  "$alpa" run "$tmp/gpt_tp4.json" --check --json
expect compile_device 0 '(all-reduce|all-gather|reduce-scatter) +\{0,1,2,3\}' -- "$alpa" compile "$tmp/gpt_tp4.json" --device 0
expect compile_transfers 0 'send +to 4 ' -- "$alpa" compile "$tmp/gpt_dp2tp2pp2.json" --device 0
expect plan_run 0 "$ok" -- "$alpa" plan --model "$mlp" --cluster "$cluster4" -B 2 -q --run 3 \
  --check
# A plan the planner made for ZB-H1 runs ZB-H1 by default (its own schedule).
expect plan_run_zero_bubble 0 "$ok" -- "$alpa" plan --model "$mlp" \
  --cluster "$cluster4" --pp 4 -B 4 --zero-bubble search -q --run 3 --check
# An f16 model (SGD) is checked at f16's tolerance: the f32-sized default fails it by rounding
# order alone (loss 4.2x, parameters 2.9x the default at step 1).
"$alpa" baseline --model "gpt:layers=2,hidden=16,heads=2,seq=8,vocab=16,batch=8,optimizer=sgd" \
  --cluster "$cluster4" --dp 2 --tp 2 --pp 1 -B 2 --threads 2 -q -o "$tmp/gpt_f16.json" >/dev/null
expect run_f16 0 "$ok" -- "$alpa" run "$tmp/gpt_f16.json" --steps 3 --check

# Bad input: a corrupted plan, a plan for another model, a missing file, a bad option.
head -c 5000 "$tmp/gpt_tp4.json" >"$tmp/truncated.json"
expect run_truncated 1 'plan JSON' -- "$alpa" run "$tmp/truncated.json"
sed 's/"model":"gpt:layers=2,/"model":"gpt:layers=3,/' "$tmp/gpt_tp4.json" >"$tmp/other.json"
expect run_other_model 1 'not the same model' -- "$alpa" run "$tmp/other.json"
expect run_missing 1 'cannot open' -- "$alpa" run "$tmp/none.json"
expect run_schedule 1 'schedule must be 1f1b, gpipe, zb-h1 or interleaved-1f1b' -- \
  "$alpa" run "$tmp/gpt_tp4.json" --schedule zigzag
# A plan of several stages per device group runs under interleaved 1F1B only, and that schedule
# only such a plan.
expect run_interleaved_as_1f1b 1 'only the schedule interleaved-1f1b runs; not 1f1b' -- \
  "$alpa" run "$tmp/gpt_pp2vp2.json" --schedule 1f1b
expect run_1f1b_as_interleaved 1 'interleaved-1f1b runs a plan made for it' -- \
  "$alpa" run "$tmp/gpt_tp4.json" --schedule interleaved-1f1b
expect compile_interleaved 0 'device 0: stages 0, 2' -- \
  "$alpa" compile "$tmp/gpt_pp2vp2.json" --device 0
expect run_steps 1 'steps' -- "$alpa" run "$tmp/gpt_tp4.json" --steps 0
expect run_backend 1 'backend must be cpu or cuda' -- "$alpa" run "$tmp/gpt_tp4.json" --backend tpu
expect run_tf32_on_cpu 1 'tf32 needs --backend cuda' -- "$alpa" run "$tmp/gpt_tp4.json" --tf32
expect compile_device_range 1 'device 9' -- "$alpa" compile "$tmp/gpt_tp4.json" --device 9
if [[ -n $mpiexec ]]; then
  # Fewer processes than the plan's devices: every process says so and the job ends.
  expect mpi_too_few 1 'the plan runs on 8 devices, the job has 4 processes' -- \
    "$mpiexec" "${mpi_flags[@]}" -np 4 "$alpa" run "$tmp/gpt_dp2tp2pp2.json" --devices mpi
  expect mpi_truncated nz 'plan JSON' -- \
    "$mpiexec" "${mpi_flags[@]}" -np 2 "$alpa" run "$tmp/truncated.json" --devices mpi
fi

echo "executor_test: $passed passed, $failed failed"
((failed == 0))
