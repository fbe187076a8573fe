"""A numpy evaluator of libalpa's forward IR ops (docs/graph-format.md's semantics), for tests
that check an exported graph computes what the framework computes."""
from __future__ import annotations

import itertools
import string

import numpy as np

NP = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "s8": np.int8, "s32": np.int32,
      "s64": np.int64, "pred": np.bool_}
UNARY = {"neg": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log, "tanh": np.tanh,
         "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "relu": lambda x: np.maximum(x, 0),
         "gelu": lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))}
BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
          "max": np.maximum, "min": np.minimum, "pow": np.power}
COMPARE = [np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal]


def _dot(x: np.ndarray, y: np.ndarray, attrs: tuple[int, ...]) -> np.ndarray:
    nb = attrs[0]
    lb, rb = attrs[1:1 + nb], attrs[1 + nb:1 + 2 * nb]
    rest = attrs[1 + 2 * nb:]
    nc = rest[0]
    lc, rc = rest[1:1 + nc], rest[1 + nc:1 + 2 * nc]
    letters = iter(string.ascii_letters)
    lhs = [next(letters) for _ in x.shape]
    rhs = [next(letters) for _ in y.shape]
    for a, b in zip(lb, rb):
        rhs[b] = lhs[a]
    for a, b in zip(lc, rc):
        rhs[b] = lhs[a]
    out = [lhs[a] for a in lb]
    out += [lhs[i] for i in range(x.ndim) if i not in lb and i not in lc]
    out += [rhs[i] for i in range(y.ndim) if i not in rb and i not in rc]
    return np.einsum(f"{''.join(lhs)},{''.join(rhs)}->{''.join(out)}", x, y)


def _windows(x: np.ndarray, window, strides, out_shape):
    """Per window offset, the strided view of x that offset reads for every output element."""
    for offset in itertools.product(*[range(w) for w in window]):
        yield offset, x[tuple(slice(o, o + (n - 1) * st + 1, st)
                              for o, n, st in zip(offset, out_shape, strides))]


def _convolution(x: np.ndarray, w: np.ndarray, a: tuple[int, ...]) -> np.ndarray:
    k = a[0]
    strides, lo, hi = a[1:1 + k], a[1 + k:1 + 2 * k], a[1 + 2 * k:1 + 3 * k]
    lhs_dil, rhs_dil, groups = a[1 + 3 * k:1 + 4 * k], a[1 + 4 * k:1 + 5 * k], a[1 + 5 * k]
    if any(d != 1 for d in lhs_dil) or groups != 1:
        raise NotImplementedError("ir_numpy: convolution with lhs dilation or groups")
    x = np.pad(x, [(0, 0), (0, 0)] + [(l, h) for l, h in zip(lo, hi)])
    span = [(kk - 1) * d + 1 for kk, d in zip(w.shape[2:], rhs_dil)]
    out_sp = [(n - s) // st + 1 for n, s, st in zip(x.shape[2:], span, strides)]
    out = np.zeros((x.shape[0], w.shape[0], *out_sp), dtype=x.dtype)
    for offset in itertools.product(*[range(kk) for kk in w.shape[2:]]):
        start = [o * d for o, d in zip(offset, rhs_dil)]
        part = x[(slice(None), slice(None)) + tuple(
            slice(s0, s0 + (n - 1) * st + 1, st) for s0, n, st in zip(start, out_sp, strides))]
        out += np.einsum("nc...,oc->no...", part, w[(slice(None), slice(None)) + offset])
    return out


def _reduce_window(x: np.ndarray, a: tuple[int, ...]) -> np.ndarray:
    kind, r = a[0], a[1]
    window, strides = a[2:2 + r], a[2 + r:2 + 2 * r]
    lo, hi = a[2 + 2 * r:2 + 3 * r], a[2 + 3 * r:2 + 4 * r]
    fill = -np.inf if kind == 1 else 0
    x = np.pad(x, [(l, h) for l, h in zip(lo, hi)], constant_values=fill)
    out_shape = [(n - w) // st + 1 for n, w, st in zip(x.shape, window, strides)]
    parts = [p for _, p in _windows(x, window, strides, out_shape)]
    return np.max(parts, axis=0) if kind == 1 else np.sum(parts, axis=0)


def evaluate(graph, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The graph's outputs; ``feeds`` gives every parameter op's value by name."""
    vals: list = []
    for op in graph.ops:
        xs = [vals[i] for i in op.operands]
        k, a = op.kind, op.attrs
        if k == "parameter":
            v = np.asarray(feeds[op.name]).astype(NP[op.dtype]).reshape(op.shape)
        elif k == "constant":
            v = np.full(op.shape, op.value, dtype=NP[op.dtype])
        elif k == "iota":
            shape = [1] * len(op.shape)
            shape[a[0]] = op.shape[a[0]]
            v = np.broadcast_to(np.arange(op.shape[a[0]]).reshape(shape), op.shape)
            v = v.astype(NP[op.dtype])
        elif k in UNARY:
            v = UNARY[k](xs[0])
        elif k == "convert":
            v = xs[0].astype(NP[op.dtype])
        elif k in BINARY:
            v = BINARY[k](xs[0], xs[1])
        elif k == "compare":
            v = COMPARE[a[0]](xs[0], xs[1])
        elif k == "select":
            v = np.where(xs[0], xs[1], xs[2])
        elif k == "dot_general":
            v = _dot(xs[0], xs[1], a)
        elif k == "broadcast_in_dim":
            shape = [1] * len(op.shape)
            for i, d in enumerate(a):
                shape[d] = xs[0].shape[i]
            v = np.broadcast_to(xs[0].reshape(shape), op.shape)
        elif k == "reshape":
            v = xs[0].reshape(op.shape)
        elif k == "transpose":
            v = np.transpose(xs[0], a)
        elif k == "slice":
            r = a[0]
            v = xs[0][tuple(slice(a[1 + i], a[1 + r + i], a[1 + 2 * r + i]) for i in range(r))]
        elif k == "concatenate":
            v = np.concatenate(xs, axis=a[0])
        elif k == "reduce_sum":
            v = np.sum(xs[0], axis=tuple(a))
        elif k == "reduce_max":
            v = np.max(xs[0], axis=tuple(a))
        elif k == "gather":
            idx = np.clip(xs[1], 0, xs[0].shape[a[0]] - 1)
            v = np.take(xs[0], idx, axis=a[0])
        elif k == "convolution":
            v = _convolution(xs[0], xs[1], a)
        elif k == "reduce_window":
            v = _reduce_window(xs[0], a)
        else:
            raise NotImplementedError(f"ir_numpy: op kind {k}")
        vals.append(np.asarray(v))
    return [vals[i] for i in graph.outputs]
