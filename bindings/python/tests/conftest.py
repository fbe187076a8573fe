"""Shared fixtures. The tests run against whatever libalpa the package loads: the bundled one,
or $ALPA_LIBRARY."""
from __future__ import annotations

import gc
import json
import os
import pathlib
import subprocess
import sys

import pytest

import alpa
from alpa.__main__ import find_cli

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
GOLDEN = REPO / "tests" / "golden"
IOPDDL_EXAMPLE = GOLDEN / "iopddl_example.json"

# A small GPT that plans in well under a second into two stages on two single-device hosts.
SMALL_MODEL = "gpt:hidden=256,layers=4,heads=4,seq=128,vocab=1000,batch=16"
SMALL_CLUSTER = "p3.16xlarge:hosts=2,devices_per_host=1"
# Four devices on two hosts: stages with several devices each.
MEDIUM_CLUSTER = "p3.16xlarge:hosts=2,devices_per_host=2"


@pytest.fixture(scope="session")
def iopddl_example() -> pathlib.Path:
    if not IOPDDL_EXAMPLE.exists():
        pytest.skip(f"{IOPDDL_EXAMPLE} not found (tests run from the repository)")
    return IOPDDL_EXAMPLE


@pytest.fixture(scope="session")
def cli() -> str:
    path = find_cli()
    if path is None:
        pytest.skip("no alpa program (bundled, next to $ALPA_LIBRARY, or on PATH)")
    return path


def run_cli(cli: str, *args: str) -> dict:
    """Runs the alpa program and parses its --json line (the last line)."""
    env = dict(os.environ)
    if os.environ.get("ALPA_LIBRARY"):
        lib_dir = str(pathlib.Path(os.environ["ALPA_LIBRARY"]).resolve().parent)
        env["LD_LIBRARY_PATH"] = lib_dir + os.pathsep + env.get("LD_LIBRARY_PATH", "")
    out = subprocess.run([cli, *args], check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session", autouse=True)
def no_leaked_handles():
    """After the whole session every handle the binding created has been destroyed."""
    yield
    gc.collect()
    leaked = {k: v for k, v in alpa.handle_counts().items() if v[0] != v[1]}
    assert alpa.live_handles() == 0, f"leaked handles (created, destroyed): {leaked}"
