# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""The export traces with oneDNN on, except for recurrent modules.

AOTAutograd retraces the joint graph on the real tensors; with oneDNN off
(which nn.LSTM's export needs) depthwise convolutions ran PyTorch's slow
path there: EfficientNet-B0's export took twice as long (bench/README.md,
"Export and compile times").
"""

import pytest

torch = pytest.importorskip("torch")
import distopt.torch as dt  # noqa: E402


class _Recorder(torch.nn.Module):
    """Records whether oneDNN is enabled each time its forward runs."""

    def __init__(self, body):
        super().__init__()
        self.body = body
        self.seen = []

    def forward(self, x):
        self.seen.append(torch.backends.mkldnn.enabled)
        return self.body(x)


class _Conv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 3, 3, padding=1, groups=3)
        self.head = torch.nn.Linear(3 * 4 * 4, 2)

    def forward(self, x):
        return self.head(torch.relu(self.conv(x)).flatten(1))


class _LSTM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(3, 4, batch_first=True)
        self.head = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.lstm(x)[0][:, -1])


def test_convolutions_trace_with_onednn():
    torch.manual_seed(0)
    model = _Recorder(_Conv())
    before = torch.backends.mkldnn.enabled
    dt.export_train_step(model, torch.randn(2, 3, 4, 4),
                         torch.tensor([0, 1]))
    assert model.seen and all(model.seen), model.seen
    assert torch.backends.mkldnn.enabled == before


def test_recurrent_modules_trace_without_onednn():
    torch.manual_seed(0)
    model = _Recorder(_LSTM())
    before = torch.backends.mkldnn.enabled
    dt.export_train_step(model, torch.randn(2, 3, 3), torch.tensor([0, 1]))
    assert model.seen and not any(model.seen), model.seen
    assert torch.backends.mkldnn.enabled == before
