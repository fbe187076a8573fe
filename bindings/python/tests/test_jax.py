"""alpa.jax and alpa.parallelize: plans of JAX steps back in JAX (docs/jax.md).

The cases that run a sharded step need 8 devices: they run jax_worker.py in a subprocess with
XLA_FLAGS=--xla_force_host_platform_device_count=8 (JAX reads it once, at import)."""
from __future__ import annotations

import json
import math
import os
import pathlib
import re
import subprocess
import sys
import time
import warnings

import pytest

import alpa

jax = pytest.importorskip("jax")
from jax.sharding import PartitionSpec as P  # noqa: E402

import alpa.jax as aj  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
needs_importer = pytest.mark.skipif(not hasattr(alpa.Graph, "from_hlo"),
                                    reason="this alpa has no HLO importer (alpa.Graph.from_hlo)")


# The folder holding the alpa package this test imported (the installed one in CI, the source
# tree with PYTHONPATH=../src): subprocesses import that same package.
ALPA_ROOT = str(pathlib.Path(alpa.__file__).resolve().parent.parent)


def run_worker(case: str, optimizer: str = "sgd") -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([ALPA_ROOT, str(HERE), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, str(HERE / "jax_worker.py"), case, optimizer], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_alpa_does_not_import_jax():
    code = "import sys, alpa; assert 'jax' not in sys.modules; print(alpa.plan)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": ALPA_ROOT})
    assert out.returncode == 0, out.stderr


def test_spec_text_to_partition_spec():
    groups = aj.mesh_axis_groups((2, 4), (2, 4), ("x", "y"))
    assert groups == [("x",), ("y",)]
    assert aj.partition_spec("S0 R S1  (strategy: S0 R S1 = ...)", groups) == P("x", None, "y")
    assert aj.partition_spec("R S01", groups) == P(None, ("x", "y"))
    assert aj.partition_spec("S10 R", groups) == P(("y", "x"))
    assert aj.partition_spec("R R", groups) == P()
    assert aj.partition_spec("scalar", groups) == P()
    assert aj.partition_spec("", groups) == P()
    # A partial sum keeps its splits; the sum itself is the compiler's.
    assert aj.partition_spec("S1 R partial(0)", groups) == P("y")
    with pytest.raises(alpa.InvalidArgumentError, match="token 'Q1'"):
        aj.partition_spec("Q1 R", groups)


def test_logical_mesh_regroups_jax_axes():
    assert aj.mesh_axis_groups((8, 1), (2, 4), ("x", "y")) == [("x", "y"), ()]
    assert aj.mesh_axis_groups((1, 8), (2, 4), ("x", "y")) == [(), ("x", "y")]
    assert aj.mesh_axis_groups((2, 4), (2, 1, 4), ("a", "b", "c")) == [("a",), ("c",)]
    with pytest.raises(alpa.InvalidArgumentError, match="not a regrouping"):
        aj.mesh_axis_groups((4, 2), (2, 4), ("x", "y"))
    with pytest.raises(alpa.InvalidArgumentError, match="has 16 devices"):
        aj.mesh_axis_groups((4, 4), (2, 4), ("x", "y"))


def test_hlo_parameter_names_and_aliases():
    import jax.numpy as jnp

    def step(params, batch):
        return jax.tree_util.tree_map(lambda w: w * batch["scale"], params), jnp.sum(batch["x"])

    params = {"w1": {"kernel": jnp.ones((4, 8))}, "w2": jnp.ones((8,))}
    batch = {"scale": jnp.float32(2), "x": jnp.ones((3,))}
    text, paths = aj.lower_step(step, params, batch, donate_argnums=(0,))
    assert paths == ["params['w1']['kernel']", "params['w2']", "batch['scale']", "batch['x']"]
    assert paths == aj.argument_paths(step, (params, batch))
    assert aj.input_output_aliases(text) == {0: 0, 1: 1}


def mlp_step(params, batch):
    import jax.numpy as jnp

    def loss(p):
        with jax.named_scope("layers_1"):
            h = jnp.tanh(batch["x"] @ p["w1"])
        with jax.named_scope("layers_2"):
            y = h @ p["w2"] * 2.0
        return jnp.mean((y - batch["y"]) ** 2)

    value, grads = jax.value_and_grad(loss)(params)
    return jax.tree_util.tree_map(lambda w, g: w - 0.1 * g, params, grads), value


def mlp_args():
    import jax.numpy as jnp

    params = {"w1": jnp.linspace(-1, 1, 64 * 32).reshape(64, 32),
              "w2": jnp.linspace(1, -1, 32 * 16).reshape(32, 16)}
    batch = {"x": jnp.linspace(0, 1, 128 * 64).reshape(128, 64),
             "y": jnp.zeros((128, 16))}
    return params, batch


def hlo_without_metadata(text: str) -> str:
    """The module's computations with every metadata={...} removed (the debug header of file
    and stack-frame tables, which names the calling line, is dropped)."""
    body = text[text.index("\n\n", text.index("StackFrames")):] if "StackFrames" in text else text
    return re.sub(r", metadata=\{[^}]*\}", "", body)


@needs_importer
def test_equation_scopes_reach_the_sources_and_change_nothing_else():
    params, batch = mlp_args()
    plain, plain_paths = aj.lower_step(mlp_step, params, batch, scope_equations=False)
    scoped, paths = aj.lower_step(mlp_step, params, batch)
    assert paths == plain_paths == ["params['w1']", "params['w2']", "batch['x']", "batch['y']"]
    assert hlo_without_metadata(scoped) == hlo_without_metadata(plain)
    assert "alpa_eqn" not in plain and "alpa_eqn" in scoped
    eqns = jax.make_jaxpr(mlp_step)(params, batch).jaxpr.eqns
    with alpa.Graph.from_hlo(scoped) as graph, alpa.Graph.from_hlo(plain) as plain_graph:
        assert [o.layer for o in graph.ops] == [o.layer for o in plain_graph.ops]
        assert {o.layer for o in graph.ops} >= {1, 2}
        dots = [o for o in graph.ops if o.kind == "dot_general"]
        assert dots
        for op in dots:
            k, primitive = aj.equation_of(op.source)
            assert primitive == "dot_general" == eqns[k].primitive.name, op.source
        assert '"source": "' in graph.to_json()
        # Parameters keep their pytree paths as names and sources.
        assert [o.source for o in graph.ops if o.kind == "parameter"][:4] == paths


def one_device_shardings(graph_text: str) -> "aj.JaxShardings":
    with alpa.Graph.from_hlo(graph_text) as graph:
        with alpa.plan(graph, "p3.16xlarge:hosts=1,devices_per_host=1", microbatches=1,
                       pipeline_stages=1) as p:
            mesh = aj.make_mesh(p, devices=jax.devices()[:1])
            return p.jax_shardings(mesh)


@needs_importer
def test_constraints_apply_to_the_traced_step_and_unmatched_ones_are_reported():
    import dataclasses

    params, batch = mlp_args()
    text, _ = aj.lower_step(mlp_step, params, batch)
    sh = one_device_shardings(text)
    assert sh.constraints
    step = aj.constrain_activations(mlp_step, sh, on_unmatched="raise")
    lowered = jax.jit(step).lower(params, batch)
    report = step.report
    assert report.unmatched == []
    assert report.applied
    # Every constraint of the plan lands on one output (or lost it to a later op of its
    # equation); each applied one is one sharding annotation of the lowered module.
    assert len(report.applied) + len(report.superseded) == len(sh.constraints)
    assert lowered.as_text(dialect="hlo").count('custom_call_target="Sharding"') == \
        len(report.applied)
    # The same numbers as the plain step.
    (p0, l0), (p1, l1) = jax.jit(mlp_step)(params, batch), jax.jit(step)(params, batch)
    assert float(l1) == pytest.approx(float(l0), rel=1e-6)

    # A constraint that names no equation, or an equation of another primitive, is reported.
    some = next(iter(sh.constraints.values()))
    past_the_end = dataclasses.replace(some, equation=10_000,
                                       source="jit(step)/alpa_eqn10000:mul/mul")
    other_primitive = dataclasses.replace(some, primitive="cumsum",
                                          source="x/alpa_eqn0:cumsum/cumsum")
    for bad, why in ((past_the_end, "none numbered 10000"), (other_primitive, "not cumsum")):
        broken = dataclasses.replace(sh, constraints={**sh.constraints, bad.source: bad})
        warned = aj.constrain_activations(mlp_step, broken)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            jax.jit(warned).lower(params, batch)
        messages = [str(w.message) for w in caught
                    if issubclass(w.category, aj.UnmatchedConstraintWarning)]
        assert len(messages) == 1 and why in messages[0] and bad.source in messages[0], messages
        assert [c for c, _ in warned.report.unmatched] == [bad]
        with pytest.raises(alpa.InvalidArgumentError, match=why):
            jax.jit(aj.constrain_activations(mlp_step, broken, on_unmatched="raise")).lower(
                params, batch)


def test_multi_stage_plan_is_refused():
    with alpa.plan("gpt:hidden=64,layers=2,heads=4,seq=16,vocab=128,batch=8",
                   "p3.16xlarge:hosts=2,devices_per_host=1", microbatches=2,
                   pipeline_stages=2) as p:
        assert p.stage_count == 2
        with pytest.raises(alpa.UnsupportedError, match="2 pipeline stages"):
            aj.make_mesh(p)


def test_plan_shardings_of_a_hand_built_graph_run_in_jax():
    r = run_worker("hand_built")
    print(json.dumps(r, indent=1))
    assert r["unmatched"] == []
    l0, l1 = r["losses"]
    assert l1 == pytest.approx(l0, rel=1e-5)
    assert r["param_rel_diff"] < 1e-5
    # The plan splits something (8 devices, a 64 x 256 MLP) and the outputs keep its layout.
    assert any(s != "P()" for s in r["specs"].values())
    assert r["sharded_param_shardings"] == [r["specs"]["params['w1']"],
                                            r["specs"]["params['w2']"]]


def print_collectives(r: dict) -> None:
    print(f"{'collective':<20}{'plan':>6}{'XLA':>6}")
    for kind in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                 "collective_permute"):
        print(f"{kind:<20}{r['plan_collectives'].get(kind, 0):>6}{r['hlo_collectives'][kind]:>6}")


def test_zoo_gpt2_plan_runs_the_plain_jax_gpt2():
    """The zoo's gpt of the same sizes planned on 2 x 4 devices, its layouts given to
    jax_gpt2 by the zoo's weight names: the 3 sharded SGD steps equal the unsharded ones."""
    r = run_worker("zoo_gpt2", "sgd")
    print(json.dumps(r, indent=1))
    print_collectives(r)
    assert r["unmatched"] == []
    assert r["sharded_arguments"] > 0
    l0, l1 = r["losses"]
    assert l1 == pytest.approx(l0, rel=1e-5)
    assert r["param_rel_diff"] < 1e-5
    assert (r["plan_collectives"]["all_reduce"] > 0) == (r["hlo_collectives"]["all_reduce"] > 0)


@pytest.fixture(scope="module")
def parallelize_gpt2_sgd() -> dict:
    return run_worker("parallelize_gpt2", "sgd")


@needs_importer
def test_parallelize_gpt2_matches_the_unsharded_step(parallelize_gpt2_sgd):
    r = parallelize_gpt2_sgd
    print(json.dumps(r, indent=1))
    print_collectives(r)
    # The JAX mesh is built in the plan's logical mesh shape (make_mesh(plan)).
    assert list(r["mesh"].values()) == r["logical_mesh"]
    assert math.prod(r["mesh"].values()) == 8
    assert r["unmatched"] == []
    assert r["sharded_arguments"] > 0
    l0, l1 = r["losses"]
    assert l1 == pytest.approx(l0, rel=1e-5)
    assert r["param_rel_diff"] < 1e-5
    assert r["output_param_specs_match"]
    # Gradients of parameters laid out alike on devices that see different data are summed:
    # the plan's all-reduces and XLA's go together.
    assert (r["plan_collectives"]["all_reduce"] > 0) == (r["hlo_collectives"]["all_reduce"] > 0)


@needs_importer
def test_parallelize_gpt2_constrains_the_plans_activations(parallelize_gpt2_sgd):
    """The step alpa.parallelize runs carries the plan's activation layouts: every constraint
    the plan gives lands on an output of its equation, and each applied one is a sharding
    annotation of the lowered module (the losses and parameters: the test above)."""
    r = parallelize_gpt2_sgd
    assert r["constraints_unmatched"] == []
    assert r["activation_constraints"] > 100
    assert r["constraints_applied"] + r["constraints_superseded"] == r["activation_constraints"]
    assert r["sharding_annotations"] == r["constraints_applied"]
    assert any(s != "PartitionSpec()" for s in r["example_constraints"].values())


@pytest.fixture(scope="module")
def gpt2_figures() -> dict:
    """The full GPT-2 (12 x 768, vocab 50257, seq 1024, batch 8) imported and planned on
    p3.16xlarge:2 as one microbatch, next to the zoo's gpt of the same sizes."""
    if not hasattr(alpa.Graph, "from_hlo"):
        pytest.skip("this alpa has no HLO importer (alpa.Graph.from_hlo)")
    import jax_gpt2 as gpt

    cfg = gpt.Config()
    batch_size = 8
    params = jax.eval_shape(lambda: gpt.init_params(cfg, jax.random.PRNGKey(0)))
    opt = jax.eval_shape(gpt.init_opt_state, params)
    batch = jax.eval_shape(lambda: gpt.make_batch(cfg, batch_size, jax.random.PRNGKey(1)))
    step = gpt.make_train_step(cfg)
    out: dict = {"jax_params": gpt.param_count(params),
                 "jax_flops": gpt.matmul_flops(step, params, opt, batch)}
    with aj.import_step(step, params, opt, batch, donate_argnums=(0, 1)) as graph:
        # The model's weights: the entry parameters of the `params` argument (the donated
        # optimizer state is a parameter of the HLO too).
        out["weights"] = sum(math.prod(o.shape) for o in graph.ops
                             if o.kind == "parameter" and o.name.startswith("params["))
        out["dot_flops"] = graph.stats()["dot_flops"]
        start = time.perf_counter()
        with alpa.plan(graph, "p3.16xlarge:2", microbatches=1) as imported:
            out["plan_seconds"] = time.perf_counter() - start
            out["imported_seconds"] = imported.iteration_seconds
            out["imported_summary"] = imported.summary()
    with alpa.plan(cfg.zoo_spec(batch_size), "p3.16xlarge:2", microbatches=1) as zoo:
        out["zoo_seconds"] = zoo.iteration_seconds
        out["zoo_summary"] = zoo.summary()
    r = out
    print(f"\nparameters: imported {r['weights']:,} jax {r['jax_params']:,} "
          f"ratio {r['weights'] / r['jax_params']:.6f}")
    print(f"matmul FLOPs: imported {r['dot_flops']:.6e} jax {r['jax_flops']:.6e} "
          f"ratio {r['dot_flops'] / r['jax_flops']:.6f}")
    print(f"plan time {r['plan_seconds']:.2f} s")
    print(f"predicted iteration: imported {r['imported_seconds'] * 1e3:.3f} ms, zoo "
          f"{r['zoo_seconds'] * 1e3:.3f} ms, ratio {r['imported_seconds'] / r['zoo_seconds']:.4f}")
    print(r["imported_summary"])
    print(r["zoo_summary"])
    return out


def test_gpt2_imports_with_jax_counts_and_plans_in_time(gpt2_figures):
    r = gpt2_figures
    assert abs(r["weights"] / r["jax_params"] - 1) < 0.005
    assert abs(r["dot_flops"] / r["jax_flops"] - 1) < 0.005
    assert r["plan_seconds"] < 10


def test_gpt2_predicted_time_is_the_zoos(gpt2_figures):
    r = gpt2_figures
    # 1.053x (docs/jax.md: the import keeps half a GiB per device more than the zoo's stage).
    assert abs(r["imported_seconds"] / r["zoo_seconds"] - 1) < 0.06
