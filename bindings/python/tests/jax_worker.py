"""The 8-device half of test_jax.py, run in a subprocess (JAX reads its device count once, at
import): ``python jax_worker.py CASE`` prints one JSON line of results for the test to check.

XLA_FLAGS=--xla_force_host_platform_device_count=8 is set here before jax is imported.
"""
from __future__ import annotations

import collections
import json
import os
import re
import sys
import time

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=8").strip()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import alpa  # noqa: E402
import alpa.jax  # noqa: E402

jax.config.update("jax_default_matmul_precision", "highest")

# The cluster the 8 CPU devices stand for: 2 hosts of 4 devices, a JAX mesh of (2, 4).
CLUSTER = "p3.16xlarge:hosts=2,devices_per_host=4"
STEPS = 3

HLO_COLLECTIVES = {
    "all_reduce": r"all-reduce(?:-start)?\(",
    "all_gather": r"all-gather(?:-start)?\(",
    "reduce_scatter": r"reduce-scatter\(",
    "all_to_all": r"all-to-all\(",
    "collective_permute": r"collective-permute(?:-start)?\(",
}


def hlo_collective_counts(text: str) -> dict[str, int]:
    return {k: len(re.findall(r"\s" + pat, text)) for k, pat in HLO_COLLECTIVES.items()}


def plan_collective_counts(plan: alpa.Plan) -> dict[str, int]:
    counts = collections.Counter(c.kind for c in plan.stage_collectives(0))
    return {k: counts.get(k, 0) for k in ("all_reduce", "all_gather", "reduce_scatter",
                                          "all_to_all")}


def worst_leaves(a, b, count=4) -> list:
    """The leaves of largest max_relative_difference, with it."""
    rows = []
    for (path, x), y in zip(jax.tree_util.tree_flatten_with_path(a)[0], jax.tree_util.tree_leaves(b)):
        rows.append((max_relative_difference(x, y), jax.tree_util.keystr(path)))
    return sorted(rows, reverse=True)[:count]


def max_relative_difference(a, b) -> float:
    """The largest |a - b| over each leaf's largest |b|, over the leaves (an element-wise
    relative difference blows up on elements that cross zero)."""
    worst = 0.0
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        scale = max(float(np.max(np.abs(y))), 1e-30)
        worst = max(worst, float(np.max(np.abs(x - y))) / scale)
    return worst


def run_steps(step, args, count):
    losses = []
    for _ in range(count):
        *state, loss = step(*args)
        args = (*state, *args[len(state):])
        losses.append(float(loss))
    return args, losses


def run_report(plan, mesh, hlo: str, losses, params, opt, start: float) -> dict:
    """What every GPT-2 case reports: the plan's stage and mesh, the losses (unsharded, sharded),
    how far the sharded parameters and optimizer state are from the unsharded ones, and the
    collectives of the plan and of XLA's compiled module."""
    (l0, l1), (p0, p1), (o0, o1) = losses, params, opt
    return {
        "logical_mesh": list(plan.stages[0].logical_mesh),
        "mesh": dict(zip(mesh.axis_names, (int(s) for s in mesh.devices.shape))),
        "stage": {"data_parallel": plan.stages[0].data_parallel,
                  "tensor_parallel": plan.stages[0].tensor_parallel,
                  "zero": plan.stages[0].zero},
        "losses": [l0, l1],
        "param_rel_diff": max_relative_difference(p1, p0),
        "opt_rel_diff": max_relative_difference(o1, o0),
        "worst_params": worst_leaves(p1, p0),
        "plan_collectives": plan_collective_counts(plan),
        "hlo_collectives": hlo_collective_counts(hlo),
        "seconds": time.perf_counter() - start,
    }


def mlp_graph(batch: int, d: int, h: int) -> alpa.Graph:
    """A forward MLP written in libalpa's graph JSON with the JAX step's pytree names, made a
    training graph by libalpa's autodiff (SGD, lr 0.001): planned without the HLO importer."""
    dot = {"lhs_contracting": [1], "rhs_contracting": [0]}
    ops = [
        {"kind": "parameter", "name": "batch['x']", "dtype": "f32", "shape": [batch, d],
         "role": "input", "layer": 1},
        {"kind": "parameter", "name": "batch['y']", "dtype": "f32", "shape": [batch, d],
         "role": "input", "layer": 2},
        {"kind": "parameter", "name": "params['w1']", "dtype": "f32", "shape": [d, h],
         "role": "parameter", "layer": 1},
        {"kind": "parameter", "name": "params['w2']", "dtype": "f32", "shape": [h, d],
         "role": "parameter", "layer": 2},
        {"kind": "dot_general", "name": "hidden", "operands": [0, 2], "attrs": dot, "layer": 1},
        {"kind": "relu", "operands": [4], "layer": 1},
        {"kind": "dot_general", "name": "out", "operands": [5, 3], "attrs": dot, "layer": 2},
        {"kind": "sub", "operands": [6, 1], "layer": 2},
        {"kind": "mul", "operands": [7, 7], "layer": 2},
        {"kind": "reduce_sum", "name": "loss", "operands": [8], "attrs": {"dims": [0, 1]},
         "layer": 2},
    ]
    with alpa.Graph.from_json({"format": "alpa-graph", "version": 1, "ops": ops,
                               "outputs": [9]}) as forward:
        return forward.make_training("sgd:lr=0.001")


def case_hand_built(_optimizer: str) -> dict:
    """plan.jax_shardings on a hand-built graph: the sharded step equals the plain one."""
    b, d, h = 32, 64, 256

    def step(params, batch):
        def loss(p):
            return jnp.sum(jnp.square(jax.nn.relu(batch["x"] @ p["w1"]) @ p["w2"] - batch["y"]))

        value, grads = jax.value_and_grad(loss)(params)
        return jax.tree_util.tree_map(lambda w, g: w - 0.001 * g, params, grads), value

    k = jax.random.split(jax.random.PRNGKey(0), 4)
    params = {"w1": jax.random.normal(k[0], (d, h)) * 0.05,
              "w2": jax.random.normal(k[1], (h, d)) * 0.05}
    batch = {"x": jax.random.normal(k[2], (b, d)), "y": jax.random.normal(k[3], (b, d))}
    with mlp_graph(b, d, h) as graph:
        plan = alpa.plan(graph, CLUSTER, microbatches=1, pipeline_stages=1)
    mesh = alpa.jax.make_mesh(plan)
    sh = plan.jax_shardings(mesh, (params, batch), fn=step)
    sharded = jax.jit(step, in_shardings=sh.args, out_shardings=(sh.args[0], None))
    (p1, _), l1 = run_steps(sharded, jax.device_put((params, batch), sh.args), STEPS)
    (p0, _), l0 = run_steps(jax.jit(step), (params, batch), STEPS)
    return {
        "logical_mesh": list(plan.stages[0].logical_mesh),
        "specs": {k: str(v.spec) for k, v in sh.by_name.items()},
        "unmatched": sh.unmatched,
        "sharded_param_shardings": [str(x.sharding.spec) for x in jax.tree_util.tree_leaves(p1)],
        "losses": [l0, l1],
        "param_rel_diff": max_relative_difference(p1, p0),
    }


def sharding_annotations(lowered) -> int:
    """The sharding constraints in a lowered step's module: with_sharding_constraint lowers to
    a custom-call "Sharding" in HLO (sdy.sharding_constraint in Shardy's MLIR, which the
    HLO export turns into the same custom-call)."""
    return lowered.as_text(dialect="hlo").count('custom_call_target="Sharding"')


def case_parallelize_gpt2(optimizer: str) -> dict:
    """alpa.parallelize over the small plain-JAX GPT-2 on the plan's mesh, its activations
    constrained to the plan's layouts: 3 steps equal the unsharded ones; the compiled module's
    collectives next to the plan's; the lowered module's sharding constraints against the
    plan's activation constraints."""
    import jax_gpt2 as gpt

    cfg = gpt.Config(layers=2, hidden=64, heads=4, vocab=256, seq=32, optimizer=optimizer,
                     lr=1e-3 if optimizer == "adam" else 0.1)
    params = gpt.init_params(cfg, jax.random.PRNGKey(0))
    opt = gpt.init_opt_state(params, cfg)
    # 64 sequences: with fewer, the cost model's cheapest layout of so small a model on 8 V100s
    # is no parallelism at all (every collective's latency outweighs its compute).
    batch = gpt.make_batch(cfg, 64, jax.random.PRNGKey(1))
    step = gpt.make_train_step(cfg)

    start = time.perf_counter()
    (p0, o0, _), l0 = run_steps(jax.jit(step), (params, opt, batch), STEPS)
    parallel = alpa.parallelize(step, cluster=CLUSTER, donate_argnums=(0, 1))
    compiled = parallel.compile(params, opt, batch)
    plan, mesh = compiled.plan, compiled.mesh
    lowered = parallel.lower(params, opt, batch)
    hlo = lowered.compile().as_text()
    report = parallel.constraint_report(params, opt, batch)
    # Donation consumes the arguments: run on copies.
    fresh = jax.tree_util.tree_map(jnp.copy, (params, opt, batch))
    (p1, o1, _), l1 = run_steps(parallel, fresh, STEPS)
    specs = compiled.shardings.by_name
    return {
        **run_report(plan, mesh, hlo, (l0, l1), (p0, p1), (o0, o1), start),
        "sharded_arguments": sum(1 for s in specs.values() if s.spec != jax.sharding.PartitionSpec()),
        "arguments": len(specs),
        "unmatched": compiled.shardings.unmatched,
        "example_specs": {k: str(v.spec) for k, v in list(specs.items())[:12]},
        "activation_constraints": len(compiled.shardings.constraints),
        "constraints_applied": len(report.applied),
        "constraints_superseded": len(report.superseded),
        "constraints_unmatched": [f"{c.source}: {why}" for c, why in report.unmatched],
        "constrained_equations": len({c.equation for c in report.applied}),
        "sharding_annotations": sharding_annotations(lowered),
        "example_constraints": {c.source: str(c.spec) for c in report.applied[:12]},
        "output_param_specs_match": all(
            a.sharding.spec == b.spec for a, b in
            zip(jax.tree_util.tree_leaves(p1), jax.tree_util.tree_leaves(compiled.in_shardings[0]))),
    }


_ZOO_WEIGHT_NAMES = {"scale": "g", "kernel": "w", "bias": "b", "fc": "fc1", "proj": "fc2"}


def zoo_name(path: str) -> str:
    """The zoo gpt's name (src/models/gpt.cc) of a jax_gpt2 argument leaf:
    params['h0']['mlp']['fc']['kernel'] -> h0.mlp.fc1.w, opt_state['mu']['wte'] -> wte.m,
    opt_state['count'] -> optimizer.step, batch['tokens'] -> tokens."""
    keys = re.findall(r"\['([^']*)'\]", path)
    if path.startswith("batch"):
        return keys[0]
    if path.startswith("opt_state"):
        if keys[0] == "count":
            return "optimizer.step"
        return _zoo_weight(keys[1:]) + (".m" if keys[0] == "mu" else ".v")
    return _zoo_weight(keys)


def _zoo_weight(keys: list) -> str:
    return ".".join(_ZOO_WEIGHT_NAMES.get(k, k) for k in keys)


def case_zoo_gpt2(optimizer: str) -> dict:
    """The zoo's gpt of jax_gpt2's sizes, planned as one stage on 2 x 4 devices; its layouts
    given to the plain-JAX GPT-2 through the zoo's names: 3 steps equal the unsharded ones.
    (The plan of a zoo graph, not of the imported step: runs without the HLO importer.)"""
    import jax_gpt2 as gpt

    start = time.perf_counter()
    cfg = gpt.Config(layers=2, hidden=64, heads=4, vocab=256, seq=32, optimizer=optimizer,
                     lr=1e-3 if optimizer == "adam" else 0.1)
    batch_size = 64  # as in case_parallelize_gpt2
    params = gpt.init_params(cfg, jax.random.PRNGKey(0))
    opt = gpt.init_opt_state(params, cfg)
    batch = gpt.make_batch(cfg, batch_size, jax.random.PRNGKey(1))
    step = gpt.make_train_step(cfg)
    args = (params, opt, batch)
    plan = alpa.plan(cfg.zoo_spec(batch_size), CLUSTER, microbatches=1, pipeline_stages=1)
    mesh = alpa.jax.make_mesh(plan)
    paths = [zoo_name(p) for p in alpa.jax.argument_paths(step, args)]
    sh = plan.jax_shardings(mesh, args, arg_paths=paths)
    flat = jax.tree_util.tree_leaves(sh.args)
    out_shardings = (sh.args[0], sh.args[1], None)
    sharded = jax.jit(step, in_shardings=sh.args, out_shardings=out_shardings)
    hlo = sharded.lower(*args).compile().as_text()
    (p1, o1, _), l1 = run_steps(sharded, jax.device_put(args, sh.args), STEPS)
    (p0, o0, _), l0 = run_steps(jax.jit(step), args, STEPS)
    return {
        **run_report(plan, mesh, hlo, (l0, l1), (p0, p1), (o0, o1), start),
        "sharded_arguments": sum(1 for s in flat if s.spec != jax.sharding.PartitionSpec()),
        "arguments": len(flat),
        "unmatched": sh.unmatched,
        "example_specs": {p: str(s.spec) for p, s in list(zip(paths, flat))[:16]},
    }


CASES = {"hand_built": case_hand_built, "parallelize_gpt2": case_parallelize_gpt2,
         "zoo_gpt2": case_zoo_gpt2}

if __name__ == "__main__":
    assert len(jax.devices()) == 8, jax.devices()
    print(json.dumps(CASES[sys.argv[1]](sys.argv[2] if len(sys.argv) > 2 else "sgd")))
