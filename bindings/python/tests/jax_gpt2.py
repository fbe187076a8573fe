"""GPT-2 in plain JAX (no flax): the model of libalpa's JAX acceptance tests (docs/jax.md).

Token and learned position embeddings, pre-LN blocks (causal multi-head attention with a fused
qkv projection, tanh-GeLU MLP of 4 x hidden), final layer norm, LM head tied to the token
embedding (GPT-2's, and the zoo's gpt family's), softmax cross-entropy against `labels`; every
dense layer has a bias. Both softmaxes are the zoo's: exp(x - max) / sum, with the max under
stop_gradient (as jax.nn.softmax has it). The layers are a Python loop (not lax.scan: libalpa imports no while
loop), each under ``jax.named_scope(f"layers_{i}")`` with the zoo's numbering (src/models/gpt.cc),
which the HLO importer reads as layer markers: 0 the embeddings, 1..L the blocks, L + 1 the final
LN, head and loss. Block i's weights are ``params[f"h{i}"]`` (a key that is no layer marker: an
unmarked weight takes its first reader's layer). ``train_step`` is one hand-written Adam step
(bias-corrected, no weight decay; or plain SGD) of f32 parameters: ``train_step(params, opt_state, batch) ->
(params, opt_state, loss)``, the first two donated.
"""
from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.extend
import jax.numpy as jnp


@dataclass(frozen=True)
class Config:
    layers: int = 12
    hidden: int = 768
    heads: int = 12
    vocab: int = 50257
    seq: int = 1024
    optimizer: str = "adam"  # or "sgd"
    lr: float = 1e-3
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8

    def zoo_spec(self, batch: int) -> str:
        """The libalpa zoo spec of the same model (src/models/gpt.cc)."""
        return (f"gpt:hidden={self.hidden},layers={self.layers},heads={self.heads},"
                f"seq={self.seq},vocab={self.vocab},batch={batch},dtype=f32,"
                f"optimizer={self.optimizer},lr={self.lr}")


def _dense(key: jax.Array, fan_in: int, fan_out: int) -> dict[str, jax.Array]:
    return {"kernel": jax.random.normal(key, (fan_in, fan_out), jnp.float32) * 0.02,
            "bias": jnp.zeros((fan_out,), jnp.float32)}


def _norm(hidden: int) -> dict[str, jax.Array]:
    return {"scale": jnp.ones((hidden,), jnp.float32), "bias": jnp.zeros((hidden,), jnp.float32)}


def init_params(cfg: Config, key: jax.Array) -> dict:
    keys = jax.random.split(key, 2 + 4 * cfg.layers)
    h = cfg.hidden
    params: dict = {
        "wte": jax.random.normal(keys[0], (cfg.vocab, h), jnp.float32) * 0.02,
        "wpe": jax.random.normal(keys[1], (cfg.seq, h), jnp.float32) * 0.01,
    }
    for i in range(cfg.layers):
        k = keys[2 + 4 * i: 6 + 4 * i]
        params[f"h{i}"] = {
            "ln1": _norm(h),
            "attn": {"qkv": _dense(k[0], h, 3 * h), "out": _dense(k[1], h, h)},
            "ln2": _norm(h),
            "mlp": {"fc": _dense(k[2], h, 4 * h), "proj": _dense(k[3], 4 * h, h)},
        }
    params["ln_f"] = _norm(h)
    return params


def init_opt_state(params: dict, cfg: Config = Config()) -> dict:
    """Adam's step count and moments; SGD has no state ({})."""
    if cfg.optimizer == "sgd":
        return {}
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    return {"count": jnp.zeros((), jnp.float32), "mu": zeros,
            "nu": jax.tree_util.tree_map(jnp.zeros_like, params)}


def _layer_norm(x: jax.Array, p: dict) -> jax.Array:
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * p["scale"] + p["bias"]


def _linear(x: jax.Array, p: dict) -> jax.Array:
    return x @ p["kernel"] + p["bias"]


def _block(cfg: Config, x: jax.Array, p: dict) -> jax.Array:
    b, s, h = x.shape
    d = h // cfg.heads
    qkv = _linear(_layer_norm(x, p["ln1"]), p["attn"]["qkv"])
    q, k, v = jnp.split(qkv.reshape(b, s, 3, cfg.heads, d), 3, axis=2)
    q, k, v = (t.reshape(b, s, cfg.heads, d) for t in (q, k, v))
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(jnp.float32(d))
    causal = jax.lax.broadcasted_iota(jnp.int32, (s, s), 0) >= jax.lax.broadcasted_iota(
        jnp.int32, (s, s), 1)
    scores = jnp.where(causal, scores, jnp.float32(-1e9))
    # The zoo's softmax (src/models/layers.cc), as jax.nn.softmax: the max under stop_gradient
    # (the softmax does not depend on it), so the backward makes no passes over the scores for it.
    e = jnp.exp(scores - jax.lax.stop_gradient(jnp.max(scores, axis=-1, keepdims=True)))
    probs = e / jnp.sum(e, axis=-1, keepdims=True)
    attn = jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(b, s, h)
    x = x + _linear(attn, p["attn"]["out"])
    m = jax.nn.gelu(_linear(_layer_norm(x, p["ln2"]), p["mlp"]["fc"]), approximate=True)
    return x + _linear(m, p["mlp"]["proj"])


def loss_fn(cfg: Config, params: dict, batch: dict) -> jax.Array:
    tokens, labels = batch["tokens"], batch["labels"]
    with jax.named_scope("layers_0"):
        x = (params["wte"].at[tokens].get(mode="promise_in_bounds")
             + params["wpe"][None, : tokens.shape[1]])
    for i in range(cfg.layers):
        with jax.named_scope(f"layers_{i + 1}"):
            x = _block(cfg, x, params[f"h{i}"])
    with jax.named_scope(f"layers_{cfg.layers + 1}"):
        x = _layer_norm(x, params["ln_f"])
        logits = x @ params["wte"].T
        # The zoo's cross-entropy (src/models/layers.cc): a one-hot of the labels, not a
        # batched gather (which the importer does not take), and the max under stop_gradient.
        z = logits - jax.lax.stop_gradient(jnp.max(logits, axis=-1, keepdims=True))
        lse = jnp.log(jnp.sum(jnp.exp(z), axis=-1))
        one_hot = (jax.lax.broadcasted_iota(jnp.int32, logits.shape, 2)
                   == labels[..., None]).astype(logits.dtype)
        return jnp.mean(lse - jnp.sum(z * one_hot, axis=-1))


def make_train_step(cfg: Config):
    """``train_step(params, opt_state, batch) -> (params, opt_state, loss)``: one Adam step
    (or SGD, ``cfg.optimizer == "sgd"``)."""

    def train_step(params: dict, opt_state: dict, batch: dict):
        loss, grads = jax.value_and_grad(lambda p: loss_fn(cfg, p, batch))(params)
        if cfg.optimizer == "sgd":
            return jax.tree_util.tree_map(lambda p, g: p - cfg.lr * g, params, grads), {}, loss
        count = opt_state["count"] + 1.0
        mu = jax.tree_util.tree_map(lambda m, g: cfg.b1 * m + (1 - cfg.b1) * g,
                                    opt_state["mu"], grads)
        nu = jax.tree_util.tree_map(lambda v, g: cfg.b2 * v + (1 - cfg.b2) * g * g,
                                    opt_state["nu"], grads)
        step_size = cfg.lr * jnp.sqrt(1 - cfg.b2 ** count) / (1 - cfg.b1 ** count)
        params = jax.tree_util.tree_map(
            lambda p, m, v: p - step_size * m / (jnp.sqrt(v) + cfg.eps), params, mu, nu)
        return params, {"count": count, "mu": mu, "nu": nu}, loss

    return train_step


def make_batch(cfg: Config, batch: int, key: jax.Array) -> dict:
    tokens = jax.random.randint(key, (batch, cfg.seq + 1), 0, cfg.vocab, jnp.int32)
    return {"tokens": tokens[:, :-1], "labels": tokens[:, 1:]}


def param_count(params: dict) -> int:
    return sum(int(x.size) for x in jax.tree_util.tree_leaves(params))


def matmul_flops(fn, *args) -> int:
    """2 x m x n x k summed over the dot_generals of fn's jaxpr (nested jaxprs included): JAX's
    own count of the step's matmul FLOPs."""
    import math

    def walk(jaxpr) -> int:
        total = 0
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "dot_general":
                (lc, rc), (lb, _) = eqn.params["dimension_numbers"]
                lhs, rhs = (v.aval.shape for v in eqn.invars)
                contract = math.prod(lhs[d] for d in lc)
                batch = math.prod(lhs[d] for d in lb)
                lfree = math.prod(lhs) // (contract * batch)
                rfree = math.prod(rhs) // (contract * batch)
                total += 2 * batch * lfree * rfree * contract
            for sub in jax.extend.core.jaxprs_in_params(eqn.params):
                total += walk(sub)
        return total

    return walk(jax.make_jaxpr(fn)(*args).jaxpr)
