#!/usr/bin/env python3
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""The model-zoo coverage table: every torchvision classification model, a
few timm models, small Hugging Face transformers and nn building blocks,
each exported with distopt.torch.export_train_step, run for one DistOpt step
and compared with PyTorch's own step (loss, every parameter, optimizer and
batch-norm array), optionally distributed (mirrored, tensor parallel,
ZeRO-3, pipeline) and compared with the single-device run.

    build/venv/bin/python bench/model_zoo.py                 # the whole zoo
    build/venv/bin/python bench/model_zoo.py --models ci     # CI's subset
    build/venv/bin/python bench/model_zoo.py --models resnet18,gpt2 \\
        --strategies --json results.json
    build/venv/bin/python bench/model_zoo.py --export-only   # no compile

Each model runs in a subprocess of its own under --timeout (a hang or a
crash is one row of the table, never the end of the run). Results are kept
in the JSON file (--json) keyed by model, so a run of a few models updates their rows and the table is
written from every row the file holds (`--out`; `--update-guide` rewrites
the generated region of docs/guides/pytorch.md from it too).

Models with batch norm are built and compared in float64: with the tiny
batches used here (2 to 4 images) their last batch norms normalize a few
values per channel, which makes the step ill-conditioned for every
implementation (PyTorch's own float32 and float64 losses of MobileNetV2 at
2x3x32x32 differ by 3%), so a float32 comparison at 1e-4 measures the
conditioning, not the importer. Dropout and stochastic depth are off
(p = 0): DistOpt's dropout masks are its own (counter-based RNG), not
PyTorch's, so a step with dropout equals PyTorch's only in distribution.
"""

import argparse
import copy
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(ROOT, "docs", "reference", "model-coverage.md")
GUIDE = os.path.join(ROOT, "docs", "guides", "pytorch.md")
GUIDE_BEGIN = "<!-- model-coverage:begin -->"
GUIDE_END = "<!-- model-coverage:end -->"

RTOL = 1e-4         # normwise, of each array's largest magnitude
FLOOR = 1e-5        # the magnitude below which an array is zero up to rounding
COMPILE_ARGS = ("--opt-level=0", "--cache=false")
STRATEGIES = ("mirrored", "tp", "zero3", "pipeline")


# -- the models -----------------------------------------------------------------
#
# Each entry: name -> Spec. `build()` returns (model, inputs, labels); the
# model is built without weights (random init, seeded), small input.

class Spec:
    def __init__(self, name, source, build, input_desc, float64=False,
                 groups=(), strategies=STRATEGIES, note=""):
        self.name, self.source, self.build = name, source, build
        self.input_desc, self.float64 = input_desc, float64
        self.groups = set(groups) | {source}
        self.strategies, self.note = strategies, note


def _images(n, size, classes=10):
    import torch
    return (torch.randn(n, 3, size, size), torch.randint(0, classes, (n,)))


def _torchvision(name, size=32, batch=2, **kwargs):
    def build():
        import torchvision
        model = getattr(torchvision.models, name)(weights=None, num_classes=10,
                                                  **kwargs)
        return (model,) + _images(batch, size)
    return build


def _no_stochastic_depth(build):
    def wrapped():
        import torchvision
        model, x, labels = build()
        for module in model.modules():
            if isinstance(module, torchvision.ops.StochasticDepth):
                module.p = 0.0
        return model, x, labels
    return wrapped


def _maxvit_tiny():
    # maxvit_t's widths and depths with partition size 2 (maxvit_t fixes 7,
    # which needs 224x224 images: every stage's grid must divide by it).
    import torchvision
    model = torchvision.models.MaxVit(
        input_size=(64, 64), stem_channels=64, partition_size=2,
        block_channels=[64, 128, 256, 512], block_layers=[2, 2, 5, 2],
        head_dim=32, stochastic_depth_prob=0.0, num_classes=10)
    return (model,) + _images(2, 64)


def _vit_tiny():
    import torchvision
    model = torchvision.models.VisionTransformer(
        image_size=32, patch_size=8, num_layers=2, num_heads=4,
        hidden_dim=64, mlp_dim=128, num_classes=10)
    return (model,) + _images(2, 32)


def _timm(name, size=32, batch=2, **kwargs):
    def build():
        import timm
        model = timm.create_model(name, pretrained=False, num_classes=10,
                                  drop_rate=0.0, drop_path_rate=0.0, **kwargs)
        return (model,) + _images(batch, size)
    return build


def _hf_wrapper(hf_model, flatten):
    import torch.nn as nn

    class Logits(nn.Module):
        """The Hugging Face model's logits (flattened over the tokens for a
        language model, for cross_entropy against (batch*seq,) labels)."""

        def __init__(self):
            super().__init__()
            self.hf = hf_model

        def forward(self, input_ids):
            logits = self.hf(input_ids=input_ids).logits
            return logits.reshape(-1, logits.shape[-1]) if flatten else logits

    return Logits()


def _hf(kind):
    def build():
        import torch
        import transformers as tr
        vocab, seq, batch = 100, 8, 2
        if kind == "gpt2":
            config = tr.GPT2Config(vocab_size=vocab, n_positions=seq, n_embd=32,
                                   n_layer=2, n_head=4, bos_token_id=0,
                                   eos_token_id=0, resid_pdrop=0.0,
                                   embd_pdrop=0.0, attn_pdrop=0.0)
            model, flatten = tr.GPT2LMHeadModel(config), True
        elif kind == "bert":
            config = tr.BertConfig(vocab_size=vocab, hidden_size=32,
                                   num_hidden_layers=2, num_attention_heads=4,
                                   intermediate_size=64,
                                   max_position_embeddings=seq, num_labels=3,
                                   hidden_dropout_prob=0.0,
                                   attention_probs_dropout_prob=0.0)
            model, flatten = tr.BertForSequenceClassification(config), False
        elif kind == "llama":
            config = tr.LlamaConfig(vocab_size=vocab, hidden_size=32,
                                    intermediate_size=64, num_hidden_layers=2,
                                    num_attention_heads=4, num_key_value_heads=2,
                                    max_position_embeddings=seq,
                                    attention_dropout=0.0)
            model, flatten = tr.LlamaForCausalLM(config), True
        else:
            raise ValueError(kind)
        model.config.use_cache = False
        ids = torch.randint(0, vocab, (batch, seq))
        labels = torch.randint(0, vocab if flatten else 3,
                               (batch * seq,) if flatten else (batch,))
        return _hf_wrapper(model, flatten), ids, labels
    return build


def _nn(kind):
    def build():
        import torch
        import torch.nn as nn

        class Recurrent(nn.Module):
            def __init__(self, cell):
                super().__init__()
                self.rnn = cell(8, 16, batch_first=True)
                self.head = nn.Linear(16, 4)

            def forward(self, x):
                out, _ = self.rnn(x)
                return self.head(out[:, -1])

        class Gated(nn.Module):
            def __init__(self):
                super().__init__()
                self.up = nn.Linear(8, 32)
                self.down = nn.Linear(16, 4)

            def forward(self, x):
                a, b = self.up(x).chunk(2, dim=-1)
                return self.down(a * torch.nn.functional.silu(b))

        if kind in ("lstm", "gru"):
            model = Recurrent(nn.LSTM if kind == "lstm" else nn.GRU)
            x = torch.randn(4, 6, 8)
        elif kind == "silu_mlp":
            model = nn.Sequential(nn.Linear(8, 32), nn.SiLU(), nn.Linear(32, 4))
            x = torch.randn(4, 8)
        elif kind == "gelu_mlp":
            model = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 4))
            x = torch.randn(4, 8)
        elif kind == "gated":
            model, x = Gated(), torch.randn(4, 8)
        elif kind == "conv1d":
            model = nn.Sequential(nn.Conv1d(3, 8, 3, padding=1), nn.ReLU(),
                                  nn.Conv1d(8, 8, 3, padding=1), nn.ReLU(),
                                  nn.AdaptiveAvgPool1d(1), nn.Flatten(),
                                  nn.Linear(8, 4))
            x = torch.randn(4, 3, 16)
        else:
            raise ValueError(kind)
        return model, x, torch.randint(0, 4, (x.shape[0],))
    return build


# CI's subset (python-bindings/tests/test_model_zoo.py): small models of
# distinct op families, about 1.5 min in all on 2 cores. ShuffleNetV2:
# batch norm, chunk and the channel shuffle; SqueezeNet: ceil-mode max
# pooling and concatenation; the tiny ViT: exact GELU, attention, layer
# norm; GPT-2 (transformers): causal attention, tanh GELU, tied head; the
# LSTM: its recurrence unrolled; the gated layer: chunk and SiLU;
# the 1-D convolutions and adaptive pooling.
CI = ("shufflenet_v2_x0_5", "squeezenet1_1", "vit_tiny", "hf:gpt2",
      "nn:lstm", "nn:gated", "nn:conv1d")


# At 2x3x32x32 these end in 1x1 feature maps whose batch norms normalize two
# values per channel: PyTorch's own float64 step then moves by 0.24
# (ResNet-152) and 0.13 (EfficientNet-B0) of an array's largest magnitude
# when the input moves by 1e-13 (RegNetY-400MF: 1.6e-4), so no two
# implementations can agree to 1e-4. At these sizes the same probe moves
# them by 2e-9, 5e-10 and 1.3e-10.
WELL_CONDITIONED = ("larger images: at 2x3x32x32 the step is ill-conditioned "
                    "(1x1 maps, batch norm over 2 values)")


def _registry():
    tv, specs = "torchvision", []

    def add(*args, **kwargs):
        specs.append(Spec(*args, **kwargs))

    no_drop = {"dropout": 0.0}
    for name in ("resnet18", "resnet34", "resnet50", "resnet101", "resnet152",
                 "resnext50_32x4d", "wide_resnet50_2"):
        if name == "resnet152":     # see WELL_CONDITIONED
            add(name, tv, _torchvision(name, size=64), "2x3x64x64",
                float64=True, note=WELL_CONDITIONED)
        else:
            add(name, tv, _torchvision(name), "2x3x32x32", float64=True)
    add("mobilenet_v2", tv, _torchvision("mobilenet_v2", **no_drop),
        "2x3x32x32", float64=True)
    add("mobilenet_v3_small", tv, _torchvision("mobilenet_v3_small", **no_drop),
        "2x3x32x32", float64=True)
    add("mobilenet_v3_large", tv, _torchvision("mobilenet_v3_large", **no_drop),
        "2x3x32x32", float64=True)
    add("efficientnet_b0", tv, _torchvision(
        "efficientnet_b0", size=64, batch=4, **no_drop,
        stochastic_depth_prob=0.0),
        "4x3x64x64", float64=True, note=WELL_CONDITIONED)
    add("efficientnet_v2_s", tv, _torchvision(
        "efficientnet_v2_s", size=64, **no_drop, stochastic_depth_prob=0.0),
        "2x3x64x64", float64=True, note=WELL_CONDITIONED)
    add("regnet_y_400mf", tv, _torchvision("regnet_y_400mf", size=64),
        "2x3x64x64", float64=True, note=WELL_CONDITIONED)
    add("regnet_x_400mf", tv, _torchvision("regnet_x_400mf", size=64),
        "2x3x64x64", float64=True, note=WELL_CONDITIONED)
    add("shufflenet_v2_x0_5", tv, _torchvision("shufflenet_v2_x0_5"),
        "2x3x32x32", float64=True)
    add("shufflenet_v2_x1_0", tv, _torchvision("shufflenet_v2_x1_0"),
        "2x3x32x32", float64=True)
    add("squeezenet1_0", tv, _torchvision("squeezenet1_0", **no_drop),
        "2x3x32x32")
    add("squeezenet1_1", tv, _torchvision("squeezenet1_1", **no_drop),
        "2x3x32x32")
    add("densenet121", tv, _torchvision("densenet121"), "2x3x32x32",
        float64=True)
    add("googlenet", tv, _torchvision("googlenet", aux_logits=False,
                                      init_weights=False, **no_drop),
        "2x3x32x32", float64=True)
    add("inception_v3", tv, _torchvision("inception_v3", size=75,
                                         aux_logits=False, init_weights=False,
                                         **no_drop),
        "2x3x75x75", float64=True, note="75x75: the smallest it accepts")
    add("mnasnet0_5", tv, _torchvision("mnasnet0_5", **no_drop), "2x3x32x32",
        float64=True)
    add("convnext_tiny", tv, _torchvision("convnext_tiny",
                                          stochastic_depth_prob=0.0),
        "2x3x32x32")
    add("vit_b_16", tv, _torchvision("vit_b_16", image_size=32), "2x3x32x32",
        note="image_size=32 (4 patches)")
    add("vit_tiny", tv, _vit_tiny, "2x3x32x32",
        note="VisionTransformer(patch 8, 2 layers, 4 heads, dim 64)")
    add("swin_t", tv, _no_stochastic_depth(_torchvision("swin_t")),
        "2x3x32x32", note="stochastic depth set to p=0 after building "
        "(swin_t fixes 0.2)")
    add("maxvit_t", tv, _maxvit_tiny, "2x3x64x64", float64=True,
        note="maxvit_t's widths/depths, partition 2 (7 needs 224x224)")

    add("timm:resnet18d", "timm", _timm("resnet18d"), "2x3x32x32",
        float64=True)
    add("timm:efficientnet_b0", "timm", _timm("efficientnet_b0", size=64,
                                              batch=4),
        "4x3x64x64", float64=True, note=WELL_CONDITIONED)
    add("timm:vit_tiny_patch16_224", "timm",
        _timm("vit_tiny_patch16_224", img_size=32), "2x3x32x32",
        note="img_size=32")
    add("timm:convnext_atto", "timm", _timm("convnext_atto"), "2x3x32x32")
    add("timm:mobilevitv2_050", "timm", _timm("mobilevitv2_050", size=64),
        "2x3x64x64", float64=True)

    add("hf:gpt2", "hf", _hf("gpt2"), "2x8 tokens",
        note="GPT2LMHeadModel: 2 layers, dim 32, vocab 100")
    add("hf:bert", "hf", _hf("bert"), "2x8 tokens",
        note="BertForSequenceClassification: 2 layers, dim 32, vocab 100")
    add("hf:llama", "hf", _hf("llama"), "2x8 tokens",
        note="LlamaForCausalLM: 2 layers, dim 32, 4 heads / 2 KV, vocab 100")

    add("nn:lstm", "nn", _nn("lstm"), "4x6x8")
    add("nn:gru", "nn", _nn("gru"), "4x6x8")
    add("nn:silu_mlp", "nn", _nn("silu_mlp"), "4x8")
    add("nn:gelu_mlp", "nn", _nn("gelu_mlp"), "4x8")
    add("nn:gated", "nn", _nn("gated"), "4x8", note="chunk + SiLU gate")
    add("nn:conv1d", "nn", _nn("conv1d"), "4x3x16")
    for spec in specs:
        if spec.name in CI:
            spec.groups.add("ci")
    return {s.name: s for s in specs}


MODELS = _registry()


def select(names):
    """The specs named by `names` (model names or groups: torchvision, timm,
    hf, nn, ci, all), in the registry's order."""
    wanted = set()
    for name in names:
        if name == "all":
            wanted |= set(MODELS)
        elif name in MODELS:
            wanted.add(name)
        else:
            group = {n for n, s in MODELS.items() if name in s.groups}
            if not group:
                raise SystemExit(f"model_zoo: no model or group {name!r} "
                                 f"(groups: torchvision, timm, hf, nn, ci, all)")
            wanted |= group
    return [s for n, s in MODELS.items() if n in wanted]


# -- one model ------------------------------------------------------------------

def rel_error(ours, want):
    """max |ours - want| over (max |want| + FLOOR): normwise relative, with
    an array that is zero up to rounding (a bias before a batch norm, whose
    gradient is zero in exact arithmetic) measured against FLOOR. Infinite
    for a shape mismatch."""
    import numpy as np
    a, b = np.asarray(ours, np.float64), np.asarray(want, np.float64)
    if a.shape != b.shape:
        return float("inf")
    scale = float(np.max(np.abs(b), initial=0.0))
    return float(np.max(np.abs(a - b), initial=0.0)) / (scale + FLOOR)


def close(ours, want):
    """Within RTOL of want's largest magnitude, or of FLOOR for an array
    that is zero up to rounding: rel_error <= RTOL."""
    return rel_error(ours, want) <= RTOL


def make_optimizer(model):
    import torch
    return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9,
                           weight_decay=1e-4)


def torch_step(model, optimizer, inputs, labels):
    """PyTorch's own step: (loss, state by DistOpt's names)."""
    import torch.nn.functional as F
    optimizer.zero_grad()
    loss = F.cross_entropy(model(*inputs), labels)
    loss.backward()
    optimizer.step()
    state = {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
    state.update({n: b.detach().numpy().copy() for n, b in model.named_buffers()
                  if "running" in n or "num_batches" in n})
    for name, p in model.named_parameters():
        for key, value in optimizer.state[p].items():
            state[f"{name}.{key}"] = value.detach().numpy().copy()
    return float(loss.item()), state


def compare(result_state, result_loss, torch_loss, torch_state):
    """(largest rel_error, name of that array, every array within RTOL)."""
    worst, worst_name = rel_error(result_loss, torch_loss), "loss"
    for name, want in torch_state.items():
        if name not in result_state:
            return float("inf"), f"{name} (missing)", False
        err = rel_error(result_state[name], want)
        if err > worst:
            worst, worst_name = err, name
    return worst, worst_name, worst <= RTOL


def sensitivity(model, inputs, labels, ulps=100):
    """How far PyTorch's own step moves when the parameters move by `ulps`
    units in the last place (relative, random signs): the largest
    rel_error between the two steps' states. A mismatch of this order is
    the step's conditioning, not the importer."""
    import torch
    first = copy.deepcopy(model)
    loss_a, state_a = torch_step(first, make_optimizer(first), inputs, labels)
    second = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in second.parameters():
            if p.is_floating_point():
                eps = torch.finfo(p.dtype).eps
                p.mul_(1 + ulps * eps * torch.randn(p.shape, generator=generator,
                                                      dtype=p.dtype))
    loss_b, state_b = torch_step(second, make_optimizer(second), inputs, labels)
    return compare(state_b, loss_b, loss_a, state_a)[:2]


def build(spec):
    """(model, inputs tuple, labels), seeded, float64 when the spec is."""
    import torch
    torch.manual_seed(0)
    model, x, labels = spec.build()
    inputs = tuple(x) if isinstance(x, (tuple, list)) else (x,)
    if spec.float64:
        model = model.double()
        inputs = tuple(t.double() if t.is_floating_point() else t
                       for t in inputs)
    return model, inputs, labels


def _first_line(error):
    lines = [line.strip() for line in str(error).strip().splitlines()
             if line.strip()] or [type(error).__name__]
    line = lines[0]
    if line.endswith(":") and len(lines) > 1:   # "cannot parse <string>:"
        line = f"{line} {lines[1]}"
    return f"{type(error).__name__}: {line}"[:300]


def _op_of(error):
    op = getattr(error, "op", None)
    if op:
        return op
    match = re.search(r"aten[._:]+[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)?", str(error))
    return match.group(0) if match else None


def run_model(spec, compile_step=True, strategies=False, log=print):
    """Exports `spec`'s model, runs one DistOpt step and compares it with
    PyTorch's; with `strategies`, each strategy against the single-device
    run. Returns the result dict (the table's row)."""
    import numpy as np
    import torch
    import distopt
    import distopt.torch as dt

    row = {"model": spec.name, "source": spec.source, "input": spec.input_desc,
           "dtype": "float64" if spec.float64 else "float32",
           "note": spec.note, "status": None}
    model, inputs, labels = build(spec)
    row["params"] = sum(p.numel() for p in model.parameters())
    reference = copy.deepcopy(model)
    ref_opt = make_optimizer(reference)
    pristine = copy.deepcopy(model)
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}

    start = time.perf_counter()
    try:
        step = dt.export_train_step(model, inputs, labels, loss="cross_entropy",
                                    optimizer=make_optimizer(model))
    except Exception as error:                      # noqa: BLE001 - recorded
        row["export_s"] = time.perf_counter() - start
        row["status"] = "export-fails"
        row["error"] = _first_line(error)
        row["op"] = _op_of(error)
        row["module_path"] = getattr(error, "module_path", None)
        row["error_type"] = type(error).__name__
        after = model.state_dict()
        row["model_changed"] = (set(after) != set(before) or any(
            not torch.equal(after[k], before[k]) for k in before))
        log(traceback.format_exc())
        return row
    row["export_s"] = time.perf_counter() - start
    row["mlir_lines"] = step.mlir.count("\n")
    log(f"{spec.name}: exported in {row['export_s']:.1f} s")
    if not compile_step:
        row["status"] = "exported"
        return row

    start = time.perf_counter()
    try:
        result = distopt.run(step.module, step.state, step.batch, steps=1,
                             extra_args=COMPILE_ARGS)
    except Exception as error:                      # noqa: BLE001 - recorded
        row["status"] = "run-fails"
        row["error"] = _first_line(error)
        log(traceback.format_exc())
        return row
    wall = time.perf_counter() - start
    step_ms = re.search(r"step 1: loss \S+ \(([0-9.]+) ms\)", result.log)
    row["step_ms"] = float(step_ms.group(1)) if step_ms else None
    row["compile_s"] = wall - (row["step_ms"] or 0.0) / 1e3
    torch_loss, torch_state = torch_step(reference, ref_opt, inputs, labels)
    ours = float(np.asarray(result.losses).reshape(-1)[0])
    err, worst, ok = compare(result.state, ours, torch_loss, torch_state)
    row["loss"], row["torch_loss"] = ours, torch_loss
    row["rel_error"], row["worst"] = err, worst
    row["status"] = "ok" if ok else "mismatch"
    if not ok:
        row["sensitivity"], row["sensitive_array"] = sensitivity(
            pristine, inputs, labels)
        log(f"{spec.name}: PyTorch's own step moves by "
            f"{row['sensitivity']:.3g} ({row['sensitive_array']}) for a "
            "100-ulp change of the parameters")
    del pristine
    log(f"{spec.name}: compile+run {wall:.1f} s, error {err:.3g} ({worst})")

    if strategies and spec.strategies:
        row["strategies"] = {}
        for kind in spec.strategies:
            row["strategies"][kind] = _run_strategy(step, result, kind, log)
    return row


def make_strategy(kind):
    import distopt
    return {"mirrored": lambda: distopt.MirroredStrategy(2),
            "tp": lambda: distopt.TensorParallelStrategy(2),
            "zero3": lambda: distopt.ZeroStrategy(stage=3, num_replicas=2),
            "pipeline": lambda: distopt.PipelineStrategy(2, 2)}[kind]()


def _run_strategy(step, single, kind, log):
    """One step of `kind` over 2 processes against the single-device run:
    'equal', 'differs (NAME by ERR)' or 'fails: FIRST LINE'."""
    import contextlib
    import fcntl

    import distopt
    start = time.perf_counter()
    try:
        strategy = make_strategy(kind)
        module = strategy.distribute(step.module)
        # On a shared machine, one mpirun at a time: $DISTOPT_MPI_LOCK names
        # a lock file the other users of mpirun take too.
        with contextlib.ExitStack() as stack:
            if os.environ.get("DISTOPT_MPI_LOCK"):
                lock = stack.enter_context(
                    open(os.environ["DISTOPT_MPI_LOCK"], "a"))
                fcntl.flock(lock, fcntl.LOCK_EX)
            result = distopt.launch(module, step.state, step.batch, steps=1,
                                    strategy=strategy, extra_args=COMPILE_ARGS,
                                    timeout=900)
    except Exception as error:                      # noqa: BLE001 - recorded
        log(traceback.format_exc())
        return {"status": "fails", "error": _first_line(error),
                "seconds": time.perf_counter() - start}
    err, worst, ok = compare(result.state, result.losses[0],
                             single.losses[0], single.state)
    log(f"  {kind}: {'equal' if ok else 'differs'} ({err:.3g}, {worst})")
    return {"status": "equal" if ok else "differs", "rel_error": err,
            "worst": worst, "seconds": time.perf_counter() - start}


# -- the driver: a subprocess per model ------------------------------------------

def run_in_subprocess(name, timeout, compile_step=True, strategies=False,
                      log_dir=None):
    """Runs one model in a child process (this script's --worker) under
    `timeout` seconds: its row, or a timeout / crash row."""
    with tempfile.TemporaryDirectory(prefix="model-zoo-") as work:
        out = os.path.join(work, "row.json")
        command = [sys.executable, os.path.abspath(__file__), "--worker", name,
                   "--row", out]
        if not compile_step:
            command.append("--export-only")
        if strategies:
            command.append("--strategies")
        start = time.perf_counter()
        log_path = os.path.join(log_dir or work, f"{name.replace(':', '_')}.log")
        with open(log_path, "w") as log_file:
            child = subprocess.Popen(command, stdout=log_file,
                                     stderr=subprocess.STDOUT,
                                     start_new_session=True)
            try:
                child.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                # The child's whole session: dist-run and mpirun included.
                os.killpg(child.pid, 9)
                child.wait()
                spec = MODELS[name]
                return {"model": name, "source": spec.source,
                        "input": spec.input_desc, "note": spec.note,
                        "dtype": "float64" if spec.float64 else "float32",
                        "status": "timeout",
                        "error": f"no result within {timeout} s",
                        "seconds": time.perf_counter() - start}
        if os.path.exists(out):
            with open(out) as f:
                row = json.load(f)
        else:
            with open(log_path) as f:
                tail = [line for line in f.read().splitlines() if line.strip()]
            spec = MODELS[name]
            row = {"model": name, "source": spec.source,
                   "input": spec.input_desc, "note": spec.note,
                   "dtype": "float64" if spec.float64 else "float32",
                   "status": "crash",
                   "error": f"exit status {child.returncode}: "
                            f"{tail[-1] if tail else 'no output'}"[:300]}
        row["seconds"] = time.perf_counter() - start
        return row


def _worker(name, row_path, compile_step, strategies):
    row = run_model(MODELS[name], compile_step=compile_step,
                    strategies=strategies,
                    log=lambda text: print(text, flush=True))
    with open(row_path, "w") as f:
        json.dump(row, f, default=float)


# -- the table ------------------------------------------------------------------

def _fmt_s(value):
    return "" if value is None else f"{value:.1f}"


def _params(n):
    if n is None:
        return ""
    return f"{n / 1e6:.1f}M" if n >= 1e5 else f"{n / 1e3:.1f}k"


def _status_cell(row):
    status = row["status"]
    if status == "ok":
        return "ok"
    if status == "exported":
        return "exports (not run)"
    if status == "export-fails":
        where = f" in {row['module_path']}" if row.get("module_path") else ""
        what = f"`{row['op']}`{where}" if row.get("op") else \
            _escape(row.get("error", ""))[:120]
        return f"export fails: {what}"
    if status == "mismatch":
        cell = f"mismatch: {row['worst']} off by {row['rel_error']:.2g}"
        if row.get("sensitivity") is not None:
            cell += (f" (PyTorch itself moves {row['sensitivity']:.2g} for a "
                     "100-ulp parameter change)")
        return cell
    return f"{status}: {_escape(row.get('error', ''))[:120]}"


def _escape(text):
    return text.replace("|", "\\|").replace("\n", " ")


def _strategies_cell(row):
    results = row.get("strategies")
    if not results:
        return ""
    cells = []
    for kind, r in results.items():
        mark = {"equal": "=", "differs": f"differs {r.get('rel_error', 0):.1g}",
                "fails": "fails"}[r["status"]]
        cells.append(f"{kind} {mark}")
    return ", ".join(cells)


def summary(rows):
    ok = sum(r["status"] == "ok" for r in rows)
    exported = sum(r["status"] in ("ok", "mismatch", "exported", "run-fails")
                   for r in rows)
    return ok, exported, len(rows)


def render_table(rows, meta):
    ok, exported, total = summary(rows)
    lines = [
        "# Model coverage of the PyTorch importer",
        "",
        "<!-- Generated by bench/model_zoo.py: do not edit by hand. -->",
        "",
        f"**{ok} of {total}** models export and equal PyTorch's step "
        f"({exported} of {total} export).",
        "",
        f"Generated {meta['date']} at commit {meta['commit']} with "
        f"`{meta['command']}` from rows run {_run_span(rows)} (PyTorch "
        f"{meta['torch']}, torchvision "
        f"{meta['torchvision']}, timm {meta['timm']}, transformers "
        f"{meta['transformers']}), on {meta['machine']}.",
        "",
        "Each model is built without weights (random init, seed 0, dropout and "
        "stochastic depth off), exported with "
        "`distopt.torch.export_train_step` (cross-entropy, SGD with momentum "
        "0.9 and weight decay 1e-4), run for one step by `dist-run "
        "--opt-level=0 --cache=false` and compared with PyTorch's own step: "
        "the loss and every parameter, momentum buffer and batch-norm "
        f"statistic, within {RTOL:g} of each array's largest magnitude (of "
        f"{FLOOR:g} for an array below that, zero up to rounding: a bias "
        "before a batch norm). *rel. error* is the largest such normwise "
        "error. A mismatch is shown with PyTorch's own sensitivity: how far "
        "its step moves when the parameters move by 100 units in the last "
        "place. Models with batch norm run in float64: with 2 images their "
        "last batch norms normalize a few values per channel, so their step is "
        "ill-conditioned for every implementation (PyTorch's own float32 and "
        "float64 losses of MobileNetV2 at 2x3x32x32 differ by 3%), and a "
        "float32 comparison would measure that, not the importer. *export s* "
        "is `export_train_step`'s time (AOTAutograd and the emitter); "
        "*compile s* the first `dist-run`'s time less the step's (lowering, "
        "LLVM at -O0 and start-up); *step s* the step itself as dist-run "
        "times it, at -O0 (unvectorized: a float64 DenseNet-121 step takes "
        "minutes; -O3 runs it far faster and compiles longer). *strategies*: one step over 2 processes "
        "(mirrored, tensor parallel, ZeRO-3, a 2-stage pipeline of 2 "
        "microbatches) against the single-device run (`=`: equal within the "
        "same tolerance); run with `--strategies`, for the models listed.",
        "",
        "| model | source | params | input | dtype | status | export s | "
        "compile s | step s (-O0) | rel. error | strategies |",
        "|---|---|---|---|---|---|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        err = row.get("rel_error")
        lines.append(
            f"| {row['model']} | {row['source']} | {_params(row.get('params'))} "
            f"| {row['input']} | {row.get('dtype', '')} | {_status_cell(row)} | "
            f"{_fmt_s(row.get('export_s'))} | {_fmt_s(row.get('compile_s'))} | "
            f"{_fmt_s(row['step_ms'] / 1e3 if row.get('step_ms') else None)} | "
            f"{'' if err is None else f'{err:.1e}'} | {_strategies_cell(row)} |")
    notes = [r for r in rows if r.get("note")]
    if notes:
        lines += ["", "Configurations:", ""]
        lines += [f"- {r['model']}: {r['note']}" for r in notes]
    refusals = [(r["model"], kind, result) for r in rows
                for kind, result in (r.get("strategies") or {}).items()
                if result["status"] != "equal"]
    if refusals:
        lines += ["", "Strategies that fail or differ:", ""]
        for model, kind, result in refusals:
            what = (_escape(result.get("error", ""))[:260]
                    if result["status"] == "fails" else
                    f"{result['worst']} off by {result['rel_error']:.2g}")
            lines.append(f"- {model}, {kind}: {what}")
    causes = failure_causes(rows)
    if causes:
        lines += ["", "## What fails, by cause", "",
                  "Most-blocking first: the cause and the models it stops.", ""]
        for cause, models in causes:
            lines.append(f"- {_escape(cause)}: {', '.join(models)}")
    return "\n".join(lines) + "\n"


def _run_span(rows):
    times = sorted(r["run_at"] for r in rows if r.get("run_at"))
    if not times:
        return "now"
    return times[0] if times[0] == times[-1] else f"{times[0]} to {times[-1]}"


def failure_causes(rows):
    """[(cause, [models])] for the rows that are not ok, most models first:
    the ATen op for an export refusal, else the first line of the error."""
    causes = {}
    for row in rows:
        if row["status"] in ("ok", "exported"):
            continue
        if row["status"] == "export-fails":
            cause = (f"export: `{row['op']}`" if row.get("op") else
                     f"export: {row.get('error', '')}")
        elif row["status"] == "mismatch":
            cause = "step differs from PyTorch's"
        else:
            cause = f"{row['status']}: {row.get('error', '')}"
        causes.setdefault(cause, []).append(row["model"])
    return sorted(causes.items(), key=lambda item: (-len(item[1]), item[0]))


def render_status(rows, meta):
    """The failures by cause for whoever extends the importer: each cause
    (op and module, or the error's first line), the models it blocks and
    one full message, most-blocking first."""
    ok, exported, total = summary(rows)
    lines = [f"# Model zoo status ({meta['date']}, commit {meta['commit']})",
             "", f"{ok} of {total} export and equal PyTorch's step; "
             f"{exported} of {total} export.", "",
             f"Command: `{meta['command']}`", ""]
    by_model = {r["model"]: r for r in rows}
    for cause, models in failure_causes(rows):
        lines.append(f"## {cause} -- {len(models)}: {', '.join(models)}")
        for name in models:
            row = by_model[name]
            detail = row.get("error", "")
            if row.get("sensitivity") is not None:
                detail = (f"{row['worst']} off by {row['rel_error']:.3g}; "
                          f"PyTorch itself moves {row['sensitivity']:.3g} "
                          f"({row['sensitive_array']}) for 100 ulps")
            elif row["status"] == "export-fails" and row.get("module_path"):
                detail = f"in {row['module_path']}: {detail}"
            elif row["status"] == "mismatch":
                detail = (f"{row['worst']} off by {row['rel_error']:.3g} "
                          f"(loss {row.get('loss')} vs {row.get('torch_loss')})")
            if row.get("model_changed"):
                detail += " [the failed export left the model changed]"
            lines.append(f"- {name}: {detail}")
        lines.append("")
    lines += ["## Passing", "", ", ".join(r["model"] for r in rows
                                         if r["status"] in ("ok", "exported"))]
    return "\n".join(lines) + "\n"


def render_guide_region(rows, meta):
    ok, _, total = summary(rows)
    lines = [GUIDE_BEGIN,
             "<!-- Generated by bench/model_zoo.py --update-guide from "
             "docs/reference/model-coverage.md's run: do not edit by hand. -->",
             "",
             f"Of the {total} models of the zoo table "
             "([model coverage](../reference/model-coverage.md), "
             f"{meta['date']}), {ok} export and equal PyTorch's step"]
    failing = [r for r in rows if r["status"] not in ("ok", "exported")]
    lines[-1] += ". The others, and why:" if failing else \
        ": none is known not to."
    lines.append("")
    for row in failing:
        if row["status"] == "export-fails":
            why = (f"`{row['op']}`" + (f" in {row['module_path']}"
                                       if row.get("module_path") else "")
                   if row.get("op") else _escape(row.get("error", "")))
            lines.append(f"- {row['model']} ({row['source']}): the export "
                         f"stops at {why}")
        elif row["status"] == "mismatch":
            lines.append(f"- {row['model']} ({row['source']}): exports, but "
                         f"{row['worst']} differs from PyTorch's by "
                         f"{row['rel_error']:.2g}")
        else:
            lines.append(f"- {row['model']} ({row['source']}): "
                         f"{row['status']}: {_escape(row.get('error', ''))}")
    lines.append(GUIDE_END)
    return "\n".join(lines)


def update_guide(rows, meta, path=GUIDE):
    with open(path) as f:
        text = f.read()
    begin, end = text.find(GUIDE_BEGIN), text.find(GUIDE_END)
    if begin < 0 or end < begin:
        raise SystemExit(f"model_zoo: {path} has no {GUIDE_BEGIN} ... "
                         f"{GUIDE_END} region")
    text = (text[:begin] + render_guide_region(rows, meta) +
            text[end + len(GUIDE_END):])
    _write_atomically(path, text)


def _write_atomically(path, text):
    directory = os.path.dirname(os.path.abspath(path))
    fd, partial = tempfile.mkstemp(prefix=".model-zoo.", dir=directory)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(partial, path)


def _meta(command):
    import platform

    import timm
    import torch
    import torchvision
    import transformers
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short",
                                 "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return {"date": datetime.datetime.now(datetime.timezone.utc).strftime(
                "%Y-%m-%d %H:%M UTC"),
            "commit": commit, "command": command,
            "torch": torch.__version__.split("+")[0],
            "torchvision": torchvision.__version__.split("+")[0],
            "timm": timm.__version__, "transformers": transformers.__version__,
            "machine": f"{os.cpu_count()} CPU cores ({platform.machine()})"}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="all",
                        help="comma-separated model names or groups "
                             "(torchvision, timm, hf, nn, ci, all)")
    parser.add_argument("--timeout", type=float, default=900,
                        help="seconds per model (default 900)")
    parser.add_argument("--strategies", action="store_true",
                        help="also run mirrored, TP, ZeRO-3 and pipeline "
                             "over 2 processes (slow)")
    parser.add_argument("--export-only", action="store_true",
                        help="export only: no compile, no comparison")
    parser.add_argument("--out", default=None,
                        help=f"the table to write (e.g. {DEFAULT_OUT})")
    parser.add_argument("--json", default=None,
                        help="raw results, one row per model; rows of an "
                             "existing file are kept and the models run now "
                             "replaced, and the table lists every row")
    parser.add_argument("--update-guide", action="store_true",
                        help="rewrite the generated region of "
                             "docs/guides/pytorch.md from the results")
    parser.add_argument("--status", default=None,
                        help="write the failures grouped by cause here")
    parser.add_argument("--log-dir", default=None,
                        help="keep each model's log here")
    parser.add_argument("--render-only", action="store_true",
                        help="run nothing: write --out, --status and the "
                             "guide from the rows --json holds")
    parser.add_argument("--list", action="store_true",
                        help="print the models and their groups")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--row", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        _worker(args.worker, args.row, not args.export_only, args.strategies)
        return 0
    if args.list:
        for name, spec in MODELS.items():
            print(f"{name:28} {','.join(sorted(spec.groups))}")
        return 0

    specs = [] if args.render_only else \
        select([n for n in args.models.split(",") if n])
    rows = {}
    if args.json and os.path.exists(args.json):
        with open(args.json) as f:
            rows = {r["model"]: r for r in json.load(f)["rows"]}
    if args.log_dir:
        os.makedirs(args.log_dir, exist_ok=True)
    for spec in specs:
        print(f"== {spec.name}", flush=True)
        row = run_in_subprocess(spec.name, args.timeout,
                                compile_step=not args.export_only,
                                strategies=args.strategies,
                                log_dir=args.log_dir)
        row["run_at"] = datetime.datetime.now(datetime.timezone.utc).strftime(
            "%Y-%m-%d %H:%M UTC")
        rows[spec.name] = row
        print(f"   {_status_cell(row)} (export {_fmt_s(row.get('export_s'))} s, "
              f"compile {_fmt_s(row.get('compile_s'))} s, "
              f"{row['seconds']:.0f} s in all)", flush=True)
        if args.json:       # after every model: an interrupted run keeps rows
            _write_atomically(args.json, json.dumps(
                {"rows": [rows[n] for n in MODELS if n in rows]},
                indent=1, default=float))
    ordered = [rows[n] for n in MODELS if n in rows]
    command = "bench/model_zoo.py " + " ".join(
        a for a in (argv if argv is not None else sys.argv[1:]))
    meta = _meta(command.strip())
    ok, exported, total = summary(ordered)
    print(f"{ok} of {total} export and equal PyTorch's step "
          f"({exported} of {total} export)")
    if args.out:
        _write_atomically(args.out, render_table(ordered, meta))
    if args.update_guide:
        update_guide(ordered, meta)
    if args.status:
        _write_atomically(args.status, render_status(ordered, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
