# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""What the importers' tests mean by equal: one tolerance, one distributed
comparison (imported by test_torch.py, test_jax.py, test_keras.py)."""

import numpy as np

import distopt

RTOL = 1e-4
STEPS = 3
# The steps compile in seconds at -O0 and still run in milliseconds.
FAST_COMPILE = ("--opt-level=0",)


def normwise(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    scale = np.max(np.abs(b)) if b.size else 0.0
    return float(np.max(np.abs(a - b)) / scale) if scale else float(np.max(np.abs(a)))


def close(ours, want, rtol=RTOL):
    """Within `rtol` of the array's largest magnitude; arrays a step leaves
    at zero up to rounding (a bias before a batch norm, whose gradient is
    zero in exact arithmetic) within an absolute 1e-9."""
    want = np.asarray(want, np.float64)
    scale = np.max(np.abs(want)) if want.size else 0
    return np.max(np.abs(np.asarray(ours, np.float64) - want), initial=0) <= \
        rtol * scale + 1e-9


def compare_distributed(step, single, extra=(), strategies=None):
    """Each strategy (mirrored and tensor-parallel over 2 ranks by default),
    run for as many steps as `single` under mpirun, equals the
    single-device run `single`: every loss and every array of the state."""
    if strategies is None:
        strategies = (distopt.MirroredStrategy(2),
                      distopt.TensorParallelStrategy(2))
    for strategy in strategies:
        result = distopt.launch(strategy.distribute(step.module), step.state,
                                step.batch, steps=len(single.losses),
                                strategy=strategy, extra_args=extra,
                                timeout=600)
        what = type(strategy).__name__
        assert np.allclose(result.losses, single.losses, rtol=RTOL, atol=0), \
            (what, result.losses, single.losses)
        for name, want in single.state.items():
            assert close(result.state[name], want), \
                f"{what}: {name} differs by {normwise(result.state[name], want):.3g}"
