# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Import a JAX training step: `loss_fn(params, batch) -> loss` + an optax
optimizer -> a train-dialect step, its state and a batch.

    import jax, jax.numpy as jnp, optax, distopt.jax
    def loss_fn(params, batch):
        logits = jnp.tanh(batch["x"] @ params["w1"]) @ params["w2"]
        labels = jax.nn.one_hot(batch["y"], 10)
        return -jnp.mean(jnp.sum(labels * jax.nn.log_softmax(logits), -1))
    step = distopt.jax.export_train_step(loss_fn, params, batch,
                                         optimizer=optax.sgd(0.1, momentum=0.9))
    step.save("mlp")              # step.mlir, state.npz, batch.npz for dist-run

The whole step (`jax.value_and_grad(loss_fn)`, then the optimizer's own
`update` and `optax.apply_updates`) is traced to a jaxpr and every
primitive is translated to train ops, so the exported step computes what
the jitted JAX step computes, optimizer included; a primitive without a
mapping raises `UnsupportedOpError` naming it and the line of the user's
code it came from. See docs/guides/jax-keras.md.
"""

import jax
import numpy as np

from .._distopt import DistOptError
from .._emit import (Emitter, Value, attr_f64, function_text, scalar_literal,
                     tensor_type)
from .._exported import ExportedStep
from . import _lax

__all__ = ["export_train_step", "params_from_state", "opt_state_from_state",
           "UnsupportedOpError", "OPT_PREFIX"]

# Optimizer state is named by its optax path under this prefix:
# "opt.0.trace.dense1.kernel" (a momentum buffer), "opt.0.count".
OPT_PREFIX = "opt"


class UnsupportedOpError(DistOptError):
    """A primitive of the traced step has no train-dialect mapping.
    `op` is the primitive's name, `where` the user's source line and
    `scope` the name scope (a Keras layer) it came from, when known."""

    def __init__(self, message, op, where=None, scope=None):
        super().__init__(message)
        self.op, self.where, self.scope = op, where, scope


# -- names ----------------------------------------------------------------------

def _key_name(key):
    for attribute in ("key", "idx", "name"):
        if hasattr(key, attribute):
            return str(getattr(key, attribute))
    return str(key)


def path_name(path, prefix=None):
    """A pytree path as a dotted name: ['dense1']['kernel'] -> dense1.kernel,
    .layers[0].w -> layers.0.w."""
    parts = ([prefix] if prefix else []) + [_key_name(k) for k in path]
    return ".".join(parts) if parts else (prefix or "value")


def _named_leaves(tree, prefix=None):
    leaves, treedef = jax.tree_util.tree_flatten_with_path(tree)
    return [(path_name(p, prefix), leaf) for p, leaf in leaves], treedef


def _as_array(name, leaf):
    try:
        array = np.asarray(leaf)
    except Exception as error:
        raise TypeError(f"{name}: not an array ({type(leaf).__name__}): "
                        f"{error}") from None
    if array.dtype == object:
        raise TypeError(f"{name}: not an array ({type(leaf).__name__})")
    return array


# -- where an unsupported primitive came from -------------------------------------

_LIBRARY_DIRS = ("/jax/", "/jaxlib/", "/optax/", "/keras/", "/flax/",
                 "/distopt/", "/site-packages/ml_dtypes/")


def _where(eqns):
    """The user's source line ("file:line (function)") of the innermost of
    `eqns` (an equation, then the calls it is in, outward) that has one;
    else the innermost line known."""
    first = None
    for eqn in eqns:
        try:
            frames = list(jax._src.source_info_util.user_frames(
                eqn.source_info.traceback))
        except Exception:
            frames = []
        for frame in frames:
            line = f"{frame.file_name}:{frame.start_line} ({frame.function_name})"
            if not any(d in frame.file_name for d in _LIBRARY_DIRS):
                return line
            first = first or line
    return first


def _scope(calls, eqn):
    stack = [str(c.source_info.name_stack) for c in calls] + \
        [str(eqn.source_info.name_stack)]
    return "/".join(s for s in stack if s) or None


def unsupported_error(translator, error, what):
    eqn = error.eqn
    where = _where([eqn] + error.calls[::-1])
    scope = _scope(error.calls, eqn)
    parts = [f"cannot export the {what}: JAX primitive "
             f"'{eqn.primitive.name}'"]
    if scope:
        parts.append(f" in {scope}")
    if where:
        parts.append(f" at {where}")
    reason = error.reason if error.reason != "no train-dialect mapping" else ""
    parts.append(" has no train-dialect mapping" + (f": {reason}" if reason
                                                     else ""))
    return UnsupportedOpError("".join(parts), eqn.primitive.name, where, scope)


# -- the export, shared with distopt.keras ----------------------------------------

def value_and_grad_seeded(fun, seed, has_aux=False):
    """jax.value_and_grad(fun, has_aux=has_aux) (the gradient in the first
    argument) with `seed` as the loss's cotangent: the step's backward
    seed, which export_flat marks."""
    def wrapped(first, *rest, **kwargs):
        out = jax.vjp(lambda f: fun(f, *rest, **kwargs), first,
                      has_aux=has_aux)
        value, pullback = out[0], out[1]
        (grads,) = pullback(seed.astype(value.dtype))
        return ((value, out[2]) if has_aux else value), grads
    return wrapped


def export_flat(flat_step, leaves, state_count, name, what, owners=None,
                update=None):
    """Traces `flat_step(*arrays, seed) -> [loss] + new state leaves` and
    writes the step. `leaves` is a list of (name, role, array) with the
    state leaves (roles param / opt_state) first, `state_count` of them,
    then the batch (input / label). `seed` is the backward's seed (d loss
    / d loss, a float32 1.0 that flat_step gives its vjp as the loss's
    cotangent): traced as an argument, so that no product with it folds
    away, and written as the constant 1.0 marked train.loss_seed, which
    train-mixed-precision's loss scaling multiplies. A state leaf the step
    returns as it got it (a learning rate) becomes a hyper-parameter: an
    argument, no result. `owners` names what a leaf belongs to (a Keras
    layer), for errors. With `update` (a _TrainOptimizer), the state
    leaves are parameters and `flat_step` returns their gradients:
    `update` emits the optimizer ops and the arguments they need."""
    owners = owners or {}
    arrays = [a for _, _, a in leaves]
    try:
        closed = jax.make_jaxpr(flat_step)(*arrays, np.float32(1.0))
    except DistOptError:
        raise
    except Exception as error:
        raise DistOptError(f"cannot trace the {what}: {type(error).__name__}: "
                           f"{error}") from error
    jaxpr = closed.jaxpr
    outs = jaxpr.outvars
    # JAX traces 64-bit integers as 32-bit ones (x64 off): the step takes
    # what JAX computed with.
    leaves = [(n, r, a if a.dtype == var.aval.dtype else
               a.astype(var.aval.dtype))
              for (n, r, a), var in zip(leaves, jaxpr.invars)]
    if len(outs) != 1 + state_count:
        raise DistOptError(f"the {what} returns {len(outs) - 1} state values "
                           f"for {state_count} inputs")
    loss_aval = outs[0].aval
    if loss_aval.shape != () or not np.issubdtype(loss_aval.dtype, np.floating):
        raise DistOptError(f"the loss must be a float scalar, not "
                           f"{loss_aval.dtype}{list(loss_aval.shape)}")

    e = Emitter()
    translator = _lax.Translator(e)
    arguments, results, state, batch = [], [], {}, {}
    # State the step neither reads nor changes (an RNN cell's seed for a
    # recurrent dropout it does not use) stays out of the step.
    used = {id(v) for eqn in jaxpr.eqns for v in eqn.invars}
    used |= {id(v) for i, v in enumerate(outs) if i == 0 or i > state_count}
    keep = [index >= state_count or id(var) in used or
            outs[1 + index] is not var or
            any(o is var for j, o in enumerate(outs[1:]) if j != index)
            for index, var in enumerate(jaxpr.invars)]
    from .._emit import element_type
    for (leaf_name, role, array), kept in zip(leaves, keep):
        if not kept:
            continue
        try:
            element_type(array.dtype)
        except TypeError:
            owner = owners.get(leaf_name)
            raise UnsupportedOpError(
                f"cannot export the {what}: "
                f"{owner + ' has ' if owner else ''}{leaf_name}, "
                f"{array.dtype}, which the train dialect has no element type for (float32/64, "
                "float16, bfloat16, int32/64, bool; a random layer's seed "
                "state is uint32: random ops are not supported)",
                "argument", None, owner or leaf_name) from None
    roles = []
    values_in = []
    for index, ((leaf_name, role, array), var) in enumerate(
            zip(leaves, jaxpr.invars)):
        if not keep[index]:
            values_in.append(None)
            continue
        if index < state_count and role == "opt_state" and \
                outs[1 + index] is var:
            role = "hyper"
        roles.append(role)
        v = Value(f"%a{len(arguments)}", array.shape, np.dtype(array.dtype))
        arguments.append((v, role, leaf_name))
        values_in.append((v, role, leaf_name))
        (state if index < state_count else batch)[leaf_name] = array
    seen = set()
    for _, _, leaf_name in arguments:
        if leaf_name in seen:
            raise DistOptError(f"two values of the {what} are named "
                               f"{leaf_name!r}")
        seen.add(leaf_name)
    seed_var = jaxpr.invars[len(leaves)]
    seed_dtype = np.dtype(seed_var.aval.dtype)
    seed = e.op("constant", [], [((), seed_dtype)],
                {"value": f"dense<{scalar_literal(1.0, seed_dtype)}> : "
                          f"{tensor_type((), seed_dtype)}",
                 "train.loss_seed": None})
    try:
        values = translator.closed(closed, [a[0] if a else None
                                            for a in values_in] + [seed])
    except _lax.UnsupportedPrimitive as error:
        raise unsupported_error(translator, error, what) from None
    def add_argument(shape, dtype, role, arg_name, array):
        if any(n == arg_name for _, _, n in arguments):
            raise DistOptError(f"two values of the {what} are named "
                               f"{arg_name!r}")
        v = Value(f"%a{len(arguments)}", shape, np.dtype(dtype))
        arguments.append((v, role, arg_name))
        state[arg_name] = np.asarray(array, dtype)
        return v

    if update is not None:
        update.begin(add_argument, [v for v, _, _ in arguments[:state_count]])
    later = []
    for index in range(state_count):
        if values_in[index] is None:
            continue
        v, role, leaf_name = values_in[index]
        if role == "hyper":
            continue
        new = values[1 + index]
        if update is not None:
            updated = update.emit(e, add_argument, leaf_name, v, new)
            results.append(updated[0])
            later += updated[1:]
            continue
        if new.shape != v.shape or new.dtype != v.dtype:
            raise DistOptError(f"the {what} changes the type of {leaf_name} "
                               f"from {v.type} to {new.type}")
        if new is v:        # unchanged: still a result, as its role says
            new = e.op("add", [v, e.constant(0, v.dtype)], [(v.shape, v.dtype)])
        results.append((new, role, leaf_name))
    results += later
    results.append((values[0], "loss", "loss"))

    mlir = function_text(name, arguments, results,
                         e.body([v.name for v, _, _ in results]))
    names = [n for n, r, _ in leaves if r == "param"]
    return ExportedStep(mlir, state, batch, names)


# -- optax ----------------------------------------------------------------------

_SHORT = ("sgd", "adam", "adamw")


class _TrainOptimizer:
    """The short form ("sgd"|"adam"|"adamw", {options}): optax's option
    names and defaults, emitted as train.sgd / train.adam / train.adamw ops
    (PyTorch's formulas, which are optax's up to rounding), so that
    optimizer-aware strategies (ZeRO) see them. State: `<param>.
    momentum_buffer`, `<param>.exp_avg`, `<param>.exp_avg_sq`, `<param>.step`;
    the learning rate is the hyper-parameter `lr`."""

    _DEFAULTS = {"sgd": {"momentum": 0.0, "nesterov": False},
                 "adam": {"b1": 0.9, "b2": 0.999, "eps": 1e-8, "eps_root": 0.0},
                 "adamw": {"b1": 0.9, "b2": 0.999, "eps": 1e-8,
                           "eps_root": 0.0, "weight_decay": 1e-4}}

    def __init__(self, optimizer):
        if len(optimizer) != 2 or not isinstance(optimizer[1], dict):
            raise TypeError("optimizer must be an optax transformation or "
                            "(\"sgd\"|\"adam\"|\"adamw\", {options})")
        kind, options = optimizer
        if kind not in self._DEFAULTS:
            raise ValueError(f"unknown optimizer {kind!r} (one of "
                             f"{', '.join(self._DEFAULTS)})")
        options = dict(options)
        lr = options.pop("learning_rate", options.pop("lr", None))
        if not isinstance(lr, (int, float)) or isinstance(lr, bool):
            raise TypeError(f"optax.{kind}: learning_rate (or lr) must be a "
                            f"number, not {lr!r}")
        defaults = self._DEFAULTS[kind]
        unknown = sorted(set(options) - set(defaults))
        if unknown:
            raise TypeError(f"optax.{kind}: unknown option(s) {unknown} (the "
                            f"short form takes learning_rate/lr, "
                            f"{', '.join(defaults)}; pass an optax "
                            "transformation for anything else)")
        self.kind, self.lr = kind, float(lr)
        self.options = {**defaults, **options}
        if self.options.get("momentum") is None:
            self.options["momentum"] = 0.0
        if self.options.get("eps_root"):
            raise ValueError(f"optax.{kind}: eps_root != 0 has no train op; "
                             f"pass optax.{kind}(...) itself")

    def begin(self, add_argument, params):
        dtype = np.float64 if params and all(
            p.dtype == np.float64 for p in params) else np.float32
        self.lr_value = add_argument((), dtype, "hyper", "lr", self.lr)

    def emit(self, e, add_argument, name, param, grad):
        shape, dtype = param.shape, param.dtype
        o = self.options
        if self.kind == "sgd":
            states, results = [], [(shape, dtype)]
            attrs = {"weight_decay": attr_f64(0.0)}
            if o["momentum"]:
                states.append(add_argument(shape, dtype, "opt_state",
                                           f"{name}.momentum_buffer",
                                           np.zeros(shape, dtype)))
                attrs["momentum"] = attr_f64(o["momentum"])
                results.append((shape, dtype))
                if o["nesterov"]:
                    attrs["nesterov"] = None
            out = e.op("sgd", [param, grad, self.lr_value] + states, results,
                       attrs)
            out = [out] if isinstance(out, Value) else out
            names = [name] + [f"{name}.momentum_buffer"] * len(states)
            roles = ["param"] + ["opt_state"] * len(states)
            return list(zip(out, roles, names))
        suffixes = ("exp_avg", "exp_avg_sq", "step")
        states = [add_argument(shape, dtype, "opt_state", f"{name}.{s}",
                               np.zeros(shape, dtype)) for s in suffixes[:2]]
        states.append(add_argument((), np.float32, "opt_state",
                                   f"{name}.step", np.zeros((), np.float32)))
        attrs = {"beta1": attr_f64(o["b1"]), "beta2": attr_f64(o["b2"]),
                 "epsilon": attr_f64(o["eps"]),
                 "weight_decay": attr_f64(o.get("weight_decay", 0.0))}
        out = e.op(self.kind, [param, grad] + states + [self.lr_value],
                   [(shape, dtype)] * 3 + [((), np.dtype(np.float32))], attrs)
        return list(zip(out, ["param"] + ["opt_state"] * 3,
                        [name] + [f"{name}.{s}" for s in suffixes]))


def _optimizer(optimizer):
    """An optax GradientTransformation, or a _TrainOptimizer for the short
    form."""
    if isinstance(optimizer, tuple) and not hasattr(optimizer, "update"):
        return _TrainOptimizer(optimizer)
    if not (hasattr(optimizer, "init") and hasattr(optimizer, "update")):
        raise TypeError("optimizer must be an optax GradientTransformation "
                        "(optax.sgd(...), optax.inject_hyperparams(optax.adam)"
                        "(...), a chain) or (\"sgd\"|\"adam\"|\"adamw\", "
                        f"{{options}}), not {type(optimizer).__name__}")
    return optimizer


def export_train_step(loss_fn, params, batch, optimizer=("sgd", {"lr": 0.1}),
                      *, opt_state=None, labels=None, name="train_step"):
    """Exports one training step: `loss, grads = jax.value_and_grad(loss_fn)
    (params, batch)`, then `optimizer.update(grads, opt_state, params)` and
    `optax.apply_updates`. `params` and `batch` are pytrees of arrays (their
    shapes and dtypes are the step's; their values the state and the batch);
    `optimizer` an optax GradientTransformation (traced with the step:
    exactly optax's update) or ("sgd"|"adam"|"adamw", {options}) (optax's
    option names and defaults, "lr" for learning_rate; emitted as
    train.sgd/adam/adamw ops, which ZeRO shards);
    `opt_state` the optimizer's state to start from (default: its init).

    State names: parameters by their pytree path joined with '.'
    (`dense1.kernel`, `layers.0.w`), optimizer state by its optax path under
    "opt." (`opt.0.trace.dense1.kernel`, `opt.hyperparams.learning_rate`),
    or with the short form `<param>.momentum_buffer` / `.exp_avg` /
    `.exp_avg_sq` / `.step` and the hyper-parameter `lr`;
    batch leaves by their path (`x`, `y`; a tuple's leaves `0`, `1`).
    `labels` names the batch leaves that are labels (default: the last)."""
    import optax
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be a function (params, batch) -> loss, "
                        f"not {type(loss_fn).__name__}")
    tx = _optimizer(optimizer)
    param_leaves, param_def = _named_leaves(params)
    if not param_leaves:
        raise ValueError("params has no arrays")
    param_arrays = [(n, _as_array(n, leaf)) for n, leaf in param_leaves]
    for n, a in param_arrays:
        if not np.issubdtype(a.dtype, np.floating):
            raise TypeError(f"parameter {n} is {a.dtype}, not a float array")
    short = isinstance(tx, _TrainOptimizer)
    if short and opt_state is not None:
        raise ValueError("opt_state goes with an optax transformation, not "
                         "with the short form")
    if short:
        opt_state = ()
    if opt_state is None:
        try:
            opt_state = tx.init(params)
        except Exception as error:
            raise DistOptError(f"optimizer.init(params) failed: "
                               f"{type(error).__name__}: {error}") from error
    opt_leaves, opt_def = _named_leaves(opt_state, OPT_PREFIX)
    batch_leaves, batch_def = _named_leaves(batch)
    if not batch_leaves:
        raise ValueError("batch has no arrays")
    batch_names = [n for n, _ in batch_leaves]
    label_names = set(labels if labels is not None else batch_names[-1:])
    unknown = label_names - set(batch_names)
    if unknown:
        raise ValueError(f"labels {sorted(unknown)} are not batch leaves "
                         f"({', '.join(batch_names)})")
    leaves = [(n, "param", a) for n, a in param_arrays]
    leaves += [(n, "opt_state", _as_array(n, leaf)) for n, leaf in opt_leaves]
    leaves += [(n, "label" if n in label_names else "input", _as_array(n, leaf))
               for n, leaf in batch_leaves]
    counts = (len(param_leaves), len(opt_leaves))
    try:
        loss_shape = jax.eval_shape(loss_fn, params, batch)
    except Exception as error:
        raise DistOptError(f"loss_fn(params, batch) failed: "
                           f"{type(error).__name__}: {error}") from error
    if not hasattr(loss_shape, "shape") or loss_shape.shape != () or \
            not np.issubdtype(loss_shape.dtype, np.floating):
        raise DistOptError("the loss must be a float scalar, not "
                           f"{getattr(loss_shape, 'dtype', '')}"
                           f"{list(getattr(loss_shape, 'shape', ['?']))} "
                           "(loss_fn(params, batch) returns it)")

    def flat_step(*arrays):
        *arrays, seed = arrays
        p = jax.tree_util.tree_unflatten(param_def, arrays[:counts[0]])
        s = jax.tree_util.tree_unflatten(
            opt_def, arrays[counts[0]:sum(counts)])
        b = jax.tree_util.tree_unflatten(batch_def, arrays[sum(counts):])
        loss, grads = value_and_grad_seeded(loss_fn, seed)(p, b)
        if short:
            return [loss] + jax.tree_util.tree_leaves(grads)
        updates, new_s = tx.update(grads, s, p)
        new_p = optax.apply_updates(p, updates)
        new_p_leaves, new_p_def = jax.tree_util.tree_flatten(new_p)
        new_s_leaves, new_s_def = jax.tree_util.tree_flatten(new_s)
        if new_p_def != param_def or new_s_def != opt_def:
            raise DistOptError("the optimizer changes the structure of the "
                               "parameters or of its state")
        return [loss] + new_p_leaves + new_s_leaves

    return export_flat(flat_step, leaves, sum(counts), name, "JAX step",
                       update=tx if short else None)


# -- results back into the pytrees ------------------------------------------------

def params_from_state(state, params):
    """The pytree `params` with every leaf replaced by `state`'s array of
    its name (a RunResult's state, a checkpoint, step.state)."""
    leaves, treedef = _named_leaves(params)
    return jax.tree_util.tree_unflatten(
        treedef, [_take(state, n, leaf) for n, leaf in leaves])


def opt_state_from_state(state, opt_state):
    """The optax state `opt_state` (its structure: tx.init(params)) with
    every leaf replaced by `state`'s array of its name."""
    leaves, treedef = _named_leaves(opt_state, OPT_PREFIX)
    return jax.tree_util.tree_unflatten(
        treedef, [_take(state, n, leaf) for n, leaf in leaves])


def _take(state, name, like):
    if name not in state:
        raise KeyError(f"{name} is not in the state "
                       f"({len(state)} arrays; a state of another step?)")
    array = np.asarray(state[name])
    like = np.asarray(like)
    if array.shape != like.shape:
        raise ValueError(f"{name}: shape {array.shape} in the state, "
                         f"{like.shape} in the pytree")
    return jax.numpy.asarray(array.astype(like.dtype, copy=False))
