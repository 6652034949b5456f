# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Keras mixed precision as the `train-mixed-precision` pass's options. A
model whose layers have a mixed dtype policy (`mixed_bfloat16`,
`mixed_float16`: float32 variables, 16-bit compute) is traced with every
layer's policy float32 and the pass is applied to that step, so the
export is the float32 export with the pass run on it; a
`LossScaleOptimizer` (which `compile` wraps around the optimizer under
`mixed_float16`) is traced as its inner optimizer and becomes the pass's
dynamic loss scaling, its `dynamic_scale` and `step_counter` the step's
`loss_scale` and `loss_scale.growth_tracker` state."""

import contextlib
import warnings

import keras
import numpy as np

from .._mixed import MixedPrecision, scaler_state

__all__ = ["mixed_precision", "float32_trace", "loss_scale_plan"]

_LSO = keras.optimizers.LossScaleOptimizer


def _layers(model):
    return list(model._flatten_layers(include_self=True, recursive=True))


def _owns_variables(layer):
    return bool(getattr(layer, "_trainable_variables", None) or
                getattr(layer, "_non_trainable_variables", None))


def _policy_of(layer):
    """The layer's dtype policy, or None for a policy map (quantization)."""
    policy = layer.dtype_policy
    if isinstance(policy, keras.dtype_policies.DTypePolicyMap) or \
            getattr(policy, "quantization_mode", None) is not None:
        return None
    return policy


def _is_mixed(policy):
    return policy is not None and policy.variable_dtype == "float32" and \
        policy.compute_dtype in ("bfloat16", "float16")


def _describe(layer):
    return f"layer {layer.name!r} ({type(layer).__name__})"


def mixed_precision(model, optimizer):
    """The MixedPrecision of `model` compiled with `optimizer` (None for a
    float32 step, or for a model whose policies are not mixed: a pure
    bfloat16 model exports as it computes). Refuses what the pass cannot
    honour, naming the layer."""
    layers = _layers(model)
    mixed = [(layer, _policy_of(layer)) for layer in layers
             if _is_mixed(_policy_of(layer))]
    lso = optimizer if isinstance(optimizer, _LSO) else None
    if not mixed:
        if lso is not None:
            raise ValueError(
                f"a LossScaleOptimizer with model {model.name!r} under the "
                f"{model.dtype_policy.name!r} policy: the exported step "
                "scales the loss of a 16-bit step only; use the "
                "'mixed_float16' or 'mixed_bfloat16' policy, or the inner "
                "optimizer")
        return None
    computes = {}
    for layer, policy in mixed:
        computes.setdefault(policy.compute_dtype, layer)
    if len(computes) > 1:
        (a, la), (b, lb) = sorted(computes.items())[:2]
        raise ValueError(f"{_describe(la)} computes in {a} and "
                         f"{_describe(lb)} in {b}: the step has one compute "
                         "type")
    compute_name = next(iter(computes))
    for layer in layers:
        policy = _policy_of(layer)
        if _owns_variables(layer) and not _is_mixed(policy):
            name = policy.name if policy is not None else "a quantized policy"
            raise ValueError(
                f"{_describe(layer)} has the {name!r} policy in a model "
                f"computing in {compute_name}: the step has one compute type "
                "(the pass keeps reductions, softmax, norms and losses in "
                "float32 itself); give the layer the model's mixed policy")
    compute = MixedPrecision.compute_of(compute_name)
    if lso is None:
        if compute == "f16":
            warnings.warn(
                f"model {model.name!r} computes in float16 without a "
                "LossScaleOptimizer: small gradients underflow in float16 "
                "(compile(auto_scale_loss=True) wraps one)", RuntimeWarning,
                stacklevel=3)
        return MixedPrecision(compute)
    return MixedPrecision(
        compute, "dynamic", init_scale=float(lso.initial_scale),
        growth_factor=2.0, backoff_factor=0.5,
        growth_interval=int(lso.dynamic_growth_steps),
        scale=float(np.asarray(lso.dynamic_scale.value)),
        growth_tracker=int(np.asarray(lso.step_counter.value)))


@contextlib.contextmanager
def float32_trace(model, optimizer):
    """Every layer's dtype policy float32 (and the global one), and a
    LossScaleOptimizer replaced by its inner optimizer as the model's: the
    step traced inside is the float32 step; all restored on exit. Yields
    the optimizer to trace."""
    layers = _layers(model)
    saved = [(layer, layer._dtype_policy) for layer in layers]
    global_policy = keras.config.dtype_policy()
    float32 = keras.dtype_policies.get("float32")
    inner = optimizer.inner_optimizer if isinstance(optimizer, _LSO) \
        else optimizer
    try:
        keras.config.set_dtype_policy("float32")
        for layer, _ in saved:
            layer._dtype_policy = float32
        if inner is not optimizer:
            object.__setattr__(model, "optimizer", inner)
        yield inner
    finally:
        if inner is not optimizer:
            object.__setattr__(model, "optimizer", optimizer)
        for layer, policy in saved:
            layer._dtype_policy = policy
        keras.config.set_dtype_policy(global_policy)


def loss_scale_plan(optimizer, state):
    """[(variable, array)] setting a LossScaleOptimizer's dynamic_scale and
    step_counter from a mixed step's state; [] otherwise."""
    found = scaler_state(state)
    if found is None or not isinstance(optimizer, _LSO):
        return []
    scale, tracker = found
    return [(optimizer.dynamic_scale, np.asarray(scale, np.float32)),
            (optimizer.step_counter, np.asarray(tracker))]
