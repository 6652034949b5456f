# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""The comparison the execution tests' NumPy references share.

check(expected, paths) compares each run's OUT.npz in `paths` with the
float64 arrays of `expected` (rtol 1e-5, atol 1e-5), prints for each run
either what differs or "RUN: A, B and the loss equal NumPy" (the names
of `expected` but its last, the loss), and exits 1 when any run differs.
"""

import os
import sys

import numpy as np


def check(expected, paths):
    failed = False
    names = list(expected)
    for path in paths:
        out = np.load(path)
        run = os.path.splitext(os.path.basename(path))[0]
        differs = False
        for name, want in expected.items():
            got = out[name].astype(np.float64)
            if not np.allclose(got, want, rtol=1e-5, atol=1e-5):
                print(f"{run}: {name} differs from NumPy by "
                      f"{np.abs(got - want).max():.3g}")
                differs = True
        failed |= differs
        if not differs:
            print(f"{run}: {', '.join(names[:-1])} and the loss equal NumPy")
    sys.exit(1 if failed else 0)
