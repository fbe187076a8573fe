"""A libalpa plan in torch.distributed's terms: DTensor placements per parameter, the pipeline
split as module names per stage, and the 1F1B order as torch.distributed.pipelining's CSV.

A stage's DeviceMesh is its logical mesh (``plan.stages[s].logical_mesh``) over its devices
(``plan.stages[s].devices``) in row-major order, the order libalpa's layouts assume
(src/core/cluster/sharding_spec.h)."""
from __future__ import annotations

import csv
import io
from typing import Union

from torch.distributed.tensor import Partial, Replicate, Shard

from ..errors import InvalidArgumentError, UnsupportedError
from ..graph import Graph
from ..plan import Plan

Placement = Union[Shard, Replicate, Partial]


def _layout_text(op_spec: str) -> str:
    """The layout part of ``Plan.op_spec`` ("S0 R S1  (strategy: ...)" -> "S0 R S1")."""
    return op_spec.split("(strategy", 1)[0].strip()


def spec_to_placements(spec: str, mesh_ndim: int, what: str = "tensor") -> list[Placement]:
    """libalpa's layout text ("R S1", "S01 R", "R R partial(0)", "scalar") as DTensor
    placements, one per mesh dim. A tensor dim split over several mesh dims is sharded on each
    of them, the first listed mesh dim major, which is DTensor's order when the mesh dims are
    listed in increasing order; a decreasing order ("S10") has no plain-Shard form and raises."""
    placements: list[Placement] = [Replicate() for _ in range(mesh_ndim)]
    tokens = spec.split()
    if not tokens:
        raise InvalidArgumentError(f"{what}: the plan gives no layout (a free or fused op)", 1)
    for token in tokens:
        if token.startswith("partial("):
            for m in token[len("partial("):-1].split(","):
                placements[_mesh_dim(int(m), mesh_ndim, spec, what)] = Partial()
    dims = [t for t in tokens if not t.startswith("partial(") and t != "scalar"]
    for tensor_dim, token in enumerate(dims):
        if token == "R":
            continue
        mesh_dims = [int(c) for c in token[1:]]
        if mesh_dims != sorted(mesh_dims):
            raise UnsupportedError(
                f"{what}: layout '{spec}' splits tensor dim {tensor_dim} over mesh dims "
                f"{mesh_dims} with the later mesh dim major, which DTensor's Shard cannot state "
                "(it shards over mesh dims in increasing order)", 6)
        for m in mesh_dims:
            placements[_mesh_dim(m, mesh_ndim, spec, what)] = Shard(tensor_dim)
    return placements


def _mesh_dim(m: int, ndim: int, spec: str, what: str) -> int:
    if not 0 <= m < ndim:
        raise InvalidArgumentError(f"{what}: layout '{spec}' names mesh dim {m} of a "
                                   f"{ndim}-dim mesh", 1)
    return m


def _parameter_ops(plan: Plan, graph: "Graph | None") -> dict[str, int]:
    """Parameter name -> op id in the plan's graph (checked against ``graph``'s names)."""
    with plan.graph() as planned:
        ids = {op.name: op.id for op in planned.ops if op.kind == "parameter"
               and op.role == "parameter"}
    if graph is not None:
        names = [op.name for op in graph.ops if op.kind == "parameter" and op.role == "parameter"]
        missing = [n for n in names if n not in ids]
        if missing:
            raise InvalidArgumentError(
                f"the plan's graph has no parameter {missing[0]!r} of the given graph "
                f"({len(missing)} missing): was the plan made for this graph?", 1)
        return {n: ids[n] for n in names}
    return ids


def placements(plan: Plan, graph: "Graph | None" = None) -> dict[str, list[Placement]]:
    """{parameter name: [Shard(d) | Replicate() | Partial() per mesh dim of its stage's
    logical mesh]} for every parameter of ``graph`` (default: of the plan's own graph)."""
    stages = plan.stages
    op_stage = plan.op_stages()
    out: dict[str, list[Placement]] = {}
    for name, op in _parameter_ops(plan, graph).items():
        stage = int(op_stage[op])
        if stage < 0:
            raise InvalidArgumentError(f"parameter {name!r} (op {op}) is in no stage", 1)
        ndim = len(stages[stage].logical_mesh)
        out[name] = spec_to_placements(_layout_text(plan.op_spec(op)), ndim,
                                       f"parameter {name!r} (op {op})")
    return out


def module_of(parameter: str) -> str:
    """The module a parameter belongs to for a pipeline split: up to its first numbered child
    (``transformer.h.3.attn.c_attn.weight`` -> ``transformer.h.3``), else its owner module
    (``transformer.wte.weight`` -> ``transformer.wte``); a parameter of the root module is
    listed by its own name."""
    parts = parameter.split(".")
    if len(parts) == 1:
        return parameter
    for i, part in enumerate(parts):
        if part.isdigit():
            return ".".join(parts[: i + 1])
    return ".".join(parts[:-1])


def pipeline_split(plan: Plan, graph: "Graph | None" = None) -> list[list[str]]:
    """Per stage, the modules whose parameters it holds, in model order (first use): what
    torch.distributed.pipelining's split points take. Modules without parameters (activations,
    dropout) belong to the stage of their neighbours and are not listed."""
    op_stage = plan.op_stages()
    split: list[list[str]] = [[] for _ in range(plan.stage_count)]
    owner: dict[str, int] = {}
    for name, op in sorted(_parameter_ops(plan, graph).items(), key=lambda kv: kv[1]):
        stage = int(op_stage[op])
        module = module_of(name)
        if module in owner:
            if owner[module] != stage:
                raise UnsupportedError(
                    f"module {module!r} has parameters in stages {owner[module]} and {stage} "
                    f"({name!r}): no module-level split matches this plan", 6)
            continue
        owner[module] = stage
        split[stage].append(module)
    return split


def schedule_csv(plan: Plan) -> str:
    """The plan's 1F1B order in torch.distributed.pipelining's compute-only CSV
    (``PipelineScheduleMulti._load_csv``): one row per pipeline rank (stage s on rank s), one
    action per cell, ``{stage}F{microbatch}`` or ``{stage}B{microbatch}`` (full backward).
    UnsupportedError for a plan made for another schedule ("zb-h1" splits the backward,
    "interleaved-1f1b" puts several stages on a rank, in an order the per-stage lists do not
    give)."""
    if plan.schedule != "1f1b":
        raise UnsupportedError(
            f"schedule_csv: the plan's schedule is {plan.schedule!r}; only 1F1B plans are "
            "written (plan with zero_bubble and interleave off)", 6)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for stage in range(plan.stage_count):
        writer.writerow([f"{stage}{'B' if kind == 'backward' else 'F'}{mb}"
                         for kind, mb in plan.stage_schedule(stage)])
    return buf.getvalue()


