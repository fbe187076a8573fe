#!/usr/bin/env python3
"""The cost model against published V100 measurements, and the p3.16xlarge calibration fitted
to them (bench/calibration/v100-p3.json), the way bench/fidelity.py does it for A100.

    python3 bench/fidelity_v100.py [build/bin/alpa] [--calibration FILE] [--fit [--write FILE]]

Without --calibration the rows use the preset's own costs, which since stop 39 are the fit
(bench/calibration/v100-p3.json, the preset's calibration); --calibration FILE applies another
(a file of the struct's defaults, {"efficiency": {"matmul": 0.6}, "fuse_elementwise": false,
"fuse_attention": false}, gives the uncalibrated costs of before).

The rows (each cited; predicted / measured is measured seconds over predicted seconds, i.e.
predicted throughput over measured throughput):

  1.2B x 1   NVIDIA ADLR, "MegatronLM's Supercharged V1.0" (nv-adlr.github.io/MegatronLMV1),
             Table 1: GPT-2 1.2B on one V100 of a DGX-2H, batch 8, 1288 ms per iteration
             (62.4 TFLOP/s, "48 % of the theoretical peak": a 130 TFLOP/s part). The model's
             shape is the 1.2B of Shoeybi et al., "Megatron-LM" (2019), Table 1: hidden 1536,
             40 layers, 16 heads, seq 1024, vocab 51200 (padded).
  4.2B x 4   The same table: 4.2B on 4 GPUs with 4-way model (tensor) parallelism, batch 8,
             1357 ms; the shape is the paper's 4.2B (hidden 2304, 64 layers, 24 heads), whose
             parameter count matches.
  39B x 64   Alpa (Zheng et al., OSDI'22; REFERENCE.md section 6): GPT-39B (hidden 8192, 48
             layers, 64 heads, seq 1024, batch 1024) on 64 V100s of 8 p3.16xlarge hosts, about
             57 TFLOP/s per GPU with Alpa's accounting, 72 B s l h^2 (1 + s / (6h) + V / (12 l h))
             FLOPs per iteration times 4/3 for recomputation: 91.7 s per iteration. Alpa's own plan
             is not published; the row uses the planner's plan.

The DGX-2H rows run on the p3.16xlarge preset with the DGX-2H's V100 (32 GB, 130 TFLOP/s f16:
its published 62.4 TFLOP/s at 48 % of peak) and activation recomputation, which Megatron's
scripts of the time used (1.2B with Adam does not fit 32 GB without it at batch 8). Their host
is NVSwitch-connected where a p3.16xlarge has NVLink in a hybrid cube mesh: they run without
the preset's NVLink graph ("nvlink": null, every pair at the host's 150 GB/s).

--fit fits efficiency.matmul (with fuse_elementwise and fuse_attention on, as Megatron fuses
its elementwise chains and its softmax) so that the largest over- and under-prediction are
equal: first on the two Megatron rows, printing the Alpa row as the held-back check, then on
all three; --write FILE writes the all-rows fit.
"""
import argparse
import atexit
import json
import os
import shutil
import tempfile

import fidelity

SCRATCH = tempfile.mkdtemp(prefix="fidelity_v100_")
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)

DGX2H_V100 = {"name": "V100-SXM3-32GB", "memory_bytes": 32 * 2**30,
              "peak_flops": {"f16": 130e12}}


def alpa_seconds(tflops_per_gpu, gpus, batch, seq, layers, hidden, vocab):
    flops = (72.0 * 4 / 3 * batch * seq * layers * hidden * hidden *
             (1 + seq / (6.0 * hidden) + vocab / (12.0 * layers * hidden)))
    return flops / (tflops_per_gpu * 1e12 * gpus)


# name, model spec, cluster overrides, manual degrees (dp, tp, pp, B) or None for the planner,
# measured seconds per iteration
ROWS = [
    ("1.2B x 1", "gpt:hidden=1536,layers=40,heads=16,seq=1024,vocab=51200,batch=8",
     {"hosts": 1, "devices_per_host": 1, "device": DGX2H_V100, "nvlink": None}, (1, 1, 1, 1),
     1.288),
    ("4.2B x 4", "gpt:hidden=2304,layers=64,heads=24,seq=1024,vocab=51200,batch=8",
     {"hosts": 1, "devices_per_host": 4, "device": DGX2H_V100, "nvlink": None}, (1, 4, 1, 1),
     1.357),
    ("39B x 64", "gpt:hidden=8192,layers=48,heads=64,seq=1024,vocab=51200,batch=1024",
     {"hosts": 8}, None, alpa_seconds(57, 64, 1024, 1024, 48, 8192, 51200)),
]


def cluster_file(row, calibration):
    path = os.path.join(SCRATCH, "%s.json" % row[0].replace(" ", ""))
    with open(path, "w") as f:
        json.dump(dict(row[2], preset="p3.16xlarge", calibration=calibration), f)
    return path


def predicted_seconds(alpa, row, calibration, timeout):
    """(seconds, None) or (None, error text)."""
    name, spec, _, manual, _ = row
    command = [alpa, "plan", "--model", spec, "--cluster", cluster_file(row, calibration),
               "--json", "-q"]
    if manual is not None:
        dp, tp, pp, b = manual
        command = [alpa, "baseline", "--model", spec, "--cluster",
                   cluster_file(row, calibration), "--dp", str(dp), "--tp", str(tp), "--pp",
                   str(pp), "-B", str(b), "--remat", "on", "--json", "-q"]
    summary, error, _ = fidelity.run_json(command, timeout)
    if summary is None:
        return None, error
    return summary["iteration_seconds"], None


def ratios(alpa, rows, calibration, timeout):
    out = {}
    for row in rows:
        seconds, error = predicted_seconds(alpa, row, calibration, timeout)
        if seconds is None:
            raise SystemExit("row %s failed: %s" % (row[0], error))
        out[row[0]] = row[4] / seconds
    return out


def fit(args, rows, calibration):
    return fidelity.bisect_matmul(
        lambda trial: ratios(args.alpa, rows, trial, args.timeout), calibration)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("alpa", nargs="?", default="build/bin/alpa")
    parser.add_argument("--calibration", help="a calibration JSON object for the preset "
                        "(e.g. bench/calibration/v100-p3.json)")
    parser.add_argument("--fit", action="store_true", help="fit efficiency.matmul (see above)")
    parser.add_argument("--write", help="with --fit: write the all-rows fit to this file")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per call")
    args = parser.parse_args()
    calibration = {}
    if args.calibration:
        with open(args.calibration) as f:
            calibration.update(json.load(f))
        calibration.pop("comment", None)

    if args.fit:
        calibration = dict(calibration, fuse_elementwise=True, fuse_attention=True)
        print("# fitting efficiency.matmul on the Megatron rows")
        fitted, fit_ratios = fit(args, ROWS[:2], calibration)
        print("fit on the Megatron rows: efficiency.matmul %.3f" %
              fitted["efficiency"]["matmul"])
        fidelity.print_ratios("  Megatron rows (fitted)", fit_ratios)
        fidelity.print_ratios("  Alpa row (held back)",
                              ratios(args.alpa, ROWS[2:], fitted, args.timeout))
        print("# fitting efficiency.matmul on all rows")
        fitted, fit_ratios = fit(args, ROWS, calibration)
        print("fit on all rows: efficiency.matmul %.3f" % fitted["efficiency"]["matmul"])
        fidelity.print_ratios("  all rows", fit_ratios)
        if args.write:
            fidelity.write_calibration(args.write, fitted, (
                "Fitted by bench/fidelity_v100.py --fit to published V100 measurements "
                "(NVIDIA ADLR's Megatron-LM v1.0 iteration times on DGX-2H, Alpa's GPT-39B on "
                "8 p3.16xlarge; the script lists the sources): efficiency.matmul balances the "
                "largest over- and under-prediction, with fused elementwise chains and fused "
                "attention; the rest are the defaults."))
        return

    print("| row | plan | measured (s) | predicted (s) | predicted / measured throughput |")
    print("|---|---|---:|---:|---:|")
    for row in ROWS:
        seconds, error = predicted_seconds(args.alpa, row, calibration, args.timeout)
        plan = ("planner" if row[3] is None else
                "dp %d x tp %d x pp %d, B=%d, recompute" % row[3])
        if seconds is None:
            print("| %s | %s | %.3f | %s | - |" % (row[0], plan, row[4], error))
        else:
            print("| %s | %s | %.3f | %.3f | %.2f |" % (row[0], plan, row[4], seconds,
                                                      row[4] / seconds), flush=True)


if __name__ == "__main__":
    main()
