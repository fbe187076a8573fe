#!/usr/bin/env python3
"""Runs `alpa solve` on the IOPDDL contest benchmarks with their contest time limits and prints a
table: cost, best known, score (best known / ours), seconds, and the final status.

    python3 bench/iopddl_table.py [--alpa build/bin/alpa] [--data ../shared/data/iopddl]
                                  [--scale 1.0] [--only G,A]

--scale multiplies the time limits (e.g. 0.25 for a quick look). Independent check: every
assignment is re-evaluated with `alpa evaluate`.
"""
import argparse
import json
import os
import subprocess
import sys
import time

# name: (file, contest time limit in seconds, best known cost over all contest teams)
BENCHMARKS = {
    "A": ("asplos-2025-iopddl-A.json.gz", 60, 6548641531),
    "G": ("asplos-2025-iopddl-G.json.gz", 120, 217039),
    "M": ("asplos-2025-iopddl-M.json.gz", 180, 49928460991),
    "S": ("asplos-2025-iopddl-S.json.gz", 240, 1534613444),
}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alpa", default=os.path.join(root, "build", "bin", "alpa"))
    parser.add_argument("--data", default=os.path.join(root, "..", "shared", "data", "iopddl"))
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--only", default="")
    parser.add_argument("--extra", default="", help="extra arguments for alpa solve")
    args = parser.parse_args()
    names = [n for n in BENCHMARKS if not args.only or n in args.only.split(",")]

    rows = []
    for name in names:
        file, limit, best = BENCHMARKS[name]
        path = os.path.join(args.data, file)
        if not os.path.exists(path):
            print(f"{name}: {path} not found, skipped", file=sys.stderr)
            continue
        timeout = limit * args.scale
        start = time.monotonic()
        proc = subprocess.run([args.alpa, "solve", path, f"{timeout:g}", "--json", "-q"]
                              + args.extra.split(), capture_output=True, text=True)
        wall = time.monotonic() - start
        lines = proc.stdout.strip().splitlines()
        result = json.loads(lines[-1]) if lines else {}
        assignment = result.get("assignment", [])
        checked = None
        if assignment:
            ev = subprocess.run([args.alpa, "evaluate", path, json.dumps(assignment)],
                                capture_output=True, text=True)
            checked = int(ev.stdout.strip()) if ev.returncode == 0 else None
        cost = checked
        score = best / cost if cost else 0.0
        rows.append((name, cost, best, score, wall, timeout, result.get("status", "error"),
                     result.get("lower_bound")))

    print(f"| problem | cost (evaluated) | best known | score | seconds | limit | status | lower bound |")
    print(f"|---|---:|---:|---:|---:|---:|---|---:|")
    for name, cost, best, score, wall, timeout, status, bound in rows:
        cost_text = f"{cost:,}" if cost is not None else "none"
        bound_text = f"{bound:,.0f}" if isinstance(bound, (int, float)) else "-"
        print(f"| {name} | {cost_text} | {best:,} | {score:.4f} | {wall:.1f} | {timeout:g} | "
              f"{status} | {bound_text} |")
    if rows:
        print(f"\nmean score {sum(r[3] for r in rows) / len(rows):.4f}")


if __name__ == "__main__":
    main()
