# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""`distopt.keras.fit`: train a Keras 3 model with DistOpt, as
`model.fit` does.

    import distopt, distopt.keras
    import keras
    model.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.9),
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True))
    history = distopt.keras.fit(model, x, y, epochs=5, batch_size=32,
                                validation_data=(x_test, y_test),
                                strategy=distopt.MirroredStrategy(2))
    history.history["loss"]     # one mean loss per epoch
    # model (and model.optimizer) now hold the trained variables.

The step `model.train_on_batch` runs is exported on the first batch
(export_train_step, the global batch `batch_size`), distributed by
`strategy` and run over the data by `distopt.fit`; the trained variables
are assigned back with `load_into`. See docs/guides/jax-keras.md.
"""

import os

import numpy as np

from .. import training
from . import export_train_step, keras, load_into

__all__ = ["fit"]


def _first_batch(x, y, batch_size):
    """The first `batch_size` samples of (x, y): x an array or a tuple of
    arrays, or x a dataset directory (x.npy / x.0.npy ..., y.npy) and y
    None. Returns (x, y, samples)."""
    if isinstance(x, (str, os.PathLike)):
        if y is not None:
            raise ValueError("with a dataset directory as x, y must be None "
                             "(the labels are its y.npy)")
        directory = os.fspath(x)
        present = sorted(n[:-4] for n in os.listdir(directory)
                         if n.endswith(".npy"))
        inputs = ["x"] if "x" in present else \
            sorted((n for n in present if n.startswith("x.")),
                   key=lambda n: int(n[2:]) if n[2:].isdigit() else -1)
        if not inputs or "y" not in present:
            raise ValueError(f"x '{directory}' must hold x.npy (or x.0.npy, "
                             f"x.1.npy, ... for several inputs) and y.npy; it "
                             f"has {', '.join(present) or 'no .npy file'}")
        arrays = [np.load(os.path.join(directory, f"{n}.npy"), mmap_mode="r")
                  for n in inputs + ["y"]]
        xs, labels = arrays[:-1], arrays[-1]
    else:
        if y is None:
            raise ValueError("give y (the labels) with array inputs")
        xs = list(x) if isinstance(x, (tuple, list)) else [x]
        xs, labels = [np.asarray(a) for a in xs], np.asarray(y)
    samples = len(labels)
    if any(len(a) != samples for a in xs):
        raise ValueError(f"x has {[len(a) for a in xs]} samples but y has "
                         f"{samples}")
    batch_size = training.batch_size_for(batch_size, samples,
                                         "the training data")
    first = [np.array(a[:batch_size]) for a in xs]
    return (first[0] if len(first) == 1 else tuple(first),
            np.array(labels[:batch_size]), batch_size)


def _step_data(x, y, step, what):
    """(x, y) — arrays, or a dataset directory as x — as distopt.fit takes
    them, in the step's dtypes: the JAX trace takes int64 labels as int32
    (and float64 as float32), so they are cast. A directory already in the
    step's dtypes is given as it is (memory-mapped by the runner)."""
    if isinstance(x, (str, os.PathLike)):
        directory = os.fspath(x)
        arrays = {n: np.load(os.path.join(directory, f"{n}.npy"),
                             mmap_mode="r") for n in step.batch
                  if os.path.exists(os.path.join(directory, f"{n}.npy"))}
        if len(arrays) == len(step.batch) and all(
                arrays[n].dtype == a.dtype for n, a in step.batch.items()):
            return directory
        if len(arrays) != len(step.batch):
            raise ValueError(
                f"{what} '{directory}' lacks "
                f"{', '.join(n + '.npy' for n in step.batch if n not in arrays)}")
        xs = [arrays[n] for n in step.batch][:-1]
        y = arrays[list(step.batch)[-1]]
    else:
        xs = list(x) if isinstance(x, (tuple, list)) else [x]
    if len(xs) != len(step.batch) - 1:
        raise ValueError(f"{what} has {len(xs)} inputs; the model takes "
                         f"{len(step.batch) - 1}")
    dtypes = [a.dtype for a in step.batch.values()]
    xs = [np.asarray(a, dtype) for a, dtype in zip(xs, dtypes)]
    return (xs[0] if len(xs) == 1 else tuple(xs),
            np.asarray(y, dtypes[-1]))


def _validation(data, step):
    """validation_data as distopt.fit takes it: an (x, y) pair (x a tuple
    for several inputs) or a dataset directory."""
    if data is None:
        return None
    if isinstance(data, (str, os.PathLike)):
        return _step_data(data, None, step, "validation_data")
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise ValueError("validation_data must be an (x, y) pair or a "
                         "dataset directory (Keras's sample weights are not "
                         "supported)")
    return _step_data(data[0], data[1], step, "validation_data")


def fit(model, x=None, y=None, *, batch_size=None, epochs=1, verbose=1,
        callbacks=(), validation_data=None, shuffle=True, strategy=None,
        loss=None, optimizer=None, seed=0, checkpoint_dir=None,
        num_threads=None, opt_level=None, _extra_args=(),
        _force_subprocess=False):
    """Trains `model` (a keras.Model, compiled, or give `loss` and
    `optimizer`) for `epochs` epochs over (`x`, `y`), distributed by
    `strategy`, as `model.fit(x, y, batch_size=, epochs=, callbacks=,
    validation_data=, shuffle=)` would, and returns the `History`
    (`history.history["loss"]`: each epoch's mean loss; "val_loss" /
    "val_accuracy" with `validation_data`; "step_ms", "samples_per_s",
    "comm_bytes", "lr"). Afterwards the model's variables and its
    optimizer's hold the trained values (load_into), so training can go on
    in Keras.

    `x`: an array (a tuple of arrays for several inputs) with `y` the
    labels, or a dataset directory (x.npy or x.0.npy, x.1.npy, ...; y.npy)
    with `y` None. `batch_size`: the global batch (default 32), each of the
    strategy's replicas takes its share; an epoch is samples // batch_size
    steps (the last partial batch is dropped, where Keras runs it short).
    `shuffle`: a seeded shuffle per epoch (`seed`; not Keras's order);
    False keeps the order. `callbacks`: distopt.callbacks (ModelCheckpoint,
    EarlyStopping, CSVLogger, TensorBoard, BackupAndRestore, your own
    distopt.callbacks.Callback). The other options are `distopt.fit`'s."""
    if not isinstance(model, keras.Model):
        raise TypeError(f"model must be a keras.Model, not "
                        f"{type(model).__name__}")
    first_x, first_y, batch_size = _first_batch(x, y, batch_size)
    step = export_train_step(model, first_x, first_y, loss=loss,
                             optimizer=optimizer)
    history = training.fit(
        step, _step_data(x, y, step, "x"), strategy=strategy, epochs=epochs,
        batch_size=batch_size,
        validation_data=_validation(validation_data, step),
        callbacks=callbacks, seed=seed, shuffle=shuffle, verbose=verbose,
        checkpoint_dir=checkpoint_dir, num_threads=num_threads,
        opt_level=opt_level, _extra_args=_extra_args,
        _force_subprocess=_force_subprocess)
    load_into(model, history.model.state)
    return history
