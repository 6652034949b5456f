# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""distopt.init on a regression step (MSE loss, float targets no
cross-entropy reads): the state and a batch with standard normal targets,
which then train."""

import os

import numpy as np

import distopt

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_init_regression_step():
    step = distopt.Module.load(os.path.join(
        ROOT, "test", "Integration", "Inputs", "regression_step.mlir"))
    state, batch = distopt.init(step, seed=4)
    assert set(state) == {"fc.weight", "fc.bias", "lr"}
    assert set(batch) == {"x", "y"}
    y = batch["y"]
    assert y.dtype == np.float32 and y.shape == (8, 2)
    assert np.isfinite(y).all() and y.std() > 0.3
    result = distopt.run(step, state, batch, steps=2)
    assert result.losses.shape == (2,) and np.isfinite(result.losses).all()
