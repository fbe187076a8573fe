#!/usr/bin/env python3
"""The cost model against Megatron-LM's measured A100 throughput (SC'21, Table 1; REFERENCE.md
section 9): for every row, the manual plan with Megatron's own degrees (`alpa baseline --dp --tp
--pp`, activation recomputation on) and, with --planner, the planner's own plan (`alpa plan`),
each on a `dgx-a100-80g` cluster of the row's size. Prints a Markdown table of the predicted
TFLOP/s per GPU, computed from the predicted iteration time with Megatron's formula

    FLOPs per iteration = 96 B s l h^2 (1 + s / (6 h) + V / (16 l h))

(recomputation included), next to the measured figure, and their ratio.

    python3 bench/fidelity.py [build/bin/alpa] [--planner] [--uncalibrated] [--fuse]
                              [--fuse-attention] [--rows 1.7B,3.6B] [--calibration FILE]
                              [--fit [--write FILE]] [--timeout 900]

The preset carries the fit below (bench/calibration/a100-megatron-sc21.json). --uncalibrated
starts from the cost model's struct defaults instead (matmul efficiency 0.6, nothing fused);
--fuse then prices elementwise chains as fused kernels (the calibration key fuse_elementwise),
--fuse-attention the attention cores (fuse_attention); --calibration FILE merges a calibration
object (docs/cluster-format.md) on top. They reach alpa through a cluster file
{"preset": "dgx-a100-80g", "hosts": N, "calibration": {...}}.

--fit fits the one free parameter, efficiency.matmul (with fuse_elementwise on, fuse_attention
with --fuse-attention, and the rest of the calibration as given), so that the largest over- and
under-prediction are equal: first on the even rows (3.6B, 18.4B, 76.1B, 310.1B, 1008B), printing
the odd rows as a held-back check, then on all rows; --write FILE writes the all-rows fit as a
calibration file. The predicted throughput grows with the efficiency on every row, so a
bisection finds it.

Microbatches: the paper gives the global batch but not the microbatch size; the rows use
microbatches of 1 sample per pipeline replica when pp > 1 (B = batch / dp, as in Megatron's
published scripts for the large rows) and B = batch / dp / 4 (4 samples per microbatch) when
pp = 1, where B only sets the gradient accumulation. Rows whose manual plan fails show the error.
"""
import argparse
import atexit
import json
import os
import shutil
import subprocess
import tempfile
import time

# The cluster files of calibrated runs, removed at exit.
SCRATCH = tempfile.mkdtemp(prefix="fidelity_")
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)

# The cost model's struct defaults (core/cluster/cluster.h), which the preset's fit replaces.
UNCALIBRATED = {"efficiency": {"matmul": 0.6}, "fuse_elementwise": False,
                "fuse_attention": False}

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


def cluster_arg(gpus, calibration):
    """The --cluster argument: the preset, or a cluster file when a calibration is given."""
    if not calibration:
        return "dgx-a100-80g:%d" % (gpus // GPUS_PER_HOST)
    path = os.path.join(SCRATCH, "a100_%d.json" % gpus)
    with open(path, "w") as f:
        json.dump({"preset": "dgx-a100-80g", "hosts": gpus // GPUS_PER_HOST,
                   "calibration": calibration}, f)
    return path


def model_spec(row):
    name, hidden, layers, heads, gpus, batch, tp, pp, dp, measured = row
    return "gpt:hidden=%d,layers=%d,heads=%d,seq=%d,vocab=%d,batch=%d" % (
        hidden, layers, heads, SEQ, VOCAB, batch)


def manual_ratio(alpa, row, calibration, timeout):
    """(predicted TFLOP/s per GPU, predicted / measured) of the row's manual plan, or
    (error text, None)."""
    name, hidden, layers, heads, gpus, batch, tp, pp, dp, measured = row
    manual, error, _ = run_json(
        [alpa, "baseline", "--model", model_spec(row), "--cluster",
         cluster_arg(gpus, calibration), "--dp", str(dp), "--tp", str(tp), "--pp", str(pp),
         "-B", str(microbatches(batch, pp, dp)), "--remat", "on", "--json", "-q"], timeout)
    if manual is None:
        return error, None
    tflops = predicted_tflops(manual, megatron_flops(batch, layers, hidden), gpus)
    return tflops, tflops / measured


def manual_ratios(alpa, rows, calibration, timeout):
    """{row name: predicted / measured} of the rows' manual plans."""
    ratios = {}
    for row in rows:
        _, ratio = manual_ratio(alpa, row, calibration, timeout)
        if ratio is None:
            raise SystemExit("row %s failed during the fit" % row[0])
        ratios[row[0]] = ratio
    return ratios


def bisect_matmul(ratios_of, calibration):
    """The efficiency.matmul in [0.3, 0.95] at which ratios_of(calibration) (row name ->
    predicted / measured, growing with the efficiency) balances its largest over- and
    under-prediction (max + min = 2), by bisection to 0.0025; the fitted calibration and its
    ratios."""
    def with_matmul(value):
        return dict(calibration,
                    efficiency=dict(calibration.get("efficiency", {}), matmul=value))

    lo, hi = 0.3, 0.95
    while hi - lo > 0.0025:
        mid = (lo + hi) / 2
        ratios = ratios_of(with_matmul(mid))
        value = max(ratios.values()) + min(ratios.values()) - 2
        print("#   efficiency.matmul %.4f: max + min ratio - 2 = %+.3f" % (mid, value),
              flush=True)
        if value < 0:
            lo = mid
        else:
            hi = mid
    fitted = with_matmul(round((lo + hi) / 2, 3))
    return fitted, ratios_of(fitted)


def fit_matmul(alpa, rows, calibration, timeout):
    """bisect_matmul over the rows' manual plans."""
    return bisect_matmul(lambda trial: manual_ratios(alpa, rows, trial, timeout), calibration)


def print_ratios(title, ratios):
    print("%s: %s; within 10 %%: %d of %d" % (
        title, ", ".join("%s %.2f" % kv for kv in ratios.items()),
        sum(1 for r in ratios.values() if abs(r - 1) <= 0.10), len(ratios)))


def run_fit(args, rows, calibration):
    calibration = dict(calibration, fuse_elementwise=True)
    even, odd = rows[1::2], rows[0::2]
    print("# fitting efficiency.matmul on the even rows (%s)" % ", ".join(r[0] for r in even))
    fitted, ratios = fit_matmul(args.alpa, even, calibration, args.timeout)
    print("fit on the even rows: efficiency.matmul %.3f" % fitted["efficiency"]["matmul"])
    print_ratios("  even rows (fitted)", ratios)
    print_ratios("  odd rows (held back)", manual_ratios(args.alpa, odd, fitted, args.timeout))
    print("# fitting efficiency.matmul on all rows")
    fitted, ratios = fit_matmul(args.alpa, rows, calibration, args.timeout)
    print("fit on all rows: efficiency.matmul %.3f" % fitted["efficiency"]["matmul"])
    print_ratios("  all rows", ratios)
    if args.write:
        write_calibration(args.write, fitted, (
            "Fitted by bench/fidelity.py --fit to Megatron-LM's measured A100 throughput "
            "(Narayanan et al., SC'21, Table 1; REFERENCE.md section 9): efficiency.matmul "
            "balances the largest over- and under-prediction of the ten rows' manual plans, "
            "with fused elementwise chains (Megatron fuses them and its softmax); the rest are "
            "the defaults."))


def write_calibration(path, calibration, comment):
    """Writes a fitted calibration object with its provenance as `comment`."""
    with open(path, "w") as f:
        json.dump(dict(calibration, comment=comment), f, indent=2, sort_keys=True)
        f.write("\n")
    print("wrote " + path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("alpa", nargs="?", default="build/bin/alpa")
    parser.add_argument("--planner", action="store_true", help="also the planner's own plan")
    parser.add_argument("--uncalibrated", action="store_true",
                        help="start from the struct defaults, not the preset's fit")
    parser.add_argument("--fuse", action="store_true", help="price fused elementwise chains")
    parser.add_argument("--fuse-attention", action="store_true",
                        help="price attention cores as fused kernels")
    parser.add_argument("--calibration", help="a calibration JSON object to merge into the "
                        "preset's (e.g. bench/calibration/a100-megatron-sc21.json)")
    parser.add_argument("--fit", action="store_true", help="fit efficiency.matmul (see above)")
    parser.add_argument("--write", help="with --fit: write the all-rows fit to this file")
    parser.add_argument("--rows", default="", help="comma-separated row names (default: all)")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per call")
    parser.add_argument("--plan-args", default="", help="extra arguments of `alpa plan` "
                        "(with --planner), e.g. \"--layers 64\"")
    args = parser.parse_args()
    wanted = set(filter(None, args.rows.split(",")))
    rows = [r for r in ROWS if not wanted or r[0] in wanted]
    calibration = dict(UNCALIBRATED) if args.uncalibrated else {}
    if args.calibration:
        with open(args.calibration) as f:
            calibration.update(json.load(f))
        calibration.pop("comment", None)
    if args.fuse:
        calibration["fuse_elementwise"] = True
    if args.fuse_attention:
        calibration["fuse_attention"] = True
    if args.fit:
        run_fit(args, rows, calibration)
        return

    header = ["model", "GPUs", "tp x pp x dp", "B", "measured", "manual", "ratio"]
    if args.planner:
        header += ["planner", "ratio", "planner's plan", "plan wall"]
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    ratios = []
    for row in rows:
        name, hidden, layers, heads, gpus, batch, tp, pp, dp, measured = row
        b = microbatches(batch, pp, dp)
        cells = [name, str(gpus), "%d x %d x %d" % (tp, pp, dp), str(b), "%d" % measured]
        tflops, ratio = manual_ratio(args.alpa, row, calibration, args.timeout)
        if ratio is None:
            cells += [tflops, "-"]
        else:
            ratios.append(ratio)
            cells += ["%.1f" % tflops, "%.2f" % ratio]
        if args.planner:
            plan, error, wall = run_json(
                [args.alpa, "plan", "--model", model_spec(row), "--cluster",
                 cluster_arg(gpus, calibration), "--json", "-q"] +
                args.plan_args.split(), args.timeout)
            if plan is None:
                cells += [error, "-", "-", "%.1f s" % wall]
            else:
                tflops = predicted_tflops(plan, megatron_flops(batch, layers, hidden), gpus)
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
