# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""The callbacks `distopt.fit` drives, in the shape of keras.callbacks:
`Callback` (the base every callback derives from), `CallbackList` (what
fit calls), `History` (always added), `ProgbarLogger` (the progress bar,
added with verbose=1) and `BackupAndRestore` (resume after a failure).

fit runs the steps in the runner (in this process, or in `mpirun ...
dist-run`) and calls the callbacks from the runner's event stream: one
`on_train_batch_end` per step, `on_epoch_end` after the epoch's
evaluation and checkpoint. A callback may set `self.model.stop_training =
True` in `on_epoch_end` (or earlier in the epoch): the run then stops
after that epoch. See docs/guides/training-runs.md.
"""

import os
import shutil
import sys
import time

import numpy as np

__all__ = ["Callback", "CallbackList", "History", "ProgbarLogger",
           "BackupAndRestore"]


class Callback:
    """The base of every callback (keras.callbacks.Callback's methods).
    `model` is fit's model handle (`distopt.training.FitModel`:
    `stop_training`, `checkpoint_dir`, `export_state(path)`, `module`,
    `strategy`); `params` holds "epochs", "steps" (per epoch),
    "batch_size", "samples", "world_size" and "initial_epoch"."""

    def __init__(self):
        self.model = None
        self.params = {}

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params

    def on_train_begin(self, logs=None):
        pass

    def on_train_end(self, logs=None):
        pass

    def on_epoch_begin(self, epoch, logs=None):
        pass

    def on_epoch_end(self, epoch, logs=None):
        pass

    def on_train_batch_begin(self, batch, logs=None):
        pass

    def on_train_batch_end(self, batch, logs=None):
        pass

    def on_test_end(self, logs=None):
        pass


class CallbackList:
    """Calls every callback in order; fit adds History first and, with
    verbose, ProgbarLogger last (as Keras)."""

    def __init__(self, callbacks=(), model=None, params=None):
        self.callbacks = list(callbacks)
        for callback in self.callbacks:
            if not isinstance(callback, Callback):
                raise TypeError(f"callbacks must derive from "
                                f"distopt.callbacks.Callback, got "
                                f"{type(callback).__name__}")
        if model is not None:
            self.set_model(model)
        if params is not None:
            self.set_params(params)

    def append(self, callback):
        self.callbacks.append(callback)

    def __iter__(self):
        return iter(self.callbacks)

    def set_model(self, model):
        for callback in self.callbacks:
            callback.set_model(model)

    def set_params(self, params):
        for callback in self.callbacks:
            callback.set_params(params)

    def _call(self, method, *args):
        for callback in self.callbacks:
            getattr(callback, method)(*args)

    def on_train_begin(self, logs=None):
        self._call("on_train_begin", dict(logs or {}))

    def on_train_end(self, logs=None):
        self._call("on_train_end", dict(logs or {}))

    def on_epoch_begin(self, epoch, logs=None):
        self._call("on_epoch_begin", epoch, dict(logs or {}))

    def on_epoch_end(self, epoch, logs=None):
        self._call("on_epoch_end", epoch, dict(logs or {}))

    def on_train_batch_begin(self, batch, logs=None):
        self._call("on_train_batch_begin", batch, dict(logs or {}))

    def on_train_batch_end(self, batch, logs=None):
        self._call("on_train_batch_end", batch, dict(logs or {}))

    def on_test_end(self, logs=None):
        self._call("on_test_end", dict(logs or {}))


class History(Callback):
    """Records the epoch logs: `history` maps each log key ("loss",
    "val_loss", "val_accuracy", "step_ms", ...) to one value per epoch,
    `epoch` lists the epochs. fit adds one and returns it."""

    def __init__(self):
        super().__init__()
        self.history = {}
        self.epoch = []

    def on_train_begin(self, logs=None):
        self.epoch = []
        self.history = {}

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(value)


def _format(value):
    if isinstance(value, (float, np.floating)):
        return f"{value:.4g}"
    return str(value)


class ProgbarLogger(Callback):
    """The progress of each epoch: with verbose=1 a tqdm bar (steps, loss,
    samples/s, ETA) redrawn after every step, with verbose=2 one line per
    epoch. Writes to `file` (default: sys.stderr)."""

    # The batch logs the bar shows (others would crowd the line).
    _SHOWN = ("loss", "lr")

    def __init__(self, verbose=1, file=None):
        super().__init__()
        if verbose not in (1, 2):
            raise ValueError(f"ProgbarLogger verbose must be 1 or 2, got "
                             f"{verbose!r}")
        self.verbose = verbose
        self.file = file
        self._bar = None

    def _out(self):
        return self.file if self.file is not None else sys.stderr

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch
        self._start = time.monotonic()
        self._seen = 0
        self._loss_sum = 0.0
        self._step_ms = 0.0
        if self.verbose == 1:
            from tqdm.auto import tqdm
            epochs = self.params.get("epochs")
            self._bar = tqdm(total=self.params.get("steps"),
                             desc=f"Epoch {epoch + 1}/{epochs}" if epochs
                             else f"Epoch {epoch + 1}",
                             unit="step", file=self._out(), leave=True,
                             dynamic_ncols=True)

    def on_train_batch_end(self, batch, logs=None):
        logs = logs or {}
        self._seen += 1
        if logs.get("loss") is not None:
            self._loss_sum += float(logs["loss"])
        if logs.get("step_ms") is not None:
            self._step_ms += float(logs["step_ms"])
        if self._bar is None:
            return
        # The runner's step times when it reports them, else the clock's.
        elapsed = max(self._step_ms / 1000.0 if self._step_ms else
                      time.monotonic() - self._start, 1e-9)
        shown = {"loss": f"{self._loss_sum / self._seen:.4g}"}
        if logs.get("lr") is not None:
            shown["lr"] = _format(logs["lr"])
        batch_size = self.params.get("batch_size")
        if batch_size:
            shown["samples/s"] = f"{self._seen * batch_size / elapsed:.1f}"
        self._bar.set_postfix(shown, refresh=False)
        self._bar.update(1)

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        text = " - ".join(f"{key}: {_format(value)}"
                          for key, value in logs.items() if value is not None)
        if self._bar is not None:
            if text:
                self._bar.set_postfix_str(text, refresh=False)
            self._bar.close()
            self._bar = None
        elif self.verbose == 2:
            epochs = self.params.get("epochs")
            # The runner's step times when it reports them (the events
            # come in bursts: the clock here measures their reading).
            took = self._step_ms / 1000.0 if self._step_ms else \
                time.monotonic() - self._start
            print(f"Epoch {epoch + 1}/{epochs} - {took:.3g}s - {text}",
                  file=self._out(), flush=True)

    def on_train_end(self, logs=None):
        self.close()

    def close(self):
        """Ends the bar where it stands (a failed or interrupted run)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None


class BackupAndRestore(Callback):
    """Resume after any failure (as keras.callbacks.BackupAndRestore): the
    run checkpoints into `backup_dir` every epoch (save_freq="epoch") or
    every `save_freq` steps; a fit that finds a complete checkpoint there
    resumes from it (dist-run --resume), so that after a failure the same
    call ends as an uninterrupted run would. At a successful end the
    backup is deleted (delete_checkpoint=True). fit reads `backup_dir`,
    `save_freq` and `delete_checkpoint` from the callback; at most one
    BackupAndRestore per fit."""

    def __init__(self, backup_dir, save_freq="epoch", delete_checkpoint=True):
        super().__init__()
        if not backup_dir:
            raise ValueError("BackupAndRestore needs a backup_dir")
        if save_freq != "epoch" and (isinstance(save_freq, bool) or
                                     not isinstance(save_freq, int) or
                                     save_freq < 1):
            raise ValueError(f"save_freq must be 'epoch' or a positive "
                             f"number of steps, got {save_freq!r}")
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq = save_freq
        self.delete_checkpoint = bool(delete_checkpoint)

    def has_checkpoint(self):
        """True when backup_dir holds a complete checkpoint (a `ckpt-<step>`
        directory: dist-run renames a checkpoint to that name only once
        every rank's part and the index are written)."""
        return bool(_checkpoints(self.backup_dir))

    def on_train_end(self, logs=None):
        # Called only when the run succeeded: a failed fit raises before.
        if self.delete_checkpoint:
            delete_checkpoints(self.backup_dir)


def _checkpoints(directory):
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return sorted(n for n in names
                  if n.startswith("ckpt-") and n[5:].isdigit() and
                  os.path.isdir(os.path.join(directory, n)))


def delete_checkpoints(directory):
    """Removes the checkpoints dist-run wrote in `directory` (complete
    `ckpt-<step>` directories and `.ckpt-<step>.partial` leftovers), and
    the directory itself when nothing else is left in it; other files are
    never touched."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return
    for name in names:
        path = os.path.join(directory, name)
        core = name[1:].split(".partial")[0] if name.startswith(".") else name
        if core.startswith("ckpt-") and core[5:].isdigit() and \
                os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
    try:
        os.rmdir(directory)
    except OSError:
        pass
