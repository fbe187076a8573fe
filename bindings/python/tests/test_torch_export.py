"""alpa.torch: PyTorch models in, DTensor placements and pipeline schedules out."""
from __future__ import annotations

import sys
import time

import pytest

import alpa

torch = pytest.importorskip("torch")
import alpa.torch as atorch  # noqa: E402
from torch.distributed.tensor import Replicate, Shard  # noqa: E402

F = torch.nn.functional


def test_importing_alpa_does_not_import_torch():
    import subprocess
    code = "import alpa, sys; assert 'torch' not in sys.modules, 'alpa imported torch'"
    subprocess.run([sys.executable, "-c", code], check=True)
    assert alpa.torch is atorch  # loaded on attribute access




def test_alpa_torch_without_torch_says_what_to_install():
    import subprocess
    code = ("import sys; sys.modules['torch'] = None\n"
            "try:\n    import alpa.torch\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert "alpa.torch needs PyTorch" in out.stdout and "pip install torch" in out.stdout


def _dot_flops_of_fx(model, inputs):
    """2 m n k per matmul of the model's own forward, counted by torch's FlopCounterMode."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils.flop_counter import FlopCounterMode
    # Fake tensors: the count needs shapes only, not a forward pass on the CPU.
    with FakeTensorMode(allow_non_fake_inputs=True) as fake:
        fake_inputs = [fake.from_tensor(x) for x in inputs]
        with FlopCounterMode(display=False) as counter, torch.no_grad():
            model(*fake_inputs)
    return counter.get_total_flops()


def test_mlp_exports_with_names_layers_and_flops():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 10))
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    with atorch.export(model, (x,), F.cross_entropy, targets=(y,), optimizer=None) as fwd:
        params = {op.name: op for op in fwd.ops if op.role == "parameter"}
        assert sorted(params) == ["0.bias", "0.weight", "2.bias", "2.weight"]
        assert params["0.weight"].shape == (256, 64) and params["0.weight"].layer == 1
        assert params["2.weight"].layer == 3
        st = fwd.stats()
        assert st["parameters"] == sum(p.numel() for p in model.parameters())
        assert st["dot_flops"] == _dot_flops_of_fx(model, (x,))
    with atorch.export(model, (x,), F.cross_entropy, targets=(y,), optimizer="sgd") as train:
        assert train.stats()["ops_by_phase"]["backward"] > 0


def test_cnn_exports():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                                torch.nn.Linear(8 * 8 * 8, 10))
    x, y = torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,))
    with atorch.export(model, (x,), F.cross_entropy, targets=(y,)) as g:
        st = g.stats()
        assert st["parameters"] == sum(p.numel() for p in model.parameters())
        assert st["ops_by_kind"]["convolution"] >= 1 and st["ops_by_kind"]["reduce_window"] >= 1
        fwd_conv = 2 * 4 * 8 * 16 * 16 * 3 * 9
        assert st["conv_flops"] >= fwd_conv


class _Cumsum(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(x).cumsum(dim=1)


def test_unsupported_op_names_op_node_and_line():
    model = _Cumsum()
    x = torch.randn(4, 8)
    with pytest.raises(alpa.UnsupportedError) as e:
        atorch.export(model, (x,), lambda out: out.mean())
    msg = str(e.value)
    assert "aten.cumsum" in msg and "FX node cumsum" in msg
    assert "test_torch_export.py" in msg and ".cumsum(dim=1)" in msg


def test_placements_of_a_tensor_parallel_plan():
    # Megatron's split: the QKV weight [h, 3h] by columns, the output projection by rows.
    with alpa.plan_manual("gpt:layers=2,hidden=256,heads=4,seq=64,vocab=1000,batch=8",
                          "p3.16xlarge:hosts=1,devices_per_host=2", tensor_parallel=2,
                          microbatches=1) as plan:
        (stage,) = plan.stages
        tp_dims = [d for d, n in enumerate(stage.logical_mesh) if n == 2]
        placements = atorch.placements(plan)
        with plan.graph() as g:
            names = {op.name: op.id for op in g.ops}
        qkv = placements["h0.attn.qkv.w"]
        out = placements["h0.attn.out.w"]
        assert len(qkv) == len(stage.logical_mesh)
        assert [qkv[d] for d in tp_dims] == [Shard(1)]
        assert [out[d] for d in tp_dims] == [Shard(0)]
        assert placements["h0.ln1.g"] == [Replicate()] * len(stage.logical_mesh)
        # Exactly the plan's layout text, dim by dim.
        spec = plan.op_spec(names["h0.attn.qkv.w"]).split("(")[0].split()
        for tensor_dim, token in enumerate(spec):
            for m in token[1:]:
                assert qkv[int(m)] == Shard(tensor_dim)


def test_spec_translation():
    from alpa.torch.plan_export import spec_to_placements
    from torch.distributed.tensor import Partial
    assert spec_to_placements("S0 R S1", 2) == [Shard(0), Shard(2)]
    assert spec_to_placements("R S01", 2) == [Shard(1), Shard(1)]
    assert spec_to_placements("R R partial(1)", 2) == [Replicate(), Partial()]
    assert spec_to_placements("scalar", 1) == [Replicate()]
    with pytest.raises(alpa.UnsupportedError, match="S10"):
        spec_to_placements("S10 R", 2)


def test_pipeline_split_and_schedule_csv_parse_in_torch():
    from torch.distributed.pipelining.schedules import _Action, _validate_schedule
    with alpa.plan_manual("gpt:layers=4,hidden=256,heads=4,seq=64,vocab=1000,batch=8",
                          "p3.16xlarge:hosts=1,devices_per_host=2", pipeline_parallel=2,
                          microbatches=4) as plan:
        split = atorch.pipeline_split(plan)
        assert split[0][:2] == ["wte", "wpe"] and "h0.ln1" in split[0] and "h3.ln1" in split[1]
        assert split[1][-1] == "ln_f"
        csv_text = atorch.schedule_csv(plan)
    rows = [line.split(",") for line in csv_text.strip().split("\n")]
    actions = {rank: [_Action.from_str(a) for a in row] for rank, row in enumerate(rows)}
    assert _validate_schedule(actions, 2, 2, 4) == {0: 0, 1: 1}
    assert rows[1][:2] == ["1F0", "1B0"]  # the last stage alternates at once (1F1B)


@pytest.fixture(scope="module")
def gpt2():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.GPT2Config(use_cache=False)  # GPT-2 small: 12 layers, 768, 12 heads
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(cfg)
    batch, seq = 8, 128
    ids = torch.randint(0, cfg.vocab_size, (batch, seq))
    labels = torch.randint(0, cfg.vocab_size, (batch, seq))

    def loss_fn(out, labels):
        return F.cross_entropy(out.logits.flatten(0, 1), labels.flatten())

    graph = atorch.export(model, (ids,), loss_fn, targets=(labels,))
    yield model, graph, batch, seq, (ids,)
    graph.close()


def test_gpt2_parameters_and_flops(gpt2):
    model, graph, batch, seq, inputs = gpt2
    st = graph.stats()
    # Tied lm_head / wte: one parameter, as in model.parameters().
    assert st["parameters"] == sum(p.numel() for p in model.parameters()) == 124439808
    forward_dots = 2 * sum(  # the forward's dot FLOPs of the graph, from its dot ops' shapes
        _dot_macs(op, graph) for op in graph.ops if op.kind == "dot_general"
        and op.phase == "forward")
    torch_flops = _dot_flops_of_fx(model, inputs)
    assert abs(forward_dots / torch_flops - 1) < 0.005
    # NewGELUActivation's arithmetic is one gelu per block, as in the zoo.
    forward_kinds = [op.kind for op in graph.ops if op.phase == "forward"]
    assert forward_kinds.count("gelu") == 12
    assert "tanh" not in forward_kinds and "pow" not in forward_kinds
    names = {op.name for op in graph.ops if op.role == "parameter"}
    assert "transformer.h.0.attn.c_attn.weight" in names and "lm_head.weight" not in names


def _dot_macs(op, graph):
    lhs = graph.op(op.operands[0]).shape
    nb, rest = op.attrs[0], op.attrs[1 + 2 * op.attrs[0]:]
    contracting = rest[1:1 + rest[0]]
    k = 1
    for d in contracting:
        k *= lhs[d]
    out = 1
    for d in op.shape:
        out *= d
    return out * k


def test_gpt2_plans_like_the_zoo(gpt2):
    model, graph, batch, seq, _ = gpt2
    start = time.perf_counter()
    with alpa.plan(graph, "p3.16xlarge:2", microbatches=1) as plan:
        seconds = time.perf_counter() - start
        predicted = plan.iteration_seconds
        placements = atorch.placements(plan, graph)
        split = atorch.pipeline_split(plan, graph)
    assert seconds < 10
    assert set(placements) == {op.name for op in graph.ops if op.role == "parameter"}
    assert split[0][0] == "transformer.wte"
    # The zoo's GPT of the same sizes in the same dtype (the export is f32; the zoo's default
    # dtype is f16).
    spec = f"gpt:layers=12,hidden=768,heads=12,seq={seq},vocab=50257,batch={batch},dtype=f32"
    with alpa.plan(spec, "p3.16xlarge:2", microbatches=1) as zoo:
        assert abs(predicted / zoo.iteration_seconds - 1) < 0.05


def _feeds(model, graph, named_inputs):
    feeds = {name: p.detach().numpy() for name, p in model.named_parameters()}
    feeds.update({k: v.numpy() for k, v in named_inputs.items()})
    missing = [op.name for op in graph.ops if op.kind == "parameter" and op.name not in feeds]
    assert not missing, missing
    return feeds


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_exported_gpt2_computes_torchs_loss(attention):
    # The IR's semantics (evaluated by numpy) against torch on a small GPT-2: every translation
    # on the way (attention with its causal mask, layer norm, tied head, cross-entropy, GELU).
    from ir_numpy import evaluate
    transformers = pytest.importorskip("transformers")
    cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=100,
                                  n_positions=32, use_cache=False, attn_pdrop=0.0,
                                  resid_pdrop=0.0, embd_pdrop=0.0,
                                  attn_implementation=attention)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(cfg).eval()
    ids, labels = torch.randint(0, 100, (2, 16)), torch.randint(0, 100, (2, 16))

    def loss_fn(out, labels):
        return F.cross_entropy(out.logits.flatten(0, 1), labels.flatten())

    with torch.no_grad():
        expected = float(loss_fn(model(ids), labels))
    # The gelu of the IR is the tanh form, as is GPT-2's NewGELUActivation.
    with atorch.export(model, (ids,), loss_fn, targets=(labels,), optimizer=None) as g:
        (loss,) = evaluate(g, _feeds(model, g, {"args_0": ids, "args_1": labels}))
        # The folded causal mask and position ids are IR ops, not tensors fed as inputs.
        assert [op.name for op in g.ops if op.role == "input"] == ["args_0", "args_1"]
    assert float(loss) == pytest.approx(expected, rel=1e-5)


def test_exported_mlp_computes_torchs_loss():
    from ir_numpy import evaluate
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(approximate="tanh"),
                                torch.nn.LayerNorm(32), torch.nn.Linear(32, 5),
                                torch.nn.Softmax(dim=-1))
    x, y = torch.randn(8, 16), torch.rand(8, 5)

    def loss_fn(out, y):
        return ((out - y) ** 2).mean()

    with torch.no_grad():
        expected = float(loss_fn(model(x), y))
    with atorch.export(model, (x,), loss_fn, targets=(y,), optimizer=None) as g:
        (loss,) = evaluate(g, _feeds(model, g, {"args_0": x, "args_1": y}))
    assert float(loss) == pytest.approx(expected, rel=1e-5)


def test_exported_cnn_computes_torchs_loss():
    from ir_numpy import evaluate
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, stride=2, padding=1), torch.nn.ReLU(),
                                torch.nn.MaxPool2d(2), torch.nn.Conv2d(4, 4, 3, dilation=2),
                                torch.nn.AvgPool2d(1), torch.nn.Flatten(),
                                torch.nn.Linear(4 * 1 * 1, 3))
    x, y = torch.randn(2, 3, 20, 20), torch.randint(0, 3, (2,))
    with torch.no_grad():
        expected = float(F.cross_entropy(model(x), y))
    with atorch.export(model, (x,), F.cross_entropy, targets=(y,), optimizer=None) as g:
        (loss,) = evaluate(g, _feeds(model, g, {"args_0": x, "args_1": y}))
    assert float(loss) == pytest.approx(expected, rel=1e-5)


def test_exported_gpt2_pipeline_split_follows_its_blocks():
    from torch.distributed.pipelining.schedules import _Action, _validate_schedule
    transformers = pytest.importorskip("transformers")
    cfg = transformers.GPT2Config(n_layer=4, n_embd=256, n_head=4, vocab_size=1000,
                                  n_positions=128, use_cache=False, bos_token_id=None,
                                  eos_token_id=None)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(cfg)
    ids, labels = torch.randint(0, 1000, (4, 128)), torch.randint(0, 1000, (4, 128))

    def loss_fn(out, labels):
        return F.cross_entropy(out.logits.flatten(0, 1), labels.flatten())

    with atorch.export(model, (ids,), loss_fn, targets=(labels,)) as g, \
            alpa.plan(g, "p3.16xlarge:hosts=2,devices_per_host=1", microbatches=4) as plan:
        assert plan.stage_count == 2
        split = atorch.pipeline_split(plan, g)
        csv_text = atorch.schedule_csv(plan)
    blocks = [f"transformer.h.{i}" for i in range(4)]
    assert split[0][:2] == ["transformer.wte", "transformer.wpe"]
    assert split[1][-1] == "transformer.ln_f"
    assert [m for m in split[0] + split[1] if m in blocks] == blocks
    assert all(len([m for m in stage if m in blocks]) >= 1 for stage in split)
    rows = [line.split(",") for line in csv_text.strip().split("\n")]
    actions = {rank: [_Action.from_str(a) for a in row] for rank, row in enumerate(rows)}
    assert _validate_schedule(actions, 2, 2, 4) == {0: 0, 1: 1}
