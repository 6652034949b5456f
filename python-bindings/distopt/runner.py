# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Running a step from Python on NumPy arrays: single-process in this
process (the extension's runner, `_distopt.run`, when it has one), under
mpirun as `dist-run` processes (the module, the state and the batch go to
a temporary directory as .mlir and .npz files, dist-run's contract). The
run reports its steps, evaluations and checkpoints as events (dist-run
--events: JSON lines read as they come), and the results come back as
arrays."""

import os
import subprocess
import tempfile
from dataclasses import dataclass, field

import numpy as np

from . import _config, _distopt, output
from ._distopt import DistOptError


@dataclass
class RunResult:
    """What a run returns: the final state (the step's state arrays by
    name, gathered whole), the per-step outputs that are not state (the
    loss, metrics: one entry per step) and dist-run's printed log."""
    state: dict
    outputs: dict
    log: str = ""
    losses: np.ndarray = field(default=None)
    # One dict per evaluation (eval_dataset=): step, loss, accuracy (None
    # without a cross-entropy), samples.
    evaluations: list = field(default_factory=list)
    # The step the run resumed from (resume=True), else None.
    resumed_from: int = None


def _write(directory, arrays, name):
    return output.write_file(
        f"the run's {name}", os.path.join(directory, name),
        lambda f: np.savez(f, **{key: np.asarray(value)
                                 for key, value in arrays.items()}))


def _dist_run(args, np_=None, timeout=None):
    command = [_config.DIST_RUN] + args
    if np_ is not None:
        command = [_config.MPIEXEC, "-np", str(np_)] + command
    done = subprocess.run(command, capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode != 0:
        raise DistOptError(
            f"{' '.join(command[:3])}... failed with status "
            f"{done.returncode}:\n{done.stderr.strip()}")
    return done.stdout


def init(module, seed=0):
    """A random initial state and batch for the step (dist-run
    --init-state / --init-data: parameters scaled like PyTorch's defaults,
    optimizer state zero, labels in range): (state, batch) dicts."""
    # The runner in this process: no files, no dist-run.
    return _distopt.init(str(module), seed, True)


def _check_batches(batch, steps, dataset, epochs):
    """Raises ValueError unless the batches come from one source and the
    run's length is given one way."""
    if dataset is None and batch is None:
        raise ValueError("give a batch or a dataset=")
    if dataset is not None and batch is not None:
        raise ValueError("give a batch or a dataset=, not both")
    if epochs is not None and steps is not None:
        raise ValueError("give steps= or epochs=, not both")


def _training_args(work, batch, steps, dataset, epochs, seed, shuffle,
                   eval_dataset, eval_every, checkpoint_dir,
                   checkpoint_every, keep, resume, num_threads):
    """dist-run's options for the batches, evaluation and checkpoints."""
    _check_batches(batch, steps, dataset, epochs)
    args = []
    if dataset is None:
        args.append(f"--data={_write(work, batch, 'data.npz')}")
    else:
        args.append(f"--dataset={os.fspath(dataset)}")
    if epochs is not None:
        args.append(f"--epochs={epochs}")
    elif steps is not None:
        args.append(f"--steps={steps}")
    for option, value in (("seed", seed), ("eval-dataset", eval_dataset),
                          ("eval-every", eval_every),
                          ("checkpoint-dir", checkpoint_dir),
                          ("checkpoint-every", checkpoint_every),
                          ("keep", keep), ("num-threads", num_threads)):
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        if value is not None:
            args.append(f"--{option}={value}")
    if shuffle is not None:
        args.append(f"--shuffle={'true' if shuffle else 'false'}")
    if resume:
        args.append("--resume")
    return args


def _run(module, state, batch, np_, extra, timeout, steps=None, dataset=None,
         epochs=None, seed=None, shuffle=None, eval_dataset=None,
         eval_every=None, checkpoint_dir=None, checkpoint_every=None,
         keep=None, resume=False, num_threads=None, on_event=None):
    # The run's events (dist-run --events: a JSON object per line, read as
    # they come) give the evaluations and the step resumed from.
    from .training import _EventDriver, FitModel, run_subprocess, CallbackList
    driver = _EventDriver(CallbackList(), FitModel(module, None, None), None,
                          listener=on_event)
    with tempfile.TemporaryDirectory(prefix="distopt-") as work:
        if np_ is None and not extra and timeout is None and \
                hasattr(_distopt, "run"):
            # One process: the runner in this one, on the arrays.
            _check_batches(batch, steps, dataset, epochs)
            options = _options(steps, dataset, epochs, seed, shuffle,
                               eval_dataset, eval_every, checkpoint_dir,
                               checkpoint_every, keep, resume, num_threads)
            done = _distopt.run(str(module), dict(state),
                                None if batch is None else dict(batch),
                                options, driver.event)
            arrays = dict(done["state"])
            if done.get("loss") is not None:
                arrays.setdefault("loss", done["loss"])
            log = ""
            resumed = done.get("resumed_from", driver.resumed_from)
        else:
            step = output.write_file("the step",
                                     os.path.join(work, "step.mlir"),
                                     str(module).encode())
            out = os.path.join(work, "out.npz")
            events = os.path.join(work, "events.jsonl")
            command = [_config.DIST_RUN, step,
                       f"--state={_write(work, state, 'state.npz')}",
                       f"--out={out}", f"--events={events}"] + \
                _training_args(work, batch, steps, dataset, epochs, seed,
                               shuffle, eval_dataset, eval_every,
                               checkpoint_dir, checkpoint_every, keep, resume,
                               num_threads) + list(extra)
            if np_ is not None:
                command = [_config.MPIEXEC, "-np", str(np_)] + command
            log = run_subprocess(command, events, driver, work=work,
                                 timeout=timeout)
            with np.load(out) as results:
                arrays = dict(results)
            resumed = driver.resumed_from
    final = {k: v for k, v in arrays.items() if k in state}
    outputs = {k: v for k, v in arrays.items() if k not in state}
    losses = outputs.get("loss")
    if losses is None and len(outputs) == 1:
        losses = next(iter(outputs.values()))
    evaluations = [{k: e[k] for k in ("step", "loss", "accuracy", "samples")}
                   for e in driver.evaluations]
    return RunResult(final, outputs, log, losses, evaluations, resumed)


def _options(steps, dataset, epochs, seed, shuffle, eval_dataset, eval_every,
             checkpoint_dir, checkpoint_every, keep, resume, num_threads):
    """_training_args's options for the in-process run (dist-run's names)."""
    options = {}
    for option, value in (("steps", steps), ("dataset", dataset),
                          ("epochs", epochs), ("seed", seed),
                          ("eval-dataset", eval_dataset),
                          ("eval-every", eval_every),
                          ("checkpoint-dir", checkpoint_dir),
                          ("checkpoint-every", checkpoint_every),
                          ("keep", keep), ("num-threads", num_threads)):
        if value is not None:
            options[option] = os.fspath(value) \
                if isinstance(value, os.PathLike) else value
    if shuffle is not None:
        options["shuffle"] = bool(shuffle)
    if resume:
        options["resume"] = True
    return options


def run(module, state, batch=None, steps=None, extra_args=(), timeout=None,
        **training):
    """Trains `module` (a single-device step) in this machine's one
    process, for `steps` steps (default 1; with a dataset, one epoch),
    feeding `batch` each step or the batches of `dataset=`; `state` and
    `batch` map the step's argument names to arrays. The training options
    (`dataset`, `epochs`, `seed`, `shuffle`, `eval_dataset`, `eval_every`,
    `checkpoint_dir`, `checkpoint_every`, `keep`, `resume`) are dist-run's
    (docs/guides/training-runs.md); `num_threads` is the threads of each
    process (dist-run --num-threads; default: the cores divided among the
    processes on a node). `on_event(event)`, when given, is called with
    each of the run's events as it happens (a dict: "start", "step" with
    its loss and times, "eval", "checkpoint", "epoch_end", "end"; see
    docs/guides/training-runs.md)."""
    return _run(module, state, batch, None, extra_args, timeout, steps=steps,
                **training)


def launch(module, state, batch=None, steps=None, np=None, strategy=None,
           extra_args=(), timeout=None, **training):
    """Runs a distributed module under `mpirun -np np dist-run` (np defaults
    to `strategy.num_processes`): every rank takes its block of the state
    and of each batch (`batch`, or the next one of `dataset=`), rank 0
    gathers the result. Takes `run`'s training options; with
    `checkpoint_dir=` each rank writes its own shards, and `resume=True`
    continues from the newest complete checkpoint; `on_event` sees rank
    0's events as they come."""
    if np is None:
        if strategy is None:
            raise ValueError("launch needs np= or strategy=")
        np = strategy.num_processes
    return _run(module, state, batch, np, extra_args, timeout, steps=steps,
                **training)


def export_checkpoint(checkpoint_dir):
    """The newest complete checkpoint in `checkpoint_dir` as a dict of global
    arrays (and `loss`, every step's so far): dist-run --export."""
    return _distopt.read_checkpoint(os.fspath(checkpoint_dir))[0]
