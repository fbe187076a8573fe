"""``alpa.torch.export``: a PyTorch model and loss -> libalpa's training graph.

torch.export traces the forward pass and the loss into an FX graph of aten ops (decomposed to
core aten, except the ops in ``_aten.KEEP`` that map to the IR more directly); every node maps
to IR ops (``_aten.TRANSLATIONS``), nodes that depend on no parameter or input are folded
(``_fold``); then libalpa's own autodiff and optimizer make the backward pass and the update
(``Graph.make_training``), as for the model zoo."""
from __future__ import annotations

import operator
import re
import warnings
from typing import Any, Callable, Optional, Sequence

import torch
from torch.fx.node import map_arg

from ..errors import UnsupportedError
from ..graph import Graph
from . import _activations, _aten, _fold
from ._builder import FLOATS, Builder, Value

_WRAPPED = "model"  # the attribute the traced wrapper holds the user's model under


class _Step(torch.nn.Module):
    """model(*inputs) then loss_fn(output, *targets): one module for torch.export."""

    def __init__(self, model: torch.nn.Module, loss_fn: Optional[Callable[..., Any]],
                 n_inputs: int) -> None:
        super().__init__()
        setattr(self, _WRAPPED, model)
        self.loss_fn = loss_fn
        self.n_inputs = n_inputs

    def forward(self, *args: Any) -> Any:
        out = getattr(self, _WRAPPED)(*args[: self.n_inputs])
        if self.loss_fn is not None:
            return self.loss_fn(out, *args[self.n_inputs:])
        return out if isinstance(out, torch.Tensor) else out.loss


def _unprefixed(path: str) -> str:
    prefix = _WRAPPED + "."
    return path[len(prefix):] if path.startswith(prefix) else ("" if path == _WRAPPED else path)


def source_line(node: Any) -> str:
    """The user's source line of an FX node (the last frame of its stack trace)."""
    trace = node.meta.get("stack_trace") or ""
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)', trace)
    if not frames:
        return "(no source line recorded)"
    path, line, func, code = frames[-1]
    return f'{path}:{line} in {func}: {code.strip()}'


def module_path(node: Any) -> str:
    """The qualified name of the innermost module that traced the node ('' at top level)."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    return _unprefixed(list(stack.values())[-1][0])


def block_index(path: str) -> Optional[int]:
    """The index of the first numbered child in a module path (``transformer.h.3.attn`` -> 3)."""
    for part in path.split("."):
        if part.isdigit():
            return int(part)
    return None


class _Layers:
    """Layer markers as the zoo sets them: ops before the first block in layer 0, block i in
    layer i + 1, ops after the blocks (final norm, head, loss) in the last layer."""

    def __init__(self, nodes: Sequence[Any]) -> None:
        blocks = [block_index(module_path(n)) for n in nodes]
        found = [i for i in blocks if i is not None]
        self.last = max(found) + 2 if found else 0
        self.seen_block = False

    def of(self, node: Any) -> int:
        block = block_index(module_path(node))
        if block is not None:
            self.seen_block = True
            return block + 1
        return self.last if self.seen_block else 0


class _Export:
    def __init__(self, program: Any, model: torch.nn.Module) -> None:
        self.program = program
        self.model = model
        self.graph = program.graph_module.graph
        self.b = Builder()
        self.env: dict[Any, Any] = {}        # node -> translated value
        self.folded: dict[Any, Any] = {}     # node -> torch value (constant folded)
        self.emitted: dict[Any, Value] = {}  # folded node / placeholder -> its IR value
        self.placeholders: dict[str, tuple[str, str, torch.Tensor]] = {}  # name -> role, label, val
        self.constant_inputs: list[str] = []
        self._bind_placeholders(model)

    def _bind_placeholders(self, model: torch.nn.Module) -> None:
        # Tied weights (GPT-2's lm_head and wte) are two placeholders of one tensor: one IR
        # parameter, named by the tensor's first name in model.named_parameters().
        first_name = {}
        for name, p in model.named_parameters():
            first_name.setdefault(id(p), name)
        self.param_op_of_tensor: dict[int, Optional[Value]] = {}
        self.parameters: dict[str, int] = {}  # IR parameter name -> id(tensor)
        state = dict(self.program.state_dict)
        state.update(getattr(self.program, "constants", {}))
        for spec in self.program.graph_signature.input_specs:
            arg = spec.arg.name
            kind = spec.kind.name
            if kind == "PARAMETER":
                target = _unprefixed(spec.target)
                tensor = model.get_parameter(target)
                name = first_name.get(id(tensor), target)
                self.placeholders[arg] = ("parameter", name, tensor)
                self.parameters[name] = id(tensor)
            elif kind == "USER_INPUT":
                self.placeholders[arg] = ("input", arg, None)
            elif kind in ("BUFFER", "CONSTANT_TENSOR"):
                value = state[spec.target]
                self.placeholders[arg] = ("constant", spec.target, value)
            else:
                raise UnsupportedError(f"torch.export input {arg} of kind {kind} has no libalpa "
                                       "equivalent")

    # ---- node values ----
    def value(self, node: Any) -> Any:
        """The IR value of an argument node (materializing folded ones on first use)."""
        if node in self.env:
            return self.env[node]
        if node.op == "placeholder":
            role, name, tensor = self.placeholders[node.name]
            if role == "parameter":
                key = id(tensor)
                v = self.param_op_of_tensor.get(key)
                if v is None:
                    v = self.b.parameter(tuple(tensor.shape), _aten.ir_dtype(tensor.dtype),
                                         "parameter", name)
                    self.param_op_of_tensor[key] = v
                return v
            shape, dtype = _aten.meta(node)
            v = self.b.parameter(shape, dtype, "input", name)
            self.env[node] = v
            return v
        value = self.folded[node]
        if isinstance(value, torch.Tensor):
            v, is_input = _fold.materialize(self.b, value, node.name)
            if is_input:
                self.constant_inputs.append(node.name)
            self.env[node] = v
            return v
        return value  # a folded Python scalar or tuple

    # ---- passes ----
    def fold(self) -> None:
        for node in self.graph.nodes:
            if node.op == "placeholder":
                role, _, tensor = self.placeholders[node.name]
                if role == "constant":
                    self.folded[node] = tensor
            elif node.op == "call_function":
                deps = node.all_input_nodes
                if all(d in self.folded for d in deps):
                    args = map_arg(node.args, lambda n: self.folded[n])
                    kwargs = map_arg(node.kwargs, lambda n: self.folded[n])
                    self.folded[node] = _fold.evaluate(node.target, args, kwargs)

    def translate(self) -> Value:
        nodes = [n for n in self.graph.nodes if n.op == "call_function"]
        layers = _Layers([n for n in nodes if n not in self.folded])
        gelu_output: dict[Any, Any] = {}  # a GELU module's output node -> its input node
        skipped: set[Any] = set()
        for call in _activations.gelu_calls([n for n in nodes if n not in self.folded],
                                            module_path, self._submodule):
            gelu_output[call.output] = call.input
            skipped.update(call.nodes)
        loss = None
        for node in self.graph.nodes:
            if node.op == "output":
                outs = node.args[0]
                loss = outs[0] if isinstance(outs, (tuple, list)) else outs
                continue
            if node.op != "call_function" or node in self.folded:
                continue
            self.b.layer = layers.of(node)
            self.b.name = node.name
            if node in gelu_output:
                self.env[node] = self.b.unary("gelu", self.value(gelu_output[node]))
            elif node not in skipped:
                self.env[node] = self._translate(node)
        return self._loss(loss)

    def _submodule(self, path: str) -> Optional[torch.nn.Module]:
        try:
            return self.model.get_submodule(path)
        except AttributeError:
            return None

    def _translate(self, node: Any) -> Any:
        if node.target is operator.getitem:
            parts, index = self.value(node.args[0]), node.args[1]
            part = parts[index]
            if part is None:
                raise self._error(node, "reads an output libalpa does not model (a dropout mask "
                                  "or max_pool indices)")
            return part
        fn = _aten.TRANSLATIONS.get(node.target)
        if fn is None:
            raise self._error(node, f"aten op {node.target} is not supported by alpa.torch "
                              "(docs/pytorch.md lists the supported ops)")
        args = map_arg(node.args, self.value)
        kwargs = map_arg(node.kwargs, self.value)
        kwargs = {k: v for k, v in kwargs.items()
                  if k not in ("dtype", "layout", "device", "pin_memory", "memory_format",
                               "non_blocking", "requires_grad")} \
            if node.target is not torch.ops.aten._to_copy.default else {}
        try:
            return fn(self.b, node, *args, **kwargs)
        except _aten.Unsupported as e:
            raise self._error(node, f"{node.target}: {e}") from None

    def _loss(self, loss_node: Any) -> Value:
        v = self.value(loss_node)
        if not isinstance(v, Value) or v.shape != () or v.dtype not in FLOATS:
            raise UnsupportedError("the loss must be a floating-point scalar tensor; got "
                                   f"{getattr(v, 'shape', v)!r} ({getattr(v, 'dtype', '')})")
        return v

    @staticmethod
    def _error(node: Any, what: str) -> UnsupportedError:
        where = module_path(node) or "(top level)"
        return UnsupportedError(f"alpa.torch.export: FX node {node.name} in module {where} "
                                f"{what}; at {source_line(node)}")


def _trace(model: torch.nn.Module, inputs: tuple[Any, ...], targets: tuple[Any, ...],
           loss_fn: Optional[Callable[..., Any]]) -> Any:
    step = _Step(model, loss_fn, len(inputs))
    program = torch.export.export(step, inputs + targets)
    table = torch.export.default_decompositions()
    for op in _aten.KEEP:
        table.pop(op, None)
    return program.run_decompositions(table)


def export(model: torch.nn.Module, example_inputs: Any,
           loss_fn: Optional[Callable[..., Any]] = None, optimizer: Optional[str] = "adam", *,
           targets: Any = ()) -> Graph:
    """The training step of ``model`` as a libalpa graph.

    ``example_inputs``: the model's positional inputs (a tensor or a tuple), with the shapes of
    one microbatch; ``targets``: extra tensors the loss reads (labels). ``loss_fn(output,
    *targets)`` gives the scalar loss; None: the model's output is the loss (a scalar tensor,
    or an object with ``.loss``). ``optimizer``: what ``Graph.make_training`` takes ("adam",
    "sgd:lr=0.1", ...), or None for the forward graph only.

    Parameters keep their qualified names (``transformer.h.0.attn.c_attn.weight``; tied weights
    are one parameter named by their first name), inputs their argument names; layer markers
    follow the first numbered child in each op's module path. An aten op with no IR form raises
    ``UnsupportedError`` naming the op, the FX node, its module and source line."""
    inputs = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    extra = targets if isinstance(targets, tuple) else (targets,)
    program = _trace(model, tuple(inputs), tuple(extra), loss_fn)
    ex = _Export(program, model)
    ex.fold()
    loss = ex.translate()
    if ex.constant_inputs:
        warnings.warn("alpa.torch.export: folded constants fed as input tensors (no IR pattern "
                      f"for them): {', '.join(ex.constant_inputs)}", stacklevel=2)
    ex.b.names[loss.id] = "loss"
    forward = ex.b.to_graph([loss])
    if optimizer is None:
        return forward
    try:
        return forward.make_training(optimizer)
    finally:
        forward.close()
