# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Compares the loss curve of a run with a reference run's (the per-step
losses, array 'loss' of each --out): the means over windows of WINDOW steps
must agree within ABS + REL * |reference|, and the run must end below
FALL times its first window. Prints the largest gap, or the failures and
exits 1.

    compare_curves.py REFERENCE.npz RUN.npz WINDOW ABS REL FALL
"""

import sys

import numpy as np


def windows(losses, size):
    count = len(losses) // size
    return losses[:count * size].reshape(count, size).mean(axis=1)


def main():
    reference, run = np.load(sys.argv[1])["loss"], np.load(sys.argv[2])["loss"]
    size, tol_abs, tol_rel, fall = (int(sys.argv[3]), float(sys.argv[4]),
                                    float(sys.argv[5]), float(sys.argv[6]))
    failures = []
    if len(reference) != len(run):
        failures.append(f"{len(run)} losses, the reference {len(reference)}")
    want, got = windows(reference, size), windows(run, size)
    gaps = np.abs(got - want)
    bound = tol_abs + tol_rel * np.abs(want)
    for i in np.nonzero(~(gaps <= bound))[0]:
        failures.append(f"steps {i * size + 1}-{(i + 1) * size}: mean loss "
                        f"{got[i]:.6f}, the reference {want[i]:.6f} (gap "
                        f"{gaps[i]:.6f} > {bound[i]:.6f})")
    if not got[-1] < fall * got[0]:
        failures.append(f"the loss went {got[0]:.6f} -> {got[-1]:.6f}, not "
                        f"below {fall} x the first window")
    if failures:
        print("\n".join(failures))
        sys.exit(1)
    worst = int(np.argmax(gaps / bound))
    print(f"ok: {len(got)} windows of {size} steps, {got[0]:.4f} -> "
          f"{got[-1]:.4f}; largest gap {gaps[worst]:.6f} at window {worst + 1}")


if __name__ == "__main__":
    main()
