# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Writes the state and the batch of Inputs/mlp_step.mlir, and checks
dist-run's outputs: NumPy's steps (mlp_step_reference.py uses the same
step) against the single-device run, and every distributed run against
the single-device run (relative 1e-5).

    mlp_npz.py write STATE.npz DATA.npz
    mlp_npz.py check STEPS SINGLE.npz [DISTRIBUTED.npz ...]
"""

import sys

import numpy as np

f32 = np.float32
STATE = {
    "fc1.weight": np.array([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6],
                            [-0.7, 0.8, 0.9], [0.05, -0.15, 0.25],
                            [0.35, 0.45, -0.55]], f32),
    "fc1.bias": np.array([0.01, -0.02, 0.03, -0.04, 0.05], f32),
    "fc2.weight": np.array([[0.2, -0.1, 0.4, 0.3, -0.5],
                            [-0.3, 0.6, -0.2, 0.1, 0.7]], f32),
    "fc2.bias": np.array([0.1, -0.1], f32),
    "fc1.weight.momentum_buffer": np.array(
        [[0.01, 0.02, 0.03], [0.04, 0.05, 0.06], [0.07, 0.08, 0.09],
         [0.1, 0.11, 0.12], [0.13, 0.14, 0.15]], f32),
    "lr": np.array(0.5, f32),
}
DATA = {
    "x": np.array([[1.0, 2.0, -1.0], [0.5, -0.5, 1.5], [-1.0, 0.0, 2.0],
                   [2.0, 1.0, 0.5]], f32),
    "y": np.array([0, 1, 1, 0], np.int32),
}


def step(s):
    """One step of the MLP with SGD, as the step function computes it."""
    w1, b1, w2, b2 = (s["fc1.weight"], s["fc1.bias"], s["fc2.weight"],
                      s["fc2.bias"])
    m, lr, x, y = s["fc1.weight.momentum_buffer"], s["lr"], DATA["x"], DATA["y"]
    z1 = x @ w1.T + b1
    h = np.maximum(z1, 0)
    logits = h @ w2.T + b2
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = -log_probs[np.arange(4), y].mean()
    d = np.exp(log_probs)
    d[np.arange(4), y] -= 1
    d /= 4
    dz1 = (d @ w2) * (z1 > 0)
    m = 0.9 * m + dz1.T @ x
    out = dict(s)
    out.update({"fc1.weight": w1 - lr * m,
                "fc1.bias": b1 - lr * (dz1.sum(axis=0) + 0.01 * b1),
                "fc2.weight": w2 - lr * (d.T @ h),
                "fc2.bias": b2 - lr * d.sum(axis=0),
                "fc1.weight.momentum_buffer": m})
    return out, loss


def close(a, b):
    return np.allclose(a, b, rtol=1e-5, atol=1e-6)


def main():
    if sys.argv[1] == "write":
        np.savez(sys.argv[2], **STATE)
        np.savez(sys.argv[3], **DATA)
        return 0
    steps = int(sys.argv[2])
    single = np.load(sys.argv[3])
    state, losses = dict(STATE), []
    for _ in range(steps):
        state, loss = step(state)
        losses.append(loss)
    failed = False
    for name in list(STATE)[:-1] + ["loss"]:
        want = np.array(losses) if name == "loss" else state[name]
        if not close(single[name], want):
            print(f"single device: {name} = {single[name]}, NumPy: {want}")
            failed = True
    for path in sys.argv[4:]:
        other = np.load(path)
        for name in single.files:
            if not close(other[name], single[name]):
                print(f"{path}: {name} = {other[name]}, single device: "
                      f"{single[name]}")
                failed = True
    print("FAILED" if failed else f"ok: {len(sys.argv) - 3} runs agree")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
