# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Where an op of the exported graph came from (the module and the line
of the model's source that called it), and the model's state kept
exactly across an export that fails."""

import os
import sys
import traceback
import warnings

import torch

from . import _aten

_SKIP = tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep
              for m in (torch, sys.modules[__package__.rpartition(".")[0]]))
_SKIP += (os.path.dirname(os.__file__) + os.sep,)


def user_frame(frames):
    """'file:line: code' of the innermost frame outside torch, distopt and
    the standard library (the model's own source), or None. `frames` are
    traceback.FrameSummary objects, innermost last."""
    for frame in reversed(frames):
        path = os.path.abspath(frame.filename)
        if frame.filename.startswith("<") or (
                path.startswith(_SKIP) and "site-packages" not in
                path[len(next(s for s in _SKIP if path.startswith(s))):]):
            continue
        code = (frame.line or "").strip()
        return f"{frame.filename}:{frame.lineno}" + (f": {code}" if code else "")
    return None


def _frames_of_text(lines):
    """FrameSummary objects from formatted traceback lines (what autograd's
    anomaly mode keeps of a backward node's forward call)."""
    frames = []
    for entry in lines or ():
        head, _, code = entry.strip().partition("\n")
        try:
            filename = head.split('"')[1]
            lineno = int(head.split("line ")[1].split(",")[0])
        except (IndexError, ValueError):
            continue
        frames.append(traceback.FrameSummary(filename, lineno, "",
                                             line=code.strip()))
    return frames


class Snapshot:
    """Parameters and buffers (values, in place: a module's
    `_load_from_state_dict` never runs), their gradients, every module's
    training flag and the random number generator's state; `restore()`
    puts them all back."""

    def __init__(self, model, parameters=True):
        """`parameters=False` leaves parameter values out (a trace never
        changes them; an eager step's backward only sets their .grad)."""
        self.tensors = [(t, t.detach().clone()) for t in
                        (list(model.parameters()) if parameters else []) +
                        list(model.buffers())]
        self.grads = [(p, p.grad) for p in model.parameters()]
        self.modes = [(m, m.training) for m in model.modules()]
        self.rng = torch.random.get_rng_state()

    def restore(self):
        with torch.no_grad():
            for tensor, saved in self.tensors:
                if tensor.shape == saved.shape:
                    tensor.copy_(saved)
                else:           # a lazy or resized buffer: its old value
                    tensor.data = saved
        for p, grad in self.grads:
            p.grad = grad
        for m, training in self.modes:
            m.training = training
        torch.random.set_rng_state(self.rng)


class _Found(Exception):
    pass


def _stem(name):
    """An op's name without its in-place or out suffix (bernoulli_ ->
    bernoulli): the graph has the functional op the model ran in place."""
    return name.split("::")[-1].rstrip("_")


def _signature(args, of_node):
    """The shapes of an op's tensor arguments (fx nodes: their metadata)."""
    result = []
    for a in args:
        if of_node and isinstance(a, torch.fx.Node):
            a = a.meta.get("val")
        if isinstance(a, torch.Tensor):
            result.append(tuple(a.shape))
        elif isinstance(a, (list, tuple)):
            result.append(tuple(_signature(a, of_node)))
    return tuple(result)


def _candidates(node, count=6):
    """`node`, then the ops it reads from, nearest first: an op PyTorch
    makes while tracing (as_strided of a functionalized view) never runs
    eagerly, the op that made its input does."""
    result, queue = [], [node]
    while queue and len(result) < count:
        n = queue.pop(0)
        if n.op != "call_function" or n in result:
            continue
        result.append(n)
        queue.extend(a for a in n.all_input_nodes)
    return [(_stem(n.target.name() if hasattr(n.target, "name")
                   else str(n.target)), _signature(n.args, True))
            for n in result]


def find(model, wrapped, inputs, labels, node):
    """Re-runs the step eagerly (same decompositions, autograd's anomaly
    mode keeping each backward node's forward line) until the op of `node`
    runs with the node's argument shapes; returns (module, source line),
    either None when unknown. Stops at the op: a refusal costs at most one
    eager step. An op that never runs eagerly takes the place of the
    nearest op it reads from that does."""
    from torch.utils._python_dispatch import TorchDispatchMode
    candidates = _candidates(node)
    stems = {stem for stem, _ in candidates}
    names = {id(m): (n or "<model>", type(m).__name__)
             for n, m in model.named_modules()}
    stack = []
    found = {}      # candidate rank -> (module, line); -1: name only
    table = _aten.decompositions()

    def where(backward):
        if backward:
            autograd_node = torch._C._current_autograd_node()
            metadata = autograd_node.metadata if autograd_node is not None \
                else {}
            module = metadata.get(_TAG)
            return (f"{module[:-1]}, backward)" if module else None,
                    user_frame(_frames_of_text(metadata.get("traceback_"))))
        return (stack[-1] if stack else None,
                user_frame(traceback.extract_stack()))

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            stem = _stem(func.name())
            if stem in stems:
                backward = torch._C._current_autograd_node() is not None
                signature = _signature(args, False)
                for rank, candidate in enumerate(candidates):
                    if candidate == (stem, signature) and rank not in found:
                        found[rank] = where(backward)
                if stem == candidates[0][0] and -1 not in found:
                    found[-1] = where(backward)
                if 0 in found:
                    raise _Found()
            if func in table:
                result = table[func](*args, **kwargs)
                if result is not NotImplemented:
                    return result
            return func(*args, **kwargs)

    # Forward hooks only (full backward hooks break in-place ops such as
    # SiLU(inplace=True)): the autograd nodes a module's forward made carry
    # its name, which names the module of a backward op.
    def push(module, args):
        if id(module) in names:
            _tag(args, stack[-1] if stack else None)
            name, type_name = names[id(module)]
            stack.append(f"{name} ({type_name})")

    def pop(module, args, output):
        if id(module) in names and stack:
            _tag(output, stack.pop())

    nn = torch.nn.modules.module
    handles = [nn.register_module_forward_pre_hook(push),
               nn.register_module_forward_hook(pop)]
    snapshot = Snapshot(wrapped)
    try:
        with Record(), warnings.catch_warnings(), \
                torch.autograd.set_detect_anomaly(True, check_nan=False):
            warnings.simplefilter("ignore")
            (loss,) = wrapped(*inputs, labels)
            loss.backward()
    except Exception:   # _Found, or the model failing eagerly as it traced
        pass
    finally:
        for h in handles:
            h.remove()
        snapshot.restore()
    if 0 in found:
        return found[0]
    # The nearest op it reads from, else the first op of its name.
    ranks = sorted(r for r in found if r > 0) + ([-1] if -1 in found else [])
    return found[ranks[0]] if ranks else (None, None)


_TAG = "distopt_module"


def _tag(values, path):
    """Names `path` on the autograd nodes behind `values` that no module
    named yet (a module's inputs: its caller's; its outputs: its own)."""
    pending = []
    for v in torch.utils._pytree.tree_leaves(values):
        if isinstance(v, torch.Tensor) and v.grad_fn is not None:
            pending.append(v.grad_fn)
    while pending:
        fn = pending.pop()
        if fn is None or _TAG in fn.metadata:
            continue
        fn.metadata[_TAG] = path
        pending.extend(next_fn for next_fn, _ in fn.next_functions)


def gradless(model, wrapped, inputs, labels):
    """The names of the trainable parameters an eager step leaves without a
    gradient (the model restored afterwards), or None when it fails."""
    snapshot = Snapshot(wrapped)
    try:
        for p in wrapped.parameters():
            p.grad = None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (loss,) = wrapped(*inputs, labels)
            loss.backward()
        return [n for n, p in model.named_parameters()
                if p.requires_grad and p.grad is None]
    except Exception:   # noqa: BLE001 (the model failing eagerly too)
        return None
    finally:
        snapshot.restore()


def trace_failure(model, error):
    """The message for PyTorch failing to trace the step: what was being
    exported and the model's line the failure came from."""
    line = user_frame(traceback.extract_tb(error.__traceback__))
    kind = type(error).__name__
    text = str(error).strip().splitlines()
    detail = f"{kind}: {text[0]}" if text else kind
    return (f"cannot export the training step of {type(model).__name__}: "
            f"PyTorch's AOTAutograd trace (aot_export_module) failed with "
            f"{detail}" + (f" (at {line})" if line else ""))
