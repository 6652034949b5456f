"""Running a step from Python: dist-run on NumPy arrays, single-process or
under mpirun. The module, the state and the batch go to a temporary
directory as .mlir and .npz files (dist-run's contract), dist-run trains,
and the results come back as arrays."""

import os
import subprocess
import tempfile
from dataclasses import dataclass, field

import numpy as np

from . import _config
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


def _write(directory, arrays, name):
    path = os.path.join(directory, name)
    np.savez(path, **{key: np.asarray(value) for key, value in arrays.items()})
    return path


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
    with tempfile.TemporaryDirectory(prefix="distopt-") as work:
        step = os.path.join(work, "step.mlir")
        with open(step, "w") as f:
            f.write(str(module))
        state, batch = (os.path.join(work, n) for n in ("state.npz", "data.npz"))
        _dist_run([step, f"--init-state={state}", f"--init-data={batch}",
                   f"--seed={seed}"])
        with np.load(state) as s, np.load(batch) as b:
            return dict(s), dict(b)


def _run(module, state, batch, steps, np_, extra, timeout):
    with tempfile.TemporaryDirectory(prefix="distopt-") as work:
        step = os.path.join(work, "step.mlir")
        with open(step, "w") as f:
            f.write(str(module))
        out = os.path.join(work, "out.npz")
        log = _dist_run(
            [step, f"--state={_write(work, state, 'state.npz')}",
             f"--data={_write(work, batch, 'data.npz')}",
             f"--steps={steps}", f"--out={out}"] + list(extra),
            np_=np_, timeout=timeout)
        with np.load(out) as results:
            arrays = dict(results)
    final = {k: v for k, v in arrays.items() if k in state}
    outputs = {k: v for k, v in arrays.items() if k not in state}
    losses = outputs.get("loss")
    if losses is None and len(outputs) == 1:
        losses = next(iter(outputs.values()))
    return RunResult(final, outputs, log, losses)


def run(module, state, batch, steps=1, extra_args=(), timeout=None):
    """Trains `module` (a single-device step) for `steps` steps in this
    machine's one process, feeding `batch` each step; `state` and `batch`
    map the step's argument names to arrays."""
    return _run(module, state, batch, steps, None, extra_args, timeout)


def launch(module, state, batch, steps=1, np=None, strategy=None,
           extra_args=(), timeout=None):
    """Runs a distributed module under `mpirun -np np dist-run` (np defaults
    to `strategy.num_processes`): every rank takes its block of the state
    and the batch, rank 0 gathers the result."""
    if np is None:
        if strategy is None:
            raise ValueError("launch needs np= or strategy=")
        np = strategy.num_processes
    return _run(module, state, batch, steps, np, extra_args, timeout)
