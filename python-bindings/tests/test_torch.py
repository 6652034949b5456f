# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""distopt.torch: PyTorch training steps exported to the train dialect and
run by DistOpt equal PyTorch's own steps (loss, parameters, optimizer and
batch-norm state), single-device, mirrored and tensor-parallel.

ResNet-18 (2x3x32x32) and MobileNetV2 (4x3x64x64) are compared in float64
and step by step: with two images their last batch norms normalize two
values per channel, which makes the step ill-conditioned for every
implementation (PyTorch's own float32 loss differs from its float64 loss by
1.3e-5 for ResNet-18 and by 3% for MobileNetV2 at 2x3x32x32, measured), so
no float32 comparison at rel 1e-4 could pass. The transformer models are
well-conditioned and compared in float32 over a 3-step trajectory."""

import copy
import os
import subprocess
import stat
import sys

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

import distopt
import distopt.torch as dt

# (The CNNs compile in seconds at -O0 -- MobileNetV2: 18 s in all instead of
# 100 s at -O3 -- and still run a step in tens of milliseconds.)
from equality import (FAST_COMPILE, RTOL, STEPS, close,  # noqa: E402
                      compare_distributed, normwise)


def torch_steps(model, optimizer, inputs, labels, steps):
    """PyTorch's own steps: the losses and the state by DistOpt's names."""
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(inputs), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    state = {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
    state.update({n: b.detach().numpy().copy() for n, b in model.named_buffers()
                  if "running" in n or "num_batches" in n})
    for name, p in model.named_parameters():
        for key, value in optimizer.state[p].items():
            state[f"{name}.{key}"] = value.detach().numpy().copy()
    return np.array(losses), state


def assert_equal_runs(result, losses, state, what):
    ours = np.asarray(result.losses, np.float64)
    assert ours.shape == losses.shape, (what, ours, losses)
    assert np.allclose(ours, losses, rtol=RTOL, atol=0), (what, ours, losses)
    for name, want in state.items():
        assert name in result.state, f"{what}: {name} missing from the run"
        assert close(result.state[name], want), \
            f"{what}: {name} differs by {normwise(result.state[name], want):.3g}"




def export_and_compare(model, make_optimizer, inputs, labels, extra=(),
                       stepwise=False):
    """Exports the step and runs STEPS steps with DistOpt and with PyTorch:
    one run of STEPS steps each (the trajectories agree), or with
    `stepwise` one DistOpt step from each of PyTorch's states (for steps
    whose gradient is so sensitive that rounding differences of one step
    grow past RTOL in the next). Returns the step and a STEPS-step run."""
    torch.manual_seed(0)
    reference = copy.deepcopy(model)
    optimizer = make_optimizer(reference)
    step = dt.export_train_step(model, inputs, labels,
                                optimizer=make_optimizer(model))
    if not stepwise:
        result = distopt.run(step.module, step.state, step.batch, steps=STEPS,
                             extra_args=extra)
        losses, state = torch_steps(reference, optimizer, inputs, labels, STEPS)
        assert_equal_runs(result, losses, state, "single device")
        return step, result
    state = dict(step.state)
    for k in range(STEPS):
        result = distopt.run(step.module, state, step.batch, steps=1,
                             extra_args=extra)
        losses, torch_state = torch_steps(reference, optimizer, inputs, labels, 1)
        assert_equal_runs(result, losses, torch_state, f"step {k + 1}")
        state.update({n: np.asarray(v, state[n].dtype)
                      for n, v in torch_state.items()})
    return step, distopt.run(step.module, step.state, step.batch, steps=STEPS,
                             extra_args=extra)




def sgd(model, lr=0.01):
    return torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9,
                           weight_decay=1e-4)


# -- the models -----------------------------------------------------------------

class GPT(nn.Module):
    """A GPT-style decoder: token + position embeddings, pre-norm causal
    blocks (tanh GELU, as GPT-2), a final layer norm and a head tied to the
    token embedding. No biases (as PaLM / LLaMA): attention's key bias gets
    a gradient that is zero in exact arithmetic, which Adam's normalization
    turns into a full step of rounding noise in any implementation."""

    def __init__(self, vocab=50, dim=32, heads=4, layers=2, context=8):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(context, dim)
        block = nn.TransformerEncoderLayer(
            dim, heads, 4 * dim, dropout=0.0, batch_first=True, norm_first=True,
            bias=False, activation=lambda t: F.gelu(t, approximate="tanh"))
        self.blocks = nn.TransformerEncoder(block, layers,
                                            enable_nested_tensor=False)
        self.ln = nn.LayerNorm(dim, bias=False)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.tok.weight
        self.register_buffer(
            "mask", nn.Transformer.generate_square_subsequent_mask(context))

    def forward(self, idx):
        h = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        h = self.blocks(h, mask=self.mask, is_causal=True)
        return self.head(self.ln(h)).reshape(-1, self.head.out_features)


def encoder_classifier():
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
    return nn.Sequential(nn.TransformerEncoder(layer, 2, enable_nested_tensor=False),
                         nn.Flatten(), nn.Linear(16 * 6, 5))


# -- equality with PyTorch --------------------------------------------------------

@pytest.mark.parametrize("optimizer", [
    lambda m: torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, nesterov=True),
    lambda m: torch.optim.Adam(m.parameters(), lr=0.01, weight_decay=0.01),
    lambda m: torch.optim.AdamW(m.parameters(), lr=0.01),
], ids=["sgd-nesterov", "adam", "adamw"])
def test_mlp_optimizers(optimizer):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    export_and_compare(model, optimizer, torch.randn(6, 8),
                       torch.randint(0, 4, (6,)))


def test_resnet18():
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10).double()
    x = torch.randn(2, 3, 32, 32, dtype=torch.float64)
    y = torch.randint(0, 10, (2,))
    # Two images make its gradient so sensitive to the parameters (the
    # batch norms of layer4 normalize two values per channel: conv1's
    # gradient reaches 300) that the 1e-10 by which the step-1 gradients
    # differ (f64 rounding in another order) grows past 1e-4 by step 3:
    # each step is compared from PyTorch's state.
    step, single = export_and_compare(model, sgd, x, y, FAST_COMPILE,
                                      stepwise=True)
    # Batch-norm running statistics are state the step updates.
    assert "layer1.0.bn1.running_mean" in step.state
    assert "layer1.0.bn1.num_batches_tracked" in single.state
    compare_distributed(step, single, FAST_COMPILE)


def test_mobilenet_v2():
    torch.manual_seed(0)
    model = torchvision.models.mobilenet_v2(num_classes=10, dropout=0.0).double()
    # 4 images of 64x64: its last batch norms see 16 values per channel (at
    # 2x32x32 they see two, and PyTorch's own f32 and f64 losses differ by 3%).
    x = torch.randn(4, 3, 64, 64, dtype=torch.float64)
    y = torch.randint(0, 10, (4,))
    step, single = export_and_compare(model, sgd, x, y, FAST_COMPILE,
                                      stepwise=True)
    compare_distributed(step, single, FAST_COMPILE)


def test_transformer_encoder():
    torch.manual_seed(0)
    step, single = export_and_compare(
        encoder_classifier(),
        lambda m: torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9),
        torch.randn(4, 6, 16), torch.randint(0, 5, (4,)))
    compare_distributed(step, single)


def test_gpt_tied_embeddings():
    torch.manual_seed(0)
    model = GPT()
    step, single = export_and_compare(
        model, lambda m: torch.optim.AdamW(m.parameters(), lr=1e-3),
        torch.randint(0, 50, (2, 8)), torch.randint(0, 50, (16,)))
    # One tensor under two names: one parameter, named as named_parameters()
    # names it, updated with the sum of both uses' gradients.
    assert "tok.weight" in step.param_names and "head.weight" not in step.state
    assert {"tok.weight.exp_avg", "tok.weight.exp_avg_sq", "tok.weight.step"} \
        <= set(step.state)
    compare_distributed(step, single)


# -- the contract -----------------------------------------------------------------

def test_state_names_and_save(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 3))
    step = dt.export_train_step(model, torch.randn(5, 4),
                                torch.randint(0, 3, (5,)),
                                optimizer=("sgd", {"lr": 0.1, "momentum": 0.9}))
    assert sorted(step.state) == sorted(
        ["0.weight", "0.bias", "1.weight", "1.bias", "2.weight", "2.bias",
         "0.weight.momentum_buffer", "0.bias.momentum_buffer",
         "1.weight.momentum_buffer", "1.bias.momentum_buffer",
         "2.weight.momentum_buffer", "2.bias.momentum_buffer",
         "1.running_mean", "1.running_var", "1.num_batches_tracked", "lr"])
    assert sorted(step.batch) == ["input", "labels"]
    paths = step.save(tmp_path / "step")
    out = tmp_path / "out.npz"
    subprocess.run([distopt._config.DIST_RUN, paths[0], f"--state={paths[1]}",
                    f"--data={paths[2]}", "--steps=2", f"--out={out}"],
                   check=True, capture_output=True)
    with np.load(out) as results:
        assert results["1.num_batches_tracked"] == 2
        assert results["loss"].shape == (2,)


def test_save_refuses_non_regular_targets(tmp_path):
    """save() replaces only regular files: a FIFO named state.npz stays a
    FIFO, and nothing of the three files is written."""
    model = nn.Linear(4, 3)
    step = dt.export_train_step(model, torch.randn(5, 4),
                                torch.randint(0, 3, (5,)),
                                optimizer=("sgd", {"lr": 0.1}))
    directory = tmp_path / "step"
    directory.mkdir()
    os.mkfifo(directory / "state.npz")
    with pytest.raises(ValueError, match="state.npz.*a FIFO"):
        step.save(directory)
    assert stat.S_ISFIFO(os.stat(directory / "state.npz").st_mode)
    assert sorted(p.name for p in directory.iterdir()) == ["state.npz"]


def test_optimizer_with_state_continues():
    """An optimizer that has already stepped exports its state."""
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    x, y = torch.randn(5, 4), torch.randint(0, 3, (5,))
    F.cross_entropy(model(x), y).backward()
    opt.step()
    step = dt.export_train_step(model, x, y, optimizer=opt)
    assert step.state["weight.step"] == 1
    assert np.array_equal(step.state["weight.exp_avg"],
                          opt.state[model.weight]["exp_avg"].numpy())


def test_dropout_is_distributed_like_the_single_device_step():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.5),
                          nn.Linear(32, 4))
    step = dt.export_train_step(model, torch.randn(8, 8),
                                torch.randint(0, 4, (8,)))
    assert "dropout_seed" in step.state and "train.dropout" in str(step.module)
    single = distopt.run(step.module, step.state, step.batch, steps=2)
    strategy = distopt.MirroredStrategy(2)
    mirrored = distopt.launch(strategy.distribute(step.module), step.state,
                              step.batch, steps=2, strategy=strategy)
    assert np.allclose(mirrored.losses, single.losses, rtol=RTOL)
    for name, want in single.state.items():
        assert close(mirrored.state[name], want), name


class Transposed(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose3d(1, 2, 2)
        self.out = nn.Linear(2 * 3 * 3 * 3, 3)

    def forward(self, x):
        return self.out(self.up(x).flatten(1))


class Cumulative(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return torch.cumsum(self.fc(x), dim=1)


def test_unsupported_op_names_op_and_module():
    with pytest.raises(dt.UnsupportedOpError) as error:
        dt.export_train_step(Transposed(), torch.randn(2, 1, 2, 2, 2),
                             torch.randint(0, 3, (2,)))
    assert error.value.op == "aten.convolution.default"
    assert error.value.module_path == "up (ConvTranspose3d)"
    assert "3-D transposed convolution" in str(error.value)
    assert "test_torch.py" in error.value.line and "self.up(x)" in str(error.value)
    with pytest.raises(dt.UnsupportedOpError) as error:
        dt.export_train_step(Cumulative(), torch.randn(2, 4),
                             torch.randint(0, 3, (2,)))
    assert "aten.cumsum" in str(error.value)
    assert error.value.module_path == "<model> (Cumulative)"


def test_bad_arguments():
    model = nn.Linear(4, 3)
    x, y = torch.randn(2, 4), torch.randint(0, 3, (2,))
    with pytest.raises(ValueError, match="unknown optimizer 'lamb'"):
        dt.export_train_step(model, x, y, optimizer=("lamb", {"lr": 0.1}))
    with pytest.raises(ValueError, match="dampening"):
        dt.export_train_step(model, x, y, optimizer=torch.optim.SGD(
            model.parameters(), lr=0.1, momentum=0.9, dampening=0.5))
    with pytest.raises(ValueError, match="does not update parameters bias"):
        dt.export_train_step(model, x, y, optimizer=torch.optim.SGD(
            [model.weight], lr=0.1))
    with pytest.raises(ValueError, match="unknown loss"):
        dt.export_train_step(model, x, y, loss="hinge")


def test_command_line(tmp_path):
    out = tmp_path / "resnet"
    done = subprocess.run(
        [sys.executable, "-m", "distopt.export_torch",
         "torchvision.models:resnet18", "--kwargs", '{"num_classes": 10}',
         "--input-shape", "2,3,32,32", "--optimizer", "sgd", "--lr", "0.1",
         "--momentum", "0.9", "-o", str(out)],
        capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(out)) == ["batch.npz", "state.npz", "step.mlir"]
    with np.load(out / "batch.npz") as batch:
        assert batch["x"].shape == (2, 3, 32, 32)   # resnet.forward(x)
        assert batch["labels"].min() >= 0 and batch["labels"].max() < 10
    # Under autocast with a GradScaler: the mixed step and its scale state.
    mixed = tmp_path / "mixed"
    done = subprocess.run(
        [sys.executable, "-m", "distopt.export_torch",
         "torch.nn:Linear", "--kwargs", '{"in_features": 8, "out_features": 4}',
         "--input-shape", "6,8", "--autocast", "f16", "--grad-scaler",
         "--init-scale", "1024", "-o", str(mixed)],
        capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    text = (mixed / "step.mlir").read_text()
    assert 'train.mixed_precision = "compute=f16 loss-scale=dynamic' in text
    assert "tensor<6x8xf16>" in text
    with np.load(mixed / "state.npz") as state:
        assert state["loss_scale"] == 1024.0
        assert state["loss_scale.growth_tracker"] == 0.0
    bad = subprocess.run(
        [sys.executable, "-m", "distopt.export_torch", "torch.nn:Linear",
         "--input-shape", "2,3", "--grad-scaler", "-o", str(tmp_path / "y")],
        capture_output=True, text=True)
    assert bad.returncode != 0
    assert "--grad-scaler needs --autocast" in bad.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "distopt.export_torch", "torchvision.models:nope",
         "--input-shape", "2,3", "-o", str(tmp_path / "x")],
        capture_output=True, text=True)
    assert bad.returncode != 0
    assert "torchvision.models has no attribute 'nope'" in bad.stderr
