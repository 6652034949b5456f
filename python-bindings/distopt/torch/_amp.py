# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""PyTorch's automatic mixed precision as the `train-mixed-precision`
pass's options: the `torch.autocast` region active at export time gives
the compute type, a `torch.amp.GradScaler` the dynamic loss scaling (its
init scale, growth and backoff factors and growth interval, and its
current scale and growth tracker as the step's `loss_scale` state). The
step is traced in float32 with autocast off and the pass is applied to it,
so the exported step is the float32 export with the pass run on it."""

import contextlib
import warnings

import torch

from .._mixed import MixedPrecision, scaler_state

__all__ = ["mixed_precision", "autocast_off", "load_scaler"]

# The device types autocast has besides cpu and cuda: a step exported
# under one of them is refused (their autocast op lists are their own).
_OTHER_DEVICES = ("xpu", "mps", "hpu", "xla", "ipu", "privateuseone", "mtia",
                  "maia")


def _enabled_autocast():
    """{device type: dtype} of every autocast region active now."""
    enabled = {}
    for device in ("cpu", "cuda") + _OTHER_DEVICES:
        try:
            if torch.is_autocast_enabled(device):
                enabled[device] = torch.get_autocast_dtype(device)
        except RuntimeError:     # a device type this build does not know
            continue
    return enabled


def _check_scaler(scaler):
    if scaler is not None and not isinstance(scaler, torch.amp.GradScaler):
        raise TypeError("scaler must be a torch.amp.GradScaler, not "
                        f"{type(scaler).__name__}")


def mixed_precision(scaler, model):
    """The MixedPrecision the export applies (None for a float32 step):
    from the autocast region active now and `scaler`. Refuses what the
    pass cannot honour, naming it."""
    _check_scaler(scaler)
    enabled = _enabled_autocast()
    others = sorted(set(enabled) - {"cpu", "cuda"})
    if others:
        raise ValueError(
            f"torch.autocast(device_type={others[0]!r}) is active: the "
            "exported step can follow autocast on 'cpu' or 'cuda' only")
    dtypes = set(enabled.values())
    if len(dtypes) > 1:
        raise ValueError(
            "torch.autocast is active on cpu with "
            f"{str(enabled['cpu']).rsplit('.', 1)[-1]} and on cuda with "
            f"{str(enabled['cuda']).rsplit('.', 1)[-1]}: the step has one "
            "compute type; export under one autocast region")
    scaling = scaler is not None and scaler.is_enabled()
    if not dtypes:
        if scaling:
            raise ValueError(
                "a GradScaler without torch.autocast: the exported step "
                "scales the loss of a 16-bit step only; export under "
                "torch.autocast(device_type='cpu', dtype=torch.bfloat16 or "
                "torch.float16), or pass no scaler for a float32 step")
        return None
    dtype = dtypes.pop()
    name = str(dtype).rsplit(".", 1)[-1]
    compute = MixedPrecision.compute_of(name)
    if compute is None:
        raise ValueError(f"torch.autocast with dtype torch.{name}: the "
                         "exported step computes in torch.bfloat16 or "
                         "torch.float16")
    low = [n for n, p in model.named_parameters()
           if p.requires_grad and p.dtype != torch.float32]
    if low:
        raise ValueError(
            f"torch.autocast needs float32 parameters (the master weights "
            f"the optimizer updates); {low[0]} is "
            f"{str(dict(model.named_parameters())[low[0]].dtype)}")
    if not scaling:
        if compute == "f16":
            warnings.warn(
                "float16 autocast without a GradScaler: small gradients "
                "underflow in float16; pass scaler=torch.amp.GradScaler() "
                "for dynamic loss scaling", RuntimeWarning, stacklevel=3)
        return MixedPrecision(compute)
    state = scaler.state_dict()
    return MixedPrecision(
        compute, "dynamic", init_scale=float(state["scale"]),
        growth_factor=float(state["growth_factor"]),
        backoff_factor=float(state["backoff_factor"]),
        growth_interval=int(state["growth_interval"]),
        scale=float(state["scale"]),
        growth_tracker=int(state["_growth_tracker"]))


@contextlib.contextmanager
def autocast_off():
    """Every active autocast region off (the step is traced in float32)."""
    with contextlib.ExitStack() as stack:
        for device in _enabled_autocast():
            stack.enter_context(torch.autocast(device_type=device,
                                               enabled=False))
        yield


def load_scaler(scaler, state):
    """The trained `loss_scale` and its growth tracker into `scaler` (a
    torch.amp.GradScaler); nothing when `state` has no loss scale or the
    scaler is disabled."""
    _check_scaler(scaler)
    found = scaler_state(state)
    if scaler is None or found is None or not scaler.is_enabled():
        return
    saved = scaler.state_dict()
    saved["scale"], saved["_growth_tracker"] = found
    scaler.load_state_dict(saved)
