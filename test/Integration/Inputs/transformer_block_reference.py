# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Independent NumPy check of examples/transformer_block.mlir's first loss.

    transformer_block_reference.py STATE.npz DATA.npz OUT.npz

Runs the block's forward pass (pre-LN attention and GELU MLP, a linear head,
token cross-entropy) in float64 on the initial state and data, and checks
that the first loss dist-run reported in OUT.npz matches it to rtol 1e-5.
"""

import sys

import numpy as np

state, data, out = (np.load(path) for path in sys.argv[1:4])
p = {name: state[name].astype(np.float64) for name in state.files}
x = data["x"].astype(np.float64)
labels = data["labels"]
heads = 4


def layer_norm(v, w, b):
    mean = v.mean(-1, keepdims=True)
    var = ((v - mean) ** 2).mean(-1, keepdims=True)
    return (v - mean) / np.sqrt(var + 1e-5) * w + b


def linear(v, name):
    return v @ p[name + ".weight"].T + p[name + ".bias"]


def split(v):
    b, s, h = v.shape
    return v.reshape(b, s, heads, h // heads).transpose(0, 2, 1, 3)


ln1 = layer_norm(x, p["ln1.weight"], p["ln1.bias"])
q, k, v = (split(linear(ln1, "attn." + n)) for n in "qkv")
scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
scores -= scores.max(-1, keepdims=True)
probs = np.exp(scores)
probs /= probs.sum(-1, keepdims=True)
ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(x.shape)
h1 = x + linear(ctx, "attn.out")
fc1 = linear(layer_norm(h1, p["ln2.weight"], p["ln2.bias"]), "mlp.fc1")
act = 0.5 * fc1 * (1 + np.tanh(np.sqrt(2 / np.pi) * (fc1 + 0.044715 * fc1**3)))
logits = linear(h1 + linear(act, "mlp.fc2"), "head")
shifted = logits - logits.max(-1, keepdims=True)
log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
expected = -np.take_along_axis(log_probs, labels[..., None], -1).mean()

loss_name = [name for name in out.files if "loss" in name][0]
got = float(np.ravel(out[loss_name])[0])
print(f"numpy loss {expected:.6f}, dist-run loss {got:.6f}")
sys.exit(0 if np.isclose(got, expected, rtol=1e-5, atol=0) else 1)
