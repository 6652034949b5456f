# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""The exported step every front end returns (PyTorch, JAX, Keras): the
train-dialect text, its parsed module, the state and the batch as NumPy
arrays, and `save(dir)` for dist-opt / dist-run."""

import os

import numpy as np

from . import output
from .module import Module

__all__ = ["ExportedStep"]


class ExportedStep:
    """The exported step: `mlir` (train-dialect text), `module` (parsed and
    verified), `state` (parameters, optimizer and batch-norm state and the
    hyper-parameters: dist-run's --state) and `batch` (inputs and labels:
    --data), name -> NumPy array, and `param_names` (the trainable
    parameters, as the framework names them: `named_parameters()`,
    a JAX pytree path, a Keras variable path). `mixed_precision` is the
    options string of the train-mixed-precision pass the front end applied
    (`"compute=bf16 loss-scale=none"`: under `torch.autocast`, a
    `GradScaler`, a Keras mixed policy), None for a float32 step."""

    def __init__(self, mlir, state, batch, param_names):
        self.mlir = mlir
        self.module = Module.parse(mlir)
        self.state, self.batch, self.param_names = state, batch, param_names
        self.mixed_precision = None

    def save(self, directory):
        """Writes step.mlir, state.npz and batch.npz (for `dist-run STEP
        --state=state.npz --data=batch.npz`); returns the three paths."""
        os.makedirs(directory, exist_ok=True)
        paths = [os.path.join(directory, n)
                 for n in ("step.mlir", "state.npz", "batch.npz")]
        writers = (lambda f: f.write(self.mlir.encode()),
                   lambda f: np.savez(f, **self.state),
                   lambda f: np.savez(f, **self.batch))
        # As every writer (distopt.output): each file under a temporary
        # name beside it, all renamed only once complete and only over
        # nothing or a regular file (never a FIFO, a device or a
        # directory), checked before and right before.
        output.write_files("ExportedStep.save file", zip(paths, writers))
        return paths
