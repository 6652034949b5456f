"""distopt.init / run / launch: the mirrored step under mpirun equals the
single-device run from NumPy arrays."""

import os

import numpy as np

import distopt


def test_run_and_launch_equal(examples):
    step = distopt.Module.load(os.path.join(examples, "mlp.mlir"))
    state, batch = distopt.init(step, seed=3)
    assert set(state) >= {"fc1.weight", "fc1.weight.momentum_buffer"}
    assert set(batch) == {"x", "y"} and "lr" in state
    single = distopt.run(step, state, batch, steps=3)
    assert single.losses.shape == (3,)
    assert single.losses[-1] < single.losses[0]
    strategy = distopt.MirroredStrategy(2)
    mirrored = distopt.launch(strategy.distribute(step), state, batch, steps=3,
                              strategy=strategy)
    np.testing.assert_allclose(mirrored.losses, single.losses, rtol=1e-5)
    for name, value in single.state.items():
        np.testing.assert_allclose(mirrored.state[name], value, rtol=1e-5,
                                   atol=1e-6, err_msg=name)


def test_run_error_is_raised(examples):
    step = distopt.Module.load(os.path.join(examples, "mlp.mlir"))
    state, batch = distopt.init(step, seed=1)
    del batch["x"]
    try:
        distopt.run(step, state, batch)
    except distopt.DistOptError as error:
        assert "'x'" in str(error)
    else:
        raise AssertionError("a missing input ran")
