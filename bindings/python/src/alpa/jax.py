"""libalpa for JAX users: import a jitted train step, plan it, and run the plan's shardings.

    import alpa
    step = alpa.parallelize(train_step, cluster="p3.16xlarge:1", donate_argnums=(0, 1))
    params, opt_state, loss = step(params, opt_state, batch)   # plans on the first call

    hlo, arg_paths = alpa.jax.lower_step(train_step, params, opt_state, batch)
    graph = alpa.jax.import_step(train_step, params, opt_state, batch)    # an alpa.Graph
    plan = alpa.plan(graph, "p3.16xlarge:1", microbatches=1, pipeline_stages=1)
    sh = plan.jax_shardings(mesh, args=(params, opt_state, batch), fn=train_step)
    jax.jit(alpa.jax.constrain_activations(train_step, sh), in_shardings=sh.args)

The step is lowered to HLO text with its metadata (``as_text(dialect="hlo", debug_info=True)``),
read by libalpa's HLO importer (``alpa.Graph.from_hlo``), whose parameter ops are named by the
arguments' pytree paths (``params['h0']['w']``). A plan's layout of those ops, in libalpa's
spec notation over the stage's logical mesh (``"R S0"``, ``"S01 R"``), becomes a
``jax.sharding.PartitionSpec`` over a ``jax.sharding.Mesh`` (docs/jax.md). Only the intra-op part
of a plan maps onto one jitted step: a plan of several pipeline stages is refused.

Activations: ``lower_step`` lowers the step's jaxpr with each top-level equation under a name
scope ``alpa_eqn<k>:<primitive>`` (k its index), which reaches every HLO instruction's op_name
and so every imported op's ``source``. A plan's layout of the value an equation returns is an
``ActivationConstraint`` of equation k; ``constrain_activations`` re-traces the step and puts
``jax.lax.with_sharding_constraint`` on equation k's output of the same shape and dtype.

Importing ``alpa`` does not import jax; this module does (ImportError when jax is missing).
"""
from __future__ import annotations

import functools
import inspect
import math
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

try:
    import jax
    import numpy as np
    from jax._src import core as jax_core
    from jax._src import source_info_util
    from jax.sharding import Mesh, NamedSharding, PartitionSpec
except ImportError as e:  # pragma: no cover - exercised only without jax
    raise ImportError(
        "alpa.jax needs jax (pip install jax); libalpa's other Python APIs work without it"
    ) from e

from .errors import InvalidArgumentError, UnsupportedError
from .graph import Graph

__all__ = [
    "ActivationConstraint", "ConstraintReport", "JaxShardings", "Parallelized",
    "UnmatchedConstraintWarning", "constrain_activations", "import_step", "lower_step",
    "make_mesh", "parallelize", "partition_spec", "shardings",
]  # fmt: skip

DEFAULT_AXIS_NAMES = ("x", "y", "z", "w")

# Roles of the graph's entry parameters (alpa.graph.ROLES): what the step takes as arguments.
_ARGUMENT_ROLES = ("parameter", "optimizer_state", "input")


# ---- the step's equations ---------------------------------------------------------------------
# The name scope lower_step puts each top-level equation of the step's jaxpr under,
# "alpa_eqn<k>:<primitive>"; it reaches the op_name of every HLO instruction the equation lowers
# to (nested jits' included: the importer sources a called computation's ops under the call's
# op_name). The primitive is recorded because the op_name's own last component may be another
# (integer_pow(x, -1) lowers through a "div").
EQUATION_SCOPE = "alpa_eqn"
_EQUATION_IN_SOURCE = re.compile(r"\b" + EQUATION_SCOPE + r"(\d+):([^/;()\s]+)")


def trace_step(fn: Callable[..., Any], args: Sequence[Any]) -> tuple[Any, Any]:
    """``fn(*args)``'s closed jaxpr and the tree structure of its result, traced from the
    arguments' shapes and dtypes only: arguments that carry a sharding (the tracers of a step
    jitted with ``in_shardings``) give JAX's tracing ``reshard`` equations, which would number
    the equations unlike ``lower_step``'s."""

    def plain(x: Any) -> Any:
        aval = jax.typeof(x)
        return jax.ShapeDtypeStruct(aval.shape, aval.dtype, weak_type=aval.weak_type)

    abstract = jax.tree_util.tree_map(plain, tuple(args))
    closed, out_shape = jax.make_jaxpr(fn, return_shape=True)(*abstract)
    return closed, jax.tree_util.tree_structure(out_shape)


def run_equations(closed: Any, flat_args: Sequence[Any], *, scope_equations: bool = False,
                  after_equation: Optional[Callable[[int, Any, list], list]] = None) -> list:
    """Evaluates a closed jaxpr equation by equation (as ``jax.core.eval_jaxpr``, each equation
    under its own name stack): with ``scope_equations`` each equation k under one more name
    scope ``alpa_eqn<k>:<primitive>``; with ``after_equation``, ``after_equation(k, eqn,
    outputs)`` replaces equation k's outputs (a list, one per outvar)."""
    jaxpr = closed.jaxpr
    env: dict[Any, Any] = {}

    def read(v: Any) -> Any:
        return v.val if isinstance(v, jax_core.Literal) else env[v]

    env.update(zip(jaxpr.constvars, closed.consts))
    env.update(zip(jaxpr.invars, flat_args))
    for k, eqn in enumerate(jaxpr.eqns):
        params = eqn.primitive.get_bind_params(eqn.params)
        name_stack = source_info_util.current_name_stack() + eqn.source_info.name_stack
        if scope_equations:
            name_stack = name_stack.extend(f"{EQUATION_SCOPE}{k}:{eqn.primitive.name}")
        with source_info_util.user_context(eqn.source_info.traceback, name_stack=name_stack), \
                eqn.ctx.manager:
            result = eqn.primitive.bind(*map(read, eqn.invars), **params)
        outputs = list(result) if eqn.primitive.multiple_results else [result]
        if after_equation is not None:
            outputs = after_equation(k, eqn, outputs)
        env.update(zip(eqn.outvars, outputs))
    return [read(v) for v in jaxpr.outvars]


def _rerun_as(fn: Callable[..., Any], closed: Any, out_tree: Any, **how: Any) -> Callable:
    """A function of ``fn``'s signature and name (JAX names the HLO parameters and the jit by
    them) that runs ``closed`` by ``run_equations(..., **how)``."""

    def rerun(*args: Any) -> Any:
        flat = run_equations(closed, jax.tree_util.tree_leaves(args), **how)
        return jax.tree_util.tree_unflatten(out_tree, flat)

    return functools.wraps(fn)(rerun)


# ---- lowering and import --------------------------------------------------------------------
def lower_step(fn: Callable[..., Any], *args: Any,
               donate_argnums: "int | Sequence[int]" = (),
               scope_equations: bool = True) -> tuple[str, list[str]]:
    """Lowers ``fn(*args)`` with ``jax.jit`` and returns ``(hlo_text, arg_paths)``: the HLO text
    with metadata that ``alpa.Graph.from_hlo`` reads, and per flattened leaf of ``args`` its
    pytree path as the HLO names it (``"params['w1']['kernel']"``). Every argument is kept
    (``keep_unused=True``) so that HLO parameter i is leaf i. With ``scope_equations`` (the
    default) equation k of ``fn``'s jaxpr is lowered under the name scope
    ``alpa_eqn<k>:<primitive>``, which the imported ops' sources keep and ``shardings`` maps
    activation layouts back by; the HLO is otherwise the same."""
    target = fn
    if scope_equations:
        closed, out_tree = trace_step(fn, args)
        target = _rerun_as(fn, closed, out_tree, scope_equations=True)
    jitted = jax.jit(target, donate_argnums=donate_argnums, keep_unused=True)
    lowered = jitted.lower(*args)
    text = lowered.as_text(dialect="hlo", debug_info=True)
    leaves = jax.tree_util.tree_leaves(args)
    names = entry_parameter_names(text)
    paths = [names.get(i, "") for i in range(len(leaves))]
    return text, paths


def import_step(fn: Callable[..., Any], *args: Any,
                donate_argnums: "int | Sequence[int]" = ()) -> Graph:
    """``fn(*args)`` lowered (``lower_step``) and read by libalpa's HLO importer: a finalized
    ``alpa.Graph`` of the whole step (forward, backward, update)."""
    text, _ = lower_step(fn, *args, donate_argnums=donate_argnums)
    return graph_from_hlo(text)


def graph_from_hlo(text: str) -> Graph:
    """``alpa.Graph.from_hlo(text)`` (the C importer, alpa_graph_read_hlo_buffer)."""
    from_hlo = getattr(Graph, "from_hlo", None)
    if from_hlo is None:
        raise UnsupportedError(
            "this build of the alpa package has no HLO importer (alpa.Graph.from_hlo)", 6)
    return from_hlo(text)


_ENTRY_START = re.compile(r"^ENTRY\s")
_PARAMETER = re.compile(
    r"=\s*\S+\s+parameter\((\d+)\).*?metadata=\{[^}]*?op_name=\"((?:[^\"\\]|\\.)*)\"")


def entry_parameter_names(hlo_text: str) -> dict[int, str]:
    """Parameter number -> the op_name of its metadata (the argument's pytree path), for the
    ENTRY computation of HLO text (escapes such as ``\\'`` undone)."""
    out: dict[int, str] = {}
    in_entry = False
    for line in hlo_text.splitlines():
        if _ENTRY_START.match(line):
            in_entry = True
            continue
        if in_entry and line.startswith("}"):
            break
        if in_entry:
            m = _PARAMETER.search(line)
            if m:
                out[int(m.group(1))] = _unescape(m.group(2))
    return out


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def input_output_aliases(hlo_text: str) -> dict[int, int]:
    """Output tuple index -> parameter number, from the module header's input_output_alias (the
    donated arguments whose buffers the outputs reuse)."""
    header = hlo_text.split("\n", 1)[0]
    m = re.search(r"input_output_alias=\{(.*?)\}\s*(,\s*\w+=|$)", header)
    if not m:
        return {}
    out: dict[int, int] = {}
    for om in re.finditer(r"\{(\d*)\}:\s*\((\d+),", m.group(1)):
        out[int(om.group(1) or 0)] = int(om.group(2))
    return out


def argument_paths(fn: Optional[Callable[..., Any]], args: Sequence[Any],
                   arg_names: Optional[Sequence[str]] = None) -> list[str]:
    """Per flattened leaf of ``args``, the path JAX's lowering names it by: the argument's name
    in ``fn``'s signature (or ``arg_names``) followed by ``jax.tree_util.keystr`` of the leaf's
    path inside it (``"params['h0']['w']"``, ``"opt_state[1][0]"``)."""
    if arg_names is None:
        if fn is None:
            raise InvalidArgumentError("argument paths need fn or arg_names", 1)
        arg_names = _positional_names(fn, len(args))
    if len(arg_names) != len(args):
        raise InvalidArgumentError(f"arg_names: {len(arg_names)} names for {len(args)} arguments", 1)
    out = []
    for name, arg in zip(arg_names, args):
        for path, _ in jax.tree_util.tree_flatten_with_path(arg)[0]:
            out.append(name + jax.tree_util.keystr(path))
    return out


def _positional_names(fn: Callable[..., Any], count: int) -> list[str]:
    """JAX's names of the first ``count`` positional arguments: the signature's names, then
    ``args[k]`` for those a ``*args`` takes."""
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    params = list(inspect.signature(fn).parameters.values())
    named = [p.name for p in params if p.kind in positional]
    rest = next((p.name for p in params if p.kind == inspect.Parameter.VAR_POSITIONAL), "args")
    return [named[i] if i < len(named) else f"{rest}[{i - len(named)}]" for i in range(count)]


# ---- specs and meshes -----------------------------------------------------------------------
@dataclass(frozen=True)
class _Spec:
    dims: tuple[tuple[int, ...], ...]  # per tensor dim, the logical mesh dims it is split over
    partial: tuple[int, ...]


def parse_spec(text: str) -> Optional[_Spec]:
    """libalpa's spec text ("S0 R S1", "R R partial(1)", "scalar", optionally followed by
    "  (strategy: ...)" as alpa_plan_op_spec prints it) -> its dims; None for "" (an op
    without a layout of its own: free, fused or of no stage)."""
    text = text.split("  (strategy:", 1)[0].strip()
    if not text:
        return None
    dims: list[tuple[int, ...]] = []
    partial: tuple[int, ...] = ()
    for token in text.split():
        if token == "scalar":
            continue
        if token == "R":
            dims.append(())
        elif re.fullmatch(r"S\d+", token):
            dims.append(tuple(int(c) for c in token[1:]))
        elif m := re.fullmatch(r"partial\(([\d,]*)\)", token):
            partial = tuple(int(c) for c in m.group(1).split(",") if c)
        else:
            raise InvalidArgumentError(f"spec {text!r}: token {token!r} is not R, S<dims> or "
                                       "partial(...)", 1)
    return _Spec(tuple(dims), partial)


def mesh_axis_groups(logical_mesh: Sequence[int], mesh_shape: Sequence[int],
                     axis_names: Sequence[str]) -> list[tuple[str, ...]]:
    """Per logical mesh dim of a plan, the JAX mesh axes it is: consecutive axes whose sizes
    multiply to its size (a size-1 dim is no axis). Both meshes order devices row-major, so a
    logical (8, 1) mesh is axes (("x", "y"), ()) of a JAX (2, 4) mesh. InvalidArgumentError when
    the logical mesh is no such regrouping (a logical (4, 2) mesh on a JAX (2, 4) one)."""
    if math.prod(logical_mesh) != math.prod(mesh_shape):
        raise InvalidArgumentError(
            f"the plan's logical mesh {tuple(logical_mesh)} has {math.prod(logical_mesh)} "
            f"devices; the JAX mesh {tuple(mesh_shape)} has {math.prod(mesh_shape)}", 1)
    groups: list[tuple[str, ...]] = []
    axis = 0
    for size in logical_mesh:
        group: list[str] = []
        product = 1
        while product < size and axis < len(mesh_shape):
            product *= mesh_shape[axis]
            if mesh_shape[axis] > 1:
                group.append(axis_names[axis])
            axis += 1
        if product != size:
            raise InvalidArgumentError(
                f"the plan's logical mesh {tuple(logical_mesh)} is not a regrouping of the JAX "
                f"mesh's axes {dict(zip(axis_names, mesh_shape))} (build the JAX mesh with the "
                "plan's logical mesh shape: alpa.jax.make_mesh(plan))", 1)
        groups.append(tuple(group))
    return groups


def partition_spec(spec_text: str, groups: Sequence[tuple[str, ...]]) -> PartitionSpec:
    """One op's spec text as a PartitionSpec over the JAX axes of each logical mesh dim
    (``mesh_axis_groups``). A partial sum has no PartitionSpec: its dims' splits are kept and
    the sum is left to the compiler (only activations are partial)."""
    spec = parse_spec(spec_text)
    if spec is None:
        return PartitionSpec()
    entries: list[Any] = []
    for mesh_dims in spec.dims:
        axes = tuple(a for d in mesh_dims for a in groups[d])
        entries.append(None if not axes else axes[0] if len(axes) == 1 else axes)
    while entries and entries[-1] is None:
        entries.pop()
    return PartitionSpec(*entries)


def _single_stage(plan: Any) -> Any:
    if plan.stage_count != 1:
        raise UnsupportedError(
            f"the plan has {plan.stage_count} pipeline stages; a jitted JAX step runs one stage's "
            "intra-op sharding (plan with pipeline_stages=1)", 6)
    return plan.stages[0]


def make_mesh(plan: Any, mesh_shape: Optional[Sequence[int]] = None,
              axis_names: Optional[Sequence[str]] = None,
              devices: Optional[Sequence[Any]] = None) -> Mesh:
    """A ``jax.sharding.Mesh`` for a one-stage plan: the stage's devices (plan device i is
    ``jax.devices()[i]``) in the plan's logical mesh shape, or in ``mesh_shape`` when given
    (its axes must regroup the logical mesh's dims, see ``mesh_axis_groups``)."""
    stage = _single_stage(plan)
    devices = list(jax.devices() if devices is None else devices)
    if max(stage.devices) >= len(devices):
        raise InvalidArgumentError(
            f"the plan's stage uses devices {min(stage.devices)}..{max(stage.devices)}; JAX "
            f"has {len(devices)} (plan on a cluster of as many devices as JAX sees)", 1)
    shape = tuple(mesh_shape) if mesh_shape is not None else tuple(stage.logical_mesh)
    names = tuple(axis_names) if axis_names is not None else DEFAULT_AXIS_NAMES[: len(shape)]
    if len(names) != len(shape):
        raise InvalidArgumentError(f"axis_names {names} for a mesh of {len(shape)} dims", 1)
    mesh_axis_groups(stage.logical_mesh, shape, names)  # raises when it cannot be mapped
    grid = np.array([devices[d] for d in stage.devices], dtype=object).reshape(shape)
    return Mesh(grid, names)


# ---- shardings of a plan --------------------------------------------------------------------
@dataclass(frozen=True)
class ActivationConstraint:
    """The plan's layout of a value an equation of the step computes.

    ``equation``, ``primitive``: k and p of the ``alpa_eqn<k>:<p>`` scope in the op's source
    (the equation's index in the step's jaxpr and its primitive); ``source``: the op's source,
    its name (``"jit(step)/jvp(layers_1)/alpa_eqn3:dot_general/dot_general"``); ``op``,
    ``op_id``: the graph op (its HLO instruction); ``shape``, ``dtype``: its type (``dtype``
    as JAX names it); ``spec``: its layout as a ``PartitionSpec``."""

    equation: int
    primitive: str
    source: str
    op: str
    op_id: int
    shape: tuple[int, ...]
    dtype: str
    spec: PartitionSpec


@dataclass
class JaxShardings:
    """A one-stage plan's layouts as JAX shardings.

    ``by_name``: pytree path (the graph op's name) -> ``NamedSharding`` for every parameter,
    optimizer state and input op of the planned graph. ``activations``: op name ->
    ``PartitionSpec`` for every named activation op with a layout of its own (for
    ``jax.lax.with_sharding_constraint``; see ``constrain``). ``constraints``: the
    ``ActivationConstraint`` of every value of an equation of the step the plan lays out, by
    ``source`` (``source#op_id`` where ops share one; graphs lowered by ``lower_step``; see
    ``constrain_activations``). ``args``: when
    the step's example arguments were given, a pytree like them of ``NamedSharding`` (leaves the
    graph does not name are replicated), to pass as ``jax.jit(..., in_shardings=sh.args)``."""

    mesh: Mesh
    by_name: dict[str, NamedSharding]
    activations: dict[str, PartitionSpec]
    args: Any = None
    unmatched: list[str] = field(default_factory=list)
    constraints: dict[str, ActivationConstraint] = field(default_factory=dict)

    def for_args(self, args: Sequence[Any], paths: Sequence[str]) -> tuple[Any, list[str]]:
        """A pytree like ``args`` of the shardings of its leaves, given each leaf's path; and
        the paths the plan has no entry for (those leaves are replicated)."""
        leaves, treedef = jax.tree_util.tree_flatten(tuple(args))
        if len(paths) != len(leaves):
            raise InvalidArgumentError(f"{len(paths)} paths for {len(leaves)} leaves", 1)
        replicated = NamedSharding(self.mesh, PartitionSpec())
        out, missing = [], []
        for path, leaf in zip(paths, leaves):
            s = self.by_name.get(path)
            if s is None:
                missing.append(path)
                s = replicated
            elif len(s.spec) > np.ndim(leaf):
                raise InvalidArgumentError(
                    f"{path}: the plan lays out {len(s.spec)} dims, the argument has "
                    f"{np.ndim(leaf)}", 1)
            out.append(s)
        return jax.tree_util.tree_unflatten(treedef, out), missing

    def constrain(self, x: Any, op_name: str) -> Any:
        """``with_sharding_constraint(x, ...)`` with the plan's layout of activation op_name."""
        return jax.lax.with_sharding_constraint(
            x, NamedSharding(self.mesh, self.activations[op_name]))


def shardings(plan: Any, mesh: Mesh, args: Optional[Sequence[Any]] = None, *,
              fn: Optional[Callable[..., Any]] = None,
              arg_names: Optional[Sequence[str]] = None,
              arg_paths: Optional[Sequence[str]] = None) -> JaxShardings:
    """``plan.jax_shardings``: the layouts of a one-stage plan of an imported JAX step as JAX
    shardings on ``mesh`` (see ``JaxShardings``). Logical mesh dims map to the mesh's axes by
    ``mesh_axis_groups``. With ``args`` (the step's example arguments, a sequence), ``.args`` is
    their pytree of shardings; their paths come from ``arg_paths`` (``lower_step``'s), else from
    ``fn``'s signature or ``arg_names``."""
    stage = _single_stage(plan)
    groups = mesh_axis_groups(stage.logical_mesh, tuple(mesh.devices.shape), mesh.axis_names)
    graph = plan.graph()
    try:
        stages = plan.op_stages()
        ops = graph.ops
        by_name: dict[str, NamedSharding] = {}
        activations: dict[str, PartitionSpec] = {}
        constraints = activation_constraints(plan, ops, stages, groups)
        for op in ops:
            if not op.name:
                continue
            is_argument = op.kind == "parameter" and op.role in _ARGUMENT_ROLES
            if stages[op.id] < 0:
                # An op of no layer group (Adam's step counter) is copied where it is read.
                if is_argument:
                    by_name[op.name] = NamedSharding(mesh, PartitionSpec())
                continue
            text = plan.op_spec(op.id)
            if is_argument:
                by_name[op.name] = NamedSharding(mesh, partition_spec(text, groups))
            elif text:
                activations[op.name] = partition_spec(text, groups)
    finally:
        graph.close()
    out = JaxShardings(mesh, by_name, activations, constraints=_by_source(constraints))
    if args is not None:
        paths = list(arg_paths) if arg_paths is not None else argument_paths(fn, args, arg_names)
        out.args, out.unmatched = out.for_args(args, paths)
    return out


_JAX_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "f64": "float64",
               "s8": "int8", "s32": "int32", "s64": "int64", "pred": "bool"}


def equation_of(source: str) -> Optional[tuple[int, str]]:
    """``(k, primitive)`` of an op's source that names the ``alpa_eqn<k>:<primitive>`` scope
    (the first ';'-separated op_name, the one XLA's simplifier kept first, decides), else
    None."""
    m = _EQUATION_IN_SOURCE.search(source.split(";", 1)[0])
    return (int(m.group(1)), m.group(2)) if m else None


def activation_constraints(plan: Any, ops: Sequence[Any], stages: Sequence[int],
                           groups: Sequence[tuple[str, ...]]) -> list[ActivationConstraint]:
    """The values the equations of the step compute, with the plan's layouts. An equation's ops
    are those whose source names its ``alpa_eqn<k>`` scope; its values are those of its ops no
    other of its ops reads (the results of the HLO instructions it lowered to). A value is
    constrained when the plan lays it out on the stage; not a partial sum (the plan reduces it
    later, a constraint would reduce it here) and not an argument of the step."""
    members: dict[int, list[Any]] = {}
    for op in ops:
        if op.kind == "parameter":
            continue
        found = equation_of(op.source)
        if found is not None:
            members.setdefault(found[0], []).append(op)
    out: list[ActivationConstraint] = []
    for k, group in sorted(members.items()):
        ids = {op.id for op in group}
        read_inside = {i for op in group for i in op.operands if i in ids}
        for op in group:
            if op.id in read_inside or stages[op.id] < 0:
                continue
            text = plan.op_spec(op.id)
            spec = parse_spec(text)
            if spec is None or spec.partial:
                continue
            out.append(ActivationConstraint(
                equation=k, primitive=equation_of(op.source)[1], source=op.source, op=op.name,
                op_id=op.id, shape=tuple(op.shape), dtype=_JAX_DTYPES.get(op.dtype, op.dtype),
                spec=partition_spec(text, groups)))
    return out


def _by_source(constraints: Sequence[ActivationConstraint]) -> dict[str, ActivationConstraint]:
    """Constraints by source; by ``source#op_id`` where several ops share a source (the values
    of one instruction the importer lowered to several ops)."""
    counts: dict[str, int] = {}
    for c in constraints:
        counts[c.source] = counts.get(c.source, 0) + 1
    return {(c.source if counts[c.source] == 1 else f"{c.source}#{c.op_id}"): c
            for c in constraints}


class UnmatchedConstraintWarning(UserWarning):
    """An activation constraint of the plan that names no value of the traced step."""


@dataclass
class ConstraintReport:
    """What ``constrain_activations`` did at the step's last trace. ``applied``: the
    constraints put on an equation's output; ``superseded``: constraints of an output that
    another constraint of the same equation, emitted later, took; ``unmatched``: ``(constraint,
    why)`` for those that name no equation of the step, or an equation of another primitive or
    without an output of their shape and dtype."""

    applied: list[ActivationConstraint] = field(default_factory=list)
    superseded: list[ActivationConstraint] = field(default_factory=list)
    unmatched: list[tuple[ActivationConstraint, str]] = field(default_factory=list)


def _names_primitive(constraint: ActivationConstraint, eqn: Any) -> bool:
    return constraint.primitive == eqn.primitive.name


def _constrain_outputs(shardings_: JaxShardings, by_equation: Mapping[int, list],
                       report: ConstraintReport) -> Callable[[int, Any, list], list]:
    def after_equation(k: int, eqn: Any, outputs: list) -> list:
        candidates = by_equation.get(k)
        if not candidates:
            return outputs
        taken: list[ActivationConstraint] = []
        for j, var in enumerate(eqn.outvars):
            aval = var.aval
            fits = [c for c in candidates if _names_primitive(c, eqn)
                    and c.shape == tuple(aval.shape) and c.dtype == str(aval.dtype)
                    and not any(c is t for t in taken)]
            if not fits:
                continue
            # The equation's result is the last of its instructions the importer emitted.
            chosen = max(fits, key=lambda c: c.op_id)
            outputs[j] = jax.lax.with_sharding_constraint(
                outputs[j], NamedSharding(shardings_.mesh, chosen.spec))
            report.applied.append(chosen)
            report.superseded.extend(c for c in fits if c is not chosen)
            taken.extend(fits)
        for c in candidates:
            if any(c is t for t in taken):
                continue
            if not _names_primitive(c, eqn):
                why = f"equation {k} of the step is {eqn.primitive.name}, not {c.primitive}"
            else:
                types = ", ".join(f"{v.aval.dtype}{list(v.aval.shape)}" for v in eqn.outvars)
                why = (f"equation {k} ({eqn.primitive.name}) has no output of type "
                       f"{c.dtype}{list(c.shape)} (its outputs: {types})")
            report.unmatched.append((c, why))
        return outputs

    return after_equation


def constrain_activations(fn: Callable[..., Any], shardings_: JaxShardings, *,
                          on_unmatched: str = "warn") -> Callable[..., Any]:
    """``fn`` with the plan's activation layouts: a function of ``fn``'s signature that, when
    traced (under ``jax.jit``), traces ``fn``'s jaxpr and runs it equation by equation, putting
    ``jax.lax.with_sharding_constraint(x, NamedSharding(mesh, c.spec))`` on each output x of
    equation k that a constraint c of ``shardings_.constraints`` with ``c.equation == k`` fits:
    the equation's primitive is ``c.primitive``, and x has ``c.shape`` and ``c.dtype``; of
    several that fit one output, the last op emitted. Other equations are left alone. The
    jaxpr must be the one ``lower_step`` lowered (the same ``fn`` and argument types):
    equation indices are positions in it.

    A constraint that fits nothing (an index past the jaxpr's end, another primitive, no output
    of its type) is reported: ``on_unmatched="warn"`` (an ``UnmatchedConstraintWarning`` naming
    it and why), ``"raise"`` (``InvalidArgumentError``) or ``"ignore"``. The returned function's
    ``report`` is the last trace's ``ConstraintReport``."""
    if on_unmatched not in ("warn", "raise", "ignore"):
        raise InvalidArgumentError(
            f"on_unmatched={on_unmatched!r}: expected 'warn', 'raise' or 'ignore'", 1)
    by_equation: dict[int, list[ActivationConstraint]] = {}
    for c in shardings_.constraints.values():
        by_equation.setdefault(c.equation, []).append(c)

    def constrained(*args: Any) -> Any:
        closed, out_tree = trace_step(fn, args)
        report = ConstraintReport()
        flat = run_equations(closed, jax.tree_util.tree_leaves(args),
                             after_equation=_constrain_outputs(shardings_, by_equation, report))
        count = len(closed.jaxpr.eqns)
        for k in sorted(by_equation):
            if k >= count:
                report.unmatched.extend(
                    (c, f"the step has {count} equations, none numbered {k}")
                    for c in by_equation[k])
        wrapper.report = report
        _report_unmatched(report, on_unmatched)
        return jax.tree_util.tree_unflatten(out_tree, flat)

    wrapper = functools.wraps(fn)(constrained)
    wrapper.report = ConstraintReport()
    return wrapper


def _report_unmatched(report: ConstraintReport, on_unmatched: str) -> None:
    if not report.unmatched or on_unmatched == "ignore":
        return
    shown = "; ".join(f"{c.source!r} (op {c.op!r}): {why}" for c, why in report.unmatched[:5])
    more = len(report.unmatched) - 5
    message = (f"{len(report.unmatched)} activation constraint(s) of the plan match no value "
               f"of the step: {shown}" + (f"; and {more} more" if more > 0 else ""))
    if on_unmatched == "raise":
        raise InvalidArgumentError(message, 1)
    warnings.warn(message, UnmatchedConstraintWarning, stacklevel=3)


# ---- alpa.parallelize -----------------------------------------------------------------------
@dataclass
class _Compiled:
    plan: Any
    mesh: Mesh
    shardings: JaxShardings
    in_shardings: Any
    out_shardings: Any
    jitted: Any
    hlo: str
    step: Any  # the function jitted: fn, or constrain_activations(fn, shardings)


class Parallelized:
    """A JAX step run with a libalpa plan (``alpa.parallelize``). Calling it plans on the first
    call per argument shapes and dtypes (lower, import, one-stage plan, mesh, shardings) and runs
    ``jax.jit(fn, in_shardings=..., out_shardings=...)``, ``fn``'s activations constrained to the
    plan's layouts unless ``constrain`` is false. ``get_plan(*args)``, ``get_mesh(*args)``,
    ``constraint_report(*args)`` and ``lower(*args)`` expose what it runs."""

    def __init__(self, fn: Callable[..., Any], cluster: Any, donate_argnums: Sequence[int],
                 mesh_shape: Optional[Sequence[int]], axis_names: Optional[Sequence[str]],
                 plan_options: Mapping[str, Any], constrain: bool = True) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.cluster = cluster
        self.donate_argnums = tuple(donate_argnums)
        self.mesh_shape = mesh_shape
        self.axis_names = axis_names
        self.plan_options = dict(plan_options)
        self.constrain = constrain
        self._cache: dict[Any, _Compiled] = {}

    def _key(self, args: Sequence[Any]) -> Any:
        leaves, treedef = jax.tree_util.tree_flatten(tuple(args))
        return treedef, tuple((tuple(np.shape(x)), str(np.result_type(x))) for x in leaves)

    def compile(self, *args: Any) -> _Compiled:
        """Plans the step for these argument shapes (cached) and returns what it runs."""
        key = self._key(args)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        from .plan import plan as plan_graph

        text, paths = lower_step(self.fn, *args, donate_argnums=self.donate_argnums)
        options = {"microbatches": 1, "pipeline_stages": 1, **self.plan_options}
        with graph_from_hlo(text) as graph:
            plan = plan_graph(graph, self.cluster, **options)
        mesh = make_mesh(plan, self.mesh_shape, self.axis_names)
        sh = shardings(plan, mesh, args, arg_paths=paths)
        flat_in = jax.tree_util.tree_leaves(sh.args)
        out_tree = jax.tree_util.tree_structure(jax.eval_shape(self.fn, *args))
        # A donated argument's output takes the argument's sharding, so that its buffer is
        # reused and the next step's input needs no resharding; other outputs are left to XLA.
        aliases = input_output_aliases(text)
        flat_out = [flat_in[aliases[i]] if i in aliases else None
                    for i in range(out_tree.num_leaves)]
        out_shardings = jax.tree_util.tree_unflatten(out_tree, flat_out)
        step = constrain_activations(self.fn, sh) if self.constrain else self.fn
        jitted = jax.jit(step, in_shardings=tuple(sh.args), out_shardings=out_shardings,
                         donate_argnums=self.donate_argnums, keep_unused=True)
        compiled = _Compiled(plan, mesh, sh, sh.args, out_shardings, jitted, text, step)
        self._cache[key] = compiled
        return compiled

    def __call__(self, *args: Any) -> Any:
        c = self.compile(*args)
        placed = jax.device_put(tuple(args), c.in_shardings)
        return c.jitted(*placed)

    def get_plan(self, *args: Any) -> Any:
        return self.compile(*args).plan

    def get_mesh(self, *args: Any) -> Mesh:
        return self.compile(*args).mesh

    def constraint_report(self, *args: Any) -> Optional[ConstraintReport]:
        """Which activation constraints the step for these arguments carries (traced if it was
        not yet); None with ``constrain=False``."""
        c = self.compile(*args)
        if not self.constrain:
            return None
        if not (c.step.report.applied or c.step.report.unmatched):
            self.lower(*args)
        return c.step.report

    def lower(self, *args: Any) -> Any:
        """The sharded step lowered for these arguments (``.compile().as_text()`` shows the
        collectives XLA inserted for the plan's layouts)."""
        c = self.compile(*args)
        return c.jitted.lower(*jax.device_put(tuple(args), c.in_shardings))


def parallelize(fn: Optional[Callable[..., Any]] = None, *, cluster: Any,
                donate_argnums: "int | Sequence[int]" = (),
                mesh_shape: Optional[Sequence[int]] = None,
                axis_names: Optional[Sequence[str]] = None,
                constrain: bool = True,
                **plan_options: Any) -> Any:
    """``@alpa.parallelize(cluster=...)``: the JAX step ``fn`` run with libalpa's plan.

    On the first call per argument shapes the step is lowered, imported, planned on ``cluster``
    as one pipeline stage of one microbatch (``pipeline_stages=1``, ``microbatches=1``; other
    ``alpa.plan`` options pass through ``plan_options``), a JAX mesh is built from
    ``jax.devices()`` (plan device i is JAX device i; the plan's logical mesh shape, or
    ``mesh_shape`` with ``axis_names``) and the step is jitted with the plan's layouts of its
    arguments as ``in_shardings`` and, for donated arguments, as the ``out_shardings`` of the
    outputs that reuse them. With ``constrain`` (the default) the step's activations the plan lays
    out are pinned to those layouts (``constrain_activations``; a constraint that matches
    nothing gives an ``UnmatchedConstraintWarning``); without, XLA propagates the arguments'
    layouts. The cluster must have as many devices as JAX gives the plan."""
    if isinstance(donate_argnums, int):
        donate_argnums = (donate_argnums,)

    def wrap(f: Callable[..., Any]) -> Parallelized:
        return Parallelized(f, cluster, tuple(donate_argnums), mesh_shape, axis_names,
                            plan_options, constrain)

    return wrap if fn is None else wrap(fn)
