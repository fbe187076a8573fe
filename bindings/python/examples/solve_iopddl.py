#!/usr/bin/env python3
"""Solves the IOPDDL example problem (optimum 445, assignment [0, 0, 2, 1, 0]) twice: from the
contest's JSON file and from numpy arrays, and checks the answer with the evaluator.

    python examples/solve_iopddl.py [PROBLEM.json]
"""
import json
import pathlib
import sys

import numpy as np

import alpa

REPO = pathlib.Path(__file__).resolve().parents[3]


def main() -> None:
    path = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "tests/golden/iopddl_example.json"
    sol = alpa.solve(path, deterministic=True)
    print(f"{path.name}: {sol.status.name} objective {sol.objective:g} assignment {sol.assignment}")

    d = json.loads(path.read_text())["problem"]
    problem = alpa.Problem.from_arrays(
        costs=d["nodes"]["costs"],
        usages=d["nodes"]["usages"],
        intervals=np.array(d["nodes"]["intervals"]),
        edges=np.array(d["edges"]["nodes"]),
        edge_costs=d["edges"]["costs"],
        memory_limit=d.get("usage_limit"),
    )
    with problem:
        again = alpa.solve(problem)
        cost = alpa.evaluate(problem, again.assignment)
    print(f"from arrays: objective {again.objective:g}, evaluator {cost:g}")
    assert again.assignment == sol.assignment and cost == sol.objective


if __name__ == "__main__":
    main()
