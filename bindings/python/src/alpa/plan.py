"""Pipeline planning (Alpa's two-level search), plans, and their simulation."""
from __future__ import annotations

import ctypes
import json
import os
import re
from ctypes import byref, c_int32, c_int64, c_void_p
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import numpy as np

from ._handle import Owner
from ._lib import (
    LAUNCH_DEEPSPEED,
    LAUNCH_MEGATRON,
    SCHEDULE_1F1B,
    SCHEDULE_GPIPE,
    SCHEDULE_INTERLEAVED_1F1B,
    SCHEDULE_ZB_H1,
    alpa_baseline_point,
    alpa_manual_plan,
    alpa_plan_progress,
    alpa_plan_progress_fn,
    alpa_simulated_stage,
    alpa_slice_move,
    alpa_stage_info,
    alpa_transfer,
    buffer_call,
    c_doc,
    call,
    check_count,
    cstr,
    lib,
)
from ._run import CallbackGuard, CancelToken, OptionsObject
from .cluster import Cluster, ClusterLike
from .errors import InvalidArgumentError, UnsupportedError
from .graph import Collective, Graph, _collectives
from .problem import ProgressArg, run_with_options

# Pipeline schedules by the names the plan JSON and the CLI use (ALPA_SCHEDULE_*).
SCHEDULES = {
    "1f1b": SCHEDULE_1F1B,
    "gpipe": SCHEDULE_GPIPE,
    "zb-h1": SCHEDULE_ZB_H1,
    "interleaved-1f1b": SCHEDULE_INTERLEAVED_1F1B,
}
LAUNCH_FRAMEWORKS = {"megatron": LAUNCH_MEGATRON, "deepspeed": LAUNCH_DEEPSPEED}


@dataclass(frozen=True)
class PlanProgress:
    """One progress report of a planning call: the phase ("build", "cluster", "intra-op",
    "dp"), the microbatch count being planned and its intra-op solves done / total."""

    seconds: float
    phase: str
    microbatches: int
    done: int
    total: int


@dataclass(frozen=True)
class Submesh:
    """A stage's physical submesh: hosts x devices per host."""

    hosts: int
    devices_per_host: int

    @property
    def devices(self) -> int:
        return self.hosts * self.devices_per_host


# What a stage recomputes in the backward, by alpa_stage_info.remat / alpa_manual_plan.remat
# (0 none, 1 full, 2 selective), named as the "remat" option takes it.
_RECOMPUTE_KINDS = ("off", "on", "selective")


def _recompute_name(kind: int) -> str:
    """"off", "on" or "selective" for the C value; "search" for a kind this binding does not
    know (a newer library)."""
    return _RECOMPUTE_KINDS[kind] if 0 <= kind < len(_RECOMPUTE_KINDS) else "search"


@dataclass(frozen=True)
class Stage:
    """One pipeline stage: its layer groups, submesh, logical mesh, physical devices, how it
    shards (data / tensor parallel degrees, ZeRO, recomputation) and its predicted figures.

    ``recompute`` is what the backward recomputes: "off", "on" (full: every forward) or
    "selective" (only the attention cores: scores, softmax, their product with V), the values
    the ``remat`` option takes. ``remat`` is True when anything is recomputed, full or
    selective."""

    index: int
    first_layer: int
    last_layer: int
    submesh: Submesh
    logical_mesh: tuple[int, ...]
    devices: tuple[int, ...]
    data_parallel: int
    tensor_parallel: int
    zero: bool
    remat: bool
    latency_seconds: float
    iteration_overhead_seconds: float
    memory_bytes: int
    in_flight: int
    forward_latency_seconds: Optional[float] = None
    activation_bytes: Optional[int] = None
    recompute: str = "off"
    # ZeRO-2: gradients reduce-scattered every microbatch and accumulated as shards (implies zero).
    shard_gradients: bool = False
    # ZeRO-3: weights held as shards over the data-parallel devices, gathered where read.
    shard_parameters: bool = False

    @property
    def layers(self) -> range:
        """The layer groups of the stage (inclusive range first..last)."""
        return range(self.first_layer, self.last_layer + 1)


@dataclass(frozen=True)
class Transfer:
    """A tensor one stage sends another each microbatch (or once per iteration)."""

    from_stage: int
    to_stage: int
    tensor: int
    bytes: int
    seconds: float
    direction: Optional[str] = None
    once_per_iteration: Optional[bool] = None


@dataclass(frozen=True)
class SliceMove:
    """One slice of a transfer's tensor sent from one device to another."""

    src_device: int
    dst_device: int
    offsets: tuple[int, ...]
    sizes: tuple[int, ...]
    bytes: int


@dataclass(frozen=True)
class Prediction:
    """The planner's predicted figures for one training iteration."""

    iteration_seconds: float
    period_seconds: float
    schedule_seconds: float
    microbatches: int
    peak_memory_bytes: int
    tflops_per_device: float
    compile_seconds: float


@dataclass(frozen=True)
class ManualPlanSpec:
    """A Megatron-LM style configuration (experimental).

    ``remat``, every stage's recomputation: False / "off", True / "on" (full: every forward
    recomputed) or "selective" (only the attention cores). It is kept as False, True or
    "selective" (the plan JSON's values; truthy when anything is recomputed); ``recompute``
    gives it as "off", "on" or "selective"."""

    data_parallel: int = 1
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    microbatches: int = 1
    zero_stage: int = 0  # 0 off, 1 optimizer state sharded, 2 gradients too, 3 weights too
    remat: "bool | str" = False
    tensor_inside_host: bool = True
    # Stages per device group: 1, or v >= 2 for interleaved 1F1B (pipeline_parallel x v stages,
    # stage s on the devices of group s % pipeline_parallel; the plan's schedule
    # "interleaved-1f1b").
    virtual_stages: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "remat", _remat_value(self.remat))

    @property
    def recompute(self) -> str:
        """"off", "on" (full) or "selective"."""
        return _recompute_of(self.remat)


def _remat_value(value: Any) -> "bool | str":
    """A recomputation as the plan JSON writes it: False, True or "selective". Takes those,
    "off" / "on", and alpa_manual_plan.remat's 0 / 1 / 2."""
    if isinstance(value, str):
        names = {"off": False, "on": True, "selective": "selective"}
        if value.lower() in names:
            return names[value.lower()]
    elif isinstance(value, (bool, np.bool_)):
        return bool(value)
    elif isinstance(value, (int, np.integer)) and 0 <= value <= 2:
        return (False, True, "selective")[int(value)]
    raise InvalidArgumentError(
        f'remat must be False / "off", True / "on" or "selective" (got {value!r})', 1)


def _recompute_of(remat: "bool | str") -> str:
    """"off", "on" or "selective" for a value of _remat_value."""
    return "selective" if remat == "selective" else ("on" if remat else "off")


@dataclass(frozen=True)
class BaselinePoint:
    """One grid point of a Megatron-LM baseline search (experimental)."""

    spec: ManualPlanSpec
    feasible: bool
    iteration_seconds: float


@dataclass(frozen=True)
class SimulatedStage:
    """One stage of a simulated iteration: busy + communication wait + idle = the iteration."""

    busy_seconds: float
    communication_wait_seconds: float
    idle_seconds: float
    bubble_fraction: float
    finish_seconds: float
    peak_in_flight: int
    peak_memory_bytes: int


class Simulation(Owner):
    """One training iteration of a plan simulated event by event (experimental)."""

    _kind = "alpa_simulation"

    def __init__(self, _ptr: int) -> None:
        self._own(_ptr, lib.alpa_simulation_destroy, self._kind)

    @property
    def iteration_seconds(self) -> float:
        return float(lib.alpa_simulation_iteration_seconds(self._ptr))

    @property
    def closed_form_seconds(self) -> float:
        return float(lib.alpa_simulation_closed_form_seconds(self._ptr))

    @property
    def planner_seconds(self) -> float:
        return float(lib.alpa_simulation_planner_seconds(self._ptr))

    @property
    def stages(self) -> list[SimulatedStage]:
        out = []
        for s in range(lib.alpa_simulation_stage_count(self._ptr)):
            st = alpa_simulated_stage()
            call(lib.alpa_simulation_stage, byref(st), ctypes.sizeof(st), self._ptr, s)
            out.append(SimulatedStage(st.busy_seconds, st.communication_wait_seconds,
                                      st.idle_seconds, st.bubble_fraction, st.finish_seconds,
                                      st.peak_in_flight, st.peak_memory_bytes))
        return out

    @c_doc("alpa_simulation_timeline_to_svg")
    def timeline_svg(self, width: int = 0) -> str:
        return buffer_call(lib.alpa_simulation_timeline_to_svg, self._ptr, width).decode()

    @c_doc("alpa_simulation_to_json")
    def to_json(self) -> str:
        return buffer_call(lib.alpa_simulation_to_json, self._ptr).decode()

    def __repr__(self) -> str:
        if self.closed:
            return "<alpa.Simulation (closed)>"
        return f"<alpa.Simulation iteration={self.iteration_seconds:.6g}s>"


def _stage_from_json(i: int, s: Mapping[str, Any]) -> Stage:
    return Stage(
        index=i,
        first_layer=int(s["layers"][0]),
        last_layer=int(s["layers"][1]),
        submesh=Submesh(int(s["submesh"][0]), int(s["submesh"][1])),
        logical_mesh=tuple(int(x) for x in s["logical_mesh"]),
        devices=tuple(int(x) for x in s["devices"]),
        data_parallel=int(s["data_parallel"]),
        tensor_parallel=int(s["tensor_parallel"]),
        zero=bool(s["zero"]),
        shard_gradients=bool(s.get("shard_gradients", False)),
        shard_parameters=bool(s.get("shard_parameters", False)),
        remat=bool(s["remat"]),  # false, true or "selective"
        latency_seconds=float(s["latency_seconds"]),
        iteration_overhead_seconds=float(s["iteration_overhead_seconds"]),
        memory_bytes=int(s["memory_bytes"]),
        in_flight=int(s["in_flight"]),
        forward_latency_seconds=s.get("forward_latency_seconds"),
        activation_bytes=s.get("activation_bytes"),
        recompute=_recompute_of(_remat_value(s["remat"])),
    )


class Plan(Owner):
    """A pipeline plan: stages (layers, submesh, logical mesh, devices, sharding), the transfers
    between them and the predicted figures. Plans made by ``alpa.plan`` hold the library's
    handle (per-op layouts, schedules, slice moves, the detailed JSON); ``Plan.from_json`` gives
    a detached plan with the same stages and figures that can be simulated but not queried per
    op (libalpa's ABI has no call that loads a plan handle from JSON)."""

    _kind = "alpa_plan"

    def __init__(self, _ptr: Optional[int] = None, *, _json: Optional[str] = None) -> None:
        self._detached = _ptr is None
        if _ptr is not None:
            self._own(_ptr, lib.alpa_plan_destroy, self._kind)
            _json = buffer_call(lib.alpa_plan_to_json, self._ptr, 0).decode()
        assert _json is not None
        self._json_text = _json
        doc = json.loads(_json)
        if doc.get("format") != "alpa-plan":
            raise InvalidArgumentError('plan JSON: "format" is not "alpa-plan"', 1)
        self._doc = doc
        self.model: str = doc.get("model", "")
        self.num_layers: int = len(doc.get("layers", []))
        # The schedule the plan is made for (a name of SCHEDULES): its prediction assumes it,
        # and simulate() / timeline_svg() run it by default.
        self.schedule: str = doc.get("schedule", "1f1b")
        self.cluster_json: dict[str, Any] = doc.get("cluster", {})
        extra = doc.get("stages", [])
        if self._detached:
            self.stages: list[Stage] = [_stage_from_json(i, s) for i, s in enumerate(extra)]
            self.transfers: list[Transfer] = [
                Transfer(int(t["from_stage"]), int(t["to_stage"]), int(t["tensor"]),
                         int(t["bytes"]), float(t["seconds"]), t.get("direction"),
                         t.get("once_per_iteration"))
                for t in doc.get("transfers", [])
            ]
            self.prediction = Prediction(
                iteration_seconds=float(doc["iteration_seconds"]),
                period_seconds=float(doc["period_seconds"]),
                schedule_seconds=float(doc["schedule_seconds"]),
                microbatches=int(doc["microbatches"]),
                peak_memory_bytes=int(doc["peak_memory_bytes"]),
                tflops_per_device=float(doc["tflops_per_device"]),
                compile_seconds=float(doc.get("compile_seconds", float("nan"))),
            )
        else:
            self.stages = [self._stage(i, extra[i] if i < len(extra) else {})
                           for i in range(lib.alpa_plan_stage_count(self._ptr))]
            self.transfers = self._transfers(doc.get("transfers", []))
            p = self._ptr
            self.prediction = Prediction(
                iteration_seconds=float(lib.alpa_plan_iteration_seconds(p)),
                period_seconds=float(lib.alpa_plan_period_seconds(p)),
                schedule_seconds=float(lib.alpa_plan_schedule_seconds(p)),
                microbatches=int(lib.alpa_plan_microbatches(p)),
                peak_memory_bytes=int(lib.alpa_plan_peak_memory_bytes(p)),
                tflops_per_device=float(lib.alpa_plan_tflops_per_device(p)),
                compile_seconds=float(lib.alpa_plan_compile_seconds(p)),
            )

    # ---- construction from the handle ----
    def _stage(self, i: int, extra: Mapping[str, Any]) -> Stage:
        info = alpa_stage_info()
        call(lib.alpa_plan_stage, byref(info), ctypes.sizeof(info), self._ptr, i)
        n = check_count(lib.alpa_plan_stage_devices(self._ptr, i, None, 0))
        devs = (c_int64 * n)()
        check_count(lib.alpa_plan_stage_devices(self._ptr, i, devs, n))
        return Stage(
            index=i,
            first_layer=info.first_layer,
            last_layer=info.last_layer,
            submesh=Submesh(info.submesh_hosts, info.submesh_devices_per_host),
            logical_mesh=tuple(info.logical_mesh[: info.logical_ndim]),
            devices=tuple(devs),
            data_parallel=info.data_parallel,
            tensor_parallel=info.tensor_parallel,
            zero=bool(info.zero),
            shard_gradients=info.zero == 2,
            shard_parameters=info.zero == 3,
            remat=info.remat != 0,
            latency_seconds=info.latency_seconds,
            iteration_overhead_seconds=info.iteration_overhead_seconds,
            memory_bytes=info.memory_bytes,
            in_flight=info.in_flight,
            forward_latency_seconds=extra.get("forward_latency_seconds"),
            activation_bytes=extra.get("activation_bytes"),
            recompute=_recompute_name(info.remat),
        )

    def _transfers(self, extra: Sequence[Mapping[str, Any]]) -> list[Transfer]:
        size = ctypes.sizeof(alpa_transfer)
        n = check_count(lib.alpa_plan_transfers(self._ptr, None, 0, size))
        buf = (alpa_transfer * n)()
        check_count(lib.alpa_plan_transfers(self._ptr, buf, n, size))
        # The JSON lists the same transfers; match its extra fields by (from, to, tensor).
        by_key = {(t["from_stage"], t["to_stage"], t["tensor"]): t for t in extra}
        out = []
        for t in buf:
            e = by_key.get((t.from_stage, t.to_stage, t.tensor), {})
            out.append(Transfer(t.from_stage, t.to_stage, t.tensor, t.bytes, t.seconds,
                                e.get("direction"), e.get("once_per_iteration")))
        return out

    def _handle(self) -> int:
        if self._detached:
            raise UnsupportedError(
                "this Plan was loaded from JSON: libalpa's ABI has no call that turns plan JSON "
                "back into a plan handle, so per-op queries need a plan made by alpa.plan()", 6)
        return self._ptr

    # ---- figures ----
    @property
    def detached(self) -> bool:
        """True for a plan loaded from JSON (no library handle)."""
        return self._detached

    @property
    def iteration_seconds(self) -> float:
        """The predicted iteration time: what the planner ranks plans by."""
        return self.prediction.iteration_seconds

    @property
    def microbatches(self) -> int:
        return self.prediction.microbatches

    @property
    def submeshes(self) -> list[Submesh]:
        return [s.submesh for s in self.stages]

    @property
    def stage_count(self) -> int:
        return len(self.stages)

    @property
    def virtual_stages(self) -> int:
        """Stages per device group: 1, or v >= 2 for an "interleaved-1f1b" plan, whose stage s
        then runs on the devices of stage s % (stage_count // v)."""
        if self._detached:
            return int(self._doc.get("virtual_stages", 1))
        return int(lib.alpa_plan_virtual_stages(self._ptr))

    # ---- serialization ----
    @c_doc("alpa_plan_to_json")
    def to_json(self, detail: int = 0) -> str:
        """The plan as one JSON object (``alpa plan --json`` prints detail 0; ``-o`` writes
        detail 1, with per-op strategies and slice moves). A detached plan returns the JSON it
        was loaded from (whatever its detail)."""
        if self._detached:
            return self._json_text
        return buffer_call(lib.alpa_plan_to_json, self._ptr, detail).decode()

    @classmethod
    def from_json(cls, data: "str | bytes | Mapping[str, Any]") -> "Plan":
        """A detached plan from plan JSON (``to_json``, ``alpa plan --json`` / ``-o``): stages,
        transfers and predicted figures, and ``simulate()`` / ``timeline_svg()`` through
        alpa_plan_simulate_json. Per-op queries raise UnsupportedError: the ABI has no plan
        reader."""
        if isinstance(data, Mapping):
            text = json.dumps(data)
        else:
            text = data.decode() if isinstance(data, (bytes, bytearray)) else str(data)
        try:
            json.loads(text)
        except json.JSONDecodeError as e:
            from .errors import ParseError

            raise ParseError(f"plan JSON: {e}", 10) from None
        return cls(_json=text)

    # ---- simulation ----
    @c_doc("alpa_plan_simulate", "alpa_plan_simulate_json", "alpa_plan_simulate_programs")
    def simulate(self, schedule: "str | None" = None, programs: bool = False) -> Simulation:
        """Simulates one training iteration under ``schedule``: None (default) the plan's own
        (``Plan.schedule``, as predicted), or "1f1b", "gpipe", "zb-h1", "interleaved-1f1b" (an
        interleaved plan simulates under nothing else, a plain one never under it:
        InvalidArgumentError). With ``programs=True`` from the plan's device programs, every
        instruction priced by the cost model (``alpa simulate --programs``; a plan made by
        alpa.plan())."""
        name = self.schedule if schedule is None else schedule
        sched = SCHEDULES.get(name.lower())
        if sched is None:
            raise InvalidArgumentError(
                f"unknown schedule {name!r} ({', '.join(SCHEDULES)})", 1)
        out = c_void_p()
        if programs:
            call(lib.alpa_plan_simulate_programs, byref(out), self._handle(), sched)
        elif self._detached:
            raw = self._json_text.encode()
            call(lib.alpa_plan_simulate_json, byref(out), raw, len(raw), sched)
        else:
            call(lib.alpa_plan_simulate, byref(out), self._ptr, sched)
        return Simulation(out.value)

    def timeline_svg(self, width: int = 0, schedule: "str | None" = None) -> str:
        """The simulated iteration's timeline as an SVG picture (``alpa plan --svg``); schedule
        as for ``simulate`` (default: the plan's own)."""
        with self.simulate(schedule) as sim:
            return sim.timeline_svg(width)

    # ---- per-op and per-stage detail (plans with a handle) ----
    @c_doc("alpa_plan_op_spec")
    def op_spec(self, op: int) -> str:
        """Layout and strategy of op ``op`` of the planned graph on its stage's mesh."""
        return buffer_call(lib.alpa_plan_op_spec, self._handle(), op).decode()

    def op_specs(self) -> list[str]:
        """``op_spec`` of every op of the planned graph."""
        n = check_count(lib.alpa_plan_op_stages(self._handle(), None, 0))
        return [self.op_spec(i) for i in range(n)]

    def op_stages(self) -> np.ndarray:
        """Per op of the planned graph, the stage that computes it (-1: no layer)."""
        p = self._handle()
        n = check_count(lib.alpa_plan_op_stages(p, None, 0))
        out = np.zeros(n, dtype=np.int32)
        check_count(lib.alpa_plan_op_stages(p, out.ctypes.data_as(ctypes.POINTER(c_int32)), n))
        return out

    def graph(self) -> Graph:
        """A copy of the planned microbatch graph (op ids as in op_spec / op_stages)."""
        out = c_void_p()
        call(lib.alpa_plan_copy_graph, byref(out), self._handle())
        return Graph(out.value)

    def stage_collectives(self, stage: int) -> list[Collective]:
        return _collectives(lib.alpa_plan_stage_collectives, self._handle(), stage)

    def stage_schedule(self, stage: int) -> list[tuple[str, int]]:
        """The stage's tasks in the order of the plan's schedule (``Plan.schedule``): ("forward"
        | "backward" | "weight", microbatch). Under ZB-H1 "backward" is the input gradient alone
        and "weight" the weight gradient; under interleaved 1F1B the stage's own tasks, in its
        device group's order."""
        p = self._handle()
        n = check_count(lib.alpa_plan_stage_schedule(p, stage, None, 0))
        buf = (c_int32 * n)()
        check_count(lib.alpa_plan_stage_schedule(p, stage, buf, n))
        kinds = ("forward", "backward", "weight")
        return [(kinds[buf[i]] if 0 <= buf[i] < len(kinds) else "backward", buf[i + 1])
                for i in range(0, n, 2)]

    @c_doc("alpa_plan_transfer_moves")
    def transfer_moves(self, transfer: int) -> list[SliceMove]:
        p = self._handle()
        size = ctypes.sizeof(alpa_slice_move)
        n = check_count(lib.alpa_plan_transfer_moves(p, transfer, None, 0, size))
        buf = (alpa_slice_move * n)()
        check_count(lib.alpa_plan_transfer_moves(p, transfer, buf, n, size))
        return [SliceMove(m.src_device, m.dst_device, tuple(m.offsets[: m.rank]),
                          tuple(m.sizes[: m.rank]), m.bytes) for m in buf]

    @property
    def manual_spec(self) -> Optional[ManualPlanSpec]:
        """The configuration of a manual / baseline plan (None for a searched plan)."""
        if self._detached:
            return None  # the JSON's "baseline" object is reported as is in to_json()
        spec = alpa_manual_plan()
        err = c_void_p()
        if lib.alpa_plan_manual_spec(byref(spec), ctypes.sizeof(spec), self._ptr, byref(err)) != 0:
            lib.alpa_error_free(err)
            return None
        return _spec_from_c(spec)

    @c_doc("alpa_plan_launch_config")
    def launch_config(self, framework: str = "megatron") -> str:
        """The manual / baseline plan as a launch configuration: "megatron" (a torchrun command
        with Megatron-LM's flags) or "deepspeed" (a ds_config.json after '#' note lines)."""
        kind = LAUNCH_FRAMEWORKS.get(framework.lower())
        if kind is None:
            raise InvalidArgumentError(
                f"unknown framework {framework!r} (megatron or deepspeed)", 1)
        return buffer_call(lib.alpa_plan_launch_config, self._handle(), kind).decode()

    def baseline_table(self) -> list[BaselinePoint]:
        """The grid points a baseline search evaluated, fastest first ([] for other plans)."""
        p = self._handle()
        size = ctypes.sizeof(alpa_baseline_point)
        n = check_count(lib.alpa_plan_baseline_table(p, None, 0, size))
        buf = (alpa_baseline_point * n)()
        check_count(lib.alpa_plan_baseline_table(p, buf, n, size))
        return [BaselinePoint(_spec_from_c(b), bool(b.feasible), b.iteration_seconds) for b in buf]

    def jax_shardings(self, mesh: Any, args: "Sequence[Any] | None" = None, **kwargs: Any) -> Any:
        """This one-stage plan's layouts as JAX shardings on a ``jax.sharding.Mesh``: a
        ``NamedSharding`` per parameter, optimizer state and input (by pytree path), a
        ``PartitionSpec`` per activation (by op name), and with ``args`` (the step's example
        arguments) a pytree of shardings like them for ``jax.jit(in_shardings=...)``. For a
        plan of an imported JAX step (``alpa.jax.import_step``); ``alpa.jax.shardings`` documents
        ``fn`` / ``arg_names`` / ``arg_paths``. Needs jax."""
        from .jax import shardings

        return shardings(self, mesh, args, **kwargs)

    # ---- text ----
    def summary(self) -> str:
        """A readable stage table with the predicted figures (as ``alpa plan`` prints)."""
        pr = self.prediction
        n = len(self.stages)
        lines = [
            f"Plan: {n} pipeline stage{'s' if n != 1 else ''}, {pr.microbatches} microbatch"
            f"{'es' if pr.microbatches != 1 else ''}, {self._schedule_text()} schedule"
            + (f"  ({self.model})" if self.model else ""),
            f"{'stage':<6}{'layers':<8}{'submesh':<9}{'mesh':<10}{'devices':<12}{'dp x tp':<9}"
            f"{'zero':<6}{'remat':<6}{'latency/mb':<13}{'sync+update':<13}memory/device",
        ]
        for s in self.stages:
            layers = f"{s.first_layer}-{s.last_layer}" if s.last_layer != s.first_layer else str(s.first_layer)
            lines.append(
                f"{s.index:<6}{layers:<8}{'(%d,%d)' % (s.submesh.hosts, s.submesh.devices_per_host):<9}"
                f"{'(' + ','.join(map(str, s.logical_mesh)) + ')':<10}{_ranges_text(s.devices):<12}"
                f"{'%d x %d' % (s.data_parallel, s.tensor_parallel):<9}"
                f"{'yes' if s.zero else 'no':<6}{_REMAT_COLUMN.get(s.recompute, '?'):<6}"
                f"{_seconds(s.latency_seconds):<13}{_seconds(s.iteration_overhead_seconds):<13}"
                f"{_bytes(s.memory_bytes)}"
            )
        device_memory = self.cluster_json.get("device_memory_bytes")
        lines += [
            "",
            f"predicted iteration time  {_seconds(pr.iteration_seconds)}  ({pr.microbatches} "
            f"microbatch{'es' if pr.microbatches != 1 else ''}; {_seconds(pr.period_seconds)} per "
            "microbatch in the steady state)",
            f"throughput                {pr.tflops_per_device:.1f} TFLOP/s per device",
            f"peak memory per device    {_bytes(pr.peak_memory_bytes)}"
            + (f" of {_bytes(int(device_memory))}" if device_memory else ""),
            f"compile time              {_seconds(pr.compile_seconds)}",
        ]
        return "\n".join(lines)

    def _schedule_text(self) -> str:
        """The schedule as ``alpa plan`` prints it."""
        if self.schedule == "interleaved-1f1b":
            return f"interleaved 1F1B ({self.virtual_stages} stages per device group)"
        return self.schedule.upper()

    def __repr__(self) -> str:
        return (
            f"<alpa.Plan {len(self.stages)} stages, {self.prediction.microbatches} microbatches, "
            f"iteration {_seconds(self.prediction.iteration_seconds)}"
            f"{', detached' if self._detached else ''}>"
        )


# The summary's remat column, as the alpa program prints it.
_REMAT_COLUMN = {"off": "no", "on": "full", "selective": "sel"}


def _spec_from_c(s: Any) -> ManualPlanSpec:
    """From alpa_manual_plan or alpa_baseline_point (which has no virtual stages: 1)."""
    virtual_stages = int(getattr(s, "virtual_stages", 1))
    if s.version < 2:
        virtual_stages = 1  # a version-1 answer ends before the field
    return ManualPlanSpec(int(s.data_parallel), int(s.tensor_parallel), int(s.pipeline_parallel),
                          int(s.microbatches), int(s.zero_stage), int(s.remat),
                          bool(s.tensor_inside_host), virtual_stages)


def _ranges_text(ids: Sequence[int]) -> str:
    parts: list[str] = []
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        parts.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(parts)


def _seconds(s: float) -> str:
    if s != s:
        return "?"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} us"


def _bytes(b: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= size:
            return f"{b / size:.2f} {unit}"
    return f"{b} B"


_UNITS = {"": 1, "b": 1, "k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9,
          "t": 1e12, "tb": 1e12, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}


def parse_bytes(value: "int | str") -> int:
    """16 * 2**30, "16GiB", "16e9", "16GB" -> bytes."""
    if isinstance(value, (int, np.integer)):
        return int(value)
    m = re.fullmatch(r"\s*([0-9.eE+]+)\s*([A-Za-z]*)\s*", str(value))
    if not m or m.group(2).lower() not in _UNITS:
        raise InvalidArgumentError(f'"{value}" is not a byte count (e.g. 16GiB)', 1)
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


class PlanOptions(OptionsObject):
    """alpa_plan_options, set by name (the library validates every value)."""

    _kind = "alpa_plan_options"

    def set_progress(self, fn: Callable[[PlanProgress], Any], guard: CallbackGuard) -> None:
        def trampoline(_user: Any, p: Any) -> int:
            r = p.contents
            return guard.run(
                lambda: fn(PlanProgress(r.seconds, cstr(r.phase), r.microbatches, r.done, r.total))
            )

        cb = alpa_plan_progress_fn(trampoline)
        self._keep.append(cb)
        call(lib.alpa_plan_options_set_progress, self._ptr, cb, None)


def _plan_options(
    microbatches: "int | None", layers: "int | None", remat: "str | bool | None",
    threads: "int | None", device_memory: "int | str | None", exact: "bool | None",
    intra_op_time_limit: "float | None", intra_op_gap: "float | None",
    max_microbatches: "int | None", memory_levels: "int | None",
    clustering_delta: "float | None",
    pipeline_stages: "int | None" = None,
    max_tensor_parallel: "int | None" = None,
    tensor_parallel_inside_host: "bool | None" = None,
    tensor_parallel_across_hosts_margin: "float | None" = None,
    zero2: "str | bool | None" = None,
    zero3: "str | bool | None" = None,
    zero_bubble: "str | bool | None" = None,
    nic_placement: "str | bool | None" = None,
    interleave: "str | bool | None" = None,
) -> dict[str, Any]:
    if isinstance(zero_bubble, bool):
        zero_bubble = "search" if zero_bubble else "off"
    if isinstance(interleave, bool):
        interleave = "search" if interleave else "off"
    if isinstance(nic_placement, bool):
        nic_placement = "search" if nic_placement else "off"
    if isinstance(zero2, bool):
        zero2 = "search" if zero2 else "off"
    if isinstance(zero3, bool):
        zero3 = "search" if zero3 else "off"
    if isinstance(remat, bool):
        remat = "on" if remat else "off"
    return {
        "microbatches": microbatches,
        "num_layers": layers,
        "remat": remat,
        "threads": threads,
        "device_memory_bytes": None if device_memory is None else parse_bytes(device_memory),
        "intra_op_exact": exact,
        "intra_op_time_limit_seconds": intra_op_time_limit,
        "intra_op_gap": intra_op_gap,
        "max_microbatches": max_microbatches,
        "memory_levels": memory_levels,
        "clustering_delta": clustering_delta,
        "pipeline_stages": pipeline_stages,
        "max_tensor_parallel": max_tensor_parallel,
        "tensor_parallel_inside_host": tensor_parallel_inside_host,
        "tensor_parallel_across_hosts_margin": tensor_parallel_across_hosts_margin,
        "zero2": zero2,
        "zero3": zero3,
        "zero_bubble": zero_bubble,
        "nic_placement": nic_placement,
        "interleave": interleave,
    }


ModelLike = Union[str, Graph, "os.PathLike[str]"]


def _run_plan(
    cluster: ClusterLike, options: Mapping[str, Any], progress: ProgressArg,
    cancel: "CancelToken | None", fn: Callable[[int, int, int], int],
) -> Plan:
    c = Cluster.parse(cluster)
    try:
        with PlanOptions(options) as opts:
            out = c_void_p()

            def run() -> None:
                err = c_void_p()
                from ._lib import check

                check(fn(byref(out), c._ptr, opts._ptr, byref(err)), err)  # type: ignore[arg-type]

            run_with_options(opts, progress, cancel, "plan", run)  # type: ignore[arg-type]
            return Plan(out.value)
    finally:
        if c is not cluster:
            c.close()


@c_doc("alpa_model_plan", "alpa_graph_plan")
def plan(
    model: ModelLike = "gpt-2.6b",
    cluster: ClusterLike = "p3.16xlarge:2",
    microbatches: "int | None" = None,
    *,
    layers: "int | None" = None,
    remat: "str | bool | None" = None,
    threads: "int | None" = None,
    device_memory: "int | str | None" = None,
    exact: "bool | None" = None,
    intra_op_time_limit: "float | None" = None,
    intra_op_gap: "float | None" = None,
    max_microbatches: "int | None" = None,
    memory_levels: "int | None" = None,
    clustering_delta: "float | None" = None,
    batch_dim: "int | None" = None,
    pipeline_stages: "int | None" = None,
    max_tensor_parallel: "int | None" = None,
    tensor_parallel_inside_host: "bool | None" = None,
    tensor_parallel_across_hosts_margin: "float | None" = None,
    zero2: "str | bool | None" = None,
    zero3: "str | bool | None" = None,
    zero_bubble: "str | bool | None" = None,
    nic_placement: "str | bool | None" = None,
    interleave: "str | bool | None" = None,
    progress: ProgressArg = None,
    cancel: "CancelToken | None" = None,
) -> Plan:
    """Plans pipeline stages and their sharding (``alpa plan``): Alpa's two-level search.

    ``model``: a model-zoo spec ("gpt-2.6b", "gpt:hidden=1024,layers=2,batch=8"), a graph JSON
    file, or a finalized ``Graph``. A graph is one microbatch unless ``batch_dim`` is given: then
    it is the global batch, held in that dim of its input parameters, and split into
    microbatches (searched, or ``microbatches``) as a zoo spec's batch is
    (ALPA_PLAN_OPT_GRAPH_BATCH_DIM; ``alpa plan --file`` uses 0). ``cluster``: what ``alpa plan --cluster``
    takes ("p3.16xlarge:2", "dgx-h100:hosts=2,devices_per_host=4", a cluster JSON file) or a
    ``Cluster``. ``microbatches``: None searches the divisors of the batch nearest to the powers
    of two. ``remat``: "search" (default: per stage, none, full or, where there is attention,
    selective), "off"/False, "on"/True (full: every forward recomputed), "selective" (only the
    attention cores). ``device_memory``: bytes or "16GiB". ``progress``: a callable receiving
    ``PlanProgress`` (an exception it raises cancels the call and propagates) or True for a
    tqdm bar. ``cancel``: a ``CancelToken``; Ctrl-C cancels too. The pins (docs/planner.md)
    ``pipeline_stages`` (exactly that many stages; 1: intra-op only), ``max_tensor_parallel`` and
    ``tensor_parallel_inside_host`` prune the search; ``tensor_parallel_across_hosts_margin``
    (default 0.05) keeps tensor parallelism inside hosts unless crossing is predicted more than
    that fraction faster. ``zero2``: "search"/True (default: ZeRO-2, gradients reduce-scattered
    every microbatch and held as shards, on stages where that lets them fit) or "off"/False.
    ``zero3``: "search"/True (default: ZeRO-3, a weight held as shards and gathered where read
    every microbatch, where the intra-op solves find nothing else fits) or "off"/False.
    ``zero_bubble``: "search"/True (the zero-bubble schedule ZB-H1 where every stage fits it and
    it is predicted faster than 1F1B; ``Plan.schedule`` then says "zb-h1") or "off"/False
    (default: 1F1B). ``nic_placement``: "search"/True (default: where the cluster says which GPUs
    sit next to the NICs, its "nic_locality", the stages that talk across hosts move onto them
    where predicted faster) or "off"/False. ``interleave``: "search"/True (interleaved 1F1B,
    Megatron-LM's virtual pipeline stages: the 1F1B plan's submeshes become device groups that
    each run ``Plan.virtual_stages`` stages, where every group fits its memory and it is
    predicted faster; ``Plan.schedule`` then says "interleaved-1f1b") or "off"/False (default).

    Raises ``InvalidArgumentError`` (bad spec or option, with the library's message),
    ``InfeasibleError`` (nothing fits the device memory; the message gives the memory that
    would), ``CancelledError``."""
    options = _plan_options(microbatches, layers, remat, threads, device_memory, exact,
                            intra_op_time_limit, intra_op_gap, max_microbatches, memory_levels,
                            clustering_delta, pipeline_stages, max_tensor_parallel,
                            tensor_parallel_inside_host, tensor_parallel_across_hosts_margin,
                            zero2, zero3, zero_bubble, nic_placement, interleave)
    graph: Optional[Graph] = None
    owned = False
    if isinstance(model, Graph):
        graph = model
    elif os.path.isfile(os.fspath(model)):
        graph, owned = Graph.read(model), True
    if graph is None and batch_dim is not None:
        raise InvalidArgumentError(f"batch_dim applies to a graph, not the zoo spec {model!r}", 1)
    try:
        if graph is not None:
            g = graph
            options = {**options, "graph_batch_dim": batch_dim}
            return _run_plan(cluster, options, progress, cancel,
                             lambda out, c, o, e: lib.alpa_graph_plan(out, g._ptr, c, o, e))
        spec = os.fspath(model).encode()
        return _run_plan(cluster, options, progress, cancel,
                         lambda out, c, o, e: lib.alpa_model_plan(out, spec, c, o, e))
    finally:
        if owned and graph is not None:
            graph.close()


@c_doc("alpa_model_plan_manual")
def plan_manual(
    model: str = "gpt-2.6b",
    cluster: ClusterLike = "p3.16xlarge:2",
    spec: "ManualPlanSpec | None" = None,
    *,
    threads: "int | None" = None,
    device_memory: "int | str | None" = None,
    progress: ProgressArg = None,
    cancel: "CancelToken | None" = None,
    **spec_fields: Any,
) -> Plan:
    """Predicts one Megatron-LM style plan (experimental): ``spec`` or its fields
    (data_parallel=2, tensor_parallel=4, pipeline_parallel=2, microbatches=64,
    remat="selective", virtual_stages=2 for interleaved 1F1B, ...)."""
    spec = spec or ManualPlanSpec(**spec_fields)
    c_spec = alpa_manual_plan()
    call(lib.alpa_manual_plan_init, byref(c_spec), ctypes.sizeof(c_spec))
    for name in ("data_parallel", "tensor_parallel", "pipeline_parallel", "microbatches",
                 "zero_stage"):
        setattr(c_spec, name, int(getattr(spec, name)))
    c_spec.remat = _RECOMPUTE_KINDS.index(spec.recompute)
    c_spec.tensor_inside_host = int(spec.tensor_inside_host)
    c_spec.virtual_stages = int(spec.virtual_stages)
    options = _plan_options(None, None, None, threads, device_memory, None, None, None, None,
                            None, None)
    raw = model.encode()
    return _run_plan(cluster, options, progress, cancel,
                     lambda out, c, o, e: lib.alpa_model_plan_manual(out, raw, c, byref(c_spec), o, e))


@c_doc("alpa_model_plan_baseline")
def plan_baseline(
    model: str = "gpt-2.6b",
    cluster: ClusterLike = "p3.16xlarge:2",
    microbatches: "int | None" = None,
    *,
    remat: "str | bool | None" = None,
    threads: "int | None" = None,
    device_memory: "int | str | None" = None,
    max_microbatches: "int | None" = None,
    zero2: "str | bool | None" = None,
    zero3: "str | bool | None" = None,
    progress: ProgressArg = None,
    cancel: "CancelToken | None" = None,
) -> Plan:
    """The Megatron-LM baseline: the fastest feasible manual plan of a grid (experimental).
    ``remat``: None searches off, full and (for models with attention) selective; "off"/False,
    "on"/True or "selective" fixes it. ``zero2`` / ``zero3``: "off"/False leaves ZeRO stage 2 /
    3 out of the grid (default: both in)."""
    options = _plan_options(microbatches, None, remat, threads, device_memory, None, None, None,
                            max_microbatches, None, None, zero2=zero2, zero3=zero3)
    raw = model.encode()
    return _run_plan(cluster, options, progress, cancel,
                     lambda out, c, o, e: lib.alpa_model_plan_baseline(out, raw, c, o, e))
