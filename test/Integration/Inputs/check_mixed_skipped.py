# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Checks that runs of a dynamically loss-scaled step skipped every step.

    check_mixed_skipped.py INIT_SCALE BACKOFF STEPS STATE.npz RUN.npz...

Each RUN (STEPS steps from STATE, whose gradients overflow 16 bits at every
step) must return every parameter and optimizer state of STATE bitwise, the
loss scale INIT_SCALE * BACKOFF^STEPS and a growth tracker of 0, as
torch.amp.GradScaler leaves them after STEPS skipped steps.
"""

import sys

import numpy as np

init_scale, backoff, steps = float(sys.argv[1]), float(sys.argv[2]), int(
    sys.argv[3])
state = np.load(sys.argv[4])
expected_scale = np.float32(init_scale)
for _ in range(steps):
    expected_scale = np.float32(expected_scale * np.float32(backoff))
failed = False
for path in sys.argv[5:]:
    run = np.load(path)
    for name in state.files:
        if name not in run.files:
            continue  # A hyperparameter (lr) the run does not return.
        got = run[name]
        if name == "loss_scale":
            want = expected_scale
        elif name == "loss_scale.growth_tracker":
            want = np.float32(0)
        else:
            want = state[name]
        if got.shape != np.shape(want) or got.tobytes() != np.asarray(
                want, dtype=got.dtype).tobytes():
            print(f"{path}: '{name}' is not {want if np.ndim(want) == 0 else 'the initial state'}"
                  f" (max abs change {np.max(np.abs(got - want)):.3g})")
            failed = True
    if not np.all(np.isfinite(run["loss"])):
        print(f"{path}: a loss is not finite: {run['loss']}")
        failed = True
print("FAILED" if failed else
      f"ok: {len(sys.argv) - 5} runs skipped all {steps} steps")
sys.exit(1 if failed else 0)
