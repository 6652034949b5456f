# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Writes a random classification dataset directory for dist-run --dataset.

    random_dataset.py DIR SAMPLES FEATURES CLASSES SEED [X_DTYPE] [Y_DTYPE]

DIR/x.npy: SAMPLES x FEATURES standard normal floats; DIR/y.npy: SAMPLES
labels in [0, CLASSES).
"""

import os
import sys

import numpy as np

directory = sys.argv[1]
samples, features, classes, seed = map(int, sys.argv[2:6])
x_dtype = sys.argv[6] if len(sys.argv) > 6 else "float32"
y_dtype = sys.argv[7] if len(sys.argv) > 7 else "int32"
random = np.random.default_rng(seed)
os.makedirs(directory)
np.save(os.path.join(directory, "x.npy"),
        random.standard_normal((samples, features)).astype(x_dtype))
np.save(os.path.join(directory, "y.npy"),
        random.integers(0, classes, samples).astype(y_dtype))
