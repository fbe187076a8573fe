#!/usr/bin/env python3
"""The cost model against Megatron-LM's measured A100 throughput (SC'21, Table 1; REFERENCE.md
section 9): for every row, the manual plan with Megatron's own degrees (`alpa baseline --dp --tp
--pp`, activation recomputation on) and, with --planner, the planner's own plan (`alpa plan`),
each on a `dgx-a100-80g` cluster of the row's size. Prints a Markdown table of the predicted
TFLOP/s per GPU, computed from the predicted iteration time with Megatron's formula

    FLOPs per iteration = 96 B s l h^2 (1 + s / (6 h) + V / (16 l h))

(recomputation included), next to the measured figure, and their ratio.

    python3 bench/fidelity.py [build/bin/alpa] [--planner] [--fuse] [--rows 1.7B,3.6B]
                              [--timeout 900]

--fuse prices elementwise chains as fused kernels (the calibration key fuse_elementwise, through
a cluster file {"preset": "dgx-a100-80g", "hosts": N, "calibration": {...}}).

Microbatches: the paper gives the global batch but not the microbatch size; the rows use
microbatches of 1 sample per pipeline replica when pp > 1 (B = batch / dp, as in Megatron's
published scripts for the large rows) and B = batch / dp / 4 (4 samples per microbatch) when
pp = 1, where B only sets the gradient accumulation. Rows whose manual plan fails show the error.
"""
import argparse
import json
import os
import subprocess
import tempfile
import time

SEQ = 2048
VOCAB = 51200
GPUS_PER_HOST = 8

# name, hidden, layers, heads, GPUs, global batch, tp, pp, dp, measured TFLOP/s per GPU
ROWS = [
    ("1.7B", 2304, 24, 24, 32, 512, 1, 1, 32, 137),
    ("3.6B", 3072, 30, 32, 64, 512, 2, 1, 32, 138),
    ("7.5B", 4096, 36, 32, 128, 512, 4, 1, 32, 142),
    ("18.4B", 6144, 40, 48, 256, 1024, 8, 1, 32, 135),
    ("39.1B", 8192, 48, 64, 512, 1536, 8, 2, 32, 138),
    ("76.1B", 10240, 60, 80, 1024, 1792, 8, 4, 32, 140),
    ("145.6B", 12288, 80, 96, 1536, 2304, 8, 8, 24, 148),
    ("310.1B", 16384, 96, 128, 1920, 2160, 8, 16, 15, 155),
    ("529.6B", 20480, 105, 128, 2520, 2520, 8, 35, 9, 163),
    ("1008B", 25600, 128, 160, 3072, 3072, 8, 64, 6, 163),
]


def megatron_flops(batch, layers, hidden):
    return (96.0 * batch * SEQ * layers * hidden * hidden *
            (1 + SEQ / (6.0 * hidden) + VOCAB / (16.0 * layers * hidden)))


def microbatches(batch, pp, dp):
    per_replica = batch // dp
    return per_replica if pp > 1 else max(1, per_replica // 4)


def run_json(command, timeout):
    """(summary JSON, None, wall seconds) or (None, error text, wall seconds)."""
    start = time.monotonic()
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "timeout after %d s" % timeout, time.monotonic() - start
    wall = time.monotonic() - start
    if out.returncode != 0:
        lines = (out.stderr or out.stdout).strip().splitlines()
        return None, (lines[-1] if lines else "exit %d" % out.returncode), wall
    return json.loads(out.stdout.strip().splitlines()[-1]), None, wall


def predicted_tflops(summary, flops, gpus):
    return flops / (summary["iteration_seconds"] * gpus) / 1e12


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("alpa", nargs="?", default="build/bin/alpa")
    parser.add_argument("--planner", action="store_true", help="also the planner's own plan")
    parser.add_argument("--fuse", action="store_true", help="price fused elementwise chains")
    parser.add_argument("--rows", default="", help="comma-separated row names (default: all)")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per call")
    args = parser.parse_args()
    wanted = set(filter(None, args.rows.split(",")))

    header = ["model", "GPUs", "tp x pp x dp", "B", "measured", "manual", "ratio"]
    if args.planner:
        header += ["planner", "ratio", "planner's plan", "plan wall"]
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    ratios = []
    for name, hidden, layers, heads, gpus, batch, tp, pp, dp, measured in ROWS:
        if wanted and name not in wanted:
            continue
        model = "gpt:hidden=%d,layers=%d,heads=%d,seq=%d,vocab=%d,batch=%d" % (
            hidden, layers, heads, SEQ, VOCAB, batch)
        cluster = "dgx-a100-80g:%d" % (gpus // GPUS_PER_HOST)
        if args.fuse:
            cluster = os.path.join(tempfile.gettempdir(), "fidelity_a100_%d.json" % gpus)
            with open(cluster, "w") as f:
                json.dump({"preset": "dgx-a100-80g", "hosts": gpus // GPUS_PER_HOST,
                           "calibration": {"fuse_elementwise": True}}, f)
        b = microbatches(batch, pp, dp)
        flops = megatron_flops(batch, layers, hidden)
        manual, error, _ = run_json(
            [args.alpa, "baseline", "--model", model, "--cluster", cluster, "--dp", str(dp),
             "--tp", str(tp), "--pp", str(pp), "-B", str(b), "--remat", "on", "--json", "-q"],
            args.timeout)
        cells = [name, str(gpus), "%d x %d x %d" % (tp, pp, dp), str(b), "%d" % measured]
        if manual is None:
            cells += [error, "-"]
        else:
            tflops = predicted_tflops(manual, flops, gpus)
            ratios.append(tflops / measured)
            cells += ["%.1f" % tflops, "%.2f" % (tflops / measured)]
        if args.planner:
            plan, error, wall = run_json(
                [args.alpa, "plan", "--model", model, "--cluster", cluster, "--json", "-q"],
                args.timeout)
            if plan is None:
                cells += [error, "-", "-", "%.1f s" % wall]
            else:
                tflops = predicted_tflops(plan, flops, gpus)
                stages = plan["stages"]
                shape = "%d stages, tp %s, B=%d" % (
                    len(stages), "/".join(sorted({str(s["tensor_parallel"]) for s in stages})),
                    plan["microbatches"])
                cells += ["%.1f" % tflops, "%.2f" % (tflops / measured), shape, "%.1f s" % wall]
        print("| " + " | ".join(cells) + " |", flush=True)
    if ratios:
        within = sum(1 for r in ratios if abs(r - 1) <= 0.10)
        print("\nmanual plans: predicted / measured %.2f-%.2f, %d of %d rows within 10 %%" %
              (min(ratios), max(ratios), within, len(ratios)))


if __name__ == "__main__":
    main()
