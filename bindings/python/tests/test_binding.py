"""The binding itself: handles, docstrings from the header, prototypes, python -m alpa."""
from __future__ import annotations

import gc
import os
import subprocess
import sys

import pytest

import alpa
from alpa import _header_docs, _lib
from conftest import REPO, SMALL_CLUSTER, SMALL_MODEL


def test_handles_freed_by_with_and_by_gc(iopddl_example):
    gc.collect()
    before = alpa.live_handles()
    with alpa.Cluster.preset("p3.16xlarge", 2) as c:
        assert alpa.live_handles() == before + 1
    assert c.closed and alpa.live_handles() == before
    with pytest.raises(ValueError):
        c.hosts
    c.close()  # idempotent
    p = alpa.Problem.read(iopddl_example)
    g = alpa.Graph.from_model("mlp:layers=2")
    plan = alpa.plan(SMALL_MODEL, SMALL_CLUSTER, microbatches=2)
    sim = plan.simulate()
    assert alpa.live_handles() == before + 4
    del p, g, plan, sim
    gc.collect()
    assert alpa.live_handles() == before
    # Every call that failed left no handle behind.
    for bad in (lambda: alpa.plan("gpt:nonsense=1", SMALL_CLUSTER),
                lambda: alpa.solve(b"{"),
                lambda: alpa.Graph.from_model("nope")):
        with pytest.raises(alpa.AlpaError):
            bad()
    gc.collect()
    assert alpa.live_handles() == before
    counts = alpa.handle_counts()
    assert counts["alpa_plan"][0] >= 1 and all(c >= d for c, d in counts.values())


def test_error_classes():
    e = alpa.errors.error_from_status(4, "time limit before any assignment")
    assert isinstance(e, alpa.SolveTimeoutError) and isinstance(e, TimeoutError)
    assert e.status == 4 and e.status_name == "timeout" or e.status_name
    assert isinstance(alpa.errors.error_from_status(5, "x"), alpa.CancelledError)
    assert isinstance(alpa.errors.error_from_status(3, "x"), alpa.InfeasibleError)
    assert isinstance(alpa.errors.error_from_status(99, "x"), alpa.AlpaError)


def test_docstrings_quote_the_header():
    assert "alpa_model_plan" in alpa.plan.__doc__
    assert "Plans a model-zoo spec" in alpa.plan.__doc__
    assert "alpa_problem_solve" in alpa.solve.__doc__
    assert "count-then-fill" in alpa.parse_assignment.__doc__.lower()


@pytest.mark.skipif(not (REPO / "include" / "alpa.h").exists(), reason="no repository headers")
def test_generated_declarations_match_the_headers():
    tools = REPO / "bindings" / "python" / "tools" / "gen_header_docs.py"
    r = subprocess.run([sys.executable, str(tools), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_every_declared_function_is_bound_with_its_c_types():
    assert len(_header_docs.DECLARATIONS) > 100
    for name, decl in _header_docs.DECLARATIONS.items():
        fn = getattr(_lib.lib, name)
        assert len(fn.argtypes) == len(decl["params"]), name
    assert _lib.lib.alpa_version_number() == 100 * 0 + 100 * int(alpa.version().split(".")[1]) + int(
        alpa.version().split(".")[2]) + 10000 * int(alpa.version().split(".")[0])


def test_struct_sizes_match_the_library():
    """The library writes struct_size = min(element_size, its own size): asking with our size
    must give back exactly our size (same layout version)."""
    import ctypes

    plan = alpa.plan(SMALL_MODEL, SMALL_CLUSTER, microbatches=2)
    info = _lib.alpa_stage_info()
    _lib.call(_lib.lib.alpa_plan_stage, ctypes.byref(info), ctypes.sizeof(info), plan._ptr, 0)
    assert info.struct_size == ctypes.sizeof(info) and info.version == 1
    sim = plan.simulate()
    st = _lib.alpa_simulated_stage()
    _lib.call(_lib.lib.alpa_simulation_stage, ctypes.byref(st), ctypes.sizeof(st), sim._ptr, 0)
    assert st.struct_size == ctypes.sizeof(st)
    spec = _lib.alpa_manual_plan()
    _lib.call(_lib.lib.alpa_manual_plan_init, ctypes.byref(spec), ctypes.sizeof(spec))
    assert spec.struct_size == ctypes.sizeof(spec) == 64 and spec.version == 2
    assert spec.virtual_stages == 1
    config = _lib.alpa_executor_config()
    _lib.call(_lib.lib.alpa_executor_config_init, ctypes.byref(config), ctypes.sizeof(config))
    assert config.struct_size == ctypes.sizeof(config) == 56 and config.rtol == 1e-5
    assert config.version == 2 and config.backend == 0 and config.allow_tf32 == 0
    executor = ctypes.c_void_p()
    _lib.call(_lib.lib.alpa_executor_create, ctypes.byref(executor), plan._ptr,
              ctypes.byref(config))
    step = _lib.alpa_step_result()
    _lib.call(_lib.lib.alpa_executor_run_step, executor, ctypes.byref(step), ctypes.sizeof(step))
    assert step.struct_size == ctypes.sizeof(step) == 80 and step.passed == 1 and step.loss > 0
    _lib.lib.alpa_executor_destroy(executor)
    sim.close()
    plan.close()


def test_python_m_alpa_runs_the_cli(cli):
    r = subprocess.run([sys.executable, "-m", "alpa", "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and alpa.version() in r.stdout
    r = subprocess.run([sys.executable, "-m", "alpa", "solve", "--help"], capture_output=True,
                       text=True)
    assert r.returncode == 0
