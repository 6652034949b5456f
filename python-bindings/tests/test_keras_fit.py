# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""distopt.keras.fit equals Keras's own model.fit on the same batches, and
leaves the trained variables in the model."""

import importlib.util

import numpy as np
import pytest

if importlib.util.find_spec("keras") is None or \
        importlib.util.find_spec("jax") is None:
    pytest.skip("keras / jax are not installed (scripts/setup.sh installs "
                "them into build/venv)", allow_module_level=True)

import distopt  # noqa: E402
import distopt.datasets  # noqa: E402
import distopt.keras as dk  # noqa: E402  (sets KERAS_BACKEND=jax)
import keras  # noqa: E402
from distopt.callbacks import CSVLogger, EarlyStopping  # noqa: E402


def make_model():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((12,)),
                              keras.layers.Dense(16, activation="relu",
                                                 name="hidden"),
                              keras.layers.Dense(4, name="logits")],
                             name="small")
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1,
                                                 momentum=0.9),
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True))
    return model


def data(samples, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(samples, 12)).astype(np.float32)
    return x, (x[:, :4].argmax(axis=1)).astype(np.int32)


def test_fit_equals_keras_fit(tmp_path):
    """2 epochs of 6 unshuffled batches of 8: the per-epoch losses and
    every trained variable (weights and SGD's momenta) equal Keras's
    model.fit on the same batches within 1e-5."""
    x, y = data(48, 1)
    ours, theirs = make_model(), make_model()
    history = dk.fit(ours, x, y, batch_size=8, epochs=2, shuffle=False,
                     verbose=0, validation_data=data(16, 2),
                     callbacks=[CSVLogger(tmp_path / "log.csv")])
    keras_history = theirs.fit(x, y, batch_size=8, epochs=2, shuffle=False,
                               verbose=0)
    assert history.epoch == [0, 1]
    np.testing.assert_allclose(history.history["loss"],
                               keras_history.history["loss"], rtol=1e-5)
    assert len(history.history["val_loss"]) == 2
    for mine, want in zip(ours.variables + ours.optimizer.variables,
                          theirs.variables + theirs.optimizer.variables):
        # (The second model's optimizer is "sgd_1".)
        assert mine.path.split("/")[1:] == want.path.split("/")[1:]
        np.testing.assert_allclose(np.asarray(mine.value),
                                   np.asarray(want.value), rtol=1e-5,
                                   atol=1e-6, err_msg=mine.path)
    # The model goes on training in Keras from there.
    assert int(ours.optimizer.iterations.value) == 12
    assert (tmp_path / "log.csv").read_text().count("\n") == 3


def test_fit_from_a_directory_with_early_stopping(tmp_path):
    """A dataset directory (x.npy, y.npy; int64 labels, which the step
    takes as int32) and a callback that stops the run: fit ends after the
    stopped epoch, and the model holds the state it ended with."""
    x, y = data(32, 3)
    distopt.datasets.write_dataset(tmp_path / "train",
                                   {"x": x, "y": y.astype(np.int64)})
    model = make_model()
    before = [np.asarray(v.value).copy() for v in model.trainable_variables]
    history = dk.fit(model, tmp_path / "train", batch_size=8, epochs=5,
                     verbose=0, callbacks=[EarlyStopping(
                         monitor="loss", mode="max", patience=1)])
    assert history.epoch == [0, 1] and history.stopped_early
    assert int(model.optimizer.iterations.value) == 8
    assert any(not np.allclose(np.asarray(v.value), b)
               for v, b in zip(model.trainable_variables, before))
    with pytest.raises(ValueError, match="y must be None"):
        dk.fit(model, tmp_path / "train", y, batch_size=8)
    with pytest.raises(ValueError, match="fewer than one batch of 64"):
        dk.fit(model, x, y, batch_size=64)


def test_fit_mirrored_equals_keras_fit():
    """Under MirroredStrategy(2) (mpirun, 2 ranks of 4 samples each) the
    trained variables equal Keras's single-device model.fit."""
    x, y = data(32, 4)
    ours, theirs = make_model(), make_model()
    history = dk.fit(ours, x, y, batch_size=8, epochs=2, shuffle=False,
                     verbose=0, strategy=distopt.MirroredStrategy(2))
    keras_history = theirs.fit(x, y, batch_size=8, epochs=2, shuffle=False,
                               verbose=0)
    np.testing.assert_allclose(history.history["loss"],
                               keras_history.history["loss"], rtol=1e-5)
    for mine, want in zip(ours.trainable_variables,
                          theirs.trainable_variables):
        np.testing.assert_allclose(np.asarray(mine.value),
                                   np.asarray(want.value), rtol=1e-5,
                                   atol=1e-6, err_msg=mine.path)
