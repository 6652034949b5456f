# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""The host program's files for the AOT tests: `split NPZ DIR` writes every
array of NPZ as DIR/<name>.npy; `compare NPZ DIR` checks that every array in
DIR (the losses in DIR/loss.npy too) equals NPZ's."""
import os
import sys

import numpy as np


def main():
    command, npz, directory = sys.argv[1:4]
    arrays = np.load(npz)
    if command == "split":
        os.makedirs(directory, exist_ok=True)
        for name in arrays.files:
            np.save(os.path.join(directory, name + ".npy"), arrays[name])
        return 0
    names = sorted(f[:-4] for f in os.listdir(directory) if f.endswith(".npy"))
    if not names:
        print(f"error: no arrays in {directory}")
        return 1
    bad = []
    for name in names:
        got = np.load(os.path.join(directory, name + ".npy"))
        want = arrays[name]
        if got.shape != want.shape or got.dtype != want.dtype or \
                not np.allclose(got, want, rtol=1e-6, atol=1e-7):
            bad.append(f"{name}: {got.dtype}{got.shape} vs {want.dtype}{want.shape}, "
                       f"max diff {np.max(np.abs(got.astype(np.float64) - want)) if got.shape == want.shape else '-'}")
    for line in bad:
        print("error:", line)
    if bad:
        return 1
    print(f"ok: {len(names)} arrays equal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
