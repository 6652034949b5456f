# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""PyTorch eager reference of the examples' training steps.

    torch_reference.py MODEL STATE.npz DATA.npz OUT.npz [OUT.npz ...]

MODEL is mlp (SGD with momentum 0.9), mlp_adam or transformer_block (AdamW,
betas 0.9/0.999, eps 1e-8, weight decay 0.01): examples/MODEL.mlir written
with torch.nn.functional. Trains it from STATE and DATA (dist-run
--init-state/--init-data) for as many steps as the first OUT has losses and
checks every OUT (a dist-run --out file) against it: the first loss (the
same forward pass) to rtol 1e-5, later ones to rtol 1e-5 under SGD and
1e-4 under AdamW (see LOSS_RTOL); the final parameters and optimizer state
to the tolerances below. bench/step_time.py times the same module.
"""

import sys

import numpy as np
import torch
import torch.nn.functional as F

STATE_SUFFIXES = (".momentum_buffer", ".exp_avg", ".exp_avg_sq", ".step")


class Step(torch.nn.Module):
    """The example's parameters (by train.name) and its loss."""

    def __init__(self, model, state):
        super().__init__()
        self.model = model
        self.names = [name for name in state.files
                      if name != "lr" and not name.endswith(STATE_SUFFIXES)]
        self.params = torch.nn.ParameterDict({
            name.replace(".", "/"): torch.nn.Parameter(torch.tensor(state[name]))
            for name in self.names})

    def w(self, name):
        return self.params[name.replace(".", "/")]

    def linear(self, v, name):
        return F.linear(v, self.w(name + ".weight"), self.w(name + ".bias"))

    def forward(self, x, y):
        if self.model.startswith("mlp"):
            return F.cross_entropy(
                self.linear(F.relu(self.linear(x, "fc1")), "fc2"), y)
        # examples/transformer_block.mlir: pre-LN attention (4 heads), GELU
        # MLP, a linear head, token cross-entropy.
        b, s, h = x.shape

        def norm(v, name):
            return F.layer_norm(v, (h,), self.w(name + ".weight"),
                                self.w(name + ".bias"), 1e-5)

        def split(v):
            return v.reshape(b, s, 4, h // 4).transpose(1, 2)
        ln1 = norm(x, "ln1")
        q, k, v = (split(self.linear(ln1, "attn." + n)) for n in "qkv")
        probs = torch.softmax(q @ k.transpose(-1, -2) / (h // 4) ** 0.5, -1)
        ctx = (probs @ v).transpose(1, 2).reshape(b, s, h)
        h1 = x + self.linear(ctx, "attn.out")
        act = F.gelu(self.linear(norm(h1, "ln2"), "mlp.fc1"),
                     approximate="tanh")
        logits = self.linear(h1 + self.linear(act, "mlp.fc2"), "head")
        return F.cross_entropy(logits.reshape(b * s, -1), y.reshape(-1))


def inputs(model, data):
    """The batch as tensors: (x, labels)."""
    y_name = "y" if model.startswith("mlp") else "labels"
    return torch.tensor(data["x"]), torch.tensor(data[y_name]).long()


def make_optimizer(model, step, lr):
    if model == "mlp":
        return torch.optim.SGD(step.parameters(), lr=lr, momentum=0.9)
    return torch.optim.AdamW(step.parameters(), lr=lr, betas=(0.9, 0.999),
                             eps=1e-8, weight_decay=0.01)


def train(model, state, data, steps):
    """Losses of `steps` steps and the final state, named like dist-run's."""
    step = Step(model, state)
    x, y = inputs(model, data)
    opt = make_optimizer(model, step, float(state["lr"]))
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = step(x, y)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    final = {}
    for name in step.names:
        param = step.w(name)
        final[name] = param.detach().numpy()
        for key, value in opt.state[param].items():
            final[name + "." + key] = np.asarray(value, dtype=np.float32)
    return np.array(losses, dtype=np.float32), final


# Later losses under AdamW: a weight gradient that cancels to about eps
# (1e-8) is computed with ~1% fp32 rounding error in any summation order
# (examples/mlp_adam.mlir, seed 1: fc1.weight[13, 733], -1.472e-8 in
# float64, -1.451e-8 here), and AdamW's g / (|g| + eps) turns that into a
# parameter difference of 3.5e-5 after one step; the loss of step 3 then
# differs by 3.6e-5 relative from float64 (PyTorch's fp32 by 2e-7).
LOSS_RTOL = {"mlp": 1e-5, "mlp_adam": 1e-4, "transformer_block": 1e-4}

# Parameters: 5e-4 absolute (1/20 of the examples' lr), for the same reason
# and the one transformer_block.test gives (AdamW divides each gradient by
# its own magnitude, so rounding noise in gradients that are zero or about
# eps in exact arithmetic moves a parameter by a fraction of lr; seen:
# 2.5e-4 on 1 element of mlp.fc2.weight in the mirrored transformer block);
# moments relative, with an absolute floor for the near-zero gradients
# whose summation order differs.
TOLERANCES = {"": (0.0, 5e-4), ".momentum_buffer": (1e-4, 1e-6),
              ".exp_avg": (1e-3, 1e-6), ".exp_avg_sq": (1e-3, 1e-9),
              ".step": (0.0, 0.0)}


def tolerance(name):
    for suffix in STATE_SUFFIXES:
        if name.endswith(suffix):
            return TOLERANCES[suffix]
    return TOLERANCES[""]


def main():
    model, state_path, data_path, *outs = sys.argv[1:]
    state, data = np.load(state_path), np.load(data_path)
    runs = [np.load(path) for path in outs]
    losses, final = train(model, state, data, len(runs[0]["loss"]))
    failures = []
    for path, run in zip(outs, runs):
        if not (np.allclose(run["loss"][:1], losses[:1], rtol=1e-5, atol=0)
                and np.allclose(run["loss"], losses, rtol=LOSS_RTOL[model],
                                atol=0)):
            failures.append(f"{path}: losses {run['loss']} != PyTorch's "
                            f"{losses}")
        for name, want in final.items():
            got = run[name]
            rtol, atol = tolerance(name)
            if got.shape != want.shape or not np.allclose(
                    got, want, rtol=rtol, atol=atol):
                err = np.max(np.abs(got.astype(np.float64) - want))
                failures.append(f"{path}: {name} differs from PyTorch "
                                f"(max abs error {err:.3g})")
    print(f"PyTorch losses: {' '.join(f'{l:.6f}' for l in losses)}")
    if failures:
        sys.exit("\n".join(failures))
    print(f"{len(outs)} run(s) equal PyTorch: {len(losses)} losses, "
          f"{len(final)} state arrays")


if __name__ == "__main__":
    main()
