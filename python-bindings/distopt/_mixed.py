# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Mixed precision for the front ends: what the framework asked for (a
PyTorch autocast region and GradScaler, a Keras dtype policy and
LossScaleOptimizer) as the options of the `train-mixed-precision` pass,
applied to the float32 step the front end traced, and the loss scale's
state. Every front end traces in float32 and applies the pass, so a step
exported under autocast or a mixed policy is the float32 export with the
pass run on it, text for text. Nothing here imports torch, jax or keras."""

import re
from dataclasses import dataclass

import numpy as np

from .module import Module

__all__ = ["MixedPrecision", "LOSS_SCALE", "GROWTH_TRACKER"]

# The optimizer state the pass adds for dynamic loss scaling.
LOSS_SCALE = "loss_scale"
GROWTH_TRACKER = "loss_scale.growth_tracker"

_COMPUTE = {"bfloat16": "bf16", "float16": "f16"}


def _number(value):
    """A pass option's number: an integer without '.0', else repr."""
    value = float(value)
    return str(int(value)) if value.is_integer() and abs(value) < 2**53 \
        else repr(value)


@dataclass
class MixedPrecision:
    """The `train-mixed-precision` options of an export and, for dynamic
    loss scaling, the scaler's current state (`scale`, `growth_tracker`):
    the values the step's `loss_scale` and `loss_scale.growth_tracker`
    start from. `init_scale` is the pass's `init-scale` (the value a state
    made by distopt.init / dist-run --init-state starts from)."""
    compute: str                    # "bf16" | "f16"
    loss_scale: str = "none"        # "none" | "static" | "dynamic"
    init_scale: float = 65536.0
    growth_factor: float = 2.0
    backoff_factor: float = 0.5
    growth_interval: int = 2000
    scale: float = None
    growth_tracker: int = 0

    @staticmethod
    def compute_of(dtype_name):
        """'bf16' / 'f16' for a dtype's plain name ('bfloat16', 'float16');
        None for another."""
        return _COMPUTE.get(dtype_name)

    def options(self):
        """The pass's option string (its defaults spelled out)."""
        parts = [f"compute={self.compute}", f"loss-scale={self.loss_scale}"]
        if self.loss_scale != "none":
            parts.append(f"init-scale={_number(self.init_scale)}")
        if self.loss_scale == "dynamic":
            parts += [f"growth-factor={_number(self.growth_factor)}",
                      f"backoff-factor={_number(self.backoff_factor)}",
                      f"growth-interval={int(self.growth_interval)}"]
        return " ".join(parts)

    def pipeline(self):
        """The pass pipeline Module.run_pipeline runs."""
        return f"train-mixed-precision{{{self.options()}}}"

    def apply(self, mlir):
        """The module text `mlir` (a float32 step) with the pass run on
        it; raises DistOptError with the pass's diagnostics."""
        return str(Module.parse(mlir, "<exported step>")
                   .run_pipeline(self.pipeline()))

    def state(self):
        """The loss scale's state arrays (dynamic loss scaling only)."""
        if self.loss_scale != "dynamic":
            return {}
        scale = self.init_scale if self.scale is None else self.scale
        return {LOSS_SCALE: np.asarray(scale, np.float32),
                GROWTH_TRACKER: np.asarray(self.growth_tracker, np.float32)}


_RESULT = re.compile(r'train\.name = "((?:[^"\\]|\\.)*)", '
                     r'train\.role = #train\.role<(param|opt_state)>')
_CONVERT_UP = re.compile(r"^\s*(%[\w#]+) = train\.convert (%[\w#]+) : "
                         r"\(tensor<(?:[^>]*x)?(bf16|f16)>\) -> tensor<")


def sixteen_bit_updates(mlir):
    """The names of the param and opt_state results of the mixed step
    `mlir` (the pass's printed module) that are a 16-bit value converted
    up: state the step computes in 16 bits (an optimizer traced as
    elementwise ops, whose update follows its 16-bit gradient), so its
    float32 value is rounded to 16 bits every step."""
    lines = mlir.splitlines()
    header = next((line for line in lines if "func.func @" in line), "")
    names = _RESULT.findall(header[header.find(") -> ("):])
    ret = next((line for line in reversed(lines)
                if line.strip().startswith("return ")), "")
    operands = ret.strip()[len("return "):].split(" : ")[0].split(", ")
    converted = {}
    for line in lines:
        match = _CONVERT_UP.match(line)
        if match:
            converted[match.group(1)] = match.group(3)
    return [(name, converted[operand])
            for (name, _), operand in zip(names, operands)
            if operand in converted]


def scaler_state(state):
    """(scale, growth tracker) of a trained state, or None when it has no
    loss scale."""
    if LOSS_SCALE not in state:
        return None
    scale = float(np.asarray(state[LOSS_SCALE]))
    tracker = np.asarray(state.get(GROWTH_TRACKER, 0))
    return scale, int(tracker)
