# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Callbacks for `distopt.fit` / `distopt.torch.fit`, as keras.callbacks:

    from distopt.callbacks import BackupAndRestore, Callback
    history = distopt.torch.fit(model, "cross_entropy", optimizer, (x, y),
                                epochs=3, batch_size=16,
                                callbacks=[BackupAndRestore("backup")])

A user callback derives from `Callback` and overrides the `on_*` methods
it needs; `self.model.stop_training = True` stops the run after the
epoch. See docs/guides/training-runs.md and docs/guides/callbacks.md.
"""

from ._callback_base import (BackupAndRestore, Callback, CallbackList,
                             History, ProgbarLogger)
from ._callbacks_files import (CSVLogger, EarlyStopping, ModelCheckpoint,
                               TensorBoard)

__all__ = ["Callback", "CallbackList", "History", "ProgbarLogger",
           "BackupAndRestore", "ModelCheckpoint", "EarlyStopping",
           "CSVLogger", "TensorBoard"]
