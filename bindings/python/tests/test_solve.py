"""The raw solver tier: solve the IOPDDL example, evaluate assignments, errors."""
from __future__ import annotations

import gzip
import itertools
import json

import numpy as np
import pytest

import alpa


def test_solve_example_file(iopddl_example):
    sol = alpa.solve(iopddl_example)
    assert sol.status is alpa.SolveStatus.OPTIMAL
    assert sol.assignment == [0, 0, 2, 1, 0]
    assert sol.objective == 445
    assert sol.lower_bound == 445
    assert json.loads(sol.to_json())["assignment"] == [0, 0, 2, 1, 0]


def test_solve_from_bytes_gzip_and_problem(iopddl_example):
    raw = iopddl_example.read_bytes()
    assert alpa.solve(raw).objective == 445
    assert alpa.solve(gzip.compress(raw)).objective == 445
    assert alpa.solve(json.loads(raw)).objective == 445
    with alpa.Problem.read(iopddl_example) as p:
        assert (p.node_count, p.edge_count) == (5, 5)
        assert [p.strategy_count(i) for i in range(5)] == [1, 2, 3, 2, 1]
        assert p.strategy_count(5) == -1
        sol = p.solve(deterministic=True, threads=1, time_limit=10)
        assert sol.assignment == [0, 0, 2, 1, 0]
        # Round trip through the library's serializer.
        assert alpa.solve(p.to_json("iopddl").encode()).objective == 445


def _example_arrays(iopddl_example):
    d = json.loads(iopddl_example.read_text())["problem"]
    return dict(
        costs=d["nodes"]["costs"],
        usages=d["nodes"]["usages"],
        intervals=np.array(d["nodes"]["intervals"]),
        edges=np.array(d["edges"]["nodes"]),
        edge_costs=d["edges"]["costs"],
        memory_limit=d["usage_limit"],
    )


def test_solve_from_arrays(iopddl_example):
    arrays = _example_arrays(iopddl_example)
    sol = alpa.solve(arrays)
    assert (sol.assignment, sol.objective) == ([0, 0, 2, 1, 0], 445)
    reports = []
    sol = alpa.solve(alpa.Problem.from_arrays(**arrays), progress=reports.append)
    assert sol.objective == 445
    assert reports and all(isinstance(r, alpa.SolveProgress) for r in reports)


def test_evaluate_agrees_with_the_solver(iopddl_example):
    """Brute force over every assignment with the evaluator: the cheapest feasible one is the
    solver's, and the infeasible ones raise with the violated constraint."""
    problem = alpa.Problem.read(iopddl_example)
    assert alpa.evaluate(problem, [0, 0, 2, 1, 0]) == 445
    assert alpa.evaluate(iopddl_example, "[0, 0, 2, 1, 0]") == 445
    counts = [problem.strategy_count(i) for i in range(problem.node_count)]
    feasible, infeasible = {}, []
    for a in itertools.product(*[range(k) for k in counts]):
        try:
            feasible[a] = alpa.evaluate(problem, list(a))
        except alpa.InfeasibleError as e:
            assert e.status == 3 and "memory" in str(e)
            infeasible.append(a)
    assert infeasible, "the example's memory limit rules some assignments out"
    best = min(feasible, key=feasible.get)
    assert list(best) == [0, 0, 2, 1, 0] and feasible[best] == 445
    with pytest.raises(alpa.InvalidArgumentError):
        alpa.evaluate(problem, [0, 0, 2])
    problem.close()


def test_infeasible_problem_raises(iopddl_example):
    arrays = _example_arrays(iopddl_example)
    arrays["memory_limit"] = 5
    with pytest.raises(alpa.InfeasibleError) as info:
        alpa.solve(arrays)
    assert info.value.status == 3 and info.value.message


def test_invalid_problem_names_the_element():
    # The library's validation (finalize) names the node.
    with pytest.raises(alpa.InvalidProblemError) as info:
        alpa.Problem.from_arrays(costs=[[1, 2], [3]], intervals=[[0, 5], [7, 3]])
    assert "node 1" in str(info.value) and info.value.status == 2
    # Lengths the C call cannot see (it takes pointers) are checked by the binding.
    with pytest.raises(alpa.InvalidArgumentError) as info:
        alpa.Problem.from_arrays(costs=[[1, 2], [3]], edges=[[0, 1]], edge_costs=[[1, 2, 3]])
    assert "edge 0 (0, 1) has 3 costs, expected 2" in str(info.value)
    with pytest.raises(alpa.InvalidArgumentError):
        alpa.Problem().add_nodes([2, 1], [1.0, 2.0])


def test_parse_errors():
    with pytest.raises(alpa.ParseError):
        alpa.solve(b"{not json")
    with pytest.raises(alpa.ParseError) as info:
        alpa.parse_assignment("[0, x]")
    assert info.value.message
    assert alpa.parse_assignment("[3, 1]") == [3, 1]
    with pytest.raises(alpa.AlpaIOError) as info:
        alpa.solve("/nonexistent/problem.json")
    assert "/nonexistent/problem.json" in str(info.value)
    assert isinstance(info.value, OSError)


def test_bad_option_message(iopddl_example):
    with pytest.raises(alpa.InvalidArgumentError) as info:
        alpa.solve(iopddl_example, threads=5000)
    assert 'solve option "threads"' in str(info.value)
