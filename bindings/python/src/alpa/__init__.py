"""alpa: Python bindings of libalpa, an automatic parallelization planner (Alpa re-created).

    import alpa
    p = alpa.plan(model="gpt-2.6b", cluster="p3.16xlarge:2")
    print(p.summary())
    sol = alpa.solve("iopddl_example.json")      # the raw solver tier
    print(sol.assignment, sol.objective)

Everything goes through libalpa's C ABI (alpa.h / alpa_experimental.h) with ctypes. Errors are
``AlpaError`` subclasses carrying the library's status and message; handles are freed by
``close()`` / ``with`` blocks or on garbage collection; Ctrl-C cancels a long call.
"""
from __future__ import annotations

from typing import Any

from ._handle import handle_counts, live_handles
from ._lib import LIBRARY_PATH, version
from ._run import CancelToken
from .cluster import Cluster, Mesh, cluster_presets
from .errors import (
    AlpaError,
    AlpaIOError,
    AlpaMemoryError,
    CancelledError,
    InfeasibleError,
    InternalError,
    InvalidArgumentError,
    InvalidGraphError,
    InvalidProblemError,
    ParseError,
    SolveTimeoutError,
    UnsupportedError,
)
from .graph import Collective, Graph, ModelPreset, Op, ShardingPlan, auto_shard, models
from .plan import (
    BaselinePoint,
    ManualPlanSpec,
    Plan,
    PlanProgress,
    Prediction,
    SimulatedStage,
    Simulation,
    SliceMove,
    Stage,
    Submesh,
    Transfer,
    plan,
    plan_baseline,
    plan_manual,
)
from .problem import Problem, Solution, SolveProgress, SolveStatus, evaluate, parse_assignment, solve

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # alpa.jax, alpa.parallelize and alpa.torch import their framework (jax, PyTorch), so they
    # load on first use only: `import alpa` imports neither.
    if name in ("jax", "torch"):
        import importlib

        return importlib.import_module("." + name, __name__)
    if name == "parallelize":
        from .jax import parallelize

        return parallelize
    raise AttributeError(f"module 'alpa' has no attribute {name!r}")


__all__ = [
    "AlpaError", "AlpaIOError", "AlpaMemoryError", "BaselinePoint", "CancelToken",
    "CancelledError", "Cluster", "Collective", "Graph", "InfeasibleError", "InternalError",
    "InvalidArgumentError", "InvalidGraphError", "InvalidProblemError", "LIBRARY_PATH",
    "ManualPlanSpec", "Mesh", "ModelPreset", "Op", "ParseError", "Plan", "PlanProgress",
    "Prediction", "Problem", "ShardingPlan", "SimulatedStage", "Simulation", "SliceMove",
    "Solution", "SolveProgress", "SolveStatus", "SolveTimeoutError", "Stage", "Submesh",
    "Transfer", "UnsupportedError", "auto_shard", "cluster_presets", "evaluate",
    "handle_counts", "live_handles", "models", "parse_assignment", "plan", "plan_baseline",
    "plan_manual", "solve", "version",
]  # fmt: skip


