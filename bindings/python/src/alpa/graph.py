"""Operator graphs (a training step as an HLO-like graph), the model zoo and auto-sharding."""
from __future__ import annotations

import ctypes
import json
import os
from ctypes import POINTER, byref, c_char_p, c_double, c_int32, c_int64, c_void_p
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from ._handle import Owner
from ._lib import alpa_collective, buffer_call, c_doc, call, check_count, cstr, lib
from .cluster import DTYPES, Cluster, ClusterLike, Mesh
from .errors import InvalidArgumentError
from .problem import (
    ProgressArg,
    SolveOptions,
    SolveStatus,
    _arr,
    _ptr,
    run_with_options,
)
from ._run import CancelToken

OP_KINDS: dict[str, int] = {
    "parameter": 0, "constant": 1, "iota": 2,
    "neg": 10, "abs": 11, "exp": 12, "log": 13, "tanh": 14, "sqrt": 15, "rsqrt": 16,
    "gelu": 17, "relu": 18, "convert": 19,
    "add": 30, "sub": 31, "mul": 32, "div": 33, "max": 34, "min": 35, "pow": 36,
    "compare": 37, "select": 38,
    "dot_general": 50, "convolution": 51,
    "broadcast_in_dim": 60, "reshape": 61, "transpose": 62, "slice": 63, "concatenate": 64,
    "pad": 65, "reverse": 66,
    "reduce_sum": 80, "reduce_max": 81, "reduce_window": 82, "select_and_scatter": 83,
    "gather": 90, "scatter_add": 91,
}  # fmt: skip
ROLES = {"activation": 0, "parameter": 1, "gradient": 2, "optimizer_state": 3, "input": 4}
PHASES = {"forward": 0, "backward": 1, "update": 2}
# The attribute words that name a comparison (compare: [COMPARISONS["le"]]) or a reduction
# (reduce_window: [REDUCTIONS["max"], ...]): ALPA_CMP_* and ALPA_REDUCE_* of alpa.h.
COMPARISONS = {"eq": 0, "ne": 1, "lt": 2, "le": 3, "gt": 4, "ge": 5}
REDUCTIONS = {"sum": 0, "max": 1}
COLLECTIVES = ("all_gather", "all_reduce", "reduce_scatter", "all_to_all", "send_recv")
_KIND_NAMES = {v: k for k, v in OP_KINDS.items()}
_DTYPE_NAMES = {v: k for k, v in DTYPES.items()}
_ROLE_NAMES = {v: k for k, v in ROLES.items()}
_PHASE_NAMES = {v: k for k, v in PHASES.items()}


def _codes(values: Any, table: Mapping[str, int], what: str, n: int) -> "np.ndarray | None":
    """Names or numbers -> an int32 array of length n (None stays None)."""
    if values is None:
        return None
    if isinstance(values, np.ndarray) and values.dtype.kind in "iu":
        out = np.ascontiguousarray(values.reshape(-1), dtype=np.int32)
    else:
        codes = []
        for v in values:
            if isinstance(v, str):
                try:
                    v = table[v]
                except KeyError:
                    raise InvalidArgumentError(f"unknown {what} {v!r}", 1) from None
            codes.append(int(v))
        out = np.array(codes, dtype=np.int32)
    if len(out) != n:
        raise InvalidArgumentError(f"{what}s: {len(out)} entries for {n} ops", 1)
    return out


def _ranges(values: Any, dtype: Any, what: str, n: int) -> "tuple[np.ndarray | None, np.ndarray | None]":
    """Per-op ranges given as a list of rows, or as (offsets[n+1], flat) -> (offsets, flat)."""
    if values is None:
        return None, None
    if isinstance(values, tuple) and len(values) == 2 and not isinstance(values[0], (list, tuple)) \
            and np.ndim(values[0]) == 1 and len(values[0]) == n + 1:
        offsets = np.ascontiguousarray(values[0], dtype=np.int64)
        flat = np.ascontiguousarray(values[1], dtype=dtype).reshape(-1)
        # The C call reads flat[offsets[0] .. offsets[n]): check the bounds here.
        if len(offsets) and (offsets.min() < 0 or offsets[-1] > len(flat)):
            raise InvalidArgumentError(
                f"{what}: offsets reach {int(offsets[-1])} but the flat array has {len(flat)} "
                "entries", 1)
        return offsets, flat
    rows = [np.asarray(r if r is not None else (), dtype=dtype).reshape(-1) for r in values]
    if len(rows) != n:
        raise InvalidArgumentError(f"{what}: {len(rows)} entries for {n} ops", 1)
    offsets = np.zeros(n + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(r) for r in rows])
    flat = np.ascontiguousarray(np.concatenate(rows) if rows else np.zeros(0), dtype=dtype)
    return offsets, flat


@dataclass(frozen=True)
class Op:
    """One op of a graph (queried through the C getters)."""

    id: int
    kind: str
    dtype: str
    shape: tuple[int, ...]
    operands: tuple[int, ...]
    attrs: tuple[int, ...]
    role: str
    phase: str
    layer: int
    name: str
    alias: int
    value: float
    # Where the op came from in the program it was imported from (the HLO importer: the
    # instruction's metadata op_name); "" if none.
    source: str = ""
    # Autodiff treats the result as a constant (Graph.set_stop_gradient).
    stop_gradient: bool = False


@dataclass(frozen=True)
class ModelPreset:
    """A preset of the model zoo (experimental catalog)."""

    name: str
    family: str
    spec: str
    nominal_params: int
    benchmark_gpus: int
    description: str


@c_doc("alpa_model_zoo_to_json")
def models() -> list[ModelPreset]:
    """The model-zoo presets (gpt-350m ... wresnet-13b)."""
    doc = json.loads(buffer_call(lib.alpa_model_zoo_to_json))
    return [
        ModelPreset(p["name"], p["family"], p["spec"], int(p["nominal_params"]),
                    int(p["benchmark_gpus"]), p.get("description", ""))
        for p in doc["presets"]
    ]


class Graph(Owner):
    """An operator graph: ``Graph()`` starts an empty one in the building state; add ops with
    ``add_ops`` (whole numpy arrays at once) or ``add_op`` (one at a time), set aliases and
    outputs, then ``finalize()``. ``Graph.from_model(spec)``, ``Graph.read(path)`` and
    ``Graph.from_json(text)`` give finalized graphs. A finalized graph is immutable and may be
    shared between threads."""

    _kind = "alpa_graph"

    def __init__(self, _ptr: Optional[int] = None) -> None:
        if _ptr is None:
            out = c_void_p()
            call(lib.alpa_graph_create, byref(out))
            _ptr = out.value
        self._own(_ptr, lib.alpa_graph_destroy, self._kind)

    @classmethod
    @c_doc("alpa_model_build_graph")
    def from_model(cls, spec: str) -> "Graph":
        """The training-step graph of a model-zoo spec ("gpt-350m", "mlp:layers=2", ...)."""
        out = c_void_p()
        call(lib.alpa_model_build_graph, byref(out), spec.encode())
        return cls(out.value)

    @classmethod
    @c_doc("alpa_graph_read_file")
    def read(cls, path: "str | os.PathLike[str]") -> "Graph":
        out = c_void_p()
        call(lib.alpa_graph_read_file, byref(out), os.fsencode(path))
        return cls(out.value)

    @classmethod
    @c_doc("alpa_graph_read_buffer")
    def from_json(cls, data: "str | bytes | Mapping[str, Any]") -> "Graph":
        if isinstance(data, Mapping):
            data = json.dumps(data)
        raw = data.encode() if isinstance(data, str) else bytes(data)
        out = c_void_p()
        call(lib.alpa_graph_read_buffer, byref(out), raw, len(raw))
        return cls(out.value)

    @classmethod
    @c_doc("alpa_graph_read_hlo_buffer")
    def from_hlo(cls, text: "str | bytes") -> "Graph":
        """Imports XLA HLO text of a JAX step, e.g.
        ``jax.jit(step, donate_argnums=(0, 1)).lower(params, opt_state, batch).as_text(
        dialect="hlo", debug_info=True)`` (docs/hlo-import.md)."""
        raw = text.encode() if isinstance(text, str) else bytes(text)
        out = c_void_p()
        call(lib.alpa_graph_read_hlo_buffer, byref(out), raw, len(raw))
        return cls(out.value)

    @classmethod
    @c_doc("alpa_graph_read_hlo_file")
    def read_hlo(cls, path: "str | os.PathLike[str]") -> "Graph":
        """Imports an XLA HLO text file (Graph.from_hlo)."""
        out = c_void_p()
        call(lib.alpa_graph_read_hlo_file, byref(out), os.fsencode(path))
        return cls(out.value)

    # ---- building ----
    @c_doc("alpa_graph_add_ops")
    def add_ops(
        self,
        kinds: Any,
        *,
        dtypes: Any = None,
        roles: Any = None,
        phases: Any = None,
        layers: Any = None,
        operands: Any = None,
        shapes: Any = None,
        attrs: Any = None,
        values: Any = None,
        names: "Sequence[str | None] | None" = None,
    ) -> range:
        """Appends ops in one call and returns their ids. ``kinds``, ``dtypes``, ``roles`` and
        ``phases`` are arrays of codes or lists of names ("dot_general", "f32", "parameter",
        "forward"; dtype -1 or None: inferred); ``layers`` an int array (-1: none). The ragged
        per-op ``operands``, ``shapes`` and ``attrs`` are a list of rows or an
        ``(offsets[n+1], flat)`` pair of arrays, exactly the C layout. ``values``: constant /
        pad values. All or nothing: on error no op is added and the exception names the op."""
        if isinstance(kinds, np.ndarray) and kinds.dtype.kind in "iu":
            n = len(kinds)
        else:
            kinds = list(kinds)
            n = len(kinds)
        k = _codes(kinds, OP_KINDS, "op kind", n)
        if dtypes is not None and not (isinstance(dtypes, np.ndarray) and dtypes.dtype.kind in "iu"):
            dtypes = [-1 if d is None else d for d in dtypes]
        dt = _codes(dtypes, DTYPES, "dtype", n)
        ro = _codes(roles, ROLES, "role", n)
        ph = _codes(phases, PHASES, "phase", n)
        la = None if layers is None else _arr(layers, np.int32)
        if la is not None and len(la) != n:
            raise InvalidArgumentError(f"layers: {len(la)} entries for {n} ops", 1)
        oo, od = _ranges(operands, np.int32, "operands", n)
        so, sd = _ranges(shapes, np.int64, "shapes", n)
        ao, ad = _ranges(attrs, np.int64, "attrs", n)
        va = None if values is None else _arr([0.0 if v is None else v for v in values], np.float64)
        nm = None
        if names is not None:
            if len(names) != n:
                raise InvalidArgumentError(f"names: {len(names)} entries for {n} ops", 1)
            nm = (c_char_p * n)(*[None if s is None else s.encode() for s in names])
        first = self.op_count
        call(
            lib.alpa_graph_add_ops, self._ptr, n,
            _ptr(k, c_int32), _ptr(dt, c_int32), _ptr(ro, c_int32), _ptr(ph, c_int32),
            _ptr(la, c_int32),
            _ptr(oo, c_int64), _ptr(od, c_int32),
            _ptr(so, c_int64), _ptr(sd, c_int64),
            _ptr(ao, c_int64), _ptr(ad, c_int64),
            _ptr(va, c_double), nm,
        )  # fmt: skip
        return range(first, first + n)

    def add_op(
        self,
        kind: "str | int",
        operands: Sequence[int] = (),
        *,
        shape: "Sequence[int] | None" = None,
        dtype: "str | int | None" = None,
        attrs: Sequence[int] = (),
        role: "str | int" = "activation",
        phase: "str | int" = "forward",
        layer: int = 0,
        value: float = 0.0,
        name: "str | None" = None,
    ) -> int:
        """Appends one op and returns its id (see add_ops)."""
        return self.add_ops(
            [kind], dtypes=[dtype], roles=[role], phases=[phase], layers=[layer],
            operands=[list(operands)], shapes=[list(shape or ())], attrs=[list(attrs)],
            values=[value], names=[name],
        )[0]  # fmt: skip

    @c_doc("alpa_graph_set_alias")
    def set_alias(self, op: int, parameter: int) -> "Graph":
        call(lib.alpa_graph_set_alias, self._ptr, op, parameter)
        return self

    @c_doc("alpa_graph_set_stop_gradient")
    def set_stop_gradient(self, op: int, flag: bool = True) -> "Graph":
        call(lib.alpa_graph_set_stop_gradient, self._ptr, op, 1 if flag else 0)
        return self

    @c_doc("alpa_graph_set_outputs")
    def set_outputs(self, ids: Sequence[int]) -> "Graph":
        a = _arr(ids, np.int32)
        call(lib.alpa_graph_set_outputs, self._ptr, len(a), _ptr(a, c_int32))
        return self

    @c_doc("alpa_graph_finalize")
    def finalize(self) -> "Graph":
        call(lib.alpa_graph_finalize, self._ptr)
        return self

    # ---- queries ----
    @property
    def op_count(self) -> int:
        return int(lib.alpa_graph_op_count(self._ptr))

    def __len__(self) -> int:
        return self.op_count

    def _fill(self, fn: Any, op: int, ctype: Any) -> tuple[int, ...]:
        n = check_count(fn(self._ptr, op, None, 0))
        buf = (ctype * n)()
        check_count(fn(self._ptr, op, buf, n))
        return tuple(buf)

    def op(self, i: int) -> Op:
        """One op's kind, dtype, shape, operands, attribute words, role, phase, layer, name,
        alias, value, source and stop_gradient mark."""
        if not 0 <= i < self.op_count:
            raise IndexError(f"op {i} out of range (the graph has {self.op_count} ops)")
        p = self._ptr
        return Op(
            id=i,
            kind=_KIND_NAMES.get(lib.alpa_graph_op_kind(p, i), str(lib.alpa_graph_op_kind(p, i))),
            dtype=_DTYPE_NAMES.get(lib.alpa_graph_op_dtype(p, i), "?"),
            shape=self._fill(lib.alpa_graph_op_shape, i, c_int64),
            operands=self._fill(lib.alpa_graph_op_operands, i, c_int32),
            attrs=self._fill(lib.alpa_graph_op_attrs, i, c_int64),
            role=_ROLE_NAMES.get(lib.alpa_graph_op_role(p, i), "?"),
            phase=_PHASE_NAMES.get(lib.alpa_graph_op_phase(p, i), "?"),
            layer=int(lib.alpa_graph_op_layer(p, i)),
            name=cstr(lib.alpa_graph_op_name(p, i)),
            alias=int(lib.alpa_graph_op_alias(p, i)),
            value=float(lib.alpa_graph_op_value(p, i)),
            source=cstr(lib.alpa_graph_op_source(p, i)),
            stop_gradient=lib.alpa_graph_op_stop_gradient(p, i) == 1,
        )

    @property
    def ops(self) -> list[Op]:
        return [self.op(i) for i in range(self.op_count)]

    @property
    def outputs(self) -> list[int]:
        n = check_count(lib.alpa_graph_outputs(self._ptr, None, 0))
        buf = (c_int32 * n)()
        check_count(lib.alpa_graph_outputs(self._ptr, buf, n))
        return list(buf)

    def to_arrays(self) -> dict[str, Any]:
        """The graph as the keyword arguments of ``add_ops`` (numpy arrays, the C layout), so
        that ``Graph().add_ops(**g.to_arrays())`` rebuilds it (then set aliases and outputs)."""
        ops = self.ops

        def ranges(rows: list[tuple[int, ...]], dtype: Any) -> tuple[np.ndarray, np.ndarray]:
            offsets = np.zeros(len(rows) + 1, dtype=np.int64)
            offsets[1:] = np.cumsum([len(r) for r in rows])
            flat = np.array([x for r in rows for x in r], dtype=dtype)
            return offsets, flat

        return {
            "kinds": np.array([OP_KINDS[o.kind] for o in ops], dtype=np.int32),
            "dtypes": np.array([DTYPES[o.dtype] for o in ops], dtype=np.int32),
            "roles": np.array([ROLES[o.role] for o in ops], dtype=np.int32),
            "phases": np.array([PHASES[o.phase] for o in ops], dtype=np.int32),
            "layers": np.array([o.layer for o in ops], dtype=np.int32),
            "operands": ranges([o.operands for o in ops], np.int32),
            "shapes": ranges([o.shape for o in ops], np.int64),
            "attrs": ranges([o.attrs for o in ops], np.int64),
            "values": np.array([o.value for o in ops], dtype=np.float64),
            "names": [o.name or None for o in ops],
        }

    @c_doc("alpa_graph_make_training")
    def make_training(self, optimizer: str = "adam") -> "Graph":
        """The training step of this finalized forward graph (loss first among its outputs):
        backward pass and the optimizer's update ("adam", "sgd:lr=0.1", "momentum", ...), as a
        new finalized graph."""
        out = c_void_p()
        call(lib.alpa_graph_make_training, byref(out), self._ptr, optimizer.encode())
        return Graph(out.value)

    @c_doc("alpa_graph_to_json")
    def to_json(self) -> str:
        return buffer_call(lib.alpa_graph_to_json, self._ptr).decode()

    @c_doc("alpa_graph_stats_to_json")
    def stats(self) -> dict[str, Any]:
        """Op counts, parameters, FLOPs and bytes of a finalized graph."""
        return json.loads(buffer_call(lib.alpa_graph_stats_to_json, self._ptr))

    def auto_shard(self, mesh: "Mesh | Sequence[int]", cluster: "ClusterLike | None" = None,
                   **options: Any) -> "ShardingPlan":
        """``alpa.auto_shard(self, mesh, cluster, **options)``."""
        return auto_shard(self, mesh, cluster, **options)

    def plan(self, cluster: ClusterLike = "p3.16xlarge:2", **options: Any) -> Any:
        """``alpa.plan(self, cluster, **options)``: pipeline-plan this graph (one microbatch, or
        the global batch with ``batch_dim=D``)."""
        from .plan import plan

        return plan(self, cluster, **options)

    def __repr__(self) -> str:
        return "<alpa.Graph (closed)>" if self.closed else f"<alpa.Graph {self.op_count} ops>"


@dataclass(frozen=True)
class Collective:
    """One collective a sharding plan inserts."""

    kind: str
    mesh_dims: tuple[int, ...]
    inside_op: bool
    gradient_sync: bool
    bytes: float
    cost: float
    tensor: int
    consumer: int
    operand: int


def _collectives(fn: Any, *args: Any) -> list[Collective]:
    size = ctypes.sizeof(alpa_collective)
    n = check_count(fn(*args, None, 0, size))
    buf = (alpa_collective * n)()
    check_count(fn(*args, buf, n, size))
    return [
        Collective(
            kind=COLLECTIVES[c.kind] if 0 <= c.kind < len(COLLECTIVES) else str(c.kind),
            mesh_dims=tuple(d for d in range(32) if c.mesh_dims >> d & 1),
            inside_op=bool(c.flags & 1),
            gradient_sync=bool(c.flags & 2),
            bytes=c.bytes, cost=c.cost, tensor=c.tensor, consumer=c.consumer, operand=c.operand,
        )  # fmt: skip
        for c in buf
    ]


class ShardingPlan(Owner):
    """The result of auto-sharding: one strategy per op, the collectives to insert and the cost
    split. Immutable; holds its own copy of the graph."""

    _kind = "alpa_sharding_plan"

    def __init__(self, _ptr: int) -> None:
        self._own(_ptr, lib.alpa_sharding_plan_destroy, self._kind)

    @property
    def status(self) -> SolveStatus:
        return SolveStatus(lib.alpa_sharding_plan_status(self._ptr))

    @property
    def objective(self) -> float:
        return float(lib.alpa_sharding_plan_objective(self._ptr))

    @property
    def lower_bound(self) -> float:
        return float(lib.alpa_sharding_plan_lower_bound(self._ptr))

    @property
    def costs(self) -> dict[str, float]:
        """{"compute", "communication", "resharding"}: they add up to the objective."""
        return {
            name: float(lib.alpa_sharding_plan_cost(self._ptr, i))
            for i, name in enumerate(("compute", "communication", "resharding"))
        }

    @property
    def peak_memory_bytes(self) -> int:
        return int(lib.alpa_sharding_plan_peak_memory_bytes(self._ptr))

    @property
    def message(self) -> str:
        return cstr(lib.alpa_sharding_plan_message(self._ptr))

    def collective_counts(self, combined: bool = True) -> dict[str, int]:
        """Collectives by kind (combined: gradient synchronizations fused per kind and dims)."""
        n = check_count(lib.alpa_sharding_plan_collective_counts(self._ptr, int(combined), None, 0))
        buf = (c_int64 * n)()
        check_count(lib.alpa_sharding_plan_collective_counts(self._ptr, int(combined), buf, n))
        return {COLLECTIVES[i] if i < len(COLLECTIVES) else str(i): int(v) for i, v in enumerate(buf)}

    @property
    def op_strategies(self) -> np.ndarray:
        """The strategy index of each op (-1: free or fused)."""
        n = check_count(lib.alpa_sharding_plan_op_strategies(self._ptr, None, 0))
        out = np.zeros(n, dtype=np.int32)
        check_count(lib.alpa_sharding_plan_op_strategies(self._ptr, _ptr(out, c_int32), n))
        return out

    @property
    def collectives(self) -> list[Collective]:
        return _collectives(lib.alpa_sharding_plan_collectives, self._ptr)

    @c_doc("alpa_sharding_plan_op_spec")
    def op_spec(self, op: int) -> str:
        """The layout of op ``op``'s result ("S0 R", "R S01", ...)."""
        return buffer_call(lib.alpa_sharding_plan_op_spec, self._ptr, op).decode()

    @c_doc("alpa_sharding_plan_to_json")
    def to_json(self) -> str:
        return buffer_call(lib.alpa_sharding_plan_to_json, self._ptr).decode()

    def __repr__(self) -> str:
        if self.closed:
            return "<alpa.ShardingPlan (closed)>"
        return f"<alpa.ShardingPlan {self.status.name} objective={self.objective:.6g}>"


GraphLike = Union[Graph, str, "os.PathLike[str]"]


def _as_graph(graph: GraphLike) -> tuple[Graph, bool]:
    if isinstance(graph, Graph):
        return graph, False
    text = os.fspath(graph)
    if os.path.isfile(text):
        return Graph.read(text), True
    return Graph.from_model(text), True


@c_doc("alpa_graph_auto_shard")
def auto_shard(
    graph: GraphLike,
    mesh: "Mesh | Sequence[int]",
    cluster: "ClusterLike | None" = None,
    *,
    cost_model: "str | None" = None,
    zero: "str | None" = None,
    force_data_parallel: "bool | None" = None,
    batch_mesh_dim: "int | str | None" = None,
    allow_all_gather: "bool | None" = None,
    allow_all_to_all: "bool | None" = None,
    memory_budget_bytes: "int | None" = None,
    time_limit: "float | None" = None,
    deterministic: "bool | None" = None,
    threads: "int | None" = None,
    relative_gap: "float | None" = None,
    progress: ProgressArg = None,
    cancel: "CancelToken | None" = None,
) -> ShardingPlan:
    """Alpa's intra-op pass: auto-shards a finalized graph (a ``Graph``, a graph JSON file or a
    model-zoo spec) on one logical mesh.

    ``mesh``: a ``Mesh``, or a shape such as ``(2, 4)``: with a cluster, the mesh of a submesh
    of that many devices (hosts x devices per host inferred from the cluster), without one an
    abstract mesh in Alpa's units (``cost_model`` then defaults to "alpa"). The option names are
    the library's (``alpa_solve_options_set_by_name``). No answer raises (``InfeasibleError`` for
    a memory budget no plan meets, ``SolveTimeoutError``, ``CancelledError``)."""
    g, owned_graph = _as_graph(graph)
    owned: list[Owner] = [g] if owned_graph else []
    try:
        c = None
        if cluster is not None:
            c = Cluster.parse(cluster)
            if c is not cluster:
                owned.append(c)
        if isinstance(mesh, Mesh):
            m = mesh
        else:
            shape = [int(x) for x in mesh]
            if c is None:
                m = Mesh.abstract(shape)
                if cost_model is None:
                    cost_model = "alpa"
            else:
                total = int(np.prod(shape))
                per_host = c.devices_per_host
                hosts, dph = (1, total) if total <= per_host else (total // per_host, per_host)
                m = Mesh.from_cluster(c, hosts, dph, shape)
            owned.append(m)
        options = {
            "cost_model": cost_model,
            "zero": zero,
            "force_data_parallel": force_data_parallel,
            "batch_mesh_dim": batch_mesh_dim,
            "allow_all_gather": allow_all_gather,
            "allow_all_to_all": allow_all_to_all,
            "memory_budget_bytes": memory_budget_bytes,
            "time_limit_seconds": time_limit,
            "deterministic": deterministic,
            "threads": threads,
            "relative_gap": relative_gap,
        }
        with SolveOptions(options) as opts:
            out = c_void_p()

            def run() -> None:
                call(lib.alpa_graph_auto_shard, byref(out), g._ptr, m._ptr,
                     c._ptr if c is not None else None, opts._ptr)

            run_with_options(opts, progress, cancel, "auto-shard", run)
            return ShardingPlan(out.value)
    finally:
        for o in owned:
            o.close()
