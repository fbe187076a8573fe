"""`import alpa` then `import torch` with a CUDA-built libalpa.

libalpa opens NCCL at run time (src/exec/cuda/nccl_loader.h) instead of linking it. When it
linked the system's libnccl.so.2, that copy was loaded with libalpa and then served PyTorch's
libtorch_cuda.so too (a process keeps one library per soname), which needs its own, newer NCCL:
`import torch` after `import alpa` failed with "undefined symbol: ncclCommResume".
"""
from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import pytest

import alpa

# Runs in a fresh interpreter: this one may have imported torch already. Reports which
# libraries `import alpa` mapped, then imports torch and uses both.
CHILD = r"""
import json, sys
import alpa
mapped = open("/proc/self/maps").read()
print(json.dumps({"cuda": "libcudart" in mapped, "nccl": "libnccl" in mapped}), flush=True)
import torch
assert torch.ones(3).sum().item() == 3.0
print("torch", torch.__version__, "alpa", alpa.version(), flush=True)
"""


def test_torch_imports_after_alpa_with_a_cuda_built_libalpa():
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    if not pathlib.Path("/proc/self/maps").exists():
        pytest.skip("no /proc/self/maps to tell a CUDA-built libalpa")
    env = dict(os.environ)
    package_root = str(pathlib.Path(alpa.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = package_root + os.pathsep + env.get("PYTHONPATH", "")
    child = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                           env=env, timeout=300)
    lines = child.stdout.splitlines()
    assert lines, f"`import alpa` failed in a fresh interpreter:\n{child.stderr}"
    mapped = json.loads(lines[0])
    if not mapped["cuda"]:
        pytest.skip(f"{alpa.LIBRARY_PATH} is not built with ALPA_WITH_CUDA")
    assert not mapped["nccl"], "import alpa loaded NCCL: libalpa must open it on first use only"
    assert child.returncode == 0, f"import torch after import alpa failed:\n{child.stderr}"
    assert lines[-1].startswith("torch "), child.stdout
