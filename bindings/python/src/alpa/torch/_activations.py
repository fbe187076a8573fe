"""GELU modules written as arithmetic (transformers' NewGELUActivation / gelu_new:
0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))) trace into a dozen aten ops whose
intermediates the backward pass keeps; the zoo and XLA see one gelu. A parameterless leaf
module whose class name says GELU and whose output on a probe equals torch's GELU (tanh or erf
form) is emitted as the IR's one ``gelu`` op, whatever ops it traced into."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch

F = torch.nn.functional


@dataclass
class Call:
    """One call of a GELU module: the nodes it traced, its one input and its one output."""

    nodes: list[Any]
    input: Any
    output: Any


def _computes_gelu(module: torch.nn.Module) -> bool:
    probe = torch.linspace(-6.0, 6.0, 241)
    try:
        with torch.no_grad():
            out = module(probe)
    except Exception:  # a module that cannot run on a 1-D float tensor is not an activation
        return False
    if not isinstance(out, torch.Tensor) or out.shape != probe.shape:
        return False
    return any(torch.allclose(out, F.gelu(probe, approximate=a), atol=1e-4)
               for a in ("tanh", "none"))


def gelu_calls(nodes: list[Any], module_path: Callable[[Any], str],
               get_module: Callable[[str], Optional[torch.nn.Module]]) -> list[Call]:
    """The calls of GELU modules among ``nodes`` (in graph order): runs of consecutive nodes
    traced inside one such module, read from one node outside and read outside at one node."""
    verdict: dict[str, bool] = {}

    def is_gelu(path: str) -> bool:
        if path not in verdict:
            m = get_module(path) if path else None
            verdict[path] = (m is not None and "gelu" in type(m).__name__.lower()
                             and not list(m.parameters()) and not list(m.children())
                             and _computes_gelu(m))
        return verdict[path]

    runs: list[list[Any]] = []
    previous = None
    for node in nodes:
        path = module_path(node)
        if not is_gelu(path):
            previous = None
            continue
        if path != previous:
            runs.append([])
        runs[-1].append(node)
        previous = path
    calls = []
    for run in runs:
        inside = set(run)
        inputs = {a for n in run for a in n.all_input_nodes if a not in inside}
        outputs = [n for n in run if any(u not in inside for u in n.users)]
        if len(inputs) == 1 and len(outputs) == 1:
            calls.append(Call(run, inputs.pop(), outputs[0]))
    return calls
