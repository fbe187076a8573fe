"""The raw solver tier: sharding problems (nodes with strategies, edges with cost matrices,
liveness and a memory limit), the solver and the independent evaluator."""
from __future__ import annotations

import ctypes
import enum
import json
import os
from ctypes import POINTER, byref, c_double, c_int32, c_int64, c_uint8, c_void_p
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import numpy as np

from ._handle import Owner
from ._lib import (
    FORMAT_ALPA,
    FORMAT_AUTO,
    FORMAT_IOPDDL,
    alpa_progress,
    alpa_progress_fn,
    buffer_call,
    c_doc,
    call,
    check_count,
    cstr,
    lib,
)
from ._run import CallbackGuard, CancelToken, OptionsObject, run_cancellable
from .errors import InvalidArgumentError

FORMATS = {"auto": FORMAT_AUTO, "iopddl": FORMAT_IOPDDL, "alpa": FORMAT_ALPA}


def _arr(values: Any, dtype: Any) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(values, dtype=dtype).reshape(-1))


def _ptr(a: "np.ndarray | None", ctype: Any) -> Any:
    return None if a is None else a.ctypes.data_as(POINTER(ctype))


def _ragged(rows: Any, dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    """A list of rows -> (lengths, flat values)."""
    rows = [np.asarray(r, dtype=dtype).reshape(-1) for r in rows]
    lengths = np.array([len(r) for r in rows], dtype=np.int64)
    flat = np.concatenate(rows) if rows else np.zeros(0, dtype=dtype)
    return lengths, np.ascontiguousarray(flat, dtype=dtype)


class SolveStatus(enum.IntEnum):
    """ALPA_SOLVE_*: the status of a solution or sharding plan."""

    OPTIMAL = 1
    FEASIBLE = 2
    INFEASIBLE = 3
    INVALID_INPUT = 4
    CANCELLED = 5
    NO_SOLUTION = 6


@dataclass(frozen=True)
class SolveProgress:
    """One progress report of a solve (on the calling thread)."""

    seconds: float
    objective: float
    lower_bound: float
    phase: str


class Problem(Owner):
    """A sharding problem. Build one with ``Problem.from_arrays(...)`` (or the ``add_*`` /
    ``set_*`` methods followed by ``finalize()``), or read one with ``Problem.read(path)`` /
    ``Problem.from_bytes(data)`` (IOPDDL or Alpa JSON, plain or gzip). A finalized problem is
    immutable and may be solved from several threads at once."""

    _kind = "alpa_problem"

    def __init__(self, _ptr: Optional[int] = None) -> None:
        if _ptr is None:
            out = c_void_p()
            call(lib.alpa_problem_create, byref(out))
            _ptr = out.value
        self._own(_ptr, lib.alpa_problem_destroy, self._kind)

    # ---- reading ----
    @classmethod
    @c_doc("alpa_problem_read_file")
    def read(cls, path: "str | os.PathLike[str]", format: str = "auto") -> "Problem":
        """Reads a problem file (.json or .json.gz); format "auto", "iopddl" or "alpa"."""
        out = c_void_p()
        call(lib.alpa_problem_read_file, byref(out), os.fsencode(path), FORMATS[format])
        return cls(out.value)

    @classmethod
    @c_doc("alpa_problem_read_buffer")
    def from_bytes(cls, data: "bytes | str | Mapping[str, Any]", format: str = "auto") -> "Problem":
        """A problem from bytes (JSON text, gzip detected) or a JSON-like dict."""
        if isinstance(data, Mapping):
            data = json.dumps(data)
        raw = data.encode() if isinstance(data, str) else bytes(data)
        out = c_void_p()
        call(lib.alpa_problem_read_buffer, byref(out), raw, len(raw), FORMATS[format])
        return cls(out.value)

    @classmethod
    def from_arrays(
        cls,
        costs: Sequence[Sequence[float]],
        *,
        usages: "Sequence[Sequence[int]] | None" = None,
        intervals: "Sequence[Sequence[int]] | np.ndarray | None" = None,
        edges: "Sequence[Sequence[int]] | np.ndarray | None" = None,
        edge_costs: "Sequence[Any] | None" = None,
        followers: "Sequence[int] | None" = None,
        memory_limit: "int | None" = None,
        finalize: bool = True,
    ) -> "Problem":
        """A problem from arrays, in the IOPDDL layout: ``costs[i]`` the costs of node i's
        strategies, ``usages[i]`` their memory bytes, ``intervals[i] = (lo, hi)`` node i's
        liveness, ``edges[j] = (u, v)`` with ``edge_costs[j]`` the k_u x k_v matrix (nested or
        flat, row-major), ``followers[i]`` -1 or the node i follows, ``memory_limit`` in bytes.
        """
        p = cls()
        counts, flat = _ragged(costs, np.float64)
        usage_flat = None
        if usages is not None:
            ucounts, usage_flat = _ragged(usages, np.int64)
            if not np.array_equal(ucounts, counts):
                raise InvalidArgumentError("usages: each node needs one usage per strategy", 1)
        p.add_nodes(counts, flat, usage_flat)
        if intervals is not None and len(intervals):
            p.set_intervals(intervals)
        if edges is not None and len(edges):
            if edge_costs is None or len(edge_costs) != len(edges):
                raise InvalidArgumentError("edge_costs: one cost matrix per edge", 1)
            ends = _arr(edges, np.int32).reshape(-1, 2)
            rows = [_arr(c, np.float64) for c in edge_costs]
            for j, ((u, v), row) in enumerate(zip(ends.tolist(), rows)):
                want = p.strategy_count(u) * p.strategy_count(v)
                if p.strategy_count(u) >= 0 and p.strategy_count(v) >= 0 and len(row) != want:
                    raise InvalidArgumentError(
                        f"edge {j} ({u}, {v}) has {len(row)} costs, expected {want}", 1)
            p.add_edges(ends, np.concatenate(rows))
        if followers is not None:
            p.set_followers(followers)
        if memory_limit is not None:
            p.set_memory_limit(memory_limit)
        if finalize:
            p.finalize()
        return p

    # ---- building ----
    @c_doc("alpa_problem_add_nodes")
    def add_nodes(
        self, strategy_counts: Any, costs: Any, usages: Any = None
    ) -> "Problem":
        """Appends nodes: ``strategy_counts[n]``, ``costs[sum k]`` and ``usages[sum k]``
        (or None) as flat arrays."""
        k = _arr(strategy_counts, np.int32)
        c = _arr(costs, np.float64)
        u = None if usages is None else _arr(usages, np.int64)
        # The C call reads sum(k) entries through the pointers: check the lengths here.
        total = int(k[k > 0].sum())
        if len(c) != total or (u is not None and len(u) != total):
            raise InvalidArgumentError(
                f"add_nodes: {len(k)} nodes with {total} strategies need {total} costs and "
                f"usages (got {len(c)} costs, {'no' if u is None else len(u)} usages)", 1)
        call(lib.alpa_problem_add_nodes, self._ptr, len(k), _ptr(k, c_int32), _ptr(c, c_double),
             _ptr(u, c_int64))
        return self

    @c_doc("alpa_problem_set_intervals")
    def set_intervals(self, intervals: Any) -> "Problem":
        """Liveness of the first n nodes as half-open (lo, hi) intervals, shape [n, 2]."""
        a = _arr(intervals, np.int64)
        if len(a) % 2:
            raise InvalidArgumentError("intervals: (lo, hi) pairs", 1)
        call(lib.alpa_problem_set_intervals, self._ptr, len(a) // 2, _ptr(a, c_int64))
        return self

    @c_doc("alpa_problem_set_live_sets")
    def set_live_sets(self, live_sets: Sequence[Sequence[int]]) -> "Problem":
        """Liveness as explicit live sets: ``live_sets[t]`` lists the nodes live at time t."""
        sizes, ids = _ragged(live_sets, np.int32)
        call(lib.alpa_problem_set_live_sets, self._ptr, len(sizes), _ptr(sizes, c_int64),
             _ptr(ids, c_int32))
        return self

    @c_doc("alpa_problem_add_edges")
    def add_edges(self, endpoints: Any, costs: Any) -> "Problem":
        """Appends edges: ``endpoints`` of shape [m, 2], ``costs`` their matrices flat."""
        e = _arr(endpoints, np.int32)
        c = _arr(costs, np.float64)
        self._check_matrix_length(e, len(c), "add_edges: costs")
        call(lib.alpa_problem_add_edges, self._ptr, len(e) // 2, _ptr(e, c_int32),
             _ptr(c, c_double))
        return self

    def _check_matrix_length(self, pairs: np.ndarray, got: int, what: str) -> None:
        """The C call reads sum(k_u * k_v) entries: check the length first (pairs with an
        unknown node are left to the library, which rejects them before reading)."""
        if len(pairs) % 2:
            raise InvalidArgumentError(f"{what}: pairs need an even number of node ids", 1)
        want = 0
        for u, v in pairs.reshape(-1, 2).tolist():
            ku, kv = self.strategy_count(u), self.strategy_count(v)
            if ku < 0 or kv < 0:
                return
            want += ku * kv
        if got != want:
            raise InvalidArgumentError(f"{what}: {got} entries, expected {want}", 1)

    @c_doc("alpa_problem_set_followers")
    def set_followers(self, follows: Any) -> "Problem":
        f = _arr(follows, np.int32)
        call(lib.alpa_problem_set_followers, self._ptr, len(f), _ptr(f, c_int32))
        return self

    @c_doc("alpa_problem_add_aliases")
    def add_aliases(self, pairs: Any, forbidden: Any) -> "Problem":
        p = _arr(pairs, np.int32)
        f = _arr(forbidden, np.uint8)
        self._check_matrix_length(p, len(f), "add_aliases: forbidden")
        call(lib.alpa_problem_add_aliases, self._ptr, len(p) // 2, _ptr(p, c_int32),
             _ptr(f, c_uint8))
        return self

    @c_doc("alpa_problem_set_memory_limit")
    def set_memory_limit(self, limit: "int | None") -> "Problem":
        call(lib.alpa_problem_set_memory_limit, self._ptr, -1 if limit is None else int(limit))
        return self

    @c_doc("alpa_problem_finalize")
    def finalize(self) -> "Problem":
        call(lib.alpa_problem_finalize, self._ptr)
        return self

    # ---- queries ----
    @property
    def node_count(self) -> int:
        return int(lib.alpa_problem_node_count(self._ptr))

    @property
    def edge_count(self) -> int:
        return int(lib.alpa_problem_edge_count(self._ptr))

    def strategy_count(self, node: int) -> int:
        return int(lib.alpa_problem_strategy_count(self._ptr, node))

    @c_doc("alpa_problem_to_json")
    def to_json(self, format: str = "iopddl") -> str:
        return buffer_call(lib.alpa_problem_to_json, self._ptr, FORMATS[format]).decode()

    def solve(self, **options: Any) -> "Solution":
        """``alpa.solve(self, **options)``."""
        return solve(self, **options)

    def evaluate(self, assignment: "Sequence[int] | str | np.ndarray") -> float:
        """``alpa.evaluate(self, assignment)``."""
        return evaluate(self, assignment)

    def __repr__(self) -> str:
        if self.closed:
            return "<alpa.Problem (closed)>"
        return f"<alpa.Problem {self.node_count} nodes, {self.edge_count} edges>"


@dataclass(frozen=True)
class Solution:
    """The answer of a solve: an assignment (one strategy per node) and its objective."""

    status: SolveStatus
    objective: float
    lower_bound: float
    seconds: float
    assignment: list[int]
    message: str
    json: str = field(repr=False)

    def to_json(self) -> str:
        """The solution as one JSON object (status, objective, ..., stats)."""
        return self.json


ProblemLike = Union[Problem, str, "os.PathLike[str]", bytes, Mapping[str, Any]]


def _as_problem(problem: ProblemLike) -> tuple[Problem, bool]:
    """(problem, owned): owned problems are closed by the caller after use."""
    if isinstance(problem, Problem):
        return problem, False
    if isinstance(problem, (bytes, bytearray, memoryview)):
        return Problem.from_bytes(bytes(problem)), True
    if isinstance(problem, Mapping):
        if "problem" in problem or "nodes" in problem or problem.get("format") == "alpa":
            return Problem.from_bytes(problem), True
        return Problem.from_arrays(**problem), True
    return Problem.read(problem), True


def _progress_bar(kind: str) -> "Callable[[Any], None] | None":
    """A tqdm bar fed by progress reports (None when tqdm is not installed)."""
    try:
        from tqdm.auto import tqdm  # type: ignore[import-not-found]
    except ImportError:
        return None
    bar = tqdm(desc=kind, leave=False)

    def update(p: Any) -> None:
        total = getattr(p, "total", None)
        if total is not None:  # a PlanProgress: intra-op solves of the current microbatch count
            desc = f"{kind} B={p.microbatches} {p.phase}"
            if bar.desc != desc:
                bar.set_description_str(desc, refresh=False)
            if bar.total != total:
                bar.reset(total=total)
            bar.n = p.done
            bar.refresh()
        else:
            bar.update(1)
            bar.set_postfix(
                phase=p.phase, objective=f"{p.objective:.6g}", bound=f"{p.lower_bound:.6g}"
            )

    update.close = bar.close  # type: ignore[attr-defined]
    return update


class SolveOptions(OptionsObject):
    """alpa_solve_options, set by name (the library validates every value)."""

    _kind = "alpa_solve_options"

    def set_warm_start(self, assignment: Any) -> None:
        a = _arr(assignment, np.int32)
        call(lib.alpa_solve_options_set_warm_start, self._ptr, len(a), _ptr(a, c_int32))

    def set_progress(self, fn: Callable[[SolveProgress], Any], guard: CallbackGuard) -> None:
        def trampoline(_user: Any, p: Any) -> int:
            r = p.contents
            return guard.run(
                lambda: fn(SolveProgress(r.seconds, r.objective, r.lower_bound, cstr(r.phase)))
            )

        cb = alpa_progress_fn(trampoline)
        self._keep.append(cb)  # alive as long as the options
        call(lib.alpa_solve_options_set_progress, self._ptr, cb, None)


ProgressArg = Union[None, bool, Callable[[Any], Any]]


def run_with_options(
    options: SolveOptions,
    progress: ProgressArg,
    cancel: "CancelToken | None",
    kind: str,
    fn: Callable[[], Any],
) -> Any:
    """Installs progress / cancel on solve options and runs fn with Ctrl-C cancelling it."""
    guard = CallbackGuard()
    bar = None
    if progress is True:
        bar = _progress_bar(kind)
        callback = bar
    else:
        callback = progress or None
    if callback is not None:
        options.set_progress(callback, guard)
    token = cancel if cancel is not None else CancelToken()
    try:
        options.set_cancel_token(token)
        try:
            result = run_cancellable(fn, token)
        except BaseException:
            guard.reraise()
            raise
        guard.reraise()
        return result
    finally:
        if bar is not None:
            bar.close()  # type: ignore[attr-defined]
        if cancel is None:
            token.close()


@c_doc("alpa_problem_solve", "alpa_problem_read_file")
def solve(
    problem: ProblemLike,
    *,
    time_limit: "float | None" = None,
    deterministic: "bool | None" = None,
    threads: "int | None" = None,
    relative_gap: "float | None" = None,
    warm_start: "Sequence[int] | None" = None,
    progress: ProgressArg = None,
    cancel: "CancelToken | None" = None,
    format: str = "auto",
) -> Solution:
    """Solves a sharding problem: a ``Problem``, a file path, bytes (JSON or gzip), an IOPDDL /
    Alpa JSON dict, or a dict of arrays for ``Problem.from_arrays``.

    Returns a ``Solution`` (OPTIMAL, FEASIBLE at a time limit, CANCELLED with the best assignment
    found). No answer raises: ``InfeasibleError`` (the message names the reason),
    ``SolveTimeoutError``, ``CancelledError``. ``progress``: a callable receiving
    ``SolveProgress`` reports (an exception it raises cancels the solve and propagates), or
    True for a tqdm bar when tqdm is installed. ``cancel``: a ``CancelToken``. Ctrl-C cancels."""
    if isinstance(problem, (str, os.PathLike)) and format != "auto":
        prob, owned = Problem.read(problem, format), True
    else:
        prob, owned = _as_problem(problem)
    try:
        with SolveOptions(
            {
                "time_limit_seconds": time_limit,
                "deterministic": deterministic,
                "threads": threads,
                "relative_gap": relative_gap,
            }
        ) as opts:
            if warm_start is not None:
                opts.set_warm_start(warm_start)
            out = c_void_p()

            def run() -> None:
                call(lib.alpa_problem_solve, byref(out), prob._ptr, opts._ptr)

            run_with_options(opts, progress, cancel, "solve", run)
            try:
                return _solution(out.value)
            finally:
                lib.alpa_solution_destroy(out.value)
    finally:
        if owned:
            prob.close()


def _solution(ptr: int) -> Solution:
    n = check_count(lib.alpa_solution_assignment(ptr, None, 0))
    buf = (c_int32 * n)()
    check_count(lib.alpa_solution_assignment(ptr, buf, n))
    return Solution(
        status=SolveStatus(lib.alpa_solution_status(ptr)),
        objective=float(lib.alpa_solution_objective(ptr)),
        lower_bound=float(lib.alpa_solution_lower_bound(ptr)),
        seconds=float(lib.alpa_solution_seconds(ptr)),
        assignment=list(buf),
        message=cstr(lib.alpa_solution_message(ptr)),
        json=buffer_call(lib.alpa_solution_to_json, ptr).decode(),
    )


@c_doc("alpa_assignment_parse")
def parse_assignment(text: "str | bytes") -> list[int]:
    """Parses an assignment as IOPDDL prints it ("[0, 0, 2, 1, 0]")."""
    raw = text.encode() if isinstance(text, str) else bytes(text)
    err = c_void_p()
    n = lib.alpa_assignment_parse(raw, len(raw), None, 0, byref(err))
    check_count(n, err)
    buf = (c_int32 * n)()
    check_count(lib.alpa_assignment_parse(raw, len(raw), buf, n, byref(err)), err)
    return list(buf)


@c_doc("alpa_problem_evaluate")
def evaluate(problem: ProblemLike, assignment: "Sequence[int] | str | bytes | np.ndarray") -> float:
    """The total cost of an assignment, checked by the independent evaluator. A violated
    constraint raises ``InfeasibleError`` naming it; a wrong length or strategy out of range
    ``InvalidArgumentError``."""
    if isinstance(assignment, (str, bytes)):
        assignment = parse_assignment(assignment)
    prob, owned = _as_problem(problem)
    try:
        a = _arr(assignment, np.int32)
        cost = c_double()
        call(lib.alpa_problem_evaluate, byref(cost), prob._ptr, len(a), _ptr(a, c_int32))
        return cost.value
    finally:
        if owned:
            prob.close()
