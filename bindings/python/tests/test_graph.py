"""Graphs built from numpy arrays, auto-sharded."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

import alpa
from conftest import GOLDEN, REPO

F32 = 0
PARAMETER, DOT, ADD, RELU, MUL, REDUCE_SUM, BROADCAST = 0, 50, 30, 18, 32, 80, 60


def build_mlp(batch: int = 64, d_in: int = 32, d_hidden: int = 128, d_out: int = 16) -> alpa.Graph:
    """A two-layer MLP forward pass with a sum-of-squares loss, as whole numpy arrays in one
    alpa_graph_add_ops call (the C layout: codes and offsets + flat ragged arrays)."""
    kinds = np.array([PARAMETER, PARAMETER, PARAMETER, DOT, BROADCAST, ADD, RELU, PARAMETER, DOT,
                      MUL, REDUCE_SUM], dtype=np.int32)
    n = len(kinds)
    dtypes = np.full(n, -1, dtype=np.int32)
    dtypes[[0, 1, 2, 7]] = F32
    roles = np.zeros(n, dtype=np.int32)
    roles[0] = 4  # input
    roles[[1, 2, 7]] = 1  # parameters
    layers = np.array([0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1], dtype=np.int32)
    operands = [[], [], [], [0, 1], [2], [3, 4], [5], [], [6, 7], [8, 8], [9]]
    shapes = [[batch, d_in], [d_in, d_hidden], [d_hidden], [], [batch, d_hidden], [], [],
              [d_hidden, d_out], [], [], []]
    # dot_general words: [nb, lhs_batch, rhs_batch, nc, lhs_contracting, rhs_contracting]
    attrs = [[], [], [], [0, 1, 1, 0], [1], [], [], [], [0, 1, 1, 0], [], [0, 1]]
    g = alpa.Graph()
    ids = g.add_ops(kinds, dtypes=dtypes, roles=roles, layers=layers, operands=operands,
                    shapes=shapes, attrs=attrs,
                    names=["x", "w1", "b1", None, None, None, "h", "w2", None, None, "loss"])
    assert ids == range(0, n)
    g.set_outputs([n - 1])
    return g.finalize()


def test_build_from_numpy_and_auto_shard():
    with build_mlp() as g:
        assert g.op_count == 11
        assert g.op(3).shape == (64, 128) and g.op(3).kind == "dot_general"
        assert g.op(10).shape == () and g.op(10).name == "loss"
        assert g.outputs == [10]
        stats = g.stats()
        assert stats["ops"] == 11
        assert stats["parameters"] == 32 * 128 + 128 + 128 * 16
        with g.auto_shard((4,), "p3.16xlarge") as plan:
            assert plan.status is alpa.SolveStatus.OPTIMAL
            assert plan.objective == pytest.approx(sum(plan.costs.values()))
            strategies = plan.op_strategies
            assert strategies.shape == (11,)
            assert plan.op_spec(3)  # the hidden activation has a layout
            doc = json.loads(plan.to_json())
            assert doc["objective"] == pytest.approx(plan.objective)
        # Alpa's abstract cost model on a 2x2 mesh, no cluster.
        with alpa.auto_shard(g, (2, 2)) as plan:
            assert plan.status is alpa.SolveStatus.OPTIMAL
            assert set(plan.collective_counts()) >= {"all_gather", "all_reduce"}


def test_arrays_round_trip_the_golden_graph():
    """Reading a graph's ops back as arrays and adding them to a new graph in one call gives the
    same graph, and the same auto-sharding."""
    with alpa.Graph.read(GOLDEN / "graph_mlp.json") as g:
        rebuilt = alpa.Graph()
        rebuilt.add_ops(**g.to_arrays())
        for op in g.ops:
            if op.alias >= 0:
                rebuilt.set_alias(op.id, op.alias)
        rebuilt.set_outputs(g.outputs).finalize()
        assert rebuilt.to_json() == g.to_json()
        with g.auto_shard((4,), "p3.16xlarge") as a, rebuilt.auto_shard((4,), "p3.16xlarge") as b:
            assert a.objective == b.objective
            assert np.array_equal(a.op_strategies, b.op_strategies)
        rebuilt.close()


def test_invalid_graph_names_the_op():
    g = alpa.Graph()
    g.add_op("parameter", shape=[8, 4], dtype="f32", name="x")
    g.add_op("parameter", shape=[3, 16], dtype="f32", name="w")
    with pytest.raises(alpa.InvalidGraphError) as info:
        g.add_op("dot_general", [0, 1], attrs=[0, 1, 1, 0], name="fc")
    assert "op 2 'fc' (dot_general)" in str(info.value)
    assert g.op_count == 2  # all or nothing
    with pytest.raises(alpa.InvalidArgumentError):
        g.add_ops(["nonsense-kind"])
    g.close()


def test_model_zoo_graph_auto_shard_budget():
    with alpa.Graph.from_model("mlp:layers=2,hidden=32,batch=64") as g:
        with pytest.raises(alpa.InfeasibleError) as info:
            g.auto_shard((2,), "p3.16xlarge", memory_budget_bytes=16)
        assert info.value.message


def test_make_training_from_forward_graph() -> None:
    forward = build_mlp()
    train = forward.make_training("adam:lr=0.0003")
    phases = train.stats()["ops_by_phase"]
    assert phases["forward"] == forward.stats()["ops"]
    assert phases["backward"] > 0 and phases["update"] > 0
    # Adam: two moments per weight (w1, b1, w2) and the step counter, all optimizer state.
    assert train.stats()["optimizer_state_bytes"] == 2 * train.stats()["parameter_bytes"] + 4
    with pytest.raises(alpa.InvalidArgumentError, match="already has a backward phase"):
        train.make_training("adam")
    with pytest.raises(alpa.InvalidArgumentError, match='optimizer "nadam"'):
        forward.make_training("nadam")


def test_make_training_equals_the_zoo() -> None:
    spec = "mlp:layers=2,batch=8,hidden=16"
    forward = alpa.Graph.from_model(spec + ",training=0")
    zoo = alpa.Graph.from_model(spec + ",optimizer=sgd")
    assert forward.make_training("sgd").to_json() == zoo.to_json()


def test_name_tables_are_the_headers_constants() -> None:
    """The names add_op / add_ops take (kinds, roles, phases) and the attribute words of compare
    and reduce_window are alpa.h's pinned values."""
    header = REPO / "include" / "alpa.h"
    if not header.exists():
        pytest.skip(f"{header} not found (tests run from the repository)")
    defines = dict(re.findall(r"^#define (ALPA_\w+) \(?(-?\d+)\)?", header.read_text(), re.M))
    tables = {"OP": alpa.graph.OP_KINDS, "ROLE": alpa.graph.ROLES, "PHASE": alpa.graph.PHASES,
              "CMP": alpa.graph.COMPARISONS, "REDUCE": alpa.graph.REDUCTIONS}
    for prefix, table in tables.items():
        in_header = {k[len(prefix) + 6:].lower(): int(v) for k, v in defines.items()
                     if k.startswith(f"ALPA_{prefix}_")}
        assert table == in_header, prefix
