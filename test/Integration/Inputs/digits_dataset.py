# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Writes scikit-learn's digits (8x8 images scaled to [0, 1], 1797 samples)
as a dist-run dataset directory: x.npy (float32 [N, 64]), y.npy (int64 [N]).

    digits_dataset.py DIR
"""

import os
import sys

import numpy as np
from sklearn.datasets import load_digits

digits = load_digits()
os.makedirs(sys.argv[1])
np.save(os.path.join(sys.argv[1], "x.npy"),
        (digits.data / 16.0).astype(np.float32))
np.save(os.path.join(sys.argv[1], "y.npy"), digits.target.astype(np.int64))
