"""Constant folding: nodes that depend on no parameter and no input (position ids, the causal
mask HF transformers builds from aranges, buffers) are computed once in torch at export, and
each folded tensor a traced op reads is emitted in the IR's terms: a splat ``constant``, an
``iota`` (times a step, plus a start), the causal mask as the zoo builds it (two iotas and a
``le`` compare, broadcast), or, for any other pattern, an input tensor fed each step (role
``input``, named ``constant.<node>``), which the planner counts as data, not as computation."""
from __future__ import annotations

from typing import Any, Optional

import torch

from ._aten import ir_dtype
from ._builder import Builder, Value


def materialize(b: Builder, value: torch.Tensor, name: str) -> tuple[Value, bool]:
    """The IR ops giving ``value``; the flag says it became an input tensor."""
    shape = tuple(int(d) for d in value.shape)
    dtype = ir_dtype(value.dtype)
    if value.numel() == 0:
        return b.parameter(shape, dtype, "input", f"constant.{name}"), True
    flat = value.reshape(-1)
    first = flat[0]
    if bool(torch.all(flat == first)):
        return b.constant(float(first), shape, dtype), False
    ramp = _ramp(b, value, shape, dtype)
    if ramp is not None:
        return ramp, False
    causal = _causal(b, value, shape, dtype)
    if causal is not None:
        return causal, False
    return b.parameter(shape, dtype, "input", f"constant.{name}"), True


def _ramp(b: Builder, value: torch.Tensor, shape: tuple[int, ...], dtype: str) -> Optional[Value]:
    """start + step * index along one axis (an arange, broadcast)."""
    if dtype == "pred":
        return None
    for axis, size in enumerate(shape):
        if size < 2:
            continue
        index = [0] * len(shape)
        start = value[tuple(index)]
        index[axis] = 1
        step = value[tuple(index)] - start
        ramp_shape = [1] * len(shape)
        ramp_shape[axis] = size
        ramp = torch.arange(size, dtype=torch.float64).reshape(ramp_shape)
        expected = (float(start) + float(step) * ramp).expand(shape)
        if torch.equal(value.to(torch.float64), expected):
            out = b.iota(shape, dtype, axis)
            if float(step) != 1:
                out = b.scale(out, float(step))
            if float(start) != 0:
                out = b.binary("add", out, b.constant(float(start), shape, dtype))
            return out
    return None


def _causal(b: Builder, value: torch.Tensor, shape: tuple[int, ...],
            dtype: str) -> Optional[Value]:
    """Two values, the first where key position <= query position (last two dims)."""
    if len(shape) < 2 or shape[-1] < 2:
        return None
    sq, sk = shape[-2], shape[-1]
    allowed = torch.ones(sq, sk, dtype=torch.bool).tril()
    flat = value.reshape(-1, sq, sk)
    on, off = flat[0, 0, 0], flat[0, 0, 1]
    expected = torch.where(allowed, on, off).expand(flat.shape)
    if not torch.equal(flat, expected):
        return None
    row = b.iota([sq, sk], "s32", 0)
    col = b.iota([sq, sk], "s32", 1)
    mask = b.compare("le", col, row)
    if dtype != "pred" or not bool(on):
        mask = b.select(mask, b.constant(float(on), [sq, sk], dtype),
                        b.constant(float(off), [sq, sk], dtype))
    return b.broadcast_in_dim(mask, shape, [len(shape) - 2, len(shape) - 1])


def evaluate(target: Any, args: Any, kwargs: Any) -> Any:
    """One folded node's value, computed by torch itself."""
    with torch.no_grad():
        return target(*args, **kwargs)
