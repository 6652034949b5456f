# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Compares dist-run outputs with the single-device run.

    compare_runs.py [--atol-for SUBSTRING=ATOL]... RTOL ATOL SINGLE.npz OTHER.npz...

Every array (the final params, the optimizer state and the per-step losses)
of every OTHER must match SINGLE within numpy.allclose(rtol, atol); an array
whose name contains SUBSTRING within ATOL instead (a parameter whose gradient
is zero in exact arithmetic, which Adam moves by +-lr whatever the sign of
its rounding noise).
"""

import sys

import numpy as np

args = sys.argv[1:]
atol_for = {}
while args and args[0] == "--atol-for":
    key, value = args[1].split("=")
    atol_for[key] = float(value)
    args = args[2:]
rtol, atol = float(args[0]), float(args[1])
single = np.load(args[2])
failed = False
for path in args[3:]:
    other = np.load(path)
    for name in single.files:
        if name not in other.files:
            print(f"{path}: no '{name}'")
            failed = True
            continue
        a, b = single[name], other[name]
        tol = next((t for key, t in atol_for.items() if key in name), atol)
        if a.shape != b.shape or not np.allclose(b, a, rtol=rtol, atol=tol):
            worst = np.max(np.abs(a - b)) if a.shape == b.shape else "shape"
            print(f"{path}: '{name}' differs from the single-device run "
                  f"(max abs {worst})")
            failed = True
print("FAILED" if failed else
      f"ok: {len(args) - 3} runs equal the single-device run")
sys.exit(1 if failed else 0)
