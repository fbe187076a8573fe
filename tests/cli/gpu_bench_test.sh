#!/usr/bin/env bash
# bench/gpu (the GPU benchmark the lead runs on an H100) on the CPU runtime with a tiny GPT layer
# and a fixed calibration file: the batch search, the plans with the calibration applied, the
# FLOP count against the graph's own, the table; and, without a GPU, the clean failure of the
# calibration phase.
set -euo pipefail
alpa="$1"
root="$2"
export PYTHONDONTWRITEBYTECODE=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "gpu_bench_test: $*"; cat "$tmp/out.txt" "$tmp/err.txt" 2>/dev/null; exit 1; }

cat > "$tmp/fixture.calibration.json" <<'JSON'
{"format": "alpa-calibration", "version": 1, "comment": "test fixture",
 "efficiency": {"matmul": 0.7, "convolution": 0.6, "elementwise": 0.06, "other": 0.06,
                "memory": 0.9, "attention": 0.5},
 "op_overhead_seconds": 3e-6, "fuse_elementwise": true, "single_reader_fusion": true}
JSON
tiny=(--hidden 64 --heads 2 --seq 32 --steps 3)
bash "$root/bench/gpu/run.sh" "$alpa" "$tmp/out" --backend cpu --preset dgx-h100 \
  --calibration "$tmp/fixture.calibration.json" --max-batch 4 "${tiny[@]}" \
  > "$tmp/out.txt" 2> "$tmp/err.txt" || fail "run.sh exited $?"

for row in "model FLOPs per step (6 P T + 12 s h T)" "MFU vs 989 TFLOP/s bf16 dense" \
    "predicted step, measured calibration" "measured step (median after warm-up)"; do
  grep -qF "| $row" "$tmp/out.txt" || fail "no row '$row'"
done
python3 - "$tmp/out" <<'PY' || fail "figures"
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
r = json.loads((out / "gpt_layer_bench.json").read_text())
h, s = 64, 32
assert r["batch"] == 4, r["batch"]  # --batch auto: the largest power of two up to --max-batch
assert r["model"] == f"gpt:layers=1,embed=0,hidden={h},heads=2,seq={s},batch=4,dtype=bf16"
t = 4 * s
assert r["tokens"] == t
# The layer's parameters by formula equal the graph's, and the formula's matmuls its dot_generals.
assert r["parameters"] == r["graph_parameters"] == 12 * h * h + 13 * h, r
assert r["matmul_flops_formula"] == r["graph_dot_flops"], r
assert r["model_flops"] == 6 * (12 * h * h + 13 * h) * t + 12 * s * h * t
assert len(r["step_seconds"]) == 3 and all(x > 0 for x in r["step_seconds"])
assert abs(r["measured_step_seconds"] - sorted(r["step_seconds"][1:])[0] / 2
           - sorted(r["step_seconds"][1:])[1] / 2) < 1e-12
assert abs(r["mfu"] - r["model_flops"] / r["measured_step_seconds"] / 989e12) < 1e-15
# The calibrated cluster carries the fixture; its plan prices the step differently (3 us per op).
cluster = json.loads((out / "cluster_calibrated.json").read_text())
assert cluster["calibration"]["efficiency"]["matmul"] == 0.7
assert cluster["calibration"]["op_overhead_seconds"] == 3e-6
assert cluster["devices_per_host"] == 1 and "device_memory_bytes" not in cluster
# As alpa calibrate writes it: chains fused as the runner fuses them; beside it every op alone,
# and chains fused as XLA would.
assert cluster["calibration"]["fuse_elementwise"] and cluster["calibration"]["single_reader_fusion"]
unfused = json.loads((out / "cluster_calibrated_unfused.json").read_text())["calibration"]
assert not unfused["fuse_elementwise"], unfused
xla = json.loads((out / "cluster_calibrated_xla.json").read_text())["calibration"]
assert xla["fuse_elementwise"] and not xla["single_reader_fusion"], xla
# The fused attention kernels' plan prices the attention cores on chip: fewer bytes, no longer
# a step (on this tiny layer the per-op overhead hides them); without a GPU the run with them is
# skipped.
flash = json.loads((out / "cluster_calibrated_flash.json").read_text())["calibration"]
assert flash["fuse_attention"] and flash["single_reader_fusion"], flash
# The attention kernels' measured efficiency prices the flash plan's attention products only.
assert flash["efficiency"]["attention"] == 0.5, flash
for other in (cluster["calibration"], unfused, xla):
    assert not other["fuse_attention"], other
assert r["flash_step_seconds"] == [] and r["flash_mfu"] is None, r
p = r["predicted_step_seconds"]
assert p["calibrated_flash"] <= p["calibrated"], p
assert p["calibrated"] > p["default"] + 100 * 3e-6, p
for name, seconds in p.items():
    assert abs(r["predicted_over_measured"][name] - seconds / r["measured_step_seconds"]) < 1e-12
PY

# A memory share that not even one sequence fits: the batch search says so.
if bash "$root/bench/gpu/run.sh" "$alpa" "$tmp/out2" --backend cpu --preset dgx-h100 \
    --calibration "$tmp/fixture.calibration.json" --memory-fraction 1e-9 "${tiny[@]}" \
    > "$tmp/out.txt" 2> "$tmp/err.txt"; then
  fail "a memory fraction nothing fits in passed"
fi
grep -q "plan: even batch 1 needs more than" "$tmp/err.txt" || fail "no batch-search message"

# Measuring needs a GPU: without one, the calibration phase fails with the reason.
if ! "$alpa" calibrate --quick >/dev/null 2>&1; then
  if bash "$root/bench/gpu/run.sh" "$alpa" "$tmp/out3" "${tiny[@]}" > "$tmp/out.txt" \
      2> "$tmp/err.txt"; then
    fail "run.sh without a GPU passed"
  fi
  grep -Eq "^gpt_layer_bench: calibrate: .*exited 1:" "$tmp/err.txt" || fail "no calibrate failure"
  grep -Eq "GPU" "$tmp/err.txt" || fail "the reason does not say GPU"
fi
echo "gpu_bench_test: ok"
