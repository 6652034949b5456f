# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""`distopt.torch.fit`: train a PyTorch model with DistOpt, as Keras's
`Model.fit`.

    import torch, torchvision, distopt, distopt.torch
    from distopt.callbacks import BackupAndRestore
    model = torchvision.models.resnet18(num_classes=10)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    history = distopt.torch.fit(model, "cross_entropy", opt, (x, y),
                                strategy=distopt.MirroredStrategy(2),
                                epochs=2, batch_size=16,
                                callbacks=[BackupAndRestore("backup")])
    history.history["loss"]     # one mean loss per epoch
    # model and opt now hold the trained weights, batch-norm statistics
    # and optimizer state: training can go on in PyTorch.

The step is exported on the first batch (export_train_step, the global
batch `batch_size`), distributed by `strategy` and run over the data by
`distopt.fit`. See docs/guides/python.md.
"""

import os

import numpy as np
import torch

from .. import training
from . import _Optimizer, _amp, _input_names, export_train_step

__all__ = ["fit", "load_into"]


def _count_inputs(data):
    """How many inputs the data feeds (its label excluded)."""
    if isinstance(data, (str, os.PathLike)):
        names = {n[:-4] for n in os.listdir(data) if n.endswith(".npy")}
        if {"x", "y"} <= names and "labels" not in names:
            return 1
        return max(len(names) - 1, 1)
    x = data[0]
    return len(x) if isinstance(x, (tuple, list)) else 1


def _arrays_of(data, names, what):
    """`data` as {name: array} (a dataset directory: its arrays memory-
    mapped; a map-style dataset: materialized once)."""
    if isinstance(data, (str, os.PathLike)):
        directory = os.fspath(data)
        present = {n[:-4] for n in os.listdir(directory) if n.endswith(".npy")}
        files = names if all(n in present for n in names) else \
            (["x", "y"] if len(names) == 2 and {"x", "y"} <= present else None)
        if files is None:
            raise ValueError(
                f"{what} '{directory}' lacks "
                f"{', '.join(n + '.npy' for n in names if n not in present)} "
                f"(the model's batch is {', '.join(names)}; x.npy and y.npy "
                "also do for one input)")
        return {n: np.load(os.path.join(directory, f"{f}.npy"), mmap_mode="r")
                for n, f in zip(names, files)}
    return training._arrays(data, names, what)


def load_into(model, state, optimizer=None, scaler=None):
    """The trained parameters, buffers and optimizer state of `state` (a
    RunResult's state, a checkpoint: name -> array) into `model` and
    `optimizer` (in place: the optimizer's parameter references stay), and
    a mixed step's `loss_scale` and `loss_scale.growth_tracker` into
    `scaler` (a torch.amp.GradScaler), so training can go on in PyTorch."""
    _amp.load_scaler(scaler, state)
    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())

    def tensor(array, like):
        return torch.from_numpy(np.array(array)).reshape(like.shape).to(
            dtype=like.dtype, device=like.device)

    with torch.no_grad():
        for name, value in list(params.items()) + list(buffers.items()):
            if name in state:
                value.copy_(tensor(state[name], value))
    if optimizer is None:
        return
    kind = _Optimizer(optimizer, model)
    for name, p in params.items():
        if p not in kind.group_of:
            continue
        for suffix in kind.state_names(p):
            key = f"{name}.{suffix}"
            if key not in state:
                continue
            if suffix == "step":
                optimizer.state[p]["step"] = torch.tensor(
                    float(np.asarray(state[key])), dtype=torch.float32)
            else:
                optimizer.state[p][suffix] = tensor(state[key], p).clone()


def fit(model, loss, optimizer, train_data, *, strategy=None, epochs=1,
        batch_size=None, validation_data=None, callbacks=(), verbose=1,
        seed=0, shuffle=True, checkpoint_dir=None, num_threads=None,
        opt_level=None, dropout_seed=0, scaler=None, _extra_args=(),
        _force_subprocess=False):
    """Trains `model` (a torch.nn.Module) with `loss` and `optimizer` for
    `epochs` epochs over `train_data`, distributed by `strategy`, and
    returns the `History` (`history.history["loss"]`: each epoch's mean
    loss, "val_loss" / "val_accuracy" with `validation_data`, the step
    time, samples/s, communication bytes, learning rate). Afterwards the
    model holds the trained parameters and buffers (batch-norm statistics)
    and the optimizer its state (SGD's momentum_buffer; Adam / AdamW's
    exp_avg, exp_avg_sq and step), so training can go on in PyTorch.

    `loss`: a name ("cross_entropy", "mse", "l1", "smooth_l1", "huber",
    "bce_with_logits", "nll"), a torch.nn loss module
    (nn.CrossEntropyLoss(label_smoothing=0.1), nn.MSELoss(), ...) or a
    callable (output, labels) -> scalar. `optimizer`: a torch.optim.SGD /
    Adam / AdamW over the model's parameters, or ("sgd"|"adam"|"adamw",
    {options}). `train_data` / `validation_data`: an (x, y) pair of NumPy
    arrays or tensors (x a tuple for several inputs), a dataset directory
    (distopt.datasets: one .npy per input name and `labels`, or x.npy and
    y.npy), or a torch.utils.data.Dataset of (x, y) items. `batch_size`:
    the global batch (default 32); each of the strategy's replicas takes
    its share. The other options are `distopt.fit`'s.

    Mixed precision as in PyTorch: call fit inside `torch.autocast(
    device_type="cpu", dtype=torch.bfloat16)` (or float16) and give the
    `scaler` (a torch.amp.GradScaler) for dynamic loss scaling; the step
    computes in 16 bits with float32 master weights (export_train_step),
    and afterwards the scaler holds the trained scale and growth tracker."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError("model must be a torch.nn.Module")
    if isinstance(optimizer, tuple):
        _Optimizer(optimizer, model)         # checks the kind
        kind, options = optimizer
        optimizer = _Optimizer._SHORT[kind](
            [p for p in model.parameters() if p.requires_grad], **options)
    if training._is_map_dataset(train_data):
        first = train_data[0]
        count = len(first) - 1 if isinstance(first, (tuple, list)) else 0
        if count < 1:
            raise ValueError("train_data items must be (x, y) tuples")
        names = _input_names(model, count) + ["labels"]
        train_data = dict(zip(names, training._materialize(
            train_data, count + 1, "train_data")))
    else:
        count = _count_inputs(train_data)
        names = _input_names(model, count) + ["labels"]
    arrays = _arrays_of(train_data, names, "train_data")
    samples = len(arrays[names[0]])
    batch_size = training.batch_size_for(batch_size, samples, "train_data")
    first = [torch.from_numpy(np.array(arrays[n][:batch_size])) for n in names]
    step = export_train_step(model, tuple(first[:-1]), first[-1], loss=loss,
                             optimizer=optimizer, scaler=scaler,
                             dropout_seed=dropout_seed)
    if not isinstance(train_data, (str, os.PathLike)):
        train_data = arrays         # converted once
    history = training.fit(
        step, train_data, strategy=strategy, epochs=epochs,
        batch_size=batch_size, validation_data=validation_data,
        callbacks=callbacks, seed=seed, shuffle=shuffle, verbose=verbose,
        checkpoint_dir=checkpoint_dir, num_threads=num_threads,
        opt_level=opt_level, _extra_args=_extra_args,
        _force_subprocess=_force_subprocess)
    load_into(model, history.model.state, optimizer, scaler)
    return history
