"""The IR ops an export emits, kept in Python lists and added to an ``alpa.Graph`` in one
``add_ops`` call. Every value carries its shape and dtype, tracked here so that the aten
translations can insert the explicit broadcasts and conversions the IR requires (its binary ops
take operands of equal shape and dtype)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from ..graph import COMPARISONS, REDUCTIONS, Graph

REDUCE_SUM, REDUCE_MAX = REDUCTIONS["sum"], REDUCTIONS["max"]
FLOATS = ("f32", "f16", "bf16", "f64")


@dataclass(frozen=True)
class Value:
    """One emitted op's result."""

    id: int
    shape: tuple[int, ...]
    dtype: str


class Builder:
    """Accumulates ops; ``layer`` and ``name`` apply to the ops emitted next."""

    def __init__(self) -> None:
        self.kinds: list[str] = []
        self.dtypes: list[Optional[str]] = []
        self.roles: list[str] = []
        self.layers: list[int] = []
        self.operands: list[list[int]] = []
        self.shapes: list[list[int]] = []
        self.attrs: list[list[int]] = []
        self.values: list[float] = []
        self.names: list[Optional[str]] = []
        self.stopped: list[int] = []  # ops autodiff treats as constants (Graph.set_stop_gradient)
        self.layer = 0
        self.name = ""

    def emit(self, kind: str, operands: Sequence[Value], shape: Sequence[int], dtype: str, *,
             attrs: Sequence[int] = (), given_dtype: bool = False, given_shape: bool = False,
             role: str = "activation", value: float = 0.0, name: Optional[str] = None) -> Value:
        self.kinds.append(kind)
        self.dtypes.append(dtype if given_dtype else None)
        self.roles.append(role)
        self.layers.append(self.layer)
        self.operands.append([o.id for o in operands])
        self.shapes.append([int(d) for d in shape] if given_shape or shape else [])
        self.attrs.append([int(a) for a in attrs])
        self.values.append(float(value))
        self.names.append(name if name is not None else (self.name or None))
        return Value(len(self.kinds) - 1, tuple(int(d) for d in shape), dtype)

    def stop_gradient(self, x: Value) -> Value:
        """x, marked so that autodiff treats it as a constant (as the zoo marks a softmax's row
        maximum: the softmax does not depend on it)."""
        self.stopped.append(x.id)
        return x

    def to_graph(self, outputs: Sequence[Value]) -> Graph:
        g = Graph()
        try:
            if self.kinds:
                g.add_ops(self.kinds, dtypes=self.dtypes, roles=self.roles, layers=self.layers,
                          operands=self.operands, shapes=self.shapes, attrs=self.attrs,
                          values=self.values, names=self.names)
            for op in self.stopped:
                g.set_stop_gradient(op)
            g.set_outputs([o.id for o in outputs])
            g.finalize()
        except BaseException:
            g.close()
            raise
        return g

    # ---- sources ----
    def parameter(self, shape: Sequence[int], dtype: str, role: str, name: str) -> Value:
        return self.emit("parameter", (), shape, dtype, given_dtype=True, given_shape=True,
                         role=role, name=name)

    def constant(self, value: float, shape: Sequence[int], dtype: str) -> Value:
        return self.emit("constant", (), shape, dtype, given_dtype=True, given_shape=True,
                         value=value)

    def iota(self, shape: Sequence[int], dtype: str, axis: int) -> Value:
        return self.emit("iota", (), shape, dtype, attrs=[axis], given_dtype=True,
                         given_shape=True)

    # ---- shape ops ----
    def reshape(self, x: Value, shape: Sequence[int]) -> Value:
        if tuple(shape) == x.shape:
            return x
        return self.emit("reshape", [x], shape, x.dtype, given_shape=True)

    def broadcast_in_dim(self, x: Value, shape: Sequence[int], dims: Sequence[int]) -> Value:
        return self.emit("broadcast_in_dim", [x], shape, x.dtype, attrs=dims, given_shape=True)

    def broadcast_to(self, x: Value, shape: Sequence[int]) -> Value:
        """numpy broadcasting: x's dims align with the trailing dims of ``shape``."""
        shape = tuple(int(d) for d in shape)
        if x.shape == shape:
            return x
        offset = len(shape) - len(x.shape)
        return self.broadcast_in_dim(x, shape, range(offset, len(shape)))

    def transpose(self, x: Value, perm: Sequence[int]) -> Value:
        perm = [int(p) for p in perm]
        if perm == list(range(len(perm))):
            return x
        return self.emit("transpose", [x], [x.shape[p] for p in perm], x.dtype, attrs=perm)

    def slice(self, x: Value, starts: Sequence[int], limits: Sequence[int],
              strides: Sequence[int]) -> Value:
        shape = [(hi - lo + st - 1) // st for lo, hi, st in zip(starts, limits, strides)]
        if list(starts) == [0] * len(shape) and tuple(limits) == x.shape and \
                list(strides) == [1] * len(shape):
            return x
        r = len(x.shape)
        return self.emit("slice", [x], shape, x.dtype,
                         attrs=[r, *starts, *limits, *strides])

    def concatenate(self, xs: Sequence[Value], axis: int) -> Value:
        if len(xs) == 1:
            return xs[0]
        shape = list(xs[0].shape)
        shape[axis] = sum(x.shape[axis] for x in xs)
        return self.emit("concatenate", xs, shape, xs[0].dtype, attrs=[axis])

    # ---- elementwise ----
    def convert(self, x: Value, dtype: str) -> Value:
        if x.dtype == dtype:
            return x
        return self.emit("convert", [x], x.shape, dtype, given_dtype=True)

    def unary(self, kind: str, x: Value) -> Value:
        return self.emit(kind, [x], x.shape, x.dtype)

    def binary(self, kind: str, x: Value, y: Value) -> Value:
        return self.emit(kind, [x, y], x.shape, x.dtype)

    def compare(self, comparison: str, x: Value, y: Value) -> Value:
        return self.emit("compare", [x, y], x.shape, "pred", attrs=[COMPARISONS[comparison]])

    def select(self, p: Value, x: Value, y: Value) -> Value:
        return self.emit("select", [p, x, y], x.shape, x.dtype)

    def scale(self, x: Value, factor: float) -> Value:
        return self.binary("mul", x, self.constant(factor, x.shape, x.dtype))

    # ---- reductions and contractions ----
    def reduce(self, kind: str, x: Value, dims: Sequence[int]) -> Value:
        dims = sorted(int(d) for d in dims)
        if not dims:
            return x
        shape = [s for i, s in enumerate(x.shape) if i not in dims]
        return self.emit(kind, [x], shape, x.dtype, attrs=dims)

    def unreduce(self, reduced: Value, shape: Sequence[int], dims: Sequence[int]) -> Value:
        """Broadcasts a reduction's result back over the reduced ``dims``."""
        kept = [i for i in range(len(shape)) if i not in dims]
        return self.broadcast_in_dim(reduced, shape, kept)

    def dot_general(self, x: Value, y: Value, lhs_batch: Sequence[int], rhs_batch: Sequence[int],
                    lhs_contracting: Sequence[int], rhs_contracting: Sequence[int]) -> Value:
        shape = [x.shape[d] for d in lhs_batch]
        lhs_used = set(lhs_batch) | set(lhs_contracting)
        rhs_used = set(rhs_batch) | set(rhs_contracting)
        shape += [s for i, s in enumerate(x.shape) if i not in lhs_used]
        shape += [s for i, s in enumerate(y.shape) if i not in rhs_used]
        attrs = [len(lhs_batch), *lhs_batch, *rhs_batch,
                 len(lhs_contracting), *lhs_contracting, *rhs_contracting]
        return self.emit("dot_general", [x, y], shape, x.dtype, attrs=attrs)
