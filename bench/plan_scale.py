#!/usr/bin/env python3
"""Planning time against the GPU count and the layer count (issue 19's scale table).

For every (model, GPU count) it runs `alpa plan --model M --cluster PRESET:HOSTS --json -q`
(hosts = GPUs / 8; --max-hosts 0 so that clusters past the default limit of 1,024 hosts plan)
with a wall-clock limit per call, and prints one Markdown row: the wall time, the planner's own
split (intra-op solves and their seconds, the stage DP's seconds), the plan it found (stages,
tensor-parallel degree of the first stage, microbatches) and its predicted iteration time. A
call past the limit shows "timeout"; the smaller counts still give the trend.

    python3 bench/plan_scale.py [build/bin/alpa] [--models gpt-1t,llama-405b,...]
        [--gpus 8,64,512,...] [--layers 24,96] [--timeout 120] [--markdown out.md]

Models (the sizes of Megatron-LM SC'21's 1T row and of Llama 3 405B):
  gpt-1t      gpt:hidden=25600,heads=160,seq=2048,vocab=51200,batch=3072 on dgx-a100-80g
  llama-405b  llama:hidden=16384,heads=128,kv_heads=8,ffn=53248,vocab=128256,seq=8192,batch=2048
              on dgx-h100
with the layer count from --layers (default: the model's own, 128 and 126). Everything is the
cost model's prediction: no GPU runs here. The machine's load changes the times: compare rows of
one run only.
"""
import argparse
import json
import os
import subprocess
import sys
import time

MODELS = {
    "gpt-1t": ("gpt:hidden=25600,heads=160,seq=2048,vocab=51200,batch=3072", 128, "dgx-a100-80g"),
    "llama-405b": ("llama:hidden=16384,heads=128,kv_heads=8,ffn=53248,vocab=128256,seq=8192,"
                   "batch=2048", 126, "dgx-h100"),
}
GPUS_PER_HOST = 8
DEFAULT_GPUS = "8,64,512,1024,3072,8192,16384"


def plan(alpa, spec, preset, hosts, timeout):
    """(summary dict, None, wall seconds) or (None, error text, wall seconds)."""
    command = [alpa, "plan", "--model", spec, "--cluster", f"{preset}:{hosts}", "--max-hosts", "0",
               "--json", "-q"]
    start = time.monotonic()
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timeout ({timeout} s)", time.monotonic() - start
    wall = time.monotonic() - start
    if out.returncode != 0:
        lines = (out.stderr or out.stdout).strip().splitlines()
        return None, (lines[-1] if lines else f"exit {out.returncode}"), wall
    return json.loads(out.stdout.strip().splitlines()[-1]), None, wall


def row(name, layers, gpus, summary, error, wall):
    cells = [name, str(layers), str(gpus), f"{wall:.1f}"]
    if summary is None:
        return cells + [error, "", "", "", ""]
    compile_stats = summary.get("compile", {})
    stages = summary.get("stages", [])
    first_tp = stages[0].get("tensor_parallel", "?") if stages else "?"
    return cells + [
        f"{compile_stats.get('intra_op_solves', '?')} / {compile_stats.get('intra_op_seconds', 0):.1f} s",
        f"{compile_stats.get('dp_seconds', 0):.2f}",
        f"{len(stages)} stages, tp {first_tp}, B={summary.get('microbatches', '?')}",
        f"{summary.get('iteration_seconds', float('nan')):.2f}",
    ]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("alpa", nargs="?", default=os.path.join(os.path.dirname(here), "build",
                                                                 "bin", "alpa"))
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated: " +
                        ", ".join(MODELS))
    parser.add_argument("--gpus", default=DEFAULT_GPUS, help="comma-separated GPU counts "
                        "(multiples of 8)")
    parser.add_argument("--layers", default="", help="comma-separated layer counts (default: "
                        "each model's own)")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per plan call")
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args()

    models = [m for m in args.models.split(",") if m]
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")
    gpu_counts = [int(g) for g in args.gpus.split(",") if g]
    bad = [g for g in gpu_counts if g < GPUS_PER_HOST or g % GPUS_PER_HOST]
    if bad:
        parser.error(f"GPU counts must be multiples of {GPUS_PER_HOST}: {bad}")
    layer_counts = [int(n) for n in args.layers.split(",") if n]

    header = ["model", "layers", "GPUs", "wall s", "intra-op solves / s", "DP s", "plan",
              "predicted s"]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    print("\n".join(lines), flush=True)
    for name in models:
        spec, own_layers, preset = MODELS[name]
        for layers in layer_counts or [own_layers]:
            for gpus in gpu_counts:
                summary, error, wall = plan(args.alpa, f"{spec},layers={layers}", preset,
                                            gpus // GPUS_PER_HOST, args.timeout)
                line = "| " + " | ".join(row(name, layers, gpus, summary, error, wall)) + " |"
                lines.append(line)
                print(line, flush=True)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
