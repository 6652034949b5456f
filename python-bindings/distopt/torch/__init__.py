# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Import a PyTorch training step: model + loss + optimizer -> a train-
dialect step, its state and a batch.

    import torch, torchvision, distopt.torch
    model = torchvision.models.resnet18(num_classes=10)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    step = distopt.torch.export_train_step(
        model, torch.randn(2, 3, 32, 32), torch.randint(0, 10, (2,)),
        loss="cross_entropy", optimizer=opt)
    step.save("resnet18")      # step.mlir, state.npz, batch.npz for dist-run

The joint forward-backward graph comes from PyTorch's own AOTAutograd
export (`aot_export_module`, core-ATen decompositions); every ATen op maps
to train ops or the export fails with `UnsupportedOpError` naming the op,
the module it came from and the model's source line; the model comes back
unchanged either way. See docs/guides/pytorch.md.
"""

import contextlib
import inspect
import warnings

import numpy as np
import torch
import torch.nn.functional as F

from .._distopt import DistOptError
from .._exported import ExportedStep
from . import _amp, _aten, _aten_where
from .._emit import (Emitter, Value, attr_f64, function_text, scalar_literal,
                     tensor_type)

__all__ = ["export_train_step", "ExportedStep", "UnsupportedOpError", "fit",
           "load_into"]


class UnsupportedOpError(DistOptError):
    """An ATen op of the model has no train-dialect mapping. `op` is the
    op's name, `module_path` the module that called it and `line` the
    model's source line ('file:line: code') that did (None when unknown)."""

    def __init__(self, message, op, module_path, line=None):
        super().__init__(message)
        self.op, self.module_path, self.line = op, module_path, line


# -- losses and optimizers ------------------------------------------------------

def _nll(output, labels):
    """NLL of a model whose output is already log-probabilities."""
    return F.nll_loss(output, labels)


_LOSSES = {"cross_entropy": F.cross_entropy, "mse": F.mse_loss,
           "l1": F.l1_loss, "smooth_l1": F.smooth_l1_loss,
           "huber": F.huber_loss,
           "bce_with_logits": F.binary_cross_entropy_with_logits,
           "nll": _nll}


def _loss_function(loss):
    if callable(loss):
        return loss
    if loss not in _LOSSES:
        raise ValueError(f"unknown loss {loss!r} (one of {sorted(_LOSSES)}, "
                         "a torch.nn loss module such as "
                         "nn.CrossEntropyLoss(label_smoothing=0.1), or a "
                         "callable (output, labels) -> scalar)")
    return _LOSSES[loss]


class _Optimizer:
    """One train op per parameter: kind ('sgd', 'adam', 'adamw'), its
    attributes, the group's learning rate and the state it keeps."""

    _SHORT = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam,
              "adamw": torch.optim.AdamW}

    def __init__(self, optimizer, model):
        if isinstance(optimizer, tuple):
            kind, options = optimizer
            if kind not in self._SHORT:
                raise ValueError(f"unknown optimizer {kind!r} (one of "
                                 f"{sorted(self._SHORT)})")
            optimizer = self._SHORT[kind](
                [p for p in model.parameters() if p.requires_grad], **options)
        self.kind = {torch.optim.SGD: "sgd", torch.optim.Adam: "adam",
                     torch.optim.AdamW: "adamw"}.get(type(optimizer))
        if self.kind is None:
            raise ValueError(f"optimizer {type(optimizer).__name__} is not "
                             "supported (torch.optim.SGD, Adam or AdamW)")
        self.optimizer = optimizer
        self.group_of = {}
        for index, group in enumerate(optimizer.param_groups):
            self._check(group)
            for p in group["params"]:
                self.group_of[p] = index
        rates = [g["lr"] for g in optimizer.param_groups]
        self.lr_names = ["lr"] if len(set(rates)) == 1 else \
            [f"lr.{i}" for i in range(len(rates))]
        self.lr_values = rates[:1] if len(set(rates)) == 1 else rates

    def _check(self, group):
        def refuse(what):
            raise ValueError(f"{type(self.optimizer).__name__} with {what} is "
                             "not supported")
        if isinstance(group["lr"], torch.Tensor):
            group["lr"] = float(group["lr"])
        if group.get("maximize"):
            refuse("maximize=True")
        if self.kind == "sgd":
            if group.get("dampening", 0):
                refuse("dampening")
        elif group.get("amsgrad"):
            refuse("amsgrad=True")

    def lr_index(self, param):
        return 0 if len(self.lr_names) == 1 else self.group_of[param]

    def state_names(self, param):
        group = self.optimizer.param_groups[self.group_of[param]]
        if self.kind == "sgd":
            return ["momentum_buffer"] if group["momentum"] else []
        return ["exp_avg", "exp_avg_sq", "step"]

    def initial_state(self, param, suffix):
        """The optimizer's current state (zeros before its first step)."""
        state = self.optimizer.state.get(param, {})
        if suffix in state and state[suffix] is not None:
            return state[suffix].detach().cpu().numpy().astype(
                np.float32 if suffix == "step" else
                state[suffix].detach().cpu().numpy().dtype)
        if suffix == "step":
            return np.zeros((), np.float32)
        return np.zeros(tuple(param.shape), _np_dtype(param.dtype))

    def emit(self, e, tensor, param, grad, lr, states):
        """The update of `tensor` (the torch parameter) whose value is
        `param`: the new parameter and state Values."""
        group = self.optimizer.param_groups[self.group_of[tensor]]
        shape, dtype = param.shape, param.dtype
        if self.kind == "sgd":
            attrs = {"weight_decay": attr_f64(group["weight_decay"])}
            results = [(shape, dtype)]
            if group["momentum"]:
                attrs["momentum"] = attr_f64(group["momentum"])
                results.append((shape, dtype))
                if group["nesterov"]:
                    attrs["nesterov"] = None
            out = e.op("sgd", [param, grad, lr] + states, results, attrs)
            return [out] if isinstance(out, Value) else out
        beta1, beta2 = group["betas"]
        attrs = {"beta1": attr_f64(beta1), "beta2": attr_f64(beta2),
                 "epsilon": attr_f64(group["eps"]),
                 "weight_decay": attr_f64(group["weight_decay"])}
        return e.op(self.kind, [param, grad] + states[:3] + [lr],
                    [(shape, dtype)] * 3 + [((), states[2].dtype)], attrs)


def _np_dtype(dtype):
    return torch.empty((), dtype=dtype).numpy().dtype


# -- the export -----------------------------------------------------------------

class _WithLoss(torch.nn.Module):
    def __init__(self, model, loss):
        super().__init__()
        self.model, self.loss = model, loss

    def forward(self, *args):
        *inputs, labels = args
        return (self.loss(self.model(*inputs), labels),)


def _strip(name):
    return name[len("model."):] if name.startswith("model.") else name


def _input_names(model, count):
    try:
        names = [p.name for p in inspect.signature(model.forward).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    names = names[:count] if len(names) >= count else []
    if not names or "labels" in names or "lr" in names:
        names = ["input"] if count == 1 else [f"input{i}" for i in range(count)]
    return names


def _trace(wrapped, args):
    """The joint graph and its signature. Traced on fake tensors first:
    aot_export_module traces the joint graph on fake tensors and then
    retraces it (make_fx of its flattened form) on the tensors it is given,
    which on real ones runs every op of the step once (ResNet-50 at
    2x3x64x64: 9.5 s CPU instead of 2.6 s, the same MLIR). A model that
    makes tensor constants in its forward (their values become part of the
    step) is traced again on the real tensors."""
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
    from torch.nn.utils.stateless import _reparametrize_module
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    named = dict(wrapped.named_parameters(remove_duplicate=False))
    named.update(wrapped.named_buffers(remove_duplicate=False))
    fake = {n: mode.from_tensor(t, static_shapes=True) for n, t in named.items()}
    fake_args = tuple(mode.from_tensor(a, static_shapes=True)
                      if isinstance(a, torch.Tensor) else a for a in args)
    with _reparametrize_module(wrapped, fake, tie_weights=True):
        graph_module, signature = _aot_export(wrapped, fake_args)
    if not any(isinstance(getattr(graph_module, n.target), FakeTensor)
               for n in graph_module.graph.nodes if n.op == "get_attr"):
        return graph_module, signature
    return _aot_export(wrapped, args)


def _aot_export(wrapped, args):
    from torch._functorch.aot_autograd import aot_export_module
    from torch.nn.attention import SDPBackend, sdpa_kernel
    # oneDNN stays off (as _export sets it) only for recurrent modules: after
    # tracing the joint graph on fake tensors, aot_export_module retraces it
    # on the ones it is given, running every op once when they are real,
    # and without oneDNN depthwise convolutions take PyTorch's slow path
    # (EfficientNet-B0: 14.0 -> 10.9 s CPU with it on; the same MLIR).
    recurrent = any(isinstance(m, torch.nn.RNNBase) for m in wrapped.modules())
    onednn = contextlib.nullcontext() if recurrent else \
        torch.backends.mkldnn.flags(enabled=True)
    with onednn, sdpa_kernel(SDPBackend.MATH), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return aot_export_module(wrapped, args, trace_joint=True,
                                 output_loss_index=0,
                                 decompositions=_aten.decompositions())


@contextlib.contextmanager
def _exporting():
    """torch.compiler.is_compiling() and is_exporting() true, as
    torch.export's non-strict trace sets them."""
    compiler = torch.compiler
    old = (compiler._is_compiling_flag, compiler._is_exporting_flag)
    compiler._is_compiling_flag = compiler._is_exporting_flag = True
    try:
        yield
    finally:
        compiler._is_compiling_flag, compiler._is_exporting_flag = old


def export_train_step(model, example_inputs, labels, loss="cross_entropy",
                      optimizer=("sgd", {"lr": 0.1}), *, scaler=None,
                      dropout_seed=0, name="train_step"):
    """Exports one training step of `model` (in train() mode): forward on
    `example_inputs` (a tensor or a tuple), `loss(output, labels)`, backward
    and `optimizer`'s update (a torch.optim.SGD/Adam/AdamW over the model's
    parameters, or ("sgd"|"adam"|"adamw", {options})). The example tensors'
    shapes and dtypes are the step's; their values become the batch.

    Mixed precision: exported inside `torch.autocast(device_type="cpu" or
    "cuda", dtype=torch.bfloat16 or torch.float16)`, the step computes in
    that type with float32 master weights (the float32 step traced with
    autocast off, then the train-mixed-precision pass); `scaler`, a
    torch.amp.GradScaler, adds its dynamic loss scaling, the scaler's scale
    and growth tracker becoming the step's `loss_scale` and
    `loss_scale.growth_tracker` state (`load_into` puts them back).
    `step.mixed_precision` holds the pass's options (None for float32)."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError("model must be a torch.nn.Module")
    mixed = _amp.mixed_precision(scaler, model)
    inputs = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) \
        else (example_inputs,)
    if loss in ("cross_entropy", "nll") and isinstance(labels, torch.Tensor) \
            and not labels.is_floating_point() and labels.numel() and \
            int(labels.min()) < 0:
        raise ValueError(f"labels must be class indices: {int(labels.min())} "
                         "is negative (PyTorch's ignore_index entries are not "
                         "skipped by the step)")
    opt = _Optimizer(optimizer, model)
    wrapped = _WithLoss(model, _loss_function(loss))
    # The model comes back as it was, exported or not: values, gradients,
    # training flags and the random state (in place: `_metadata` and every
    # module's own state-dict handling stay out of it).
    snapshot = _aten_where.Snapshot(model, parameters=False)
    try:
        model.train()
        with _amp.autocast_off():
            step = _export(model, wrapped, inputs, labels, opt, dropout_seed,
                           name)
    finally:
        snapshot.restore()
    step.mixed_precision = None if mixed is None else mixed.options()
    if mixed is None:
        return step
    mixed_step = ExportedStep(mixed.apply(step.mlir),
                              {**step.state, **mixed.state()}, step.batch,
                              step.param_names)
    mixed_step.mixed_precision = mixed.options()
    return mixed_step


def _export(model, wrapped, inputs, labels, opt, dropout_seed, name):
    try:
        # Without oneDNN PyTorch's RNN decompositions unroll the sequence
        # into matrix products and pointwise ops; with it an LSTM is one
        # mkldnn_rnn_layer whose backward gives both biases one gradient
        # node, which AOTAutograd's signature cannot name (an
        # AssertionError).
        # As torch.export, the trace tells the model it is being exported
        # (torch.compiler.is_compiling / is_exporting): models then skip
        # their data-dependent eager-only checks (transformers' packed-
        # sequence test).
        with warnings.catch_warnings():
            # (Setting the oneDNN flags notes that TF32 needs Intel GPUs.)
            warnings.filterwarnings("ignore", message="TF32 acceleration")
            with torch.backends.mkldnn.flags(enabled=False), _exporting():
                graph_module, signature = _trace(wrapped, inputs + (labels,))
    except DistOptError:
        raise
    except Exception as error:
        unused = _aten_where.gradless(model, wrapped, inputs, labels) \
            if "did not receive a gradient" in str(error) else None
        if unused:
            raise ValueError(f"parameter{'s' if len(unused) > 1 else ''} "
                             f"{', '.join(unused)} get{'' if len(unused) > 1 else 's'} "
                             "no gradient from the loss; freeze "
                             f"{'them' if len(unused) > 1 else 'it'} "
                             "(requires_grad=False)") from error
        raise DistOptError(_aten_where.trace_failure(model, error)) from error
    graph = graph_module.graph

    e = Emitter()
    arguments, results, state, batch = [], [], {}, {}
    # Tied parameters are one tensor under several names: the state keeps
    # the first name named_parameters() gives, and autograd sums the
    # gradients of every use.
    params = dict(wrapped.named_parameters())
    first_name = {id(p): n for n, p in params.items()}
    every = dict(wrapped.named_parameters(remove_duplicate=False))

    def canonical(full):
        return first_name[id(every[full])]

    buffers = dict(wrapped.named_buffers())
    mutated = {b: out for out, b in signature.buffers_to_mutate.items()}

    def argument(shape, dtype, role, arg_name, array=None):
        v = Value(f"%a{len(arguments)}", shape, dtype)
        arguments.append((v, role, arg_name))
        if array is not None:
            (state if role in ("param", "opt_state", "hyper") else
             batch)[arg_name] = array
        return v

    translator = _aten.Translator(e)
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    user_inputs = iter(signature.user_inputs)
    input_names = _input_names(model, len(inputs)) + ["labels"]
    example = {n: x for n, x in zip(input_names, inputs + (labels,))}
    user_values, tied = {}, {}
    for node in placeholders:
        meta = node.meta["val"]
        if node.name in signature.inputs_to_parameters:
            full = canonical(signature.inputs_to_parameters[node.name])
            v = tied.get(full)
            if v is None:
                v = tied[full] = argument(meta.shape, meta.dtype, "param",
                                          _strip(full),
                                          params[full].detach().cpu().numpy())
        elif node.name in signature.inputs_to_buffers:
            full = signature.inputs_to_buffers[node.name]
            if full in mutated:     # running statistics: carried state
                v = argument(meta.shape, meta.dtype, "opt_state", _strip(full),
                             buffers[full].detach().cpu().numpy())
            else:                   # a buffer the step never changes
                v = e.dense(buffers[full])
                translator.constants[node] = buffers[full].detach()
        else:
            next(user_inputs)
            index = len(user_values)
            arg_name = input_names[index]
            role = "label" if index == len(input_names) - 1 else "input"
            v = argument(meta.shape, meta.dtype, role, arg_name,
                         example[arg_name].detach().cpu().numpy())
            user_values[arg_name] = v
        translator.env[node] = v

    # Optimizer state and hyper-parameters.
    trainable = {full: p for full, p in params.items() if p.requires_grad}
    missing = [_strip(n) for n, p in trainable.items() if p not in opt.group_of]
    if missing:
        raise ValueError("the optimizer does not update parameters "
                         f"{', '.join(missing)}; freeze them "
                         "(requires_grad=False) or add them to it")
    opt_states = {}
    for full, p in trainable.items():
        values = []
        for suffix in opt.state_names(p):
            array = opt.initial_state(p, suffix)
            values.append(argument(array.shape, torch.from_numpy(
                np.asarray(array)).dtype, "opt_state", f"{_strip(full)}.{suffix}",
                np.asarray(array)))
        opt_states[full] = values
    # The learning rate in the parameters' precision (an f32 rate in an f64
    # step is 2e-8 off PyTorch's Python float, which the dynamics of a
    # batch-2 ResNet amplify past 1e-5 within two steps).
    lr_dtype = torch.float64 if trainable and all(
        p.dtype == torch.float64 for p in trainable.values()) else torch.float32
    lrs = [argument((), lr_dtype, "hyper", lr_name,
                    np.asarray(value, _np_dtype(lr_dtype)))
           for lr_name, value in zip(opt.lr_names, opt.lr_values)]
    if any(n.target is torch.ops.aten.native_dropout.default or
           n.target in _aten.RANDOM for n in graph.nodes):
        translator.seed = argument((), torch.int64, "hyper", "dropout_seed",
                                   np.int64(dropout_seed))

    # The backward's seed (the constant 1 every gradient is the linear
    # image of): a constant of its own, marked train.loss_seed for the
    # mixed-precision pass's loss scaling (whether the pass runs now, on
    # autocast, or later from dist-opt).
    seed = _loss_seed(graph, signature)

    # The graph.
    for node in graph.nodes:
        if node is seed:
            translator.env[node] = e.op(
                "constant", [], [((), node.meta["val"].dtype)],
                {"value": f"dense<{scalar_literal(1, node.meta['val'].dtype)}>"
                          f" : {tensor_type((), node.meta['val'].dtype)}",
                 "train.loss_seed": None})
        elif node.op == "call_function":
            try:
                translator.node(node)
            except _aten.UnsupportedOp as error:
                raise _unsupported(model, wrapped, inputs, labels,
                                   error) from None
            except DistOptError:
                raise
            except Exception as error:    # a handler's own failure
                path, line = _aten_where.find(model, wrapped, inputs, labels,
                                              node)
                raise DistOptError(
                    f"cannot export the training step: translating ATen op "
                    f"{node.target}{f' (in {path})' if path else ''} failed "
                    f"with {type(error).__name__}: {error}"
                    + (f"\n  at {line}" if line else "")) from error
        elif node.op == "get_attr":
            constant = getattr(graph_module, node.target)
            translator.env[node] = e.dense(constant)
            translator.constants[node] = constant.detach()
    outputs = {n.name: n for n in next(n for n in graph.nodes
                                       if n.op == "output").args[0]
               if isinstance(n, torch.fx.Node)}

    # Updates, in the order of the arguments.
    grads = {}
    for g, p in signature.backward_signature.gradients_to_parameters.items():
        grads.setdefault(canonical(p), []).append(outputs[g])
    new_values = {}
    for full, p in trainable.items():
        param_value = next(v for v, role, n in arguments
                           if role == "param" and n == _strip(full))
        parts = [translator.value(g) for g in grads.get(full, [])
                 if translator.env.get(g) is not None]
        if not parts:
            raise ValueError(f"parameter {_strip(full)} gets no gradient from "
                             "the loss; freeze it (requires_grad=False)")
        grad = parts[0]
        for part in parts[1:]:      # a tied parameter: the sum of its uses
            grad = e.op("add", [grad, part], [(grad.shape, grad.dtype)])
        updated = opt.emit(e, p, param_value, grad,
                           lrs[opt.lr_index(p)], opt_states[full])
        new_values[_strip(full)] = updated[0]
        for v, suffix in zip(updated[1:], opt.state_names(p)):
            new_values[f"{_strip(full)}.{suffix}"] = v
    for full, out in mutated.items():
        new_values[_strip(full)] = translator.value(outputs[out])
    # The wrapper returns (loss,): the one user output. (The signature's
    # loss_output names the first output, a buffer update when there is one.)
    loss_value = translator.value(outputs[signature.user_outputs[0]])

    for v, role, arg_name in arguments:
        if role in ("param", "opt_state") and arg_name in new_values:
            results.append((new_values[arg_name], role, arg_name))
    results.append((loss_value, "loss", "loss"))

    mlir = function_text(name, arguments, results,
                         e.body([v.name for v, _, _ in results]))
    names = [_strip(n) for n in trainable]
    return ExportedStep(mlir, state, batch, names)



def _loss_seed(graph, signature):
    """The node AOTAutograd seeds the backward with (`full_like(loss, 1)`
    or `ones_like(loss)` of the scalar loss), or None."""
    output = next(n for n in graph.nodes if n.op == "output").args[0]
    named = {n.name: n for n in output if isinstance(n, torch.fx.Node)}
    loss = named.get(signature.user_outputs[0])
    for node in graph.nodes:
        if node.op != "call_function" or not node.args or \
                node.args[0] is not loss:
            continue
        if node.target is torch.ops.aten.ones_like.default or (
                node.target is torch.ops.aten.full_like.default and
                node.args[1] == 1):
            if tuple(node.meta["val"].shape) == ():
                return node
    return None


# -- where an unsupported op came from --------------------------------------------

def _unsupported(model, wrapped, inputs, labels, error):
    """The refusal, naming the op, the module that called it and the line
    of the model's source (found by re-running the step eagerly up to the
    op)."""
    node = error.node
    target = node.target
    path, line = _aten_where.find(model, wrapped, inputs, labels, node)
    where = f" (in {path})" if path else ""
    reason = error.reason if error.reason and \
        error.reason != "no train-dialect mapping" else ""
    message = (f"cannot export the training step: ATen op {target}{where} "
               f"has no train-dialect mapping{': ' + reason if reason else ''}"
               + (f"\n  at {line}" if line else ""))
    return UnsupportedOpError(message, str(target), path, line)


from .fit import fit, load_into  # noqa: E402 (uses the names above)
