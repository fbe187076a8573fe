"""aten ops -> libalpa IR ops. Each translation takes the export context, the FX node and its
arguments with FX nodes replaced by their translated values (``Value``, tuples of them, or the
Python scalars and lists of the call), and returns the node's value. Result shapes and dtypes
come from the node's ``meta['val']`` (the fake tensor torch.export recorded), so a translation
only has to say how the IR computes it."""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import torch

from ._builder import FLOATS, REDUCE_MAX, REDUCE_SUM, Builder, Value

aten = torch.ops.aten

DTYPES = {
    torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.float64: "f64",
    torch.int8: "s8", torch.int32: "s32", torch.int64: "s64", torch.bool: "pred",
}  # fmt: skip


class Unsupported(Exception):
    """A construct the IR cannot express; the exporter adds the node and source line."""


def ir_dtype(dtype: Any) -> str:
    try:
        return DTYPES[dtype]
    except KeyError:
        raise Unsupported(f"dtype {dtype} has no libalpa equivalent "
                          f"(supported: {', '.join(str(d) for d in DTYPES)})") from None


def meta(node: Any) -> tuple[tuple[int, ...], str]:
    """The shape and IR dtype of a node's (single tensor) result."""
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor):
        raise Unsupported("the node's result is not one tensor")
    try:
        shape = tuple(int(d) for d in val.shape)
    except TypeError:
        raise Unsupported(f"symbolic shape {tuple(val.shape)}: export with static shapes") from None
    return shape, ir_dtype(val.dtype)


def as_tensor(b: Builder, x: Any, shape: Sequence[int], dtype: str) -> Value:
    """A Value or Python scalar as a tensor of exactly ``shape`` and ``dtype``."""
    if isinstance(x, Value):
        return b.broadcast_to(b.convert(x, dtype), shape)
    if isinstance(x, (bool, int, float)):
        return b.constant(float(x), shape, dtype)
    raise Unsupported(f"operand {x!r} is not a tensor or a number")


def norm_dim(d: int, rank: int) -> int:
    return d + rank if d < 0 else d


def _operand_dtype(xs: Sequence[Any]) -> str:
    """The dtype two operands of a comparison meet in (torch's promotion, enough for IR use)."""
    values = [x for x in xs if isinstance(x, Value)]
    for v in values:
        if v.dtype in FLOATS:
            return v.dtype
    if any(isinstance(x, float) for x in xs):
        return "f32"
    return values[0].dtype


# ---- elementwise ----
def _binary(kind: str) -> Callable[..., Value]:
    def run(b: Builder, node: Any, x: Any, y: Any, alpha: Any = 1, **_: Any) -> Value:
        shape, dtype = meta(node)
        if alpha != 1:
            y = b.scale(as_tensor(b, y, shape, dtype), float(alpha)) if isinstance(y, Value) \
                else y * alpha
        return b.binary(kind, as_tensor(b, x, shape, dtype), as_tensor(b, y, shape, dtype))
    return run


def _rsub(b: Builder, node: Any, x: Any, y: Any, alpha: Any = 1) -> Value:
    return _binary("sub")(b, node, y, x) if alpha == 1 else _binary("sub")(b, node, y * alpha, x)


def _div(b: Builder, node: Any, x: Any, y: Any, rounding_mode: Any = None) -> Value:
    if rounding_mode is not None:
        raise Unsupported(f"division with rounding_mode={rounding_mode!r}")
    return _binary("div")(b, node, x, y)


def _unary(kind: str) -> Callable[..., Value]:
    def run(b: Builder, node: Any, x: Value, *_: Any, **__: Any) -> Value:
        shape, dtype = meta(node)
        return b.unary(kind, as_tensor(b, x, shape, dtype))
    return run


def _gelu(b: Builder, node: Any, x: Value, approximate: str = "none") -> Value:
    # The IR has one gelu, the tanh approximation; erf gelu differs from it by < 1e-3 and costs
    # the same, so both map to it (docs/pytorch.md).
    return b.unary("gelu", x)


def _compare(comparison: str) -> Callable[..., Value]:
    def run(b: Builder, node: Any, x: Any, y: Any) -> Value:
        shape, _ = meta(node)
        dtype = _operand_dtype([x, y])
        return b.compare(comparison, as_tensor(b, x, shape, dtype), as_tensor(b, y, shape, dtype))
    return run


def _where(b: Builder, node: Any, cond: Any, x: Any, y: Any) -> Value:
    shape, dtype = meta(node)
    return b.select(as_tensor(b, cond, shape, "pred"), as_tensor(b, x, shape, dtype),
                    as_tensor(b, y, shape, dtype))


def _masked_fill(b: Builder, node: Any, x: Value, mask: Any, value: Any) -> Value:
    return _where(b, node, mask, value, x)


def _logical(kind: str) -> Callable[..., Value]:
    # pred has no and / or op: a and b = select(a, b, false); a or b = select(a, true, b).
    def run(b: Builder, node: Any, x: Any, y: Any) -> Value:
        shape, dtype = meta(node)
        if dtype != "pred":
            raise Unsupported(f"bitwise {kind} of {dtype} tensors (only of bool tensors)")
        p, q = as_tensor(b, x, shape, "pred"), as_tensor(b, y, shape, "pred")
        if kind == "and":
            return b.select(p, q, b.constant(0.0, shape, "pred"))
        return b.select(p, b.constant(1.0, shape, "pred"), q)
    return run


def _logical_not(b: Builder, node: Any, x: Value) -> Value:
    shape, _ = meta(node)
    return b.compare("eq", as_tensor(b, x, shape, "pred"), b.constant(0.0, shape, "pred"))


def _pow(b: Builder, node: Any, x: Any, y: Any) -> Value:
    shape, dtype = meta(node)
    return b.binary("pow", as_tensor(b, x, shape, dtype), as_tensor(b, y, shape, dtype))


def _to_dtype(b: Builder, node: Any, x: Value, *_: Any, **__: Any) -> Value:
    shape, dtype = meta(node)
    return b.convert(x, dtype)


def _identity(b: Builder, node: Any, x: Any, *_: Any, **__: Any) -> Any:
    return x


def _native_dropout(b: Builder, node: Any, x: Value, *_: Any) -> tuple[Any, ...]:
    # (output, mask): the mask is not expressible (random) and an identity dropout has none.
    return (x, None)


def _full(b: Builder, node: Any, *args: Any, **kwargs: Any) -> Value:
    shape, dtype = meta(node)
    value = kwargs.get("fill_value", args[-1] if args else 0)
    return b.constant(float(value), shape, dtype)


def _splat(value: float) -> Callable[..., Value]:
    def run(b: Builder, node: Any, *_: Any, **__: Any) -> Value:
        shape, dtype = meta(node)
        return b.constant(value, shape, dtype)
    return run


def _arange(b: Builder, node: Any, *args: Any, **kwargs: Any) -> Value:
    shape, dtype = meta(node)
    start, step = (0, 1) if len(args) < 2 else (args[0], args[2] if len(args) > 2 else 1)
    out = b.iota(shape, dtype, 0)
    if step != 1:
        out = b.scale(out, float(step))
    if start != 0:
        out = b.binary("add", out, b.constant(float(start), shape, dtype))
    return out


# ---- shapes ----
def _reshape(b: Builder, node: Any, x: Value, *_: Any, **__: Any) -> Value:
    shape, _ = meta(node)
    return b.reshape(x, shape)


def _expand(b: Builder, node: Any, x: Value, *_: Any, **__: Any) -> Value:
    shape, _ = meta(node)
    return b.broadcast_to(x, shape)


def _permute(b: Builder, node: Any, x: Value, dims: Sequence[int]) -> Value:
    return b.transpose(x, [norm_dim(d, len(x.shape)) for d in dims])


def _transpose(b: Builder, node: Any, x: Value, d0: int, d1: int) -> Value:
    perm = list(range(len(x.shape)))
    d0, d1 = norm_dim(d0, len(perm)), norm_dim(d1, len(perm))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return b.transpose(x, perm)


def _t(b: Builder, node: Any, x: Value) -> Value:
    return b.transpose(x, [1, 0]) if len(x.shape) == 2 else x


def _slice_dim(b: Builder, x: Value, dim: int, start: int, end: int, step: int = 1) -> Value:
    r = len(x.shape)
    dim = norm_dim(dim, r)
    size = x.shape[dim]
    start = 0 if start is None else (start + size if start < 0 else start)
    end = size if end is None else (end + size if end < 0 else end)
    start, end = max(0, min(start, size)), max(0, min(end, size))
    end = max(start, end)
    starts, limits, strides = [0] * r, list(x.shape), [1] * r
    starts[dim], limits[dim], strides[dim] = start, end, step
    return b.slice(x, starts, limits, strides)


def _slice(b: Builder, node: Any, x: Value, dim: int = 0, start: Any = None, end: Any = None,
           step: int = 1) -> Value:
    return _slice_dim(b, x, dim, start, end, step)


def _select(b: Builder, node: Any, x: Value, dim: int, index: int) -> Value:
    shape, _ = meta(node)
    dim = norm_dim(dim, len(x.shape))
    index = index + x.shape[dim] if index < 0 else index
    return b.reshape(_slice_dim(b, x, dim, index, index + 1), shape)


def _split_sizes(b: Builder, x: Value, sizes: Sequence[int], dim: int) -> tuple[Value, ...]:
    out, start = [], 0
    for s in sizes:
        out.append(_slice_dim(b, x, dim, start, start + s))
        start += s
    return tuple(out)


def _split(b: Builder, node: Any, x: Value, size: Any, dim: int = 0) -> tuple[Value, ...]:
    dim = norm_dim(dim, len(x.shape))
    if isinstance(size, int):
        total = x.shape[dim]
        size = [min(size, total - s) for s in range(0, total, size)]
    return _split_sizes(b, x, size, dim)


def _unbind(b: Builder, node: Any, x: Value, dim: int = 0) -> tuple[Value, ...]:
    dim = norm_dim(dim, len(x.shape))
    shape = x.shape[:dim] + x.shape[dim + 1:]
    return tuple(b.reshape(p, shape) for p in _split_sizes(b, x, [1] * x.shape[dim], dim))


def _cat(b: Builder, node: Any, xs: Sequence[Value], dim: int = 0) -> Value:
    shape, dtype = meta(node)
    dim = norm_dim(dim, len(shape))
    parts = [b.convert(x, dtype) for x in xs if not (len(x.shape) == 1 and x.shape[0] == 0)
             and x.shape[dim] > 0]
    return b.concatenate(parts, dim)


# ---- indexing ----
def _embedding(b: Builder, node: Any, weight: Value, indices: Value, *_: Any) -> Value:
    shape, _ = meta(node)
    return b.emit("gather", [weight, indices], shape, weight.dtype, attrs=[0])


def _index_select(b: Builder, node: Any, x: Value, dim: int, indices: Value) -> Value:
    shape, _ = meta(node)
    return b.emit("gather", [x, indices], shape, x.dtype, attrs=[norm_dim(dim, len(x.shape))])


def _gather(b: Builder, node: Any, x: Value, dim: int, index: Value, *_: Any, **__: Any) -> Value:
    # torch.gather picking one element per row (cross-entropy's target logit): a one-hot
    # product, as the zoo's cross-entropy computes it. More than one pick per row has no IR form.
    shape, _ = meta(node)
    dim = norm_dim(dim, len(x.shape))
    expected = x.shape[:dim] + (1,) + x.shape[dim + 1:]
    if index.shape != expected:
        raise Unsupported(f"gather with index shape {list(index.shape)} on {list(x.shape)} along "
                          f"dim {dim} (only one index per row: {list(expected)})")
    classes = b.iota(x.shape, index.dtype, dim)
    hit = b.compare("eq", classes, b.broadcast_in_dim(index, x.shape, range(len(x.shape))))
    picked = b.reduce("reduce_sum", b.binary("mul", x, b.convert(hit, x.dtype)), [dim])
    return b.reshape(picked, shape)


# ---- reductions ----
def _dims(x: Value, dims: Any) -> list[int]:
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return list(range(len(x.shape)))
    if isinstance(dims, int):
        dims = [dims]
    return sorted(norm_dim(d, len(x.shape)) for d in dims)


def _sum(b: Builder, node: Any, x: Value, dims: Any = None, keepdim: bool = False,
         **_: Any) -> Value:
    shape, dtype = meta(node)
    return b.reshape(b.reduce("reduce_sum", b.convert(x, dtype), _dims(x, dims)), shape)


def _mean(b: Builder, node: Any, x: Value, dims: Any = None, keepdim: bool = False,
          **_: Any) -> Value:
    shape, dtype = meta(node)
    dims = _dims(x, dims)
    count = math.prod(x.shape[d] for d in dims)
    return b.reshape(b.scale(b.reduce("reduce_sum", b.convert(x, dtype), dims), 1.0 / count),
                     shape)


def _amax(b: Builder, node: Any, x: Value, dims: Any = (), keepdim: bool = False) -> Value:
    shape, _ = meta(node)
    return b.reshape(b.reduce("reduce_max", x, _dims(x, dims)), shape)


def _softmax_parts(b: Builder, x: Value, dim: int) -> tuple[Value, Value, Value]:
    """(z = x - max, exp(z), sum of exp(z)) along dim, the max broadcast back (and marked
    stop_gradient: neither the softmax nor the log-softmax depends on it)."""
    dim = norm_dim(dim, len(x.shape))
    row_max = b.stop_gradient(b.reduce("reduce_max", x, [dim]))
    z = b.binary("sub", x, b.unreduce(row_max, x.shape, [dim]))
    e = b.unary("exp", z)
    return z, e, b.reduce("reduce_sum", e, [dim])


def _softmax(b: Builder, node: Any, x: Value, dim: int, *_: Any, **__: Any) -> Value:
    _, dtype = meta(node)
    x = b.convert(x, dtype)
    dim = norm_dim(dim, len(x.shape))
    _, e, total = _softmax_parts(b, x, dim)
    return b.binary("div", e, b.unreduce(total, x.shape, [dim]))


def _log_softmax(b: Builder, node: Any, x: Value, dim: int, *_: Any, **__: Any) -> Value:
    _, dtype = meta(node)
    x = b.convert(x, dtype)
    dim = norm_dim(dim, len(x.shape))
    z, _, total = _softmax_parts(b, x, dim)
    return b.binary("sub", z, b.unreduce(b.unary("log", total), x.shape, [dim]))


def _layer_norm_core(b: Builder, x: Value, normalized: Sequence[int], weight: Any, bias: Any,
                     eps: float) -> tuple[Value, Value, Value]:
    # The zoo's LayerNorm (statistics by reduce_sum, never a dot with a ones vector).
    dims = list(range(len(x.shape) - len(normalized), len(x.shape)))
    inv_n = 1.0 / math.prod(normalized)
    mean = b.scale(b.reduce("reduce_sum", x, dims), inv_n)
    centered = b.binary("sub", x, b.unreduce(mean, x.shape, dims))
    var = b.scale(b.reduce("reduce_sum", b.binary("mul", centered, centered), dims), inv_n)
    rstd = b.unary("rsqrt", b.binary("add", var, b.constant(eps, var.shape, var.dtype)))
    out = b.binary("mul", centered, b.unreduce(rstd, x.shape, dims))
    if isinstance(weight, Value):
        out = b.binary("mul", out, b.broadcast_to(weight, x.shape))
    if isinstance(bias, Value):
        out = b.binary("add", out, b.broadcast_to(bias, x.shape))
    return out, mean, rstd


def _native_layer_norm(b: Builder, node: Any, x: Value, normalized: Sequence[int], weight: Any,
                       bias: Any, eps: float) -> tuple[Value, Value, Value]:
    out, mean, rstd = _layer_norm_core(b, x, normalized, weight, bias, eps)
    stat_shape = x.shape[: len(x.shape) - len(normalized)] + (1,) * len(normalized)
    return out, b.reshape(mean, stat_shape), b.reshape(rstd, stat_shape)


def _layer_norm(b: Builder, node: Any, x: Value, normalized: Sequence[int], weight: Any = None,
                bias: Any = None, eps: float = 1e-5, *_: Any) -> Value:
    return _layer_norm_core(b, x, normalized, weight, bias, eps)[0]


# ---- contractions ----
def _mm(b: Builder, node: Any, x: Value, y: Value) -> Value:
    return b.dot_general(x, y, [], [], [1], [0])


def _addmm(b: Builder, node: Any, bias: Any, x: Value, y: Value, beta: Any = 1,
           alpha: Any = 1) -> Value:
    shape, dtype = meta(node)
    out = b.dot_general(x, y, [], [], [1], [0])
    if alpha != 1:
        out = b.scale(out, float(alpha))
    if beta == 0:
        return out
    bias = as_tensor(b, bias, shape, dtype)
    if beta != 1:
        bias = b.scale(bias, float(beta))
    return b.binary("add", out, bias)


def _bmm(b: Builder, node: Any, x: Value, y: Value) -> Value:
    return b.dot_general(x, y, [0], [0], [2], [1])


def _baddbmm(b: Builder, node: Any, base: Any, x: Value, y: Value, beta: Any = 1,
             alpha: Any = 1) -> Value:
    shape, dtype = meta(node)
    out = b.dot_general(x, y, [0], [0], [2], [1])
    if alpha != 1:
        out = b.scale(out, float(alpha))
    if beta == 0:
        return out
    base = as_tensor(b, base, shape, dtype)
    return b.binary("add", out, b.scale(base, float(beta)) if beta != 1 else base)


def _matmul(b: Builder, node: Any, x: Value, y: Value) -> Value:
    shape, _ = meta(node)
    if len(x.shape) == 1 or len(y.shape) == 1:
        raise Unsupported("matmul with a 1-D operand (reshape it to 2-D)")
    # Batch dims broadcast: bring both to the result's batch dims, then one batched dot.
    batch = shape[:-2]
    nb = len(batch)
    x = b.broadcast_to(x, batch + x.shape[-2:])
    y = b.broadcast_to(y, batch + y.shape[-2:])
    return b.dot_general(x, y, list(range(nb)), list(range(nb)), [nb + 1], [nb])


def _linear(b: Builder, node: Any, x: Value, w: Value, bias: Any = None) -> Value:
    shape, dtype = meta(node)
    out = b.dot_general(x, w, [], [], [len(x.shape) - 1], [1])
    if isinstance(bias, Value):
        out = b.binary("add", out, b.broadcast_to(bias, shape))
    return out


def _sdpa(b: Builder, node: Any, q: Value, k: Value, v: Value, attn_mask: Any = None,
          dropout_p: float = 0.0, is_causal: bool = False, scale: Any = None,
          enable_gqa: bool = False) -> Value:
    # The zoo's attention: scores = q k^T * scale, masked, softmax, times v; dropout_p is
    # ignored as dropout is (docs/pytorch.md).
    if len(q.shape) != 4 or q.shape[1] != k.shape[1]:
        raise Unsupported("scaled_dot_product_attention other than [B, heads, s, d] with as many "
                          "key / value heads as query heads")
    head_dim = q.shape[-1]
    scores = b.dot_general(q, k, [0, 1], [0, 1], [3], [3])  # [B, H, s_q, s_k]
    scores = b.scale(scores, float(scale) if scale is not None else 1.0 / math.sqrt(head_dim))
    sq, sk = scores.shape[2], scores.shape[3]
    if is_causal:
        row = b.iota([sq, sk], "s32", 0)
        col = b.iota([sq, sk], "s32", 1)
        attn_mask = b.broadcast_in_dim(b.compare("le", col, row), scores.shape, [2, 3])
    if isinstance(attn_mask, Value):
        if attn_mask.dtype == "pred":
            masked = b.constant(float("-inf"), scores.shape, scores.dtype)
            scores = b.select(b.broadcast_to(attn_mask, scores.shape), scores, masked)
        else:
            mask = b.broadcast_to(b.convert(attn_mask, scores.dtype), scores.shape)
            scores = b.binary("add", scores, mask)
    _, e, total = _softmax_parts(b, scores, 3)
    probs = b.binary("div", e, b.unreduce(total, scores.shape, [3]))
    return b.dot_general(probs, v, [0, 1], [0, 1], [3], [2])  # [B, H, s_q, d]


# ---- convolutional nets ----
def _convolution(b: Builder, node: Any, x: Value, w: Value, bias: Any, stride: Sequence[int],
                 padding: Sequence[int], dilation: Sequence[int], transposed: bool,
                 output_padding: Sequence[int], groups: int) -> Value:
    if transposed:
        raise Unsupported("transposed convolution")
    shape, dtype = meta(node)
    k = len(x.shape) - 2
    pad = list(padding) * (k if len(padding) == 1 else 1)
    attrs = [k, *stride, *pad, *pad, *([1] * k), *dilation, groups]
    out = b.emit("convolution", [x, w], shape, x.dtype, attrs=attrs)
    if isinstance(bias, Value):
        out = b.binary("add", out, b.broadcast_in_dim(bias, shape, [1]))
    return out


def _max_pool(b: Builder, node: Any, x: Value, kernel: Sequence[int], stride: Sequence[int] = (),
              padding: Sequence[int] = (0,), dilation: Sequence[int] = (1,),
              ceil_mode: bool = False) -> tuple[Value, None]:
    if any(d != 1 for d in dilation) or ceil_mode:
        raise Unsupported("max_pool with dilation or ceil_mode (the IR's windows have neither)")
    k = len(kernel)
    r = len(x.shape)
    stride = list(stride) or list(kernel)
    pad = list(padding) * (k if len(padding) == 1 else 1)
    window = [1] * (r - k) + list(kernel)
    strides = [1] * (r - k) + stride
    lo = [0] * (r - k) + pad
    attrs = [REDUCE_MAX, r, *window, *strides, *lo, *lo]
    shape = [(x.shape[i] + 2 * lo[i] - window[i]) // strides[i] + 1 for i in range(r)]
    # The indices output (for max_pool's backward in torch) has no IR form; libalpa's autodiff
    # makes the backward itself (select_and_scatter).
    return b.emit("reduce_window", [x], shape, x.dtype, attrs=attrs), None


def _avg_pool(b: Builder, node: Any, x: Value, kernel: Sequence[int], stride: Sequence[int] = (),
              padding: Sequence[int] = (0,), ceil_mode: bool = False,
              count_include_pad: bool = True, divisor_override: Any = None) -> Value:
    if ceil_mode or divisor_override is not None or (any(padding) and not count_include_pad):
        raise Unsupported("avg_pool with ceil_mode, divisor_override or count_include_pad=False")
    shape, _ = meta(node)
    k = len(kernel)
    r = len(x.shape)
    stride = list(stride) or list(kernel)
    pad = list(padding) * (k if len(padding) == 1 else 1)
    attrs = [REDUCE_SUM, r, *([1] * (r - k)), *kernel, *([1] * (r - k)), *stride,
             *([0] * (r - k)), *pad, *([0] * (r - k)), *pad]
    summed = b.emit("reduce_window", [x], shape, x.dtype, attrs=attrs)
    return b.scale(summed, 1.0 / math.prod(kernel))


TRANSLATIONS: dict[Any, Callable[..., Any]] = {
    # elementwise
    aten.add.Tensor: _binary("add"), aten.add.Scalar: _binary("add"),
    aten.sub.Tensor: _binary("sub"), aten.sub.Scalar: _binary("sub"),
    aten.rsub.Tensor: _rsub, aten.rsub.Scalar: _rsub,
    aten.mul.Tensor: _binary("mul"), aten.mul.Scalar: _binary("mul"),
    aten.div.Tensor: _div, aten.div.Scalar: _div, aten.div.Tensor_mode: _div,
    aten.maximum.default: _binary("max"), aten.minimum.default: _binary("min"),
    aten.pow.Tensor_Scalar: _pow, aten.pow.Tensor_Tensor: _pow, aten.pow.Scalar: _pow,
    aten.neg.default: _unary("neg"), aten.abs.default: _unary("abs"),
    aten.exp.default: _unary("exp"), aten.log.default: _unary("log"),
    aten.tanh.default: _unary("tanh"), aten.sqrt.default: _unary("sqrt"),
    aten.rsqrt.default: _unary("rsqrt"), aten.relu.default: _unary("relu"),
    aten.gelu.default: _gelu,
    aten.eq.Tensor: _compare("eq"), aten.eq.Scalar: _compare("eq"),
    aten.ne.Tensor: _compare("ne"), aten.ne.Scalar: _compare("ne"),
    aten.lt.Tensor: _compare("lt"), aten.lt.Scalar: _compare("lt"),
    aten.le.Tensor: _compare("le"), aten.le.Scalar: _compare("le"),
    aten.gt.Tensor: _compare("gt"), aten.gt.Scalar: _compare("gt"),
    aten.ge.Tensor: _compare("ge"), aten.ge.Scalar: _compare("ge"),
    aten.where.self: _where, aten.masked_fill.Scalar: _masked_fill,
    aten.masked_fill.Tensor: _masked_fill,
    aten.bitwise_and.Tensor: _logical("and"), aten.logical_and.default: _logical("and"),
    aten.bitwise_or.Tensor: _logical("or"), aten.logical_or.default: _logical("or"),
    aten.logical_not.default: _logical_not, aten.bitwise_not.default: _logical_not,
    aten._to_copy.default: _to_dtype, aten.to.dtype: _to_dtype,
    aten._assert_tensor_metadata.default: lambda *a, **k: None,
    # identities
    aten.clone.default: _identity, aten.contiguous.default: _identity,
    aten.alias.default: _identity, aten.detach.default: _identity,
    aten.lift_fresh_copy.default: _identity, aten.dropout.default: _identity,
    aten.native_dropout.default: _native_dropout,
    # constants
    aten.full.default: _full, aten.full_like.default: _full,
    aten.scalar_tensor.default: _full,
    aten.zeros.default: _splat(0.0), aten.zeros_like.default: _splat(0.0),
    aten.ones.default: _splat(1.0), aten.ones_like.default: _splat(1.0),
    aten.arange.default: _arange, aten.arange.start: _arange, aten.arange.start_step: _arange,
    # shapes
    aten.view.default: _reshape, aten._unsafe_view.default: _reshape,
    aten.reshape.default: _reshape, aten.unsqueeze.default: _reshape,
    aten.squeeze.default: _reshape, aten.squeeze.dim: _reshape, aten.squeeze.dims: _reshape,
    aten.flatten.using_ints: _reshape,
    aten.expand.default: _expand, aten.permute.default: _permute,
    aten.transpose.int: _transpose, aten.t.default: _t,
    aten.slice.Tensor: _slice, aten.select.int: _select,
    aten.split.Tensor: _split, aten.split_with_sizes.default: _split,
    aten.unbind.int: _unbind, aten.cat.default: _cat,
    # indexing
    aten.embedding.default: _embedding, aten.index_select.default: _index_select,
    aten.gather.default: _gather,
    # reductions and normalization
    aten.sum.dim_IntList: _sum, aten.sum.default: _sum, aten.mean.dim: _mean,
    aten.mean.default: _mean, aten.amax.default: _amax,
    aten._softmax.default: _softmax, aten.softmax.int: _softmax,
    aten._log_softmax.default: _log_softmax, aten.log_softmax.int: _log_softmax,
    aten.native_layer_norm.default: _native_layer_norm, aten.layer_norm.default: _layer_norm,
    # contractions
    aten.mm.default: _mm, aten.addmm.default: _addmm, aten.bmm.default: _bmm,
    aten.baddbmm.default: _baddbmm, aten.matmul.default: _matmul, aten.linear.default: _linear,
    aten.scaled_dot_product_attention.default: _sdpa,
    # convolutional nets
    aten.convolution.default: _convolution,
    aten.max_pool2d_with_indices.default: _max_pool,
    aten.max_pool2d.default: lambda *a, **k: _max_pool(*a, **k)[0],
    aten.avg_pool2d.default: _avg_pool,
}  # fmt: skip

# Ops torch.export's default decomposition table would lower to something less direct (the
# attention into its math with a materialized mask, dropout into random numbers).
KEEP = (aten.scaled_dot_product_attention.default, aten.dropout.default,
        aten.native_dropout.default, aten.matmul.default, aten.linear.default,
        aten.layer_norm.default, aten.gelu.default)
