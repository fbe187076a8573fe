#!/usr/bin/env python3
"""Simulates every benchmark plan twice, from the plan's own figures and from its device
programs (the executor's lowering, every instruction priced by the cost model), and prints a
Markdown table of the two iteration times side by side.

    python3 bench/program_sim_table.py [build/bin/alpa] [--suite alpa,sc21] [--rows NAMES]
                                       [--timeout 600]

Suites: `alpa` is the Alpa paper's GPT / MoE / Wide-ResNet presets at their GPU counts on
p3.16xlarge (as bench/plan_table.py), `sc21` Megatron-LM's SC'21 GPT rows on dgx-a100-80g (as
bench/fidelity.py). Per row: `alpa plan -o`, then `alpa simulate` and `alpa simulate --programs`
on the file. Columns: the planner's prediction, both simulations and their ratio (programs /
plan); then what makes them differ, in seconds per iteration on the stage where each is
largest: the plan's parameter charges (the solve prices every parameter op as writing its
value, which no instruction does), the backward work the programs run once at the update where
the plan prices it in every microbatch's backward (deferred), and what the programs run that the
plan does not list (a partial-sum loss's all-reduce, a tied weight's refreshed copy); the
residual (the largest relative gap of a stage's task once those are put back: rounding when
nothing else differs); the bookkeeping the programs run and the cost model leaves to fusion
(slices, copies, gradient accumulation; reported, not simulated); the lowered instructions and
the wall time of the programs' simulation (lowering included).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fidelity  # noqa: E402  (the SC'21 rows and their model specs)
import plan_table  # noqa: E402  (the Alpa suite's rows and clusters)


def alpa_rows(alpa):
    return [(preset, preset, plan_table.cluster_spec(gpus), gpus)
            for _, preset, gpus in plan_table.preset_rows(alpa, plan_table.FAMILIES)]


def sc21_rows():
    rows = []
    for row in fidelity.ROWS:
        gpus = row[4]
        rows.append(("gpt-" + row[0], fidelity.model_spec(row),
                     "dgx-a100-80g:%d" % (gpus // fidelity.GPUS_PER_HOST), gpus))
    return rows


def per_iteration(report, pick):
    """Seconds per iteration on the stage where pick(programs, microbatches) is largest."""
    b = report["microbatches"]
    return max(pick(stage["programs"], b) for stage in report["stages"])


def bookkeeping(p, b):
    return b * (p["forward"]["bookkeeping"] + p["backward"]["bookkeeping"]) + \
        p["update"]["bookkeeping"]


def parameter_charges(p, b):
    f, bw, u = p["planned_parameter_seconds"]
    return b * (f + bw) + u


def not_in_plan(p, b):
    return b * (p["forward"]["not_in_plan"] + p["backward"]["not_in_plan"]) + \
        p["update"]["not_in_plan"]


def deferred(p, b):
    return (b - 1) * p["update"]["deferred_backward"]


def residual(stage):
    """The largest relative gap of a stage's tasks between the plan and the programs once the
    parameter charges, the deferred backward work and what the plan does not list are put
    back (docs/planner.md: 0 to rounding when nothing else differs)."""
    p = stage["programs"]
    f, b, u = p["forward"], p["backward"], p["update"]
    pf, pb, pu = p["planned_parameter_seconds"]
    pairs = ((f["seconds"] - f["not_in_plan"] + pf, p["planned_forward_seconds"]),
             (b["seconds"] - b["not_in_plan"] + pb + u["deferred_backward"],
              p["planned_backward_seconds"]),
             (u["seconds"] - u["not_in_plan"] - u["deferred_backward"] + pu,
              p["planned_overhead_seconds"]))
    return max((abs(got - want) / want for got, want in pairs if want > 0), default=0.0)


def run_row(alpa, name, spec, cluster, gpus, timeout, scratch):
    path = os.path.join(scratch, "plan.json")
    plan, error, _ = plan_table.run_json(
        [alpa, "plan", "--model", spec, "--cluster", cluster, "-q", "--json", "-o", path],
        timeout)
    if plan is None:
        return f"| {name} | {gpus} | plan: {error} |"
    sim, error, _ = plan_table.run_json([alpa, "simulate", path, "--json"], timeout)
    if sim is None:
        return f"| {name} | {gpus} | simulate: {error} |"
    start = time.monotonic()
    prog, error, _ = plan_table.run_json([alpa, "simulate", path, "--programs", "--json"],
                                         timeout)
    wall = time.monotonic() - start
    if prog is None:
        return f"| {name} | {gpus} | simulate --programs: {error} |"
    instructions = sum(s["programs"]["instructions"] for s in prog["stages"])
    ratio = prog["iteration_seconds"] / sim["iteration_seconds"]
    worst = max(residual(s) for s in prog["stages"])
    return (f"| {name} | {gpus} | {prog['microbatches']} | {len(prog['stages'])} | "
            f"{plan['iteration_seconds']:.3f} | {sim['iteration_seconds']:.3f} | "
            f"{prog['iteration_seconds']:.3f} | {ratio:.3f} | "
            f"{per_iteration(prog, parameter_charges):.3f} | "
            f"{per_iteration(prog, deferred):.3f} | {per_iteration(prog, not_in_plan):.3f} | "
            f"{worst:.1e} | {per_iteration(prog, bookkeeping):.3f} | {instructions} | "
            f"{wall:.1f} |")


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("alpa", nargs="?", default=os.path.join(root, "build", "bin", "alpa"))
    parser.add_argument("--suite", default="alpa,sc21", help="alpa, sc21 or both (default)")
    parser.add_argument("--rows", default="", help="only these rows (names, comma-separated)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per alpa call")
    args = parser.parse_args()
    suites = set(args.suite.split(","))
    rows = (alpa_rows(args.alpa) if "alpa" in suites else []) + \
        (sc21_rows() if "sc21" in suites else [])
    wanted = set(r for r in args.rows.split(",") if r)
    rows = [r for r in rows if not wanted or r[0] in wanted]
    print("| model | GPUs | B | stages | planned (s) | simulated, plan (s) | "
          "simulated, programs (s) | programs / plan | parameter charges (s/iter) | "
          "deferred (s/iter) | not in the plan (s/iter) | residual | bookkeeping (s/iter) | "
          "instructions | wall (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        for name, spec, cluster, gpus in rows:
            print(run_row(args.alpa, name, spec, cluster, gpus, args.timeout, scratch),
                  flush=True)


if __name__ == "__main__":
    main()
