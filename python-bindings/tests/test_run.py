# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

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


def test_num_threads(examples):
    """The transformer block's large loops and products on 1 and 2 threads:
    the same training (dist-run --num-threads)."""
    step = distopt.Module.load(os.path.join(examples, "transformer_block.mlir"))
    state, batch = distopt.init(step, seed=2)
    one = distopt.run(step, state, batch, steps=2, num_threads=1)
    two = distopt.run(step, state, batch, steps=2, num_threads=2)
    np.testing.assert_allclose(two.losses, one.losses, rtol=1e-6)
    for name, value in one.state.items():
        np.testing.assert_allclose(two.state[name], value, rtol=1e-6,
                                   atol=1e-7, err_msg=name)


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


def test_training_run_options(examples, tmp_path):
    """A dataset, evaluation, checkpoints and resume from Python: the run
    stopped after 2 steps and resumed under another strategy equals the
    uninterrupted single-device run; the checkpoint exports."""
    from distopt import datasets
    datasets.digits(tmp_path / "digits", test=200)
    step = distopt.Module.load(os.path.join(examples, "digits_mlp.mlir"))
    step.derive_eval()
    state, _ = distopt.init(step, seed=1)
    options = dict(dataset=tmp_path / "digits" / "train", seed=4,
                   eval_dataset=tmp_path / "digits" / "test")
    single = distopt.run(step, state, steps=6, eval_every=3, **options)
    assert single.losses.shape == (6,)
    assert [e["step"] for e in single.evaluations] == [3, 6]
    assert single.evaluations[0]["samples"] == 192
    assert 0 <= single.evaluations[-1]["accuracy"] <= 1
    strategy = distopt.ZeroStrategy(stage=3, num_replicas=2)
    zero = strategy.distribute(step.clone())
    first = distopt.launch(zero, state, steps=2, strategy=strategy,
                           checkpoint_dir=tmp_path / "ckpt", **options)
    assert first.resumed_from is None and first.losses.shape == (2,)
    mirrored = distopt.MirroredStrategy(2)
    resumed = distopt.launch(mirrored.distribute(step.clone()), state, steps=6,
                             strategy=mirrored, checkpoint_dir=tmp_path / "ckpt",
                             resume=True, **options)
    assert resumed.resumed_from == 2
    np.testing.assert_allclose(resumed.losses, single.losses, rtol=1e-5)
    for name, value in single.state.items():
        np.testing.assert_allclose(resumed.state[name], value, rtol=1e-5,
                                   atol=1e-6, err_msg=name)
    assert abs(resumed.evaluations[-1]["loss"] -
               single.evaluations[-1]["loss"]) < 1e-4
    exported = distopt.export_checkpoint(tmp_path / "ckpt")
    np.testing.assert_array_equal(exported["loss"], resumed.losses)
    np.testing.assert_array_equal(exported["fc1.weight"],
                                  resumed.state["fc1.weight"])
    try:
        distopt.run(step, state, steps=2, epochs=1, **options)
    except ValueError as error:
        assert "not both" in str(error)
    else:
        raise AssertionError("steps= and epochs= together ran")
