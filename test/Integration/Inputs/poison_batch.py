# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Writes a copy of a batch with one element of an input set to VALUE (inf,
nan or a number), as a data loader that yields a bad sample would.

    poison_batch.py IN.npz OUT.npz NAME VALUE
"""

import sys

import numpy as np

data = dict(np.load(sys.argv[1]))
array = data[sys.argv[3]].copy()
array.flat[array.size // 2] = float(sys.argv[4])
data[sys.argv[3]] = array
np.savez(sys.argv[2], **data)
