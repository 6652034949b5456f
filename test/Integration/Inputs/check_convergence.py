# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Checks a nondeterministic training run by convergence (an asynchronous
parameter-server run): the per-step losses it saved (array LOSS of OUT)
fall below RATIO times the first, and the saved state has the arrays of a
reference run (same names, shapes and dtypes; the losses aside), all
finite. Prints "ok: loss A -> B in N steps" or the failures, and exits 1
on a failure.

    check_convergence.py OUT.npz REFERENCE.npz LOSS RATIO
"""

import sys

import numpy as np


def main():
    out, reference, loss, ratio = sys.argv[1:5]
    got, want = np.load(out), np.load(reference)
    losses = list(got[loss]) if loss in got.files else []
    failures = []
    if len(losses) < 2:
        failures.append(f"{out}: {len(losses)} losses saved, need 2 or more")
    elif not np.all(np.isfinite(losses)) or losses[-1] >= float(ratio) * losses[0]:
        failures.append(f"loss {losses[0]} -> {losses[-1]}: not below "
                        f"{ratio} x the first")
    if sorted(got.files) != sorted(want.files):
        failures.append(f"{out} holds {sorted(got.files)}, the reference "
                        f"{sorted(want.files)}")
    for name in set(got.files) & set(want.files) - {loss}:
        a, b = got[name], want[name]
        if a.shape != b.shape or a.dtype != b.dtype:
            failures.append(f"'{name}' is {a.dtype}{list(a.shape)}, the "
                            f"reference's {b.dtype}{list(b.shape)}")
        elif not np.all(np.isfinite(a)):
            failures.append(f"'{name}' is not finite")
    if failures:
        print("\n".join(failures))
        sys.exit(1)
    print(f"ok: loss {losses[0]} -> {losses[-1]} in {len(losses)} steps")


if __name__ == "__main__":
    main()
