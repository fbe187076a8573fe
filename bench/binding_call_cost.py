#!/usr/bin/env python3
"""Calling cost of the bindings: planning gpt-39b on p3.16xlarge:8 from the CLI, from Python
(the `alpa` package) and optionally from a Rust example binary, with the same options.

    python bench/binding_call_cost.py [--runs 5] [--cli PATH] [--rust BIN] [--python PY]

Each run is a fresh process, as a user would run it; the runs alternate between the contenders
(CLI, Python, Rust, CLI, Python, ...) so that drift in machine load hits them alike. Printed: a
table of each contender's median wall time, the median planning time the plan itself reports
(compile_seconds: the library's work, the same in every binding), the median in-process time of
the planning call in Python (the call through ctypes, measured around alpa.plan), and each
median's ratio to the CLI's. All contenders must predict the same iteration time.

The CLI runs `alpa plan --model M --cluster C -q --json`; the Python contender runs
`python -c "import alpa; print(alpa.plan(M, C).to_json())"`; the Rust binary is run as
`BIN --model M --cluster C -q --json` and must print the plan's summary JSON as its last line.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import time

PY_CODE = """
import json, sys, time
t0 = time.perf_counter()
import alpa
t1 = time.perf_counter()
plan = alpa.plan(model=sys.argv[1], cluster=sys.argv[2])
t2 = time.perf_counter()
doc = json.loads(plan.to_json())
doc["_python"] = {"import_seconds": t1 - t0, "plan_call_seconds": t2 - t1}
print(json.dumps(doc))
"""


def find_cli() -> str | None:
    try:
        from alpa.__main__ import find_cli as package_cli

        found = package_cli()
        if found:
            return found
    except ImportError:
        pass
    return shutil.which("alpa")


def run(cmd: list[str], env: dict[str, str]) -> tuple[float, dict]:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    return wall, json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="runs per contender (default 5)")
    ap.add_argument("--model", default="gpt-39b")
    ap.add_argument("--cluster", default="p3.16xlarge:8")
    ap.add_argument("--cli", help="the alpa program (default: the one the package finds, or PATH)")
    ap.add_argument("--python", default=sys.executable, help="Python with the alpa package")
    ap.add_argument("--rust", metavar="BIN", help="a Rust example binary taking the CLI's arguments")
    args = ap.parse_args()

    cli = args.cli or find_cli()
    if not cli:
        ap.error("no alpa program found: pass --cli")
    env = dict(os.environ)
    if env.get("ALPA_LIBRARY"):
        lib_dir = str(pathlib.Path(env["ALPA_LIBRARY"]).resolve().parent)
        env["LD_LIBRARY_PATH"] = lib_dir + os.pathsep + env.get("LD_LIBRARY_PATH", "")
    flags = ["--model", args.model, "--cluster", args.cluster, "-q", "--json"]
    contenders = {
        "cli": [cli, "plan", *flags],
        "python": [args.python, "-c", PY_CODE, args.model, args.cluster],
    }
    if args.rust:
        contenders["rust"] = [args.rust, *flags]

    walls: dict[str, list[float]] = {k: [] for k in contenders}
    compile_s: dict[str, list[float]] = {k: [] for k in contenders}
    py_call: list[float] = []
    iteration: dict[str, set[float]] = {k: set() for k in contenders}
    for i in range(args.runs):
        order = list(contenders) if i % 2 == 0 else list(reversed(contenders))
        for name in order:
            wall, doc = run(contenders[name], env)
            walls[name].append(wall)
            compile_s[name].append(float(doc["compile_seconds"]))
            iteration[name].add(float(doc["iteration_seconds"]))
            if name == "python":
                py_call.append(doc["_python"]["plan_call_seconds"])
            print(f"# run {i + 1}/{args.runs} {name:<7} wall {wall:7.3f} s  "
                  f"compile {doc['compile_seconds']:7.3f} s", file=sys.stderr, flush=True)

    base_wall = statistics.median(walls["cli"])
    base_compile = statistics.median(compile_s["cli"])
    print(f"planning {args.model} on {args.cluster}: {args.runs} runs each, alternating; medians")
    print(f"{'contender':<10}{'wall s':>10}{'ratio':>8}{'compile s':>11}{'ratio':>8}"
          f"{'call s':>9}  iteration s")
    for name in contenders:
        w = statistics.median(walls[name])
        c = statistics.median(compile_s[name])
        call = f"{statistics.median(py_call):9.3f}" if name == "python" else f"{'-':>9}"
        iters = ",".join(f"{x:.6g}" for x in sorted(iteration[name]))
        print(f"{name:<10}{w:10.3f}{w / base_wall:8.3f}{c:11.3f}{c / base_compile:8.3f}{call}  {iters}")
    all_iters = set().union(*iteration.values())
    if len(all_iters) != 1:
        print(f"MISMATCH: the contenders predict different iteration times: {sorted(all_iters)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
