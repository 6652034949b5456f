# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Import a Keras 3 training step (JAX backend): model + loss + optimizer ->
a train-dialect step, its state and a batch.

    import distopt.keras            # sets KERAS_BACKEND=jax if unset
    import keras
    model = keras.Sequential([keras.Input((784,)),
                              keras.layers.Dense(128, activation="relu"),
                              keras.layers.Dense(10)])
    step = distopt.keras.export_train_step(
        model, x, y, loss=keras.losses.SparseCategoricalCrossentropy(
            from_logits=True),
        optimizer=keras.optimizers.SGD(learning_rate=0.1, momentum=0.9))
    step.save("mlp")                # step.mlir, state.npz, batch.npz
    ...                             # dist-run / distopt.launch
    distopt.keras.load_into(model, result.state)

The step is the one `model.train_on_batch(x, y)` runs: Keras's own
`compute_loss_and_updates` (the model's stateless call in training mode,
the compiled loss and the layers' losses) under `jax.value_and_grad`, then
the optimizer's own `stateless_apply`; the trace is translated primitive by
primitive (distopt.jax), so SGD, Adam and AdamW update exactly as Keras
updates. Every variable is named by its Keras path (`variable.path`:
`dense/kernel`, `sgd/dense_kernel_momentum`, `sgd/iteration`). See
docs/guides/jax-keras.md.
"""

import contextlib
import os
import sys

from .._distopt import DistOptError

if "keras" in sys.modules:
    _backend = sys.modules["keras"].backend.backend()
    if _backend != "jax":
        raise DistOptError(
            f"keras was imported with the {_backend!r} backend; distopt.keras "
            "needs the JAX backend: set KERAS_BACKEND=jax (or import "
            "distopt.keras before keras)")
os.environ.setdefault("KERAS_BACKEND", "jax")

import warnings  # noqa: E402

with warnings.catch_warnings():
    # keras imports matplotlib.pyplot; in the set-up's venv (system site
    # packages) Debian's regular mpl_toolkits package hides the venv
    # matplotlib's namespace one, and matplotlib warns that its 3-D
    # projection is unavailable on every import: nothing here draws.
    warnings.filterwarnings("ignore", message="Unable to import Axes3D")
    import keras  # noqa: E402
import numpy as np  # noqa: E402

if keras.backend.backend() != "jax":
    raise DistOptError(
        f"keras uses the {keras.backend.backend()!r} backend (KERAS_BACKEND="
        f"{os.environ.get('KERAS_BACKEND')}); distopt.keras needs "
        "KERAS_BACKEND=jax")

from .._exported import ExportedStep  # noqa: E402
from .._mixed import sixteen_bit_updates  # noqa: E402
from ..jax import (UnsupportedOpError, export_flat,  # noqa: E402
                   value_and_grad_seeded)
from . import _mixed  # noqa: E402

__all__ = ["export_train_step", "load_into", "fit", "UnsupportedOpError"]


def _variables(model, optimizer):
    """(trainable, non-trainable, optimizer variables, metrics variables)."""
    return (list(model.trainable_variables),
            list(model.non_trainable_variables),
            list(optimizer.variables),
            list(model.metrics_variables))


def _unique_paths(groups):
    seen = {}
    for group in groups:
        for v in group:
            if v.path in seen and seen[v.path] is not v:
                raise DistOptError(f"two Keras variables have the path "
                                   f"{v.path!r}; give their layers unique "
                                   "names")
            seen[v.path] = v


def export_train_step(model, x, y, loss=None, optimizer=None, *,
                      name="train_step"):
    """Exports the step `model.train_on_batch(x, y)` runs. `loss` (a
    keras.losses name or object) and `optimizer` (keras.optimizers.SGD,
    Adam, AdamW, ...) compile the model (as `model.compile` would); leave
    them out for a model already compiled. `x` (an array, or a tuple / dict
    of arrays for a multi-input model) and `y` give the batch: its shapes
    and dtypes are the step's, its values the batch. The model is built on
    `x` if it is not built yet; nothing else of it changes.

    Mixed precision: a model under the `mixed_bfloat16` / `mixed_float16`
    dtype policy exports the step the train-mixed-precision pass makes of
    its float32 step (traced with every layer's policy float32): 16-bit
    compute, float32 variables; a LossScaleOptimizer (compile wraps one
    around the optimizer under mixed_float16) becomes dynamic loss scaling
    with its initial scale and growth steps, its dynamic_scale and
    step_counter the step's `loss_scale` and `loss_scale.growth_tracker`
    (load_into sets them back). `step.mixed_precision` holds the pass's
    options (None for float32)."""
    if not isinstance(model, keras.Model):
        raise TypeError(f"model must be a keras.Model, not "
                        f"{type(model).__name__}")
    if optimizer is not None and not isinstance(optimizer,
                                                keras.optimizers.Optimizer):
        raise TypeError("optimizer must be a keras.optimizers.Optimizer "
                        f"(SGD, Adam, AdamW, ...), not "
                        f"{type(optimizer).__name__}")
    if loss is not None or optimizer is not None:
        compiled_optimizer = optimizer if optimizer is not None else \
            getattr(model, "optimizer", None)
        compiled_loss = loss if loss is not None else getattr(model, "loss",
                                                              None)
        if compiled_optimizer is None or compiled_loss is None:
            raise ValueError("give both loss and optimizer (or compile the "
                             "model first)")
        try:
            model.compile(optimizer=compiled_optimizer, loss=compiled_loss)
        except (ValueError, TypeError) as error:
            raise ValueError(f"model.compile(loss={compiled_loss!r}): "
                             f"{error}") from None
    if not getattr(model, "compiled", False) or model.optimizer is None:
        raise ValueError("the model is not compiled: give loss and optimizer")
    x = tuple(x) if isinstance(x, list) else x
    if not model.built:
        model(x if not isinstance(x, dict) else x, training=False)
    optimizer = model.optimizer
    if not optimizer.built:
        optimizer.build(model.trainable_variables)
    mixed = _mixed.mixed_precision(model, optimizer)
    with _mixed.float32_trace(model, optimizer) if mixed is not None \
            else contextlib.nullcontext(optimizer) as traced:
        step = _export(model, traced, x, y, name)
    step.mixed_precision = None if mixed is None else mixed.options()
    if mixed is None:
        return step
    try:
        mlir = mixed.apply(step.mlir)
    except DistOptError as error:
        if mixed.loss_scale == "none":
            raise
        raise DistOptError(
            f"cannot export model {model.name!r} with its "
            f"{type(model.optimizer).__name__}'s loss scaling: {error}\n"
            "(for 16-bit compute without loss scaling compile with "
            "auto_scale_loss=False, or use the mixed_bfloat16 policy)"
        ) from error
    rounded = sixteen_bit_updates(mlir)
    if rounded:
        names = ", ".join(name for name, _ in rounded)
        warnings.warn(
            f"model {model.name!r}: the mixed step computes the new values "
            f"of {names} in {rounded[0][1]}: the pass did not find the "
            "update that reads their gradients (it keeps updates in "
            "float32), so these float32 variables are "
            f"rounded to {rounded[0][1]} every step and updates below that "
            "resolution are lost", RuntimeWarning, stacklevel=2)
    mixed_step = ExportedStep(mlir, {**step.state, **mixed.state()},
                              step.batch, step.param_names)
    mixed_step.mixed_precision = mixed.options()
    return mixed_step


def _export(model, optimizer, x, y, name):
    """The step with `optimizer` (the model's, or a LossScaleOptimizer's
    inner one) as the model's layers compute now."""
    # The loss and metrics are built on the first batch.
    groups = _variables(model, optimizer)
    _unique_paths(groups[:3])
    trainable, non_trainable, opt_vars, metrics = groups

    def as_array(what, value):
        array = np.asarray(value)
        if array.dtype == object:
            raise TypeError(f"{what} must be arrays, not "
                            f"{type(value).__name__}")
        return array

    if isinstance(x, dict):
        x_leaves = [(str(k), as_array("x", v)) for k, v in x.items()]
    elif isinstance(x, tuple):
        x_leaves = [(f"x.{i}", as_array("x", v)) for i, v in enumerate(x)]
    else:
        x_leaves = [("x", as_array("x", x))]
    y_array = as_array("y", y)
    leaves = [(v.path, "param", np.asarray(v.value)) for v in trainable]
    leaves += [(v.path, "opt_state", np.asarray(v.value))
               for v in non_trainable + opt_vars]
    leaves += [(n, "input", a) for n, a in x_leaves]
    leaves.append(("y", "label", y_array))
    counts = [len(trainable), len(non_trainable), len(opt_vars)]
    metric_values = [np.asarray(v.value) for v in metrics]

    def rebuild_x(arrays):
        if isinstance(x, dict):
            return dict(zip(x.keys(), arrays))
        if isinstance(x, tuple):
            return tuple(arrays)
        return arrays[0]

    import jax

    def flat_step(*arrays):
        *arrays, seed = arrays
        t = list(arrays[:counts[0]])
        nt = list(arrays[counts[0]:counts[0] + counts[1]])
        ov = list(arrays[counts[0] + counts[1]:sum(counts)])
        batch = arrays[sum(counts):]
        xs, ys = rebuild_x(list(batch[:-1])), batch[-1]
        grad_fn = value_and_grad_seeded(model.compute_loss_and_updates,
                                        seed, has_aux=True)
        (_, aux), grads = grad_fn(t, nt, metric_values, xs, ys, None,
                                  training=True, optimizer_variables=ov)
        unscaled_loss, _, new_nt, _ = aux
        new_t, new_ov = optimizer.stateless_apply(ov, grads, t)
        return [unscaled_loss] + list(new_t) + list(new_nt) + list(new_ov)

    owners = {}
    for layer in model._flatten_layers(include_self=False, recursive=True):
        for v in layer.variables:       # the innermost layer wins
            owners[v.path] = f"layer {layer.name!r} ({type(layer).__name__})"
    return export_flat(flat_step, leaves, sum(counts), name,
                       f"training step of Keras model {model.name!r}", owners)


def load_into(model, state, optimizer=None):
    """Assigns `state`'s arrays (a RunResult's state merged over
    step.state, a checkpoint) to the model's variables and to `optimizer`'s
    (default: the model's), matched by Keras path; a mixed step's
    `loss_scale` and `loss_scale.growth_tracker` to a LossScaleOptimizer's
    dynamic_scale and step_counter. Every variable of the
    model must be in `state` with its shape (metrics' need not); the
    optimizer's that are there are set. Checks everything before it assigns
    anything. Returns the paths set."""
    if not isinstance(model, keras.Model):
        raise TypeError(f"model must be a keras.Model, not "
                        f"{type(model).__name__}")
    if optimizer is None:
        optimizer = getattr(model, "optimizer", None)
    metrics = {id(v) for v in model.metrics_variables}
    # A mixed step's loss scale goes to a LossScaleOptimizer's own
    # variables (dynamic_scale, step_counter).
    scaling = _mixed.loss_scale_plan(optimizer, state)
    scaling_ids = {id(v) for v, _ in scaling}
    # Every weight and statistic; not the seeds of random layers (uint32:
    # never in a step).
    required = [v for v in model.variables if id(v) not in metrics
                and not str(v.dtype).startswith("uint")]
    optional = [v for v in optimizer.variables if id(v) not in scaling_ids] \
        if optimizer is not None else []
    plan = []
    for v in required + optional:
        if v.path not in state:
            if any(v is r for r in required):
                raise KeyError(f"{v.path} is not in the state (a state of "
                               "another model?)")
            continue
        array = np.asarray(state[v.path])
        if tuple(array.shape) != tuple(v.shape):
            raise ValueError(f"{v.path}: shape {array.shape} in the state, "
                             f"{tuple(v.shape)} in the model")
        plan.append((v, array))
    plan += scaling
    for v, array in plan:
        v.assign(array.astype(v.dtype))
    return [v.path for v, _ in plan]


from .fit import fit  # noqa: E402 (uses the names above)
