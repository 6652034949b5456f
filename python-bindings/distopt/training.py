# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""`distopt.fit`: Keras's `Model.fit` for a DistOpt training step.

    import distopt
    from distopt.callbacks import BackupAndRestore
    history = distopt.fit(step, (x, y), strategy=distopt.MirroredStrategy(2),
                          epochs=3, batch_size=64, validation_data=(xv, yv),
                          callbacks=[BackupAndRestore("backup")])
    history.history["loss"]         # one mean loss per epoch
    history.model.state             # the trained state, name -> array

The data goes to a dataset directory (one .npy per input and label name,
`distopt.datasets`), the runner trains over it for `epochs` epochs — in
this process through the extension (`_distopt.run`) when the step runs on
one process, else under `mpirun -np N dist-run` — and reports every step,
evaluation, checkpoint and epoch end as an event (dist-run --events, JSON
lines); fit calls the callbacks from those events and answers each epoch
end with "continue" or "stop" (dist-run --control). See
docs/guides/training-runs.md.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

import numpy as np

from . import _config, _distopt, output
from ._callback_base import (BackupAndRestore, Callback, CallbackList,
                             History, ProgbarLogger)
from ._distopt import DistOptError
from .module import Module

__all__ = ["fit", "FitModel"]

# How long a stopped run (Ctrl-C, a callback's exception) may take to end
# cleanly after SIGINT before it is terminated, then killed.
_STOP_GRACE_S = 30.0
# How often the events file is read while the run goes on.
_POLL_S = 0.05
# The lines of a failed run's output its DistOptError quotes when no rank
# reported an error event.
_TAIL_LINES = 12


class FitModel:
    """The model handle callbacks get (`callback.model`): `stop_training`
    (set it True and the run stops after the current epoch),
    `checkpoint_dir` (the run's checkpoints), `checkpoint` (the newest
    complete checkpoint's path, None before the first), `module` (the
    distopt Module the run trains: distributed when a strategy is given),
    `strategy`, and from the end of the run `state` (the trained state
    arrays, by name: what fit loads into the model; a callback's
    on_train_end may replace arrays of it, as EarlyStopping's
    restore_best_weights does) and `losses` (every step's loss)."""

    def __init__(self, module, strategy, checkpoint_dir):
        self.module, self.strategy = module, strategy
        self.checkpoint_dir = checkpoint_dir
        self.checkpoint = None
        self.stop_training = False
        self.state = None
        self.losses = None

    def export_state(self, path):
        """Writes the state of the newest complete checkpoint to `path` as
        an .npz (dist-run --export, through its writer: never over a file
        that is not a regular file or is an input); raises DistOptError."""
        if self.checkpoint_dir is None:
            raise DistOptError("export_state: this run writes no checkpoints")
        path = os.fspath(path)
        # dist-run --export's call, in this process (its safe writer).
        _distopt.export_checkpoint(os.fspath(self.checkpoint_dir), path)
        return path


# -- the events ------------------------------------------------------------------

def _mean(values):
    return float(np.mean(values)) if values else float("nan")


class _EventDriver:
    """Turns the runner's events (dist-run --events, spec: a JSON object per
    line) into callback calls; `event(e)` returns, for an "epoch_end", True
    to continue and False to stop (None for every other event)."""

    def __init__(self, callbacks, model, batch_size, listener=None):
        self.callbacks, self.model = callbacks, model
        self.listener = listener    # called first with every event
        self.batch_size = batch_size
        self.params = {}
        self.epochs = None
        self.steps_per_epoch = None
        self.epoch = None           # the epoch begun and not yet ended
        self.error = None           # the first "error" event
        self.started = self.ended = False
        self.stopped_early = False
        self.resumed_from = None
        self.prior = []
        self.evaluations = []
        self.last_logs = {}
        self._reset()

    def _reset(self):
        self.losses, self.step_ms, self.comm = [], [], []
        self.lr = None
        self.val = {}

    def event(self, e):
        if self.listener is not None:
            self.listener(e)
        kind = e.get("event")
        handler = getattr(self, f"_on_{kind}", None)
        if handler is None:
            return None       # an event a newer runner added
        return handler(e)

    def _on_start(self, e):
        self.started = True
        self.epochs = e.get("epochs")
        self.steps_per_epoch = e.get("steps_per_epoch")
        self.resumed_from = e.get("resumed_from")
        first = e.get("first_step") or 0
        self.params = {
            "epochs": self.epochs, "steps": self.steps_per_epoch,
            "batch_size": e.get("batch") or self.batch_size,
            "samples": e.get("samples"), "world_size": e.get("world_size"),
            "initial_epoch": first // self.steps_per_epoch
            if self.steps_per_epoch else 0}
        self.callbacks.set_params(self.params)
        # Resumed inside an epoch (BackupAndRestore with save_freq steps):
        # the epoch's earlier losses are the checkpoint's.
        self.prior = []
        spe = self.steps_per_epoch
        if self.resumed_from and spe and self.resumed_from % spe and \
                self.model.checkpoint_dir is not None:
            self.prior = _checkpoint_losses(
                self.model.checkpoint_dir, self.resumed_from)[
                    self.resumed_from - self.resumed_from % spe:]
        self.callbacks.on_train_begin()

    def _begin_epoch(self, epoch):
        if self.epoch is None:
            self.epoch = epoch
            self._reset()
            if self.prior:
                self.losses, self.prior = list(self.prior), []
            self.callbacks.on_epoch_begin(epoch)

    def _on_step(self, e):
        step = e["step"]
        epoch = e.get("epoch")
        if epoch is None:
            epoch = (step - 1) // self.steps_per_epoch \
                if self.steps_per_epoch else 0
        self._begin_epoch(epoch)
        batch = step - 1 - epoch * self.steps_per_epoch \
            if self.steps_per_epoch else step - 1
        logs = {"loss": e.get("loss"), "step_ms": e.get("step_ms"),
                "collective_bytes": e.get("collective_bytes"),
                "sent_bytes": e.get("sent_bytes")}
        if e.get("lr") is not None:
            logs["lr"] = self.lr = e["lr"]
        self.losses.append(e.get("loss"))
        if e.get("step_ms") is not None:
            self.step_ms.append(e["step_ms"])
        if e.get("collective_bytes") is not None:
            self.comm.append(e["collective_bytes"])
        self.callbacks.on_train_batch_begin(batch, {})
        self.callbacks.on_train_batch_end(batch, logs)

    def _on_eval(self, e):
        self.evaluations.append(
            {k: e.get(k) for k in ("step", "epoch", "loss", "accuracy",
                                   "samples")})
        logs = {"loss": e.get("loss")}
        self.val = {"val_loss": e.get("loss")}
        if e.get("accuracy") is not None:
            logs["accuracy"] = self.val["val_accuracy"] = e["accuracy"]
        self.callbacks.on_test_end(logs)

    def _on_checkpoint(self, e):
        self.model.checkpoint = e.get("dir")

    def _on_epoch_end(self, e):
        epoch = e["epoch"]
        self._begin_epoch(epoch)
        logs = {"loss": _mean(self.losses)}
        if self.step_ms:
            logs["step_ms"] = _mean(self.step_ms)
            seconds = sum(self.step_ms) / 1000.0
            if seconds > 0 and self.params.get("batch_size"):
                logs["samples_per_s"] = \
                    self.params["batch_size"] * len(self.step_ms) / seconds
        if self.comm:
            logs["comm_bytes"] = _mean(self.comm)
        if self.lr is not None:
            logs["lr"] = self.lr
        logs.update(self.val)
        self.epoch = None
        self.callbacks.on_epoch_end(epoch, logs)
        self.last_logs = logs
        return not self.model.stop_training

    def _on_end(self, e):
        self.ended = True
        self.stopped_early = bool(e.get("stopped_early"))

    def _on_error(self, e):
        if self.error is None:
            self.error = e

    def error_message(self):
        e = self.error
        return f"rank {e.get('rank')}: {e.get('message')}"

    def needs_decision(self, epoch):
        """Whether the runner reads a decision after `epoch` (every epoch
        but the last)."""
        return self.epochs is not None and epoch + 1 < self.epochs


def _checkpoint_losses(directory, step):
    """The losses of the first `step` steps, as the checkpoint of that step
    in `directory` holds them (its index names the file)."""
    path = os.path.join(directory or "", f"ckpt-{step:08d}")
    try:
        with open(os.path.join(path, "index.json")) as f:
            name = json.load(f)["losses"]["file"]
        losses = np.load(os.path.join(path, name))
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise DistOptError(f"cannot read the losses of the checkpoint the run "
                           f"resumed from ('{path}'): {error}") from None
    return [float(v) for v in np.ravel(losses)[:step]]


class _EventReader:
    """The lines of a growing events file, read as they come."""

    def __init__(self, path):
        self.path, self.file, self.pending = path, None, b""

    def events(self):
        if self.file is None:
            try:
                self.file = open(self.path, "rb")
            except FileNotFoundError:
                return []
        chunk = self.file.read()
        if not chunk:
            return []
        self.pending += chunk
        *lines, self.pending = self.pending.split(b"\n")
        out = []
        for line in lines:
            if line.strip():
                try:
                    out.append(json.loads(line))
                except ValueError as error:
                    raise DistOptError(f"malformed event line in "
                                       f"'{self.path}': {line[:200]!r} "
                                       f"({error})") from None
        return out

    def close(self):
        if self.file is not None:
            self.file.close()


def _stop_process(process, first=signal.SIGINT):
    """Sends `first` to the run's process group (mpirun and every rank) and
    waits for it to end, escalating to SIGTERM and SIGKILL."""
    for sig in (first, signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass
        try:
            process.wait(_STOP_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            continue
        except KeyboardInterrupt:
            continue        # Ctrl-C again: the next signal at once
    process.wait()


def run_subprocess(command, events_path, driver, control_path=None,
                   work=None, env=None, timeout=None):
    """Runs `command` (dist-run, or mpirun ... dist-run) in its own process
    group, feeding its events to `driver` as they come and writing each
    epoch's decision to the control FIFO. Ctrl-C (KeyboardInterrupt) and a
    callback's exception stop every rank with SIGINT (dist-run removes its
    partial files; complete checkpoints stay) before they propagate.
    Returns the process's stdout text; raises DistOptError when the run
    fails, with the first error event's message and the exit status, and
    subprocess.TimeoutExpired (the run stopped) after `timeout` seconds."""
    work = work or os.path.dirname(events_path)
    control_fd = None
    if control_path is not None:
        os.mkfifo(control_path, 0o600)
        # Read-write: opening never waits for dist-run, and dist-run sees
        # the end of the channel only when this process is gone.
        control_fd = os.open(control_path, os.O_RDWR)
    out_path, err_path = (os.path.join(work, n)
                          for n in ("stdout.txt", "stderr.txt"))
    reader = _EventReader(events_path)
    with output.open_in_place("the run's output", out_path, False) as out, \
            output.open_in_place("the run's errors", err_path, False) as err:
        process = subprocess.Popen(command, stdout=out, stderr=err,
                                   stdin=subprocess.DEVNULL,
                                   start_new_session=True, env=env)
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while True:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(command, timeout)
            status = process.poll()
            for event in reader.events():
                decision = driver.event(event)
                if decision is not None and control_fd is not None and \
                        driver.needs_decision(event["epoch"]):
                    os.write(control_fd,
                             b"continue\n" if decision else b"stop\n")
            if status is not None:
                for event in reader.events():
                    driver.event(event)
                break
            time.sleep(_POLL_S)
    except BaseException:
        _stop_process(process)
        raise
    finally:
        reader.close()
        if control_fd is not None:
            os.close(control_fd)
    with open(out_path, errors="replace") as f:
        stdout = f.read()
    if status != 0 or driver.error is not None:
        name = os.path.basename(command[0])
        how = f"exited with status {status}" if status >= 0 else \
            f"was killed by signal {-status}"
        if driver.error is not None:
            raise DistOptError(f"{driver.error_message()} ({name} {how})")
        # No rank reported an error (one was killed): what the process
        # printed last (mpiexec reports its ranks' ends on stdout).
        with open(err_path, errors="replace") as f:
            said = f.read().strip() or stdout.strip()
        tail = "\n".join(said.splitlines()[-_TAIL_LINES:])
        raise DistOptError(f"{name} {how}" + (f"; its last output:\n{tail}"
                                              if tail else ""))
    return stdout


# -- the step and its data ---------------------------------------------------------

# A function argument of the step: its type and attribute dictionary.
_ARGUMENT = re.compile(r"%[\w.$-]+\s*:\s*tensor<([^>]*)>\s*\{([^}]*)\}")
_ROLE = re.compile(r"train\.role\s*=\s*#train\.role<(\w+)>")
_NAME = re.compile(r'train\.name\s*=\s*"([^"]*)"')


# Keras's default global batch, when fit is given none.
DEFAULT_BATCH = 32


def batch_size_for(batch_size, samples, what):
    """The global batch of a front end's fit: `batch_size`, or Keras's
    default 32 (at most the samples); ValueError unless a positive int no
    larger than the samples `what` holds."""
    if batch_size is None:
        batch_size = min(DEFAULT_BATCH, samples)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or \
            batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got "
                         f"{batch_size!r}")
    if samples < batch_size:
        raise ValueError(f"{what} has {samples} samples, fewer than one "
                         f"batch of {batch_size}")
    return batch_size


def _batch_signature(step):
    """The step's batch arguments in order, (name, leading dim) each: the
    inputs, then the labels (from the function's argument attributes)."""
    if hasattr(step, "batch"):
        return [(name, np.shape(a)[0] if np.ndim(a) else None)
                for name, a in step.batch.items()]
    found = []
    for shape, attributes in _ARGUMENT.findall(str(step)):
        role, name = _ROLE.search(attributes), _NAME.search(attributes)
        if role and name and role[1] in ("input", "label"):
            dims = shape.split("x")
            found.append((role[1], name[1], int(dims[0]) if len(dims) > 1
                          and dims[0].isdigit() else None))
    if not found:
        raise DistOptError("the step has no input or label arguments "
                           "(train.role<input|label>)")
    return [(n, b) for r, n, b in found if r == "input"] + \
        [(n, b) for r, n, b in found if r == "label"]


def _to_numpy(value, what):
    if hasattr(value, "detach"):           # a torch tensor
        value = value.detach().cpu().numpy()
    array = np.asarray(value)
    if array.dtype == np.float16 or array.dtype == np.bool_:
        array = array.astype(np.float32 if array.dtype == np.float16
                             else np.int64)
    if array.dtype.kind == "O":
        raise TypeError(f"{what} is not an array (got {type(value).__name__})")
    return array


def _is_map_dataset(data):
    return hasattr(data, "__getitem__") and hasattr(data, "__len__") and \
        not isinstance(data, (tuple, list, dict, np.ndarray, str, bytes)) \
        and not hasattr(data, "detach")


def _materialize(dataset, count, what):
    """A map-style dataset (torch.utils.data.Dataset: len() and [i] giving
    (inputs..., label)) as one array per position."""
    columns = None
    for i in range(len(dataset)):
        item = dataset[i]
        if not isinstance(item, (tuple, list)) or len(item) != count:
            raise ValueError(f"{what}[{i}] must be a tuple of {count} "
                             f"(the step's inputs and its label), got "
                             f"{type(item).__name__}")
        if columns is None:
            columns = [[] for _ in item]
        for column, value in zip(columns, item):
            column.append(_to_numpy(value, f"{what}[{i}]"))
    if columns is None:
        raise ValueError(f"{what} is empty")
    return [np.stack(c) for c in columns]


def _arrays(data, names, what):
    """`data` ((inputs..., labels), a dict by name, or a map-style dataset)
    as {name: array}."""
    if isinstance(data, dict):
        missing = [n for n in names if n not in data]
        if missing:
            raise ValueError(f"{what} lacks {', '.join(missing)} (the step's "
                             f"batch is {', '.join(names)})")
        return {n: _to_numpy(data[n], f"{what}[{n!r}]") for n in names}
    if _is_map_dataset(data):
        return dict(zip(names, _materialize(data, len(names), what)))
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise TypeError(f"{what} must be an (x, y) pair, a dict by name, a "
                        "dataset directory or a map-style dataset")
    x, y = data
    inputs = list(x) if isinstance(x, (tuple, list)) else [x]
    if len(inputs) + 1 != len(names):
        raise ValueError(f"{what} has {len(inputs)} input(s); the step takes "
                         f"{len(names) - 1} ({', '.join(names[:-1])})")
    return {n: _to_numpy(a, f"{what} {n!r}")
            for n, a in zip(names, inputs + [y])}


def _dataset_dir(data, names, work, what):
    """A dataset directory holding `<name>.npy` for each of `names`: `data`
    itself when it is one, else one written (or linked) under `work`."""
    if isinstance(data, (str, os.PathLike)):
        directory = os.fspath(data)
        if not os.path.isdir(directory):
            raise ValueError(f"{what} '{directory}' is not a directory")
        present = {n[:-4] for n in os.listdir(directory) if n.endswith(".npy")}
        if all(n in present for n in names):
            return directory
        # Keras's names: x (the one input) and y (the labels).
        if len(names) == 2 and {"x", "y"} <= present:
            linked = os.path.join(work, what)
            os.mkdir(linked)
            for name, source in zip(names, ("x", "y")):
                os.symlink(os.path.abspath(os.path.join(directory,
                                                        f"{source}.npy")),
                           os.path.join(linked, f"{name}.npy"))
            return linked
        raise ValueError(
            f"{what} '{directory}' lacks "
            f"{', '.join(n + '.npy' for n in names if n not in present)} "
            f"(the step's batch is {', '.join(names)}; x.npy and y.npy "
            "also do for one input)")
    # (Imported here: `python -m distopt.datasets` runs that module as
    # __main__, which an import of it by the package would shadow.)
    from .datasets import write_dataset
    directory = os.path.join(work, what)
    write_dataset(directory, _arrays(data, names, what))
    return directory


def _samples(directory, name):
    return np.load(os.path.join(directory, f"{name}.npy"),
                   mmap_mode="r").shape[0]


# -- fit ---------------------------------------------------------------------------

def _in_process():
    return hasattr(_distopt, "run")


def _options(dataset, epochs, seed, shuffle, eval_dataset, eval_every,
             checkpoint_dir, checkpoint_every, resume, num_threads,
             opt_level):
    options = {"dataset": dataset, "epochs": epochs, "seed": seed,
               "shuffle": bool(shuffle)}
    if eval_dataset is not None:
        options["eval-dataset"] = eval_dataset
        options["eval-every"] = eval_every
    if checkpoint_dir is not None:
        options["checkpoint-dir"] = checkpoint_dir
        options["checkpoint-every"] = checkpoint_every
    if resume:
        options["resume"] = True
    if num_threads is not None:
        options["num-threads"] = num_threads
    if opt_level is not None:
        options["opt-level"] = opt_level
    return options


def _arguments(options):
    args = []
    for key, value in options.items():
        if value is True:
            args.append(f"--{key}")
        elif value is False:
            args.append(f"--{key}=false")
        else:
            args.append(f"--{key}={value}")
    return args


def fit(step, train_data, *, strategy=None, epochs=1, batch_size=None,
        validation_data=None, callbacks=(), seed=0, shuffle=True, verbose=1,
        initial_state=None, checkpoint_dir=None, num_threads=None,
        opt_level=None, _extra_args=(), _force_subprocess=False):
    """Trains `step` for `epochs` epochs over `train_data` and returns the
    `History` (`history.history["loss"]`: each epoch's mean step loss;
    "val_loss" / "val_accuracy" with `validation_data`; "step_ms",
    "samples_per_s", "comm_bytes", "lr"). The trained state is
    `history.model.state` (and, for an ExportedStep, its `state` is
    updated in place).

    `step`: an ExportedStep (from a front end: its state is the initial
    one) or a single-device distopt Module with `initial_state` (name ->
    array; default: dist-run --init-state). `train_data` and
    `validation_data`: an (x, y) pair of arrays (x a tuple for several
    inputs), a dict by the step's batch names, a dataset directory, or a
    map-style dataset (torch.utils.data.Dataset) of (x, y) items.
    `batch_size`: the global batch, which must be the step's (None: the
    step's). `strategy` (distopt.strategies) distributes the step; with
    more than one process the run goes under `mpirun -np N dist-run`.
    `callbacks`: distopt.callbacks.Callback instances (BackupAndRestore,
    ModelCheckpoint, EarlyStopping, CSVLogger, TensorBoard, your own).
    `verbose`: 0 silent, 1 a progress bar per epoch, 2 a line per epoch.
    `checkpoint_dir`: where the run checkpoints after each epoch (default:
    a temporary directory; BackupAndRestore's backup_dir when given).
    `num_threads` and `opt_level` are dist-run's --num-threads and
    --opt-level (0 compiles a large step in a fraction of the time).
    Ctrl-C stops every rank cleanly (complete checkpoints stay) and
    re-raises KeyboardInterrupt; a failed run raises DistOptError with the
    runner's message."""
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs must be a positive int, got {epochs!r}")
    if verbose not in (0, 1, 2):
        raise ValueError(f"verbose must be 0, 1 or 2, got {verbose!r}")
    callbacks = list(callbacks or ())
    backups = [c for c in callbacks if isinstance(c, BackupAndRestore)]
    if len(backups) > 1:
        raise ValueError("at most one BackupAndRestore per fit")
    backup = backups[0] if backups else None
    if backup is not None and checkpoint_dir is not None:
        raise ValueError("give checkpoint_dir= or a BackupAndRestore, not both")

    exported = step if hasattr(step, "module") and hasattr(step, "state") \
        else None
    module = exported.module if exported is not None else step
    if not isinstance(module, Module):
        raise TypeError("step must be an ExportedStep or a distopt.Module, "
                        f"got {type(step).__name__}")
    signature = _batch_signature(exported or module)
    names = [n for n, _ in signature]
    step_batch = signature[0][1]
    if batch_size is None:
        batch_size = step_batch
    elif step_batch is not None and batch_size != step_batch:
        raise ValueError(f"batch_size={batch_size} but the step's global "
                         f"batch is {step_batch} (export the step with that "
                         "batch)")
    if exported is not None:
        state = exported.state
    elif initial_state is not None:
        state = dict(initial_state)
    else:
        from .runner import init
        state = init(module, seed=seed)[0]

    module = module.clone()
    if validation_data is not None:
        module.derive_eval()
    if strategy is not None:
        module = strategy.distribute(module)
    processes = strategy.num_processes if strategy is not None else 1

    work = tempfile.mkdtemp(prefix="distopt-fit-")
    try:
        train = _dataset_dir(train_data, names, work, "train")
        samples = _samples(train, names[0])
        if batch_size and samples < batch_size:
            raise ValueError(f"train_data has {samples} samples, fewer than "
                             f"one batch of {batch_size}")
        steps_per_epoch = samples // batch_size if batch_size else None
        evaluation = _dataset_dir(validation_data, names, work, "validation") \
            if validation_data is not None else None
        if backup is not None:
            checkpoints = backup.backup_dir
            every = steps_per_epoch if backup.save_freq == "epoch" \
                else backup.save_freq
            resume = backup.has_checkpoint()
        else:
            checkpoints = os.fspath(checkpoint_dir) if checkpoint_dir \
                is not None else os.path.join(work, "checkpoints")
            every, resume = steps_per_epoch, False
        model = FitModel(module, strategy, checkpoints)
        history = History()
        every_callback = [history] + callbacks
        if verbose:
            every_callback.append(ProgbarLogger(verbose))
        callback_list = CallbackList(every_callback, model=model)
        history.model = model
        driver = _EventDriver(callback_list, model, batch_size)
        options = _options(train, epochs, seed, shuffle, evaluation,
                           steps_per_epoch, checkpoints, every, resume,
                           num_threads, opt_level)
        try:
            if processes == 1 and _in_process() and not _extra_args and \
                    not _force_subprocess:
                result = _distopt.run(str(module), state, None, options,
                                      driver.event)
                final, losses = result["state"], result["loss"]
                if driver.resumed_from is None:
                    driver.resumed_from = result.get("resumed_from")
            else:
                final, losses = _run_dist_run(module, state, options,
                                              processes, driver, work,
                                              _extra_args)
        except BaseException:
            # A failed run calls no on_train_end (as Keras); its progress
            # bar ends where the run did.
            for callback in callback_list:
                if isinstance(callback, ProgbarLogger):
                    callback.close()
            raise
        model.state = {k: v for k, v in final.items() if k in state}
        model.losses = np.asarray(losses) if losses is not None else None
        history.resumed_from = driver.resumed_from
        history.evaluations = driver.evaluations
        history.stopped_early = driver.stopped_early
        callback_list.on_train_end(driver.last_logs)
        # (After on_train_end: a callback may have put other weights in
        # model.state, e.g. EarlyStopping's best ones.)
        if exported is not None:
            exported.state.update(model.state)
        return history
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run_dist_run(module, state, options, processes, driver, work,
                  extra_args):
    """The run as a dist-run process (under mpirun with more than one):
    the final state and the losses."""
    step_path, state_path = output.write_files(
        "fit's run", [(os.path.join(work, "step.mlir"), str(module).encode()),
                      (os.path.join(work, "state.npz"),
                       lambda f: np.savez(f, **{k: np.asarray(v)
                                                for k, v in state.items()}))])
    out = os.path.join(work, "out.npz")
    events = os.path.join(work, "events.jsonl")
    control = os.path.join(work, "control")
    command = [_config.DIST_RUN, step_path, f"--state={state_path}",
               f"--out={out}", f"--events={events}", f"--control={control}"] \
        + _arguments(options) + list(extra_args)
    if processes > 1:
        command = [_config.MPIEXEC, "-np", str(processes)] + command
    run_subprocess(command, events, driver, control_path=control, work=work)
    with np.load(out) as results:
        arrays = dict(results)
    return arrays, arrays.get("loss")
