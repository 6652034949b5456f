# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Checks a step that dynamic loss scaling skipped, as torch.amp.GradScaler
does: every parameter and optimizer state of AFTER.npz equals BEFORE.npz bit
for bit, the loss scale is BACKOFF times the one before and the growth
tracker is 0. Prints "ok: ..." or the failures, and exits 1 on a failure.

    check_skipped_step.py BEFORE.npz AFTER.npz BACKOFF
"""

import sys

import numpy as np

SCALE, TRACKER = "loss_scale", "loss_scale.growth_tracker"


def main():
    before, after = np.load(sys.argv[1]), np.load(sys.argv[2])
    backoff = float(sys.argv[3])
    failures = []
    kept = sorted(set(after.files) - {SCALE, TRACKER, "loss"})
    for name in kept:
        if name not in before.files:
            failures.append(f"'{name}' is not in {sys.argv[1]}")
        elif before[name].tobytes() != after[name].tobytes():
            failures.append(f"'{name}' changed on a skipped step")
    want = np.float32(before[SCALE] * np.float32(backoff))
    if after[SCALE] != want:
        failures.append(f"loss scale {after[SCALE]}, expected {want}")
    if after[TRACKER] != 0:
        failures.append(f"growth tracker {after[TRACKER]}, expected 0")
    if failures:
        print("\n".join(failures))
        sys.exit(1)
    print(f"ok: {len(kept)} arrays kept, loss scale {before[SCALE]} -> "
          f"{after[SCALE]}")


if __name__ == "__main__":
    main()
