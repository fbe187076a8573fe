"""XLA HLO text of a real JAX train step, lowered live, imported with Graph.from_hlo."""
from __future__ import annotations

from functools import partial

import pytest

import alpa
from conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "hlo"


def test_read_hlo_fixture_and_while_error() -> None:
    graph = alpa.Graph.read_hlo(FIXTURES / "sgd_step.hlo")
    assert graph.stats()["parameters"] == 130
    with pytest.raises(alpa.UnsupportedError, match=r'instruction "while\.5" \(while\).*unroll=True'):
        alpa.Graph.from_hlo((FIXTURES / "scan.hlo").read_text())
    with pytest.raises(alpa.AlpaError, match="line 1, column 1: expected \"HloModule\""):
        alpa.Graph.from_hlo("{}")


def test_live_jax_adam_step_roles_and_aliases() -> None:
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def loss_fn(params, x, y):
        h = x
        for i, layer in enumerate(params["layers"]):
            with jax.named_scope(f"layers_{i}"):
                h = jnp.tanh(h @ layer["w"] + layer["b"])
        return jnp.mean((h - y) ** 2)

    @partial(jax.jit, donate_argnums=(0, 1))
    def step(params, state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        count = state["count"] + 1
        mu = jax.tree_util.tree_map(lambda m, g: 0.9 * m + 0.1 * g, state["mu"], grads)
        nu = jax.tree_util.tree_map(lambda v, g: 0.999 * v + 0.001 * g * g, state["nu"], grads)
        params = jax.tree_util.tree_map(
            lambda p, m, v: p - 1e-3 * m / (jnp.sqrt(v) + 1e-8), params, mu, nu)
        return loss, params, {"mu": mu, "nu": nu, "count": count}

    sizes = [(16, 32), (32, 32), (32, 32), (32, 4)]
    params = {"layers": [{"w": jnp.ones(s), "b": jnp.zeros(s[1])} for s in sizes]}
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    state = {"mu": zeros, "nu": zeros, "count": jnp.zeros((), jnp.int32)}
    x, y = jnp.ones((8, 16)), jnp.ones((8, 4))
    text = step.lower(params, state, x, y).as_text(dialect="hlo", debug_info=True)

    graph = alpa.Graph.from_hlo(text)
    ops = graph.ops
    weights = [op for op in ops if op.kind == "parameter" and op.role == "parameter"]
    opt_state = [op for op in ops if op.kind == "parameter" and op.role == "optimizer_state"]
    inputs = [op for op in ops if op.kind == "parameter" and op.role == "input"]
    leaves = jax.tree_util.tree_leaves(params)
    assert len(weights) == len(leaves)
    assert sum(op_size(op) for op in weights) == sum(leaf.size for leaf in leaves)
    assert graph.stats()["parameters"] == sum(leaf.size for leaf in leaves)
    assert len(opt_state) == len(jax.tree_util.tree_leaves(state))
    assert len(inputs) == 2
    assert {op.name for op in weights} == {
        f"params['layers'][{i}]['{k}']" for i in range(len(sizes)) for k in ("w", "b")}
    # The loss first, then one update per donated array, each aliasing its parameter op.
    outputs = graph.outputs
    assert ops[outputs[0]].shape == () and ops[outputs[0]].phase == "forward"
    aliased = [ops[o].alias for o in outputs[1:]]
    assert sorted(aliased) == sorted(op.id for op in weights + opt_state)
    assert all(ops[o].phase == "update" for o in outputs[1:])
    # Layers from the name scopes: one per layer among the forward ops.
    assert {op.layer for op in ops if op.phase == "forward"} == set(range(len(sizes)))
    assert sum(1 for op in ops if op.role == "gradient") == len(leaves)
    plan = graph.plan("p3.16xlarge:1")
    assert plan is not None


def op_size(op: alpa.graph.Op) -> int:
    n = 1
    for d in op.shape:
        n *= d
    return n
