# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Export a PyTorch model's training step for dist-run:

    python -m distopt.export_torch torchvision.models:resnet18 \\
        --kwargs '{"num_classes": 10}' --input-shape 2,3,32,32 \\
        --optimizer sgd --lr 0.1 --momentum 0.9 -o resnet18/
    dist-run resnet18/step.mlir --state=resnet18/state.npz \\
        --data=resnet18/batch.npz --steps=5

MODULE:FACTORY names a callable returning the model (a class or a
function), called with --kwargs. --autocast bf16|f16 exports the step
traced under torch.autocast (16-bit compute, float32 master weights);
--grad-scaler adds torch.amp.GradScaler's dynamic loss scaling (its scale
and growth tracker become state.npz's `loss_scale` and
`loss_scale.growth_tracker`). The batch is random: inputs from a
normal distribution (or integers below --vocab with --input-dtype int64),
labels in [0, classes) where classes is the model output's last dim.
"""

import argparse
import importlib
import json
import sys


def _shape(text):
    try:
        dims = tuple(int(d) for d in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"'{text}' is not a comma-separated list of sizes") from None
    if not dims or min(dims) <= 0:
        raise argparse.ArgumentTypeError(f"'{text}' has a size below 1")
    return dims


def _parser():
    p = argparse.ArgumentParser(
        prog="python -m distopt.export_torch",
        description="Export a PyTorch model's training step (forward, "
                    "cross-entropy or MSE loss, backward, optimizer update) "
                    "as a train-dialect step, its state and a batch.")
    p.add_argument("factory", metavar="MODULE:FACTORY",
                   help="e.g. torchvision.models:resnet18")
    p.add_argument("--kwargs", default="{}",
                   help="JSON object of keyword arguments for the factory")
    p.add_argument("--input-shape", type=_shape, action="append",
                   required=True,
                   help="shape of a model input, e.g. 2,3,32,32 (repeat for "
                        "several inputs)")
    p.add_argument("--input-dtype", choices=["float32", "float64", "int64"],
                   default="float32")
    p.add_argument("--vocab", type=int, default=None,
                   help="with --input-dtype int64: inputs below this value")
    p.add_argument("--loss", choices=["cross_entropy", "mse"],
                   default="cross_entropy")
    p.add_argument("--optimizer", choices=["sgd", "adam", "adamw"],
                   default="sgd")
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--momentum", type=float, default=0.0,
                   help="SGD momentum")
    p.add_argument("--weight-decay", type=float, default=None)
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the model's initialization and the batch")
    p.add_argument("--autocast", choices=["bf16", "f16"], default=None,
                   help="export under torch.autocast(dtype=bfloat16|float16): "
                        "16-bit compute with float32 master weights")
    p.add_argument("--grad-scaler", action="store_true",
                   help="with --autocast: dynamic loss scaling as "
                        "torch.amp.GradScaler (see --init-scale)")
    p.add_argument("--init-scale", type=float, default=65536.0,
                   help="--grad-scaler's initial scale (GradScaler's default "
                        "65536)")
    p.add_argument("-o", "--output", required=True,
                   help="directory for step.mlir, state.npz, batch.npz")
    return p


def _factory(name):
    module_name, _, attr = name.partition(":")
    if not module_name or not attr:
        raise SystemExit(f"error: '{name}' is not MODULE:FACTORY")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise SystemExit(f"error: cannot import {module_name}: {e}") from None
    factory = module
    for part in attr.split("."):
        if not hasattr(factory, part):
            raise SystemExit(f"error: {module_name} has no attribute '{attr}'")
        factory = getattr(factory, part)
    if not callable(factory):
        raise SystemExit(f"error: {name} is not callable")
    return factory


def main(argv=None):
    parser = _parser()
    args = parser.parse_args(argv)
    if args.grad_scaler and not args.autocast:
        parser.error("--grad-scaler needs --autocast bf16|f16 (a float32 step "
                     "has no loss to scale)")
    if not args.init_scale > 0:
        parser.error(f"--init-scale must be positive, got {args.init_scale}")
    import contextlib
    import torch
    from . import DistOptError
    from .torch import export_train_step

    try:
        kwargs = json.loads(args.kwargs)
    except json.JSONDecodeError as e:
        raise SystemExit(f"error: --kwargs is not JSON: {e}") from None
    if not isinstance(kwargs, dict):
        raise SystemExit("error: --kwargs must be a JSON object")
    torch.manual_seed(args.seed)
    model = _factory(args.factory)(**kwargs)
    dtype = getattr(torch, args.input_dtype)
    if dtype == torch.int64:
        if args.vocab is None:
            raise SystemExit("error: --input-dtype int64 needs --vocab")
        inputs = tuple(torch.randint(0, args.vocab, s) for s in args.input_shape)
    else:
        model = model.to(dtype)
        inputs = tuple(torch.randn(s, dtype=dtype) for s in args.input_shape)
    model.eval()                    # (a probe that leaves running stats be)
    with torch.no_grad():
        output = model(*inputs)
    if args.loss == "cross_entropy":
        labels = torch.randint(0, output.shape[-1], output.shape[:-1])
    else:
        labels = torch.randn(output.shape, dtype=output.dtype)
    options = {"lr": args.lr}
    if args.optimizer == "sgd" and args.momentum:
        options["momentum"] = args.momentum
    if args.weight_decay is not None:
        options["weight_decay"] = args.weight_decay
    autocast = contextlib.nullcontext()
    if args.autocast:
        autocast = torch.autocast(
            "cpu", dtype=torch.bfloat16 if args.autocast == "bf16"
            else torch.float16)
    scaler = torch.amp.GradScaler("cpu", init_scale=args.init_scale) \
        if args.grad_scaler else None
    try:
        with autocast:
            step = export_train_step(model, inputs, labels, loss=args.loss,
                                     optimizer=(args.optimizer, options),
                                     scaler=scaler)
    except (DistOptError, ValueError, TypeError) as e:
        raise SystemExit(f"error: {e}") from None
    for path in step.save(args.output):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
