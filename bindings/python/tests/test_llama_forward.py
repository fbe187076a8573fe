"""A Llama model written as a forward graph op by op with ``Graph.add_op``, as a user without the
model zoo would write it (token embedding, RMSNorm, rotary embeddings, grouped-query attention,
SwiGLU MLP, untied head, mean cross-entropy; one pipeline layer per block), made a training step
by ``Graph.make_training("adam")``: it is the zoo's llama training graph of the same sizes op for
op, and it plans like it. The op sequence follows src/models/llama.cc (and
tests/capi/llama_forward_capi_test.c, the same in C)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import pytest

import alpa
from alpa.graph import COMPARISONS

from conftest import MEDIUM_CLUSTER


@dataclass(frozen=True)
class LlamaSizes:
    batch: int = 8
    seq: int = 16
    hidden: int = 64
    heads: int = 4
    kv_heads: int = 2  # grouped-query: two query heads per kv head
    ffn: int = 128
    vocab: int = 100
    layers: int = 2
    dtype: str = "bf16"
    preset: Optional[str] = None  # the zoo preset these sizes are (refined by layers and batch)

    def zoo_spec(self) -> str:
        if self.preset is not None:
            return f"{self.preset}:layers={self.layers},batch={self.batch}"
        return (f"llama:hidden={self.hidden},layers={self.layers},heads={self.heads},"
                f"kv_heads={self.kv_heads},ffn={self.ffn},seq={self.seq},vocab={self.vocab},"
                f"batch={self.batch},dtype={self.dtype}")


class Forward:
    """``Graph.add_op`` with the pipeline layer of the ops added now, and shapes read back."""

    def __init__(self, graph: alpa.Graph) -> None:
        self.graph = graph
        self.layer = 0

    def op(self, kind: str, operands: Sequence[int] = (), **kw) -> int:
        return self.graph.add_op(kind, operands, layer=self.layer, **kw)

    def stop_gradient(self, x: int) -> int:
        """x marked stop_gradient (autodiff treats it as a constant), as the zoo marks a softmax's
        row maximum."""
        self.graph.set_stop_gradient(x)
        assert self.graph.op(x).stop_gradient
        return x

    def shape(self, x: int) -> tuple[int, ...]:
        return self.graph.op(x).shape

    def dtype(self, x: int) -> str:
        return self.graph.op(x).dtype

    def parameter(self, shape: Sequence[int], dtype: str, role: str, name: str) -> int:
        return self.op("parameter", shape=shape, dtype=dtype, role=role, name=name)

    def constant_like(self, value: float, x: int) -> int:
        return self.op("constant", shape=self.shape(x), dtype=self.dtype(x), value=value)

    def scale(self, x: int, c: float) -> int:
        return self.op("mul", [x, self.constant_like(c, x)])

    def reduce(self, kind: str, x: int, dims: Sequence[int]) -> int:
        return self.op(kind, [x], attrs=dims)

    def broadcast(self, x: int, shape: Sequence[int], dims: Sequence[int]) -> int:
        return self.op("broadcast_in_dim", [x], shape=shape, attrs=dims)

    def unreduce_last(self, reduced: int, shape: Sequence[int]) -> int:
        return self.broadcast(reduced, shape, range(len(shape) - 1))

    def slice(self, x: int, starts: Sequence[int], limits: Sequence[int]) -> int:
        return self.op("slice", [x], attrs=[len(starts), *starts, *limits, *[1] * len(starts)])

    def dot_general(self, x: int, y: int, batch: tuple[Sequence[int], Sequence[int]],
                    contracting: tuple[Sequence[int], Sequence[int]]) -> int:
        attrs = [len(batch[0]), *batch[0], *batch[1],
                 len(contracting[0]), *contracting[0], *contracting[1]]
        return self.op("dot_general", [x, y], attrs=attrs)

    def dense(self, x: int, out: int, name: str) -> int:
        """x [..., in] . "<name>.w" [in, out], no bias."""
        shape = self.shape(x)
        w = self.parameter([shape[-1], out], self.dtype(x), "parameter", name + ".w")
        return self.dot_general(x, w, ([], []), ([len(shape) - 1], [0]))


def rms_norm(f: Forward, x: int, name: str) -> int:
    """x * rsqrt(mean(x^2) + 1e-5) * "<name>.g" over the last dim."""
    shape = f.shape(x)
    last = len(shape) - 1
    mean_square = f.scale(f.reduce("reduce_sum", f.op("mul", [x, x]), [last]), 1.0 / shape[last])
    rms_inverse = f.op("rsqrt", [f.op("add", [mean_square, f.constant_like(1e-5, mean_square)])])
    normed = f.op("mul", [x, f.unreduce_last(rms_inverse, shape)])
    gain = f.parameter([shape[last]], f.dtype(x), "parameter", name + ".g")
    return f.op("mul", [normed, f.broadcast(gain, shape, [last])])


def swiglu_mlp(f: Forward, x: int, s: LlamaSizes, name: str) -> int:
    """down(silu(gate(x)) * up(x)); silu(g) = g / (1 + exp(-g))."""
    gate = f.dense(x, s.ffn, name + ".gate")
    exp_neg = f.op("exp", [f.op("neg", [gate])])
    gate = f.op("div", [gate, f.op("add", [f.constant_like(1.0, gate), exp_neg])])
    up = f.dense(x, s.ffn, name + ".up")
    return f.dense(f.op("mul", [gate, up]), s.hidden, name + ".down")


def rotary(f: Forward, x: int, cos: int, sin: int) -> int:
    """x * cos + [-x[d/2:], x[:d/2]] * sin on x [B, s, n, d]; the tables [B, s, d]."""
    shape = f.shape(x)
    half = shape[3] // 2
    first = f.slice(x, [0, 0, 0, 0], [*shape[:3], half])
    second = f.slice(x, [0, 0, 0, half], shape)
    rotated = f.op("concatenate", [f.op("neg", [second]), first], attrs=[3])
    cos_x = f.broadcast(cos, shape, [0, 1, 3])
    sin_x = f.broadcast(sin, shape, [0, 1, 3])
    rotated_sin = f.op("mul", [rotated, sin_x])
    return f.op("add", [f.op("mul", [x, cos_x]), rotated_sin])


def repeat_kv_heads(f: Forward, x: int, heads: int) -> int:
    """[B, s, kv_heads, d] -> [B, s, heads, d]: query head i reads kv head i / group."""
    b, s, kv, d = f.shape(x)
    if heads == kv:
        return x
    repeated = f.broadcast(x, [b, s, kv, heads // kv, d], [0, 1, 2, 4])
    return f.op("reshape", [repeated], shape=[b, s, heads, d])


def softmax(f: Forward, x: int) -> int:
    shape = f.shape(x)
    last = len(shape) - 1
    row_max = f.stop_gradient(f.reduce("reduce_max", x, [last]))
    e = f.op("exp", [f.op("sub", [x, f.unreduce_last(row_max, shape)])])
    return f.op("div", [e, f.unreduce_last(f.reduce("reduce_sum", e, [last]), shape)])


def causal_attention(f: Forward, q: int, k: int, v: int) -> int:
    """q, k, v [B, s, heads, d] -> the context [B, s, heads * d]."""
    b, s, heads, d = f.shape(q)
    scores = f.scale(f.dot_general(q, k, ([0, 2], [0, 2]), ([3], [3])), 1.0 / math.sqrt(d))
    row = f.op("iota", shape=[s, s], dtype="s32", attrs=[0])
    col = f.op("iota", shape=[s, s], dtype="s32", attrs=[1])
    allowed = f.op("compare", [col, row], attrs=[COMPARISONS["le"]])
    allowed = f.broadcast(allowed, f.shape(scores), [2, 3])
    scores = f.op("select", [allowed, scores, f.constant_like(-1e4, scores)])
    context = f.dot_general(softmax(f, scores), v, ([0, 1], [0, 2]), ([3], [1]))
    context = f.op("transpose", [context], attrs=[0, 2, 1, 3])
    return f.op("reshape", [context], shape=[b, s, heads * d])


def attention(f: Forward, x: int, s: LlamaSizes, rope: tuple[int, int], name: str) -> int:
    d = s.hidden // s.heads
    q = f.op("reshape", [f.dense(x, s.hidden, name + ".q")], shape=[s.batch, s.seq, s.heads, d])
    kv_shape = [s.batch, s.seq, s.kv_heads, d]
    k = f.op("reshape", [f.dense(x, s.kv_heads * d, name + ".k")], shape=kv_shape)
    v = f.op("reshape", [f.dense(x, s.kv_heads * d, name + ".v")], shape=kv_shape)
    q = rotary(f, q, *rope)
    k = rotary(f, k, *rope)
    v = repeat_kv_heads(f, v, s.heads)
    k = repeat_kv_heads(f, k, s.heads)
    return f.dense(causal_attention(f, q, k, v), s.hidden, name + ".o")


def cross_entropy(f: Forward, logits: int, labels: int) -> int:
    """The f32 mean over tokens of the softmax cross-entropy of logits [N, V], labels [N]."""
    shape = f.shape(logits)
    row_max = f.stop_gradient(f.reduce("reduce_max", logits, [1]))
    z = f.op("sub", [logits, f.unreduce_last(row_max, shape)])
    lse = f.op("log", [f.reduce("reduce_sum", f.op("exp", [z]), [1])])
    classes = f.op("iota", shape=shape, dtype="s32", attrs=[1])
    hit = f.op("compare", [classes, f.broadcast(labels, shape, [0])], attrs=[COMPARISONS["eq"]])
    one_hot = f.op("convert", [hit], dtype=f.dtype(logits))
    picked = f.reduce("reduce_sum", f.op("mul", [z, one_hot]), [1])
    loss = f.op("sub", [lse, picked])
    if f.dtype(loss) not in ("f32", "f64"):  # a sum over many tokens overflows f16 / bf16
        loss = f.op("convert", [loss], dtype="f32")
    total = f.reduce("reduce_sum", loss, [0])
    return f.op("mul", [total, f.constant_like(1.0 / shape[0], total)], name="loss")


def llama_forward(s: LlamaSizes) -> alpa.Graph:
    """Embedding (layer 0), decoder blocks (layers 1..L), final norm, head and loss (L + 1)."""
    f = Forward(alpa.Graph())
    tokens = f.parameter([s.batch, s.seq], "s32", "input", "tokens")
    labels = f.parameter([s.batch, s.seq], "s32", "input", "labels")
    wte = f.parameter([s.vocab, s.hidden], s.dtype, "parameter", "wte")
    x = f.op("gather", [wte, tokens], attrs=[0])
    rope_shape = [s.batch, s.seq, s.hidden // s.heads]
    rope = (f.parameter(rope_shape, s.dtype, "input", "rope.cos"),
            f.parameter(rope_shape, s.dtype, "input", "rope.sin"))
    for i in range(s.layers):
        f.layer = i + 1
        x = f.op("add", [x, attention(f, rms_norm(f, x, f"h{i}.attn_norm"), s, rope, f"h{i}.attn")])
        x = f.op("add", [x, swiglu_mlp(f, rms_norm(f, x, f"h{i}.mlp_norm"), s, f"h{i}.mlp")])
    f.layer = s.layers + 1
    logits = f.dense(rms_norm(f, x, "norm_f"), s.vocab, "lm_head")
    flat_labels = f.op("reshape", [labels], shape=[s.batch * s.seq])
    flat_logits = f.op("reshape", [logits], shape=[s.batch * s.seq, s.vocab])
    loss = cross_entropy(f, flat_logits, flat_labels)
    return f.graph.set_outputs([loss]).finalize()


def test_llama_forward_is_the_zoos_forward_graph() -> None:
    s = LlamaSizes()
    with llama_forward(s) as forward, alpa.Graph.from_model(s.zoo_spec() + ",training=0") as zoo:
        assert forward.to_json() == zoo.to_json()


# Llama 3 8B's sizes (grouped-query attention with 8 kv heads, 128K vocabulary, seq 8192), two
# of its blocks and a batch of 16, against the preset.
LLAMA3_8B = LlamaSizes(batch=16, seq=8192, hidden=4096, heads=32, kv_heads=8, ffn=14336,
                       vocab=128256, layers=2, preset="llama3-8b")


@pytest.mark.parametrize("s", [LlamaSizes(), LLAMA3_8B], ids=["small", "llama3-8b"])
def test_llama_forward_trains_and_plans_like_the_zoo(s: LlamaSizes) -> None:
    with llama_forward(s) as forward, forward.make_training("adam") as train, \
            alpa.Graph.from_model(s.zoo_spec()) as zoo:
        # op for op the zoo's training graph: backward, Adam with f32 master weights, layers
        assert train.stats() == zoo.stats()
        assert train.to_json() == zoo.to_json()
        # the graph holds the global batch in dim 0 of its inputs, as the zoo spec does
        with train.plan(MEDIUM_CLUSTER, batch_dim=0, threads=1) as built, \
                alpa.plan(s.zoo_spec(), MEDIUM_CLUSTER, threads=1) as planned:
            built_seconds = built.prediction.iteration_seconds
            zoo_seconds = planned.prediction.iteration_seconds
            print(f"iteration seconds: Python-built forward + make_training {built_seconds:.9g}, "
                  f"zoo {zoo_seconds:.9g}")
            assert built_seconds > 0
            assert math.isclose(built_seconds, zoo_seconds, rel_tol=0.01)
            assert [st.first_layer for st in built.stages] == \
                [st.first_layer for st in planned.stages]
