# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""The export traces on fake tensors: no op of the step runs on the
model's real tensors, and tensor constants the forward makes keep
their values (should one come out fake, it is traced again on the real
tensors).

Before: aot_export_module retraced the joint graph on the real parameters
and inputs, running every op of the step once (ResNet-50 at 2x3x64x64:
9.5 s CPU, EfficientNet-B0 ~11 s; on fake tensors 2.8 s and 4.2 s, the
same MLIR; bench/README.md, "Export and compile times")."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import distopt  # noqa: E402
import distopt.torch as dt  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensor, is_fake  # noqa: E402


class _Model(torch.nn.Module):
    def __init__(self, table=False):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.table = table
        self.scale = torch.tensor([0.5, -1.0, 2.0])     # not a buffer

    def forward(self, x):
        y = self.fc(x)
        if self.table:
            # Constants made in forward or kept outside the state: their
            # values are part of the step.
            y = y * torch.tensor([1.0, 2.0, 3.0]) + self.scale
        return y


@pytest.fixture
def traces(monkeypatch):
    """For each aot_export_module call of the export: were its tensors
    fake? (Its retrace runs every op of the step on the tensors it gets.)"""
    import torch._functorch.aot_autograd as aot
    seen, original = [], aot.aot_export_module

    def recording(module, args, **kwargs):
        seen.append(all(is_fake(a) for a in args) and
                    all(is_fake(p) for p in module.parameters()))
        return original(module, args, **kwargs)
    monkeypatch.setattr(aot, "aot_export_module", recording)
    return seen


def _steps(model, x, y):
    step = dt.export_train_step(model, x, y, loss="mse",
                                optimizer=("sgd", {"lr": 0.1}))
    result = distopt.run(step.module, step.state, step.batch, steps=1,
                         extra_args=("--opt-level=0",))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return result, loss.item()


def test_plain_model_traces_only_fake_tensors(traces):
    torch.manual_seed(0)
    _steps(_Model(), torch.randn(2, 4), torch.randn(2, 3))
    assert traces == [True]


def test_constants_made_in_forward_keep_their_values(traces):
    torch.manual_seed(0)
    model = _Model(table=True)
    x, y = torch.randn(2, 4), torch.randn(2, 3)
    result, want = _steps(model, x, y)
    assert traces[0]
    assert np.isclose(result.losses[0], want, rtol=1e-5)
    assert np.allclose(result.state["fc.weight"],
                       model.fc.weight.detach().numpy(), rtol=1e-5, atol=1e-7)


def test_parameters_and_buffers_are_real_after_the_export():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4),
                                torch.nn.Linear(4, 2))
    before = {n: t.clone() for n, t in model.state_dict().items()}
    step = dt.export_train_step(model, torch.randn(3, 4),
                                torch.tensor([0, 1, 1]))
    for name, tensor in model.state_dict().items():
        assert not isinstance(tensor, FakeTensor), name
        assert torch.equal(tensor, before[name]), name
    assert np.array_equal(step.state["1.running_mean"],
                          before["1.running_mean"].numpy())
