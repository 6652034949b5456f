# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""The callbacks of `distopt.fit` that write files or stop the run, in the
shape of keras.callbacks: `ModelCheckpoint` (the state as .npz at epoch
ends), `EarlyStopping`, `CSVLogger` (one row per epoch) and `TensorBoard`
(scalar event files `tensorboard --logdir` reads). Every file goes
through distopt.output: nothing but a regular file that is no input is
ever replaced. See docs/guides/callbacks.md.
"""

import csv
import io
import numbers
import os
import shutil
import socket
import tempfile
import time
import warnings
import weakref

import numpy as np

from . import output
from ._callback_base import Callback

__all__ = ["ModelCheckpoint", "EarlyStopping", "CSVLogger", "TensorBoard"]


class _MonitorCallback(Callback):
    """What ModelCheckpoint and EarlyStopping share (Keras's
    MonitorCallback): the monitored log key, whether lower or higher is
    better and the smallest change that counts as an improvement."""

    # With mode="auto", these names (and their val_ forms) are maximized;
    # every other one (loss, step_ms, ...) is minimized.
    _MAXIMIZED = ("acc", "samples_per_s")

    def __init__(self, monitor, mode, baseline=None, min_delta=0):
        super().__init__()
        if mode not in ("auto", "min", "max"):
            warnings.warn(f"{type(self).__name__} mode '{mode}' is unknown, "
                          "fallback to auto mode.", stacklevel=3)
            mode = "auto"
        self.monitor, self.mode = monitor, mode
        self.best = baseline
        name = monitor.removeprefix("val_")
        maximize = mode == "max" or (mode == "auto" and any(
            word in name for word in self._MAXIMIZED))
        self._greater = maximize
        # Lower is better: an improvement is below the best by min_delta.
        self.min_delta = abs(min_delta) if maximize else -abs(min_delta)

    def _is_improvement(self, value, reference):
        if reference is None:
            return True
        value -= self.min_delta
        return value > reference if self._greater else value < reference


class ModelCheckpoint(_MonitorCallback):
    """Saves the state at the end of every epoch (keras.callbacks.
    ModelCheckpoint): `filepath` may hold `{epoch}` (1-based, as Keras)
    and any epoch log (`{val_loss:.4f}`); the file is the state of the
    run's newest complete checkpoint (model.export_state: an .npz of every
    state array, what `distopt.load` / `dist-run --state` read), written
    through the safe writer (only over nothing or a regular file that is
    no input). With `save_best_only`, only when `monitor` improved (mode
    "min", "max", or "auto": max for accuracies, min otherwise); when
    the logs lack `monitor` it warns and saves, as Keras. The state is
    saved per epoch only: fit's checkpoints are taken at epoch ends."""

    def __init__(self, filepath, monitor="val_loss", verbose=0,
                 save_best_only=False, mode="auto", save_freq="epoch",
                 initial_value_threshold=None):
        super().__init__(monitor, mode, initial_value_threshold)
        if save_freq != "epoch":
            raise ValueError(
                f"ModelCheckpoint saves at epoch ends (save_freq='epoch'), "
                f"got save_freq={save_freq!r}: fit checkpoints the state "
                "once per epoch")
        self.filepath = os.fspath(filepath)
        if not self.filepath:
            raise ValueError("ModelCheckpoint needs a filepath")
        self.verbose = verbose
        self.save_best_only = save_best_only
        self.save_freq = save_freq

    def _get_file_path(self, epoch, logs):
        try:
            return self.filepath.format(epoch=epoch + 1, **logs)
        except (KeyError, IndexError, ValueError) as e:
            raise KeyError(f'Failed to format this callback filepath: '
                           f'"{self.filepath}". Reason: {e!r}') from None

    def _should_save(self, epoch, logs, filepath):
        if not self.save_best_only:
            if self.verbose > 0:
                print(f"\nEpoch {epoch + 1}: saving model to {filepath}")
            return True
        current = logs.get(self.monitor)
        if current is None:
            warnings.warn(f"Can save best model only with {self.monitor} "
                          "available.", stacklevel=3)
            return True
        best = "None" if self.best is None else f"{self.best:.5f}"
        if self._is_improvement(current, self.best):
            if self.verbose > 0:
                print(f"\nEpoch {epoch + 1}: {self.monitor} improved from "
                      f"{best} to {current:.5f}, saving model to {filepath}")
            self.best = current
            return True
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: {self.monitor} did not improve "
                  f"from {best}")
        return False

    def on_epoch_end(self, epoch, logs=None):
        logs = dict(logs or {})
        filepath = self._get_file_path(epoch, logs)
        if not self._should_save(epoch, logs, filepath):
            return
        output.check_output_target("ModelCheckpoint filepath", filepath)
        directory = os.path.dirname(filepath)
        if directory:
            output.check_output_target("ModelCheckpoint filepath's directory",
                                       directory, kind="directory")
            os.makedirs(directory, exist_ok=True)
        self.model.export_state(filepath)


class EarlyStopping(_MonitorCallback):
    """Stops the run when `monitor` stops improving (keras.callbacks.
    EarlyStopping): after `patience` epochs without an improvement of at
    least `min_delta` (and, with `baseline`, while it is not better than
    it), from epoch `start_from_epoch` on, it sets
    `model.stop_training = True` and fit ends after that epoch;
    `stopped_epoch` is that epoch (0-based; 0 when it did not stop).

    With `restore_best_weights`, the state of the best epoch is exported
    (model.export_state, into a temporary directory of the callback) each
    time the monitored value improves, and at on_train_end its arrays
    replace those of `model.state` (what fit loads into the model) — also
    when the run did not stop early, as Keras. `best_epoch` is that
    epoch."""

    def __init__(self, monitor="val_loss", min_delta=0, patience=0,
                 verbose=0, mode="auto", baseline=None,
                 restore_best_weights=False, start_from_epoch=0):
        super().__init__(monitor, mode, min_delta=min_delta)
        self.patience = patience
        self.verbose = verbose
        self.baseline = baseline
        self.restore_best_weights = restore_best_weights
        self.start_from_epoch = start_from_epoch
        self.wait = 0
        self.stopped_epoch = 0
        self.best_epoch = 0
        self.best_weights = None  # the path of the best epoch's state
        self._directory = None

    def on_train_begin(self, logs=None):
        self.wait = 0
        self.stopped_epoch = 0
        self.best = None
        self.best_weights = None
        self.best_epoch = 0

    def _keep_state(self):
        """Exports the newest checkpoint's state (this epoch's)."""
        if self._directory is None:
            self._directory = tempfile.mkdtemp(prefix="distopt-best-")
            # Removed with the callback even when the run fails.
            self._cleanup = weakref.finalize(self, shutil.rmtree,
                                             self._directory, True)
        path = os.path.join(self._directory, "best.npz")
        self.model.export_state(path)
        self.best_weights = path

    def get_monitor_value(self, logs):
        logs = logs or {}
        value = logs.get(self.monitor)
        if value is None:
            warnings.warn(f"Early stopping conditioned on metric "
                          f"`{self.monitor}` which is not available. "
                          f"Available metrics are: {','.join(logs)}",
                          stacklevel=3)
        return value

    def on_epoch_end(self, epoch, logs=None):
        current = self.get_monitor_value(logs)
        if current is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self._keep_state()
            self.best_epoch = epoch
        self.wait += 1
        if self._is_improvement(current, self.best):
            self.best = current
            self.best_epoch = epoch
            if self.restore_best_weights:
                self._keep_state()
            if self.baseline is None or self._is_improvement(current,
                                                             self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if not (self.restore_best_weights and self.best_weights):
            return
        if self.verbose > 0:
            print(f"Restoring model weights from the end of the best epoch: "
                  f"{self.best_epoch + 1}.")
        state = getattr(self.model, "state", None)
        with np.load(self.best_weights) as best:
            if state is not None:
                for name in best.files:
                    if name in state:
                        state[name] = best[name]
        # (Also for an engine that loads the file itself.)
        self.model.restore_state_from = self.best_weights


def _csv_value(value):
    """A log value as Keras's CSVLogger writes it."""
    if isinstance(value, str):
        return value
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value.item()
    if isinstance(value, (list, tuple, np.ndarray)):
        return f"\"[{', '.join(map(str, value))}]\""
    return value


class CSVLogger(Callback):
    """One CSV row per epoch (keras.callbacks.CSVLogger): the columns are
    `epoch` (0-based, as Keras) and the sorted keys of the first epoch's
    logs (and their val_ forms when that epoch had no validation), a key
    missing later is "NA". `separator` separates the fields.

    Written through the safe writer (never over a FIFO, a device, a
    directory or an input). Without `append`, the file is rewritten whole
    after each epoch (a temporary beside it, renamed when complete): it
    is always a complete CSV, and an existing file is replaced only once
    the first row exists. With `append`, rows go at the end of the file
    in place, each row with one write; the header only when the file is
    new or empty."""

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.filename = os.fspath(filename)
        self.sep = separator
        self.append = append
        self.keys = None
        self._file = None
        self._text = None

    def on_train_begin(self, logs=None):
        self.keys = None
        self._header = True
        if self.append:
            self._file = output.open_in_place("CSVLogger filename",
                                              self.filename, append=True)
            self._header = os.fstat(self._file.fileno()).st_size == 0
        else:
            output.check_output_target("CSVLogger filename", self.filename)
            self._text = io.StringIO()

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self.keys is None:
            self.keys = sorted(logs)
            if self.keys and not any(k.startswith("val_") for k in self.keys):
                self.keys += ["val_" + k for k in self.keys]

        class Dialect(csv.excel):
            delimiter = self.sep
        row = io.StringIO()
        writer = csv.DictWriter(row, fieldnames=["epoch"] + self.keys,
                                dialect=Dialect)
        if self._header:
            writer.writeheader()
            self._header = False
        writer.writerow({"epoch": epoch,
                         **{k: _csv_value(logs.get(k, "NA"))
                            for k in self.keys}})
        if self._file is not None:
            self._file.write(row.getvalue().encode())
        else:
            if self._text is None:  # (an epoch without on_train_begin)
                self.on_train_begin()
                self._header = False
            self._text.write(row.getvalue())
            output.write_file("CSVLogger filename", self.filename,
                              self._text.getvalue().encode())

    def on_train_end(self, logs=None):
        if self._file is not None:
            self._file.close()
            self._file = None
        self._text = None


def _scalar(value):
    """`value` as a float for a scalar summary; None when it is none."""
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.reshape(()).item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    return float(value)


class _EventFile:
    """One TensorBoard event file, new in `directory`, written with
    TensorBoard's record writer (the TFRecord framing of its event files)
    and its Event / Summary protocol buffers: scalars as simple values."""

    _count = 0

    def __init__(self, directory):
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.record_writer import RecordWriter
        self._event_pb2, self._summary_pb2 = event_pb2, summary_pb2
        output.check_output_target("TensorBoard log_dir", directory,
                                   kind="directory")
        os.makedirs(directory, exist_ok=True)
        _EventFile._count += 1
        # The name TensorBoard's own EventFileWriter gives.
        self.path = os.path.join(directory, "events.out.tfevents.%010d.%s.%s.%s"
                                 % (time.time(), socket.gethostname(),
                                    os.getpid(), _EventFile._count))
        self._file = output.open_in_place("TensorBoard event file",
                                          self.path, append=False)
        self._writer = RecordWriter(io.BufferedWriter(self._file))
        self._write(event_pb2.Event(wall_time=time.time(),
                                    file_version="brain.Event:2"))
        self.flush()

    def _write(self, event):
        self._writer.write(event.SerializeToString())

    def scalars(self, values, step):
        """Writes `values` (tag -> float) as one event at `step`."""
        summary = self._summary_pb2.Summary(value=[
            self._summary_pb2.Summary.Value(tag=tag, simple_value=value)
            for tag, value in values.items()])
        self._write(self._event_pb2.Event(wall_time=time.time(),
                                          step=int(step), summary=summary))

    def flush(self):
        self._writer.flush()

    def close(self):
        self._writer.close()


class TensorBoard(Callback):
    """Scalar event files for `tensorboard --logdir LOG_DIR`
    (keras.callbacks.TensorBoard's layout): `LOG_DIR/train` gets
    `epoch_<key>` for every epoch log without the val_ prefix ("loss",
    "step_ms", "samples_per_s", "comm_bytes", "lr" as
    "epoch_learning_rate") at step = epoch (0-based), `LOG_DIR/validation`
    gets the val_ logs as `epoch_<key without val_>` ("epoch_loss",
    "epoch_accuracy"). With `update_freq="batch"` (or an integer N: every
    N-th step) `LOG_DIR/train` also gets `batch_<key>` per step ("loss",
    "step_ms", "collective_bytes", "sent_bytes", "learning_rate") at step
    = the step's number counted from the start of training (1-based).

    Each run adds a new event file per directory (nothing is written
    over); LOG_DIR, train/ and validation/ must be directories or absent,
    and an event file is created only where nothing is. Written with
    TensorBoard's own record writer and protocol buffers (the package
    `tensorboard`), flushed at every epoch end."""

    def __init__(self, log_dir="logs", update_freq="epoch"):
        super().__init__()
        if update_freq == "batch":
            update_freq = 1
        if update_freq != "epoch" and (isinstance(update_freq, bool) or
                                       not isinstance(update_freq, int) or
                                       update_freq < 1):
            raise ValueError(f"update_freq must be 'epoch', 'batch' or a "
                             f"positive number of steps, got {update_freq!r}")
        self.log_dir = os.fspath(log_dir)
        self.update_freq = update_freq
        self._writers = {}
        self._step = 0
        self._epoch = 0

    def _writer(self, name):
        if name not in self._writers:
            self._writers[name] = _EventFile(os.path.join(self.log_dir, name))
        return self._writers[name]

    @staticmethod
    def _tag(prefix, key):
        return prefix + ("learning_rate" if key == "lr" else key)

    def on_train_begin(self, logs=None):
        output.check_output_target("TensorBoard log_dir", self.log_dir,
                                   kind="directory")
        # Steps count from the start of training (also after a resume).
        self._step = int(self.params.get("initial_epoch") or 0) * \
            int(self.params.get("steps") or 0)

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch
        steps = self.params.get("steps")
        if steps:
            self._step = epoch * int(steps)

    def on_train_batch_end(self, batch, logs=None):
        self._step += 1
        if self.update_freq == "epoch" or self._step % self.update_freq:
            return
        values = {self._tag("batch_", k): v for k, v in
                  ((k, _scalar(v)) for k, v in (logs or {}).items())
                  if v is not None}
        if values:
            self._writer("train").scalars(values, self._step)

    def on_epoch_end(self, epoch, logs=None):
        train, validation = {}, {}
        for key, value in (logs or {}).items():
            value = _scalar(value)
            if value is None:
                continue
            if key.startswith("val_"):
                validation[self._tag("epoch_", key[4:])] = value
            else:
                train[self._tag("epoch_", key)] = value
        if train:
            self._writer("train").scalars(train, epoch)
        if validation:
            self._writer("validation").scalars(validation, epoch)
        for writer in self._writers.values():
            writer.flush()

    def on_train_end(self, logs=None):
        for writer in self._writers.values():
            writer.close()
        self._writers = {}
