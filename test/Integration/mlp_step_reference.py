"""NumPy reference of test/Integration/mlp_step_cpu.mlir's step.

Reads the values mlir-runner printed (printMemrefF32, in the order loss,
fc1.weight, fc1.bias, fc2.weight, fc2.bias, fc1 momentum buffer), computes
the same step independently and fails unless every value matches to
relative 1e-5 (absolute 1e-7 near zero).
"""

import re
import sys

import numpy as np

f32 = np.float32
w1 = np.array([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6], [-0.7, 0.8, 0.9],
               [0.05, -0.15, 0.25], [0.35, 0.45, -0.55]], f32)
b1 = np.array([0.01, -0.02, 0.03, -0.04, 0.05], f32)
w2 = np.array([[0.2, -0.1, 0.4, 0.3, -0.5], [-0.3, 0.6, -0.2, 0.1, 0.7]], f32)
b2 = np.array([0.1, -0.1], f32)
m = np.array([[0.01, 0.02, 0.03], [0.04, 0.05, 0.06], [0.07, 0.08, 0.09],
              [0.1, 0.11, 0.12], [0.13, 0.14, 0.15]], f32)
x = np.array([[1.0, 2.0, -1.0], [0.5, -0.5, 1.5], [-1.0, 0.0, 2.0],
              [2.0, 1.0, 0.5]], f32)
y = np.array([0, 1, 1, 0])
lr = f32(0.5)

# Forward.
z1 = x @ w1.T + b1
h = np.maximum(z1, 0)
logits = h @ w2.T + b2
shifted = logits - logits.max(axis=1, keepdims=True)
log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
loss = -log_probs[np.arange(4), y].mean()
# Backward.
probs = np.exp(log_probs)
dlogits = probs.copy()
dlogits[np.arange(4), y] -= 1
dlogits /= 4
dw2 = dlogits.T @ h
db2 = dlogits.sum(axis=0)
dz1 = (dlogits @ w2) * (z1 > 0)
dw1 = dz1.T @ x
db1 = dz1.sum(axis=0)
# SGD: momentum 0.9 on fc1.weight, weight decay 0.01 on fc1.bias.
m_new = 0.9 * m + dw1
w1_new = w1 - lr * m_new
b1_new = b1 - lr * (db1 + 0.01 * b1)
w2_new = w2 - lr * dw2
b2_new = b2 - lr * db2

expected = [np.array([loss]), w1_new, b1_new, w2_new, b2_new, m_new]
names = ["loss", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias",
         "fc1.weight.momentum_buffer"]

text = open(sys.argv[1]).read()
# Each printMemrefF32 prints a header line then the data.
blocks = re.split(r"Unranked Memref[^\n]*\n", text)[1:]
if len(blocks) != len(expected):
    sys.exit(f"expected {len(expected)} printed tensors, got {len(blocks)}")
failed = False
for name, want, block in zip(names, expected, blocks):
    got = np.array([float(v) for v in re.findall(r"-?\d+\.?\d*(?:e[-+]?\d+)?",
                                                 block)], np.float64)
    want = want.astype(np.float64).ravel()
    if got.size != want.size or not np.allclose(got, want, rtol=1e-5,
                                                atol=1e-7):
        print(f"{name}: got {got}, want {want}")
        failed = True
    else:
        print(f"{name}: ok ({want.size} values)")
sys.exit(1 if failed else 0)
