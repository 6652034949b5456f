# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Compares distributed runs of a mixed-precision step with its single run.

    compare_mixed_runs.py COMPUTE STEPS [--adam] SINGLE.npz OTHER.npz...

COMPUTE is the 16-bit compute type (bf16 or f16), whose unit roundoff u is
2^-8 or 2^-11; STEPS the number of steps run. The bound: a strategy sums a
gradient element from partials (replicas, microbatches, the halves of a
split contraction) each rounded once to 16 bits where the single run rounds
the whole once, so the element differs by about u * (|g| + sum |g_r|), 2u
times the array's largest element when the partials do not cancel; the
float32 master weights and optimizer state take one such difference per
step. So the losses must be within 2u * STEPS * max|single| of the single
run, and so must every element of the other arrays (the parameters, the
optimizer state, the loss scale) but a few: partials that cancel, and a
master weight whose tiny difference rounds to another 16-bit value and
flips a relu, move at most 0.1% of an array's elements (at least one) up to
4 times the bound.

With --adam the other arrays must meet the bound on 90% of their elements,
without the cap: Adam divides each gradient element by its own magnitude,
so an element whose gradient is at the level of 16-bit rounding takes a
step of +-lr whatever the sign of its rounding, and later steps follow from
those parameters (measured: up to 7% of the 128 elements of fc1.bias's
exp_avg, f16 under dp=2 tp=2).
"""

import sys

import numpy as np

UNIT_ROUNDOFF = {"bf16": 2.0**-8, "f16": 2.0**-11}

args = sys.argv[1:]
u, steps = UNIT_ROUNDOFF[args[0]], int(args[1])
args = args[2:]
adam = args[0] == "--adam"
if adam:
    args = args[1:]
tol = 2 * u * steps
single = np.load(args[0])
failed = False
for path in args[1:]:
    other = np.load(path)
    for name in single.files:
        if name not in other.files:
            print(f"{path}: no '{name}'")
            failed = True
            continue
        a = single[name].astype(np.float64)
        b = other[name].astype(np.float64)
        if a.shape != b.shape:
            print(f"{path}: '{name}' has shape {b.shape}, not {a.shape}")
            failed = True
            continue
        bound = tol * max(float(np.max(np.abs(a))), np.finfo(np.float32).tiny)
        beyond = int(np.sum(np.abs(a - b) > bound))
        if name == "loss":
            allowed, cap = 0, bound
        elif adam:
            allowed, cap = int(0.10 * a.size), np.inf
        else:
            allowed, cap = max(1, int(0.001 * a.size)), 4 * bound
        if (not np.all(np.isfinite(b)) or beyond > allowed or
                np.max(np.abs(a - b)) > cap):
            print(f"{path}: '{name}' differs from the single-device run by "
                  f"up to {np.max(np.abs(a - b)):.3g} ({beyond} of {a.size} "
                  f"elements beyond {bound:.3g}, {allowed} allowed up to "
                  f"{cap:.3g})")
            failed = True
print("FAILED" if failed else
      f"ok: {len(args) - 1} runs equal the single-device run within "
      f"{tol:.3g} of each array's largest element")
sys.exit(1 if failed else 0)
