# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""The file-writing and stopping callbacks (ModelCheckpoint, EarlyStopping,
CSVLogger, TensorBoard) on a fake model handle and synthetic logs, as fit
drives them: their files, their Keras semantics, and their refusals of
what the safe writer refuses."""

import csv
import os
import stat
import warnings

import numpy as np
import pytest

from distopt import output
from distopt.callbacks import (Callback, CallbackList, CSVLogger,
                               EarlyStopping, ModelCheckpoint, TensorBoard)
from distopt.output import OutputError


class FakeModel:
    """fit's model handle as the callbacks see it: `export_state` writes
    the state of the newest checkpoint (here: `w` = the epoch just ended)
    through the safe writer."""

    def __init__(self):
        self.stop_training = False
        self.checkpoint_dir = None
        self.epoch = None
        self.exports = []
        self.state = {"w": np.full(3, -1.0, np.float32),
                      "step": np.array(0, np.int64)}

    def export_state(self, path):
        self.exports.append(path)
        output.write_file("--export", path, lambda f: np.savez(
            f, w=np.full(3, float(self.epoch), np.float32),
            step=np.array(self.epoch, np.int64)))
        return path


def train(callbacks, epoch_logs, steps=2, batch_logs=None, model=None):
    """Drives `callbacks` as fit does: one epoch per entry of `epoch_logs`
    (stopping when a callback sets stop_training), `steps` batches each;
    returns the model and the epochs run."""
    model = model or FakeModel()
    params = {"epochs": len(epoch_logs), "steps": steps, "batch_size": 4,
              "samples": 4 * steps, "world_size": 1, "initial_epoch": 0}
    calls = CallbackList(callbacks, model=model, params=params)
    calls.on_train_begin()
    ran = []
    for epoch, logs in enumerate(epoch_logs):
        calls.on_epoch_begin(epoch)
        for batch in range(steps):
            calls.on_train_batch_begin(batch)
            calls.on_train_batch_end(batch, batch_logs(epoch, batch)
                                     if batch_logs else {"loss": 1.0})
        model.epoch = epoch  # this epoch's checkpoint is complete
        calls.on_epoch_end(epoch, logs)
        ran.append(epoch)
        if model.stop_training:
            break
    calls.on_train_end(epoch_logs[ran[-1]] if ran else {})
    return model, ran


def saved_epoch(path):
    with np.load(path) as data:
        return int(data["step"])


# -- ModelCheckpoint -----------------------------------------------------------

def test_model_checkpoint_every_epoch(tmp_path):
    logs = [{"loss": 1.0, "val_loss": v} for v in (0.5, 0.25, 0.125)]
    pattern = os.fspath(tmp_path / "ckpt" / "{epoch:02d}-{val_loss:.3f}.npz")
    train([ModelCheckpoint(pattern)], logs)
    assert sorted(os.listdir(tmp_path / "ckpt")) == [
        "01-0.500.npz", "02-0.250.npz", "03-0.125.npz"]
    assert saved_epoch(tmp_path / "ckpt" / "03-0.125.npz") == 2
    with pytest.raises(KeyError, match="Failed to format this callback "
                                       "filepath"):
        train([ModelCheckpoint(tmp_path / "{accuracy}.npz")], logs)
    with pytest.raises(ValueError, match="save_freq='epoch'"):
        ModelCheckpoint(tmp_path / "x.npz", save_freq=10)


def test_model_checkpoint_best_only(tmp_path):
    best = tmp_path / "best.npz"
    model, _ = train([ModelCheckpoint(best, save_best_only=True)],
                     [{"val_loss": v} for v in (3.0, 2.0, 2.5, 1.0, 1.5)])
    assert len(model.exports) == 3 and saved_epoch(best) == 3
    # mode auto: accuracies are maximized; min_delta-free ties don't save.
    callback = ModelCheckpoint(best, monitor="val_accuracy",
                               save_best_only=True)
    model, _ = train([callback], [{"val_accuracy": v}
                                  for v in (0.5, 0.75, 0.75, 0.6)])
    assert len(model.exports) == 2 and saved_epoch(best) == 1
    assert callback.best == 0.75
    # mode="max" on a loss, mode="min" on an accuracy: as asked.
    model, _ = train([ModelCheckpoint(best, monitor="loss", mode="max",
                                      save_best_only=True)],
                     [{"loss": v} for v in (1.0, 2.0, 0.5)])
    assert len(model.exports) == 2 and saved_epoch(best) == 1
    # A monitor the logs lack: a warning, and the state is saved (Keras).
    with pytest.warns(UserWarning, match="Can save best model only with "
                                         "val_loss available"):
        model, _ = train([ModelCheckpoint(best, save_best_only=True)],
                         [{"loss": 1.0}])
    assert len(model.exports) == 1


def test_model_checkpoint_refuses_a_fifo(tmp_path):
    fifo = tmp_path / "best.npz"
    os.mkfifo(fifo)
    with pytest.raises(OutputError) as error:
        train([ModelCheckpoint(fifo)], [{"val_loss": 1.0}])
    assert str(error.value) == (
        f"cannot write ModelCheckpoint filepath '{fifo}': it is a FIFO, not "
        "a regular file (an output replaces only a regular file)")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match="directory '.*file': it is a "
                                          "regular file, not a directory"):
        train([ModelCheckpoint(tmp_path / "file" / "x.npz")],
              [{"val_loss": 1.0}])


# -- EarlyStopping -------------------------------------------------------------

def test_early_stopping_patience_and_restore():
    callback = EarlyStopping(monitor="val_loss", patience=1,
                             restore_best_weights=True)
    losses = [1.0, 0.5, 0.6, 0.7, 0.1]
    model, ran = train([callback], [{"val_loss": v} for v in losses])
    assert ran == [0, 1, 2] and model.stop_training
    assert callback.stopped_epoch == 2 and callback.best_epoch == 1
    # The best epoch's state replaced fit's final one.
    np.testing.assert_array_equal(model.state["w"], np.full(3, 1.0))
    assert int(model.state["step"]) == 1
    assert saved_epoch(model.restore_state_from) == 1
    directory = os.path.dirname(callback.best_weights)
    del callback
    import gc
    gc.collect()
    assert not os.path.exists(directory)


def test_early_stopping_min_delta_baseline_start():
    # Improvements smaller than min_delta do not count.
    callback = EarlyStopping(monitor="loss", min_delta=0.1, patience=2)
    _, ran = train([callback], [{"loss": v} for v in
                                (1.0, 0.95, 0.91, 0.5, 0.45, 0.44, 0.43)])
    assert ran == [0, 1, 2] and callback.stopped_epoch == 2
    # Not better than the baseline: stops after patience epochs.
    callback = EarlyStopping(monitor="val_accuracy", baseline=0.9,
                             patience=2)
    _, ran = train([callback], [{"val_accuracy": v} for v in
                                (0.5, 0.6, 0.6, 0.6)])
    assert ran == [0, 1, 2]
    callback = EarlyStopping(monitor="val_accuracy", patience=2)
    _, ran = train([callback], [{"val_accuracy": v} for v in
                                (0.5, 0.6, 0.6, 0.6)])
    assert ran == [0, 1, 2, 3]
    # Epochs before start_from_epoch are not monitored.
    callback = EarlyStopping(monitor="loss", start_from_epoch=2)
    _, ran = train([callback], [{"loss": v} for v in (1.0, 2.0, 3.0, 4.0)])
    assert ran == [0, 1, 2, 3]
    with pytest.warns(UserWarning, match="Early stopping conditioned on "
                                         "metric `val_loss` which is not "
                                         "available. Available metrics are: "
                                         "loss"):
        train([EarlyStopping()], [{"loss": 1.0}])


def test_early_stopping_as_keras():
    """The same decisions as keras.callbacks.EarlyStopping on the same
    logs: the epoch it stops at and the epoch whose weights it restores."""
    pytest.importorskip("jax")
    import distopt.keras  # noqa: F401  (sets KERAS_BACKEND=jax)
    keras = pytest.importorskip("keras")

    class KerasModel:
        stop_training = False

        def get_weights(self):
            return [self.epoch]

        def set_weights(self, weights):
            self.restored = weights[0]

    sequences = [[1.0, 0.5, 0.6, 0.7, 0.1], [3, 2, 2.05, 2.01, 1.9, 1.95, 2],
                 [0.2, 0.3, 0.4, 0.5], [5, 4, 3, 2, 1]]
    for monitor in ("val_loss", "val_accuracy"):
        for losses in sequences:
            for options in ({"patience": 0}, {"patience": 2},
                            {"patience": 1, "min_delta": 0.05},
                            {"patience": 1, "baseline": 1.5},
                            {"patience": 1, "start_from_epoch": 2}):
                ours = EarlyStopping(monitor, restore_best_weights=True,
                                     **options)
                model, ran = train([ours], [{monitor: v} for v in losses],
                                   steps=1)
                # (Keras infers an accuracy's direction from the model's
                # metrics, ours from the name: "auto" against "max".)
                theirs = keras.callbacks.EarlyStopping(
                    monitor, restore_best_weights=True,
                    mode="max" if "accuracy" in monitor else "min", **options)
                keras_model = KerasModel()
                theirs.set_model(keras_model)
                theirs.on_train_begin()
                for epoch, value in enumerate(losses):
                    keras_model.epoch = epoch
                    theirs.on_epoch_end(epoch, {monitor: value})
                    if keras_model.stop_training:
                        break
                theirs.on_train_end()
                where = (monitor, losses, options)
                assert ran[-1] == epoch, where
                assert ours.stopped_epoch == theirs.stopped_epoch, where
                assert ours.best_epoch == theirs.best_epoch, where
                assert int(model.state["step"]) == keras_model.restored, where


# -- CSVLogger -----------------------------------------------------------------

def rows(path, separator=","):
    with open(path, newline="") as f:
        return list(csv.reader(f, delimiter=separator))


def test_csv_logger_rewrites_whole(tmp_path):
    log = tmp_path / "log.csv"
    log.write_text("old\n")
    logs = [{"loss": 1.5, "val_loss": 2.0, "lr": 0.1},
            {"loss": 0.75, "val_loss": 1.0, "lr": 0.05}]

    class Watch(Callback):
        """What the file holds at each epoch end (after CSVLogger's)."""
        seen = []

        def on_epoch_end(self, epoch, logs=None):
            self.seen.append(rows(log))
    train([CSVLogger(log), Watch()], logs)
    assert Watch.seen[0] == [["epoch", "loss", "lr", "val_loss"],
                             ["0", "1.5", "0.1", "2.0"]]
    assert rows(log) == Watch.seen[0] + [["1", "0.75", "0.05", "1.0"]]
    assert [n for n in os.listdir(tmp_path)] == ["log.csv"]
    # Without validation logs in the first epoch: val_ columns too, "NA"
    # where a later epoch lacks a key.
    train([CSVLogger(log, separator=";")], [{"loss": 1.0}, {}])
    assert rows(log, ";") == [["epoch", "loss", "val_loss"],
                              ["0", "1.0", "NA"], ["1", "NA", "NA"]]


def test_csv_logger_appends(tmp_path):
    log = tmp_path / "log.csv"
    train([CSVLogger(log, append=True)], [{"loss": 1.0}])
    train([CSVLogger(log, append=True)], [{"loss": 0.5}])
    assert rows(log) == [["epoch", "loss", "val_loss"], ["0", "1.0", "NA"],
                         ["0", "0.5", "NA"]]


def test_csv_logger_refuses_a_fifo_and_an_input(tmp_path):
    fifo = tmp_path / "log.csv"
    os.mkfifo(fifo)
    for append in (False, True):
        with pytest.raises(OutputError) as error:
            train([CSVLogger(fifo, append=append)], [{"loss": 1.0}])
        assert str(error.value) == (
            f"cannot write CSVLogger filename '{fifo}': it is a FIFO, not a "
            "regular file (an output replaces only a regular file)")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    data = tmp_path / "data.npz"
    np.savez(data, x=np.zeros(2))
    os.link(data, tmp_path / "linked.csv")
    output.protect_input("train_data", data)
    try:
        with pytest.raises(OutputError, match="is the same file as "
                                              "train_data"):
            train([CSVLogger(tmp_path / "linked.csv", append=True)],
                  [{"loss": 1.0}])
    finally:
        output._protected.remove(("train_data", os.fspath(data)))


# -- TensorBoard ---------------------------------------------------------------

def read_events(directory):
    """tag -> [(step, value)] as TensorBoard's own reader loads them."""
    from tensorboard.backend.event_processing.event_accumulator import \
        EventAccumulator
    events = EventAccumulator(os.fspath(directory))
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)]
            for tag in events.Tags()["scalars"]}


def test_tensorboard_scalars_read_back(tmp_path):
    pytest.importorskip("tensorboard")
    epoch_logs = [{"loss": 1.5, "step_ms": 3.0, "samples_per_s": 100.0,
                   "comm_bytes": 4096, "lr": 0.1, "val_loss": 2.0,
                   "val_accuracy": 0.25},
                  {"loss": 0.5, "step_ms": 2.0, "samples_per_s": 150.0,
                   "comm_bytes": 4096, "lr": 0.05, "val_loss": 1.0,
                   "val_accuracy": 0.75}]

    def batch_logs(epoch, batch):
        return {"loss": 10.0 * epoch + batch, "step_ms": 1.0 + batch,
                "collective_bytes": 2048, "sent_bytes": 1024, "lr": None}
    train([TensorBoard(tmp_path / "logs", update_freq="batch")], epoch_logs,
          steps=3, batch_logs=batch_logs)
    train_events = read_events(tmp_path / "logs" / "train")
    assert train_events["epoch_loss"] == [(0, 1.5), (1, 0.5)]
    assert train_events["epoch_step_ms"] == [(0, 3.0), (1, 2.0)]
    assert train_events["epoch_comm_bytes"] == [(0, 4096.0), (1, 4096.0)]
    assert train_events["epoch_samples_per_s"] == [(0, 100.0), (1, 150.0)]
    assert [(s, round(v, 6)) for s, v in
            train_events["epoch_learning_rate"]] == [(0, 0.1), (1, 0.05)]
    assert train_events["batch_loss"] == [(1, 0.0), (2, 1.0), (3, 2.0),
                                          (4, 10.0), (5, 11.0), (6, 12.0)]
    assert train_events["batch_step_ms"][:3] == [(1, 1.0), (2, 2.0),
                                                 (3, 3.0)]
    assert train_events["batch_collective_bytes"][0] == (1, 2048.0)
    assert "batch_learning_rate" not in train_events  # None: not written
    validation = read_events(tmp_path / "logs" / "validation")
    assert validation == {"epoch_loss": [(0, 2.0), (1, 1.0)],
                          "epoch_accuracy": [(0, 0.25), (1, 0.75)]}
    # update_freq=N: every N-th step; "epoch": no batch scalars. A second
    # run adds a new event file beside the first.
    train([TensorBoard(tmp_path / "every2", update_freq=2)], epoch_logs,
          steps=3, batch_logs=batch_logs)
    assert [s for s, _ in read_events(tmp_path / "every2" / "train")
            ["batch_loss"]] == [2, 4, 6]
    train([TensorBoard(tmp_path / "logs")], epoch_logs[:1], steps=3)
    assert len(os.listdir(tmp_path / "logs" / "train")) == 2


def test_tensorboard_refuses_what_is_not_a_directory(tmp_path):
    pytest.importorskip("tensorboard")
    (tmp_path / "logs").write_text("x")
    with pytest.raises(OutputError) as error:
        train([TensorBoard(tmp_path / "logs")], [{"loss": 1.0}])
    assert str(error.value) == (f"cannot write TensorBoard log_dir "
                                f"'{tmp_path / 'logs'}': it is a regular "
                                "file, not a directory")
    (tmp_path / "other").mkdir()
    os.mkfifo(tmp_path / "other" / "validation")
    with pytest.raises(OutputError, match="'.*validation': it is a FIFO, "
                                          "not a directory"):
        train([TensorBoard(tmp_path / "other")], [{"val_loss": 1.0}])
    with pytest.raises(ValueError, match="update_freq must be"):
        TensorBoard(tmp_path, update_freq=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        TensorBoard(tmp_path, update_freq="batch")


# -- with fit ------------------------------------------------------------------

def test_every_callback_in_fit(tmp_path, examples):
    """distopt.fit with the four callbacks on the digits MLP: EarlyStopping
    (maximizing the validation loss, so epoch 0 stays the best) stops the
    run after epoch 1 and puts epoch 0's state in what fit returns — the
    state ModelCheckpoint saved for epoch 1 (1-based); CSVLogger has a row
    and TensorBoard a point per epoch run."""
    pytest.importorskip("tensorboard")
    pytest.importorskip("sklearn")
    import distopt
    from distopt import datasets
    datasets.digits(tmp_path / "digits", test=297)
    step = distopt.Module.load(os.path.join(examples, "digits_mlp.mlir"))
    state, _ = distopt.init(step, seed=1)
    stopping = EarlyStopping(monitor="val_loss", mode="max", patience=1,
                             restore_best_weights=True)
    history = distopt.fit(
        step, tmp_path / "digits" / "train", initial_state=state, epochs=4,
        validation_data=tmp_path / "digits" / "test", verbose=0,
        callbacks=[ModelCheckpoint(tmp_path / "ckpt" / "{epoch}.npz"),
                   stopping, CSVLogger(tmp_path / "log.csv"),
                   TensorBoard(tmp_path / "logs")])
    assert history.epoch == [0, 1] and history.stopped_early
    assert stopping.stopped_epoch == 1 and stopping.best_epoch == 0
    assert sorted(os.listdir(tmp_path / "ckpt")) == ["1.npz", "2.npz"]
    with np.load(tmp_path / "ckpt" / "1.npz") as best, \
            np.load(tmp_path / "ckpt" / "2.npz") as last:
        for name, array in history.model.state.items():
            np.testing.assert_array_equal(array, best[name])
        assert any(not np.array_equal(best[n], last[n]) for n in best.files)
    table = rows(tmp_path / "log.csv")
    assert [r[0] for r in table] == ["epoch", "0", "1"]
    loss = table[0].index("val_loss")
    assert [float(r[loss]) for r in table[1:]] == \
        pytest.approx(history.history["val_loss"])
    events = read_events(tmp_path / "logs" / "validation")["epoch_loss"]
    assert [s for s, _ in events] == [0, 1]
    assert [v for _, v in events] == pytest.approx(
        history.history["val_loss"], rel=1e-6)
