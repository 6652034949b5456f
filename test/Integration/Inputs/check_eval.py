# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Checks dist-run's evaluation lines against NumPy.

    check_eval.py STATE.npz EVAL_DIR BATCH STEP LOG...

Computes the MLP example's mean cross-entropy and accuracy (argmax of the
logits, ties to the label) with the parameters of STATE.npz over the whole
batches of EVAL_DIR, in order, and checks each LOG's "eval after step STEP"
line: the loss within 1e-4 relative, the accuracy and sample count exactly.
"""

import re
import sys

import numpy as np

state = np.load(sys.argv[1])
x = np.load(f"{sys.argv[2]}/x.npy").astype(np.float64)
y = np.load(f"{sys.argv[2]}/y.npy")
batch, step = int(sys.argv[3]), int(sys.argv[4])
samples = len(x) // batch * batch
x, y = x[:samples], y[:samples]
p = {k: state[k].astype(np.float64) for k in state.files}
hidden = np.maximum(x @ p["fc1.weight"].T + p["fc1.bias"], 0)
logits = hidden @ p["fc2.weight"].T + p["fc2.bias"]
shifted = logits - logits.max(axis=1, keepdims=True)
log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
per_sample = -log_probs[np.arange(samples), y]
# dist-run averages the batch means (equal batches: the sample mean).
loss = per_sample.reshape(-1, batch).mean(axis=1).mean()
accuracy = (logits[np.arange(samples), y] >= logits.max(axis=1)).mean()
pattern = re.compile(rf"eval after step {step}: loss ([0-9.]+), "
                     rf"accuracy ([0-9.]+) \((\d+) samples")
failed = False
for path in sys.argv[5:]:
    match = pattern.search(open(path).read())
    if not match:
        print(f"{path}: no 'eval after step {step}' line")
        failed = True
        continue
    got_loss, got_accuracy, got_samples = match.groups()
    if (abs(float(got_loss) - loss) > 1e-4 * abs(loss) + 1e-6
            or abs(float(got_accuracy) - accuracy) > 1e-4
            or int(got_samples) != samples):
        print(f"{path}: loss {got_loss}, accuracy {got_accuracy}, "
              f"{got_samples} samples; NumPy: {loss:.6f}, {accuracy:.4f}, "
              f"{samples}")
        failed = True
if failed:
    sys.exit(1)
print(f"ok: {len(sys.argv) - 5} runs: loss {loss:.6f}, accuracy "
      f"{accuracy:.4f} over {samples} samples")
