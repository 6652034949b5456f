#!/usr/bin/env python3
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Writes the inputs of a step from a bundle (bench/gpu_bundle.py) on the
machine that runs it: one NumPy file per argument, as
examples/aot/run_step.c reads them, and the .npz files the PyTorch peers
read (bench/gpu_check.py runs it with the Python that has NumPy, and
torchvision for ResNet-18).

    make_inputs.py BUNDLE STEP OUT_DIR

By the step's "inputs" in BUNDLE/manifest.json:
  carried      BUNDLE/STEP/state.npz and data.npz, split into OUT_DIR/*.npy
               (and copied as OUT_DIR/state.npz, data.npz);
  random       parameters ~ N(0, 0.02), optimizer state zero, inputs
               N(0, 1), seed 0;
  torchvision  parameters and buffers of torchvision.models.resnet18()
               after torch.manual_seed(0), optimizer state zero, the image
               batch N(0, 1) and labels uniform in [0, 1000), seed 0;
               OUT_DIR/state.npz and batch.npz for bench/peers/
               torch_resnet.py.
A hyper-parameter takes the value the manifest gives. Every argument of
the step gets its file, of the dtype and shape the header gives; one
with no value is an error.
"""

import json
import os
import sys

import numpy as np

DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16,
          "i32": np.int32, "i64": np.int64, "i1": np.bool_}
# Labels: torchvision's ImageNet classes.
CLASSES = 1000


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.split("\n\n")[1])
    bundle, step, out = sys.argv[1:]
    with open(os.path.join(bundle, "manifest.json")) as f:
        entry = json.load(f)["steps"][step]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    source = {}
    if entry["inputs"] == "carried":
        for name in ("state", "data"):
            arrays = np.load(os.path.join(bundle, step, name + ".npz"))
            source.update({key: arrays[key] for key in arrays.files})
            np.savez(os.path.join(out, name + ".npz"), **arrays)
    elif entry["inputs"] == "torchvision":
        import torch
        import torchvision
        torch.manual_seed(0)
        model = torchvision.models.resnet18()
        tensors = dict(model.named_parameters())
        tensors.update(model.named_buffers())
        source = {k: v.detach().numpy() for k, v in tensors.items()}
        np.savez(os.path.join(out, "state.npz"), **source)
    batch = {}
    for arg in entry["arguments"]:
        dtype, shape, name = DTYPES[arg["dtype"]], arg["shape"], arg["name"]
        if "value" in arg:
            value = arg["value"]
        elif name in source:
            value = source[name]
        elif entry["inputs"] == "carried":
            sys.exit(f"make_inputs: {step}: no '{name}' in its state.npz or "
                     "data.npz")
        elif arg["role"] == "opt_state":
            value = np.zeros(shape, dtype)
        elif arg["role"] == "param":
            value = rng.normal(0, 0.02, shape)
        elif arg["role"] in ("input", "label"):
            value = (rng.integers(0, CLASSES, shape)
                     if np.issubdtype(dtype, np.integer)
                     else rng.normal(0, 1, shape)).astype(dtype)
            batch[name] = value
        else:
            sys.exit(f"make_inputs: {step}: no value for '{name}' (role "
                     f"{arg['role']}): the manifest should give it")
        value = np.asarray(value).astype(dtype)
        if list(value.shape) != shape:
            sys.exit(f"make_inputs: {step}: '{name}' is {list(value.shape)}, "
                     f"the step's argument {shape}")
        np.save(os.path.join(out, name + ".npy"), value)
    if entry["inputs"] == "torchvision":
        np.savez(os.path.join(out, "batch.npz"), **batch)


if __name__ == "__main__":
    main()
