#!/usr/bin/env python3
"""Runs `alpa plan` on every GPT, MoE and Wide-ResNet preset with its benchmark GPU count and
prints a Markdown table: compile time, predicted TFLOP/s per GPU, iteration time, microbatches,
stages, the compile split and the peak memory per device.

    python3 bench/plan_table.py [build/bin/alpa] [--rows gpt,moe,wresnet] [--timeout 600]

The rows come from `alpa models` (the presets with a GPU count). G GPUs are one p3.16xlarge host
of G devices when G <= 8, else G/8 hosts of 8. Stages read "count x (hosts,devices per host)
logical mesh tp<tensor parallel> dp<data parallel>" (plus zero / zero2 / zero3 / remat / sel-remat when set) for each run of
identical consecutive stages. "wall" is the call's wall time as measured here (process start,
graph build and JSON included); rows that fail show the error instead of the plan. The in-run
baseline of the C++ benchmark (build/bin/planner_bench) is not repeated here.
"""
import argparse
import json
import os
import subprocess
import time

FAMILIES = ("gpt", "moe", "wresnet")
GIB = 1024 ** 3


def preset_rows(alpa, families):
    """(family, preset, gpus) for every preset of `alpa models` with a benchmark GPU count."""
    out = subprocess.run([alpa, "models"], capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines()[1:]:
        fields = line.split()
        if not fields:
            break  # the family help follows the preset table
        if len(fields) < 4 or fields[1] not in families or not fields[3].isdigit():
            continue
        rows.append((fields[1], fields[0], int(fields[3])))
    rows.sort(key=lambda r: families.index(r[0]))  # stable: keeps the size order within a family
    return rows


def cluster_spec(gpus):
    if gpus <= 8:
        return f"p3.16xlarge:hosts=1,devices_per_host={gpus}"
    return f"p3.16xlarge:hosts={gpus // 8}"


def stage_text(stage):
    host, dev = stage["submesh"]
    mesh = ",".join(str(m) for m in stage["logical_mesh"])
    text = f"({host},{dev}) ({mesh}) tp{stage['tensor_parallel']} dp{stage['data_parallel']}"
    if stage.get("shard_parameters"):
        text += " zero3"
    elif stage.get("shard_gradients"):
        text += " zero2"
    elif stage.get("zero"):
        text += " zero"
    if stage.get("remat") == "selective":
        text += " sel-remat"
    elif stage.get("remat"):
        text += " remat"
    return text


def stages_text(stages):
    """Runs of identical consecutive stages: "4 x (1,8) (2,4) tp4 dp2 + 1 x ..."."""
    runs = []
    for stage in stages:
        text = stage_text(stage)
        if runs and runs[-1][1] == text:
            runs[-1][0] += 1
        else:
            runs.append([1, text])
    return " + ".join(f"{count} x {text}" for count, text in runs)


def error_text(proc):
    lines = [l.strip() for l in proc.stderr.strip().splitlines() if l.strip()]
    message = lines[-1] if lines else f"exit status {proc.returncode}"
    for prefix in ("alpa: error: ", "alpa: "):
        if message.startswith(prefix):
            message = message[len(prefix):]
            break
    return message


def run_json(cmd, timeout):
    """Runs an `alpa` command whose last stdout line is JSON: (that JSON or None, error message
    or None, wall seconds)."""
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout:g} s", time.monotonic() - start
    wall = time.monotonic() - start
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        return None, error_text(proc), wall
    try:
        return json.loads(lines[-1]), None, wall
    except json.JSONDecodeError as e:
        return None, f"bad JSON from alpa {cmd[1]}: {e}", wall


def run_row(alpa, model, cluster, timeout):
    """(plan summary or None, error message or None, wall seconds)."""
    return run_json([alpa, "plan", "--model", model, "--cluster", cluster, "--json", "-q"],
                    timeout)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("alpa", nargs="?", default=os.path.join(root, "build", "bin", "alpa"))
    parser.add_argument("--rows", default=",".join(FAMILIES),
                        help="families to run, comma-separated (gpt,moe,wresnet)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per alpa plan call")
    args = parser.parse_args()
    families = [f for f in args.rows.split(",") if f]
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        parser.error(f"unknown row families {','.join(unknown)} (known: {','.join(FAMILIES)})")

    print("| family | model | GPUs | cluster | compile (s) | TFLOP/s per GPU | iteration (s) | "
          "microbatches | stages | clustering / intra-op / DP (s) | peak memory (GiB) | wall (s) |")
    print("|---|---|---:|---|---:|---:|---:|---:|---|---|---:|---:|")
    results = []  # (model, compile or wall seconds, ok)
    for family, model, gpus in preset_rows(args.alpa, families):
        cluster = cluster_spec(gpus)
        plan, error, wall = run_row(args.alpa, model, cluster, args.timeout)
        if plan is None:
            message = error.replace("|", "\\|")
            empty = " |" * 6  # the plan's other columns
            print(f"| {family} | {model} | {gpus} | {cluster} | {message} |{empty} {wall:.1f} |",
                  flush=True)
            results.append((model, wall, False))
            continue
        c = plan["compile"]
        split = (f"{c['clustering_seconds']:.2f} / {c['intra_op_seconds']:.2f} / "
                 f"{c['dp_seconds']:.2f}")
        print(f"| {family} | {model} | {gpus} | {cluster} | {plan['compile_seconds']:.2f} | "
              f"{plan['tflops_per_device']:.2f} | {plan['iteration_seconds']:.2f} | "
              f"{plan['microbatches']} | {stages_text(plan['stages'])} | {split} | "
              f"{plan['peak_memory_bytes'] / GIB:.2f} | {wall:.1f} |", flush=True)
        results.append((model, plan["compile_seconds"], True))

    if results:
        worst = max(results, key=lambda r: r[1])
        under = sum(1 for r in results if r[1] < 10)
        failed = sum(1 for r in results if not r[2])
        print(f"\nmax compile time {worst[1]:.2f} s ({worst[0]}); {under} of {len(results)} rows "
              f"under 10 s; {failed} failed (failed rows count their wall time)")


if __name__ == "__main__":
    main()
