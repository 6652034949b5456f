#!/usr/bin/env python3
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Collective counts and ring bus bytes per strategy against the formulas.

    python3 bench/comm_volume.py [--build build] [--markdown]

For each model (examples/transformer_block.mlir, a 4-block stack from
bench/gen_gpt.py, examples/mlp_adam.mlir) and strategy, runs
`dist-opt STRATEGY --dist-cost-report=format=json` and compares the ring bus
bytes per rank it reports with the analytic minimum:

  data parallel (mirrored, N replicas):  2 (N-1)/N * (P + 4)
      P = the gradients' bytes (every parameter), 4 = the loss
  ZeRO-1 / ZeRO-2: reduce-scatter of the gradients + all-gather of the
      updated shards = 2 (N-1)/N * P, plus the loss: the same formula
  ZeRO-3: the same plus one all-gather of each parameter the backward pass
      reads ((N-1)/N * P_bwd; P_bwd = parameters read by a backward op)
  tensor parallel (Megatron, T devices): 4 all-reduces of the [b, s, h]
      activations per block (2 forward, 2 backward): 2 (T-1)/T * 4 A per
      block, A = b*s*h*4 bytes, plus what the model has outside the blocks:
      the vocabulary-parallel token embedding (one all-reduce of [b, s, h];
      the position table stays replicated) and the vocabulary-parallel LM
      head with its cross-entropy (the logits stay split: all-reduces of
      the per-token maximum, sum of exponentials and target logit, 3 b*s*4
      bytes, and of the head's input gradient, one A) where the cost model
      splits the head (the GPT's 512-token vocabulary; the transformer
      block's 16-class head stays replicated and costs nothing)
  sequence parallel: 2 all-gathers + 2 reduce-scatters per block in forward
      and the same in backward, (T-1)/T * A each (the embedding's
      reduce-scatter and the all-gather before its backward replace its
      all-reduce): the same bytes as tensor parallelism, plus one all-reduce
      of the gradients that the split tokens leave partial, those of the
      layer norms: 2 (T-1)/T * R, R = their bytes (the row-parallel biases
      and the position table take theirs from gathered gradients: whole);
      a replicated head reads the split tokens too: its parameters' bytes
      count in R, and its loss (4 bytes) is all-reduced

and prints count, measured, formula and their ratio.

With --compression, the gradient bytes per step of each gradient
compression (docs/guides/gradient-compression.md) under mirrored N=4, for
examples/mlp.mlir and examples/transformer_block.mlir:

  f32:            2 (N-1)/N * (4 G + 4)          G = gradient elements
  grad-dtype=bf16: 2 (N-1)/N * (2 G + 4)
  PowerSGD rank r: 2 (N-1)/N * (4 r sum (n + m) + 4 G_whole + 4)
      over the n x m matrices (a parameter's dim 0 by the rest) with
      2 r (n + m) < n m; G_whole = the elements of the other parameters
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i32": 4, "i64": 8}


def tensor_bytes(text):
    """Bytes of `tensor<AxBxf32>`."""
    dims = text.split("x")
    count = 1
    for d in dims[:-1]:
        count *= int(d)
    return count * BYTES[dims[-1]]


def read_step(path):
    """The step's parameters: name -> (bytes, used by a backward op)."""
    text = open(path).read()
    params = {}
    args = {}
    for m in re.finditer(r"(%[\w.]+): tensor<([^>]*)> \{[^}]*train\.role = "
                         r"#train\.role<param>, train\.name = \"([^\"]+)\"",
                         text):
        args[m.group(1)] = m.group(3)
        params[m.group(3)] = [tensor_bytes(m.group(2)), False]
    # A parameter read by an op whose name ends in _backward, or by a matmul
    # after the "Backward" comment / backward section, is needed in backward.
    body = text.split("Backward", 1)[1] if "Backward" in text else ""
    for name, pname in args.items():
        for line in body.split("\n"):
            if re.search(re.escape(name) + r"\b", line) and \
                    not re.search(r"train\.(sgd|adam|adamw)\b", line):
                params[pname][1] = True
                break
    return params


def token_split_param_bytes(build, model, flags, head=False):
    """Bytes of the layer-norm parameters (and, with `head`, the head's)
    the step keeps whole."""
    out = subprocess.run(
        [os.path.join(build, "bin", "dist-opt"), model, *flags],
        capture_output=True, text=True, check=True)
    sizes = {}
    for m in re.finditer(r"tensor<([^>]*)> \{dist\.sharding = "
                         r"#dist\.sharding<@mesh, \[(\[\](, )?)*\]>, "
                         r"train\.name = \"([^\"]+)\", "
                         r"train\.role = #train\.role<param>", out.stdout):
        if re.search(r"(^|\.)ln\w*\.", m.group(4)) or \
                (head and m.group(4).startswith("head.")):
            sizes[m.group(4)] = tensor_bytes(m.group(1))
    return sum(sizes.values())


def cost(build, model, flags):
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            [os.path.join(build, "bin", "dist-opt"), model, *flags,
             "--dist-cost-report=format=json", "-o",
             os.path.join(tmp, "reported.mlir")],
            capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"dist-opt {model} {' '.join(flags)} failed:\n{out.stderr}")
    fn = json.loads(out.stdout)["functions"][0]
    return fn["collective_count"], fn["comm_bytes_per_rank"]


def read_param_shapes(path):
    """The step's parameters: name -> shape."""
    shapes = {}
    for m in re.finditer(r"%[\w.]+: tensor<([^>]*)> \{[^}]*train\.role = "
                         r"#train\.role<param>, train\.name = \"([^\"]+)\"",
                         open(path).read()):
        shapes[m.group(2)] = [int(d) for d in m.group(1).split("x")[:-1]]
    return shapes


def powersgd_elements(shapes, rank):
    """Elements all-reduced per step by PowerSGD of `rank` (dist-powersgd's
    rule: compress n x m when 2 rank (n + m) < n m)."""
    total = 0
    for shape in shapes.values():
        count = 1
        for d in shape:
            count *= d
        if len(shape) >= 2:
            n, m = shape[0], count // shape[0]
            if 2 * rank * (n + m) < n * m:
                total += rank * (n + m)
                continue
        total += count
    return total


def compression_rows(build):
    rows = []
    models = [("MLP", os.path.join(ROOT, "examples", "mlp.mlir")),
              ("transformer block",
               os.path.join(ROOT, "examples", "transformer_block.mlir"))]
    ring = 2 * 3 / 4
    for label, path in models:
        shapes = read_param_shapes(path)
        G = powersgd_elements(shapes, rank=10**9)  # nothing compressed
        variants = [("f32", "", ring * (4 * G + 4)),
                    ("grad-dtype=bf16", " grad-dtype=bf16",
                     ring * (2 * G + 4))]
        for r in (1, 4):
            variants.append((f"PowerSGD r={r}",
                             f" compression=powersgd powersgd-rank={r}",
                             ring * (4 * powersgd_elements(shapes, r) + 4)))
        for name, extra, formula in variants:
            count, measured = cost(build, path,
                                   [f"--dist-mirrored=replicas=4{extra}"])
            rows.append((label, name, count, measured, formula))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--compression", action="store_true",
                        help="gradient bytes of each gradient compression")
    args = parser.parse_args()
    if args.compression:
        rows = compression_rows(args.build)
        print("| model | gradients | collectives | bus bytes / rank | "
              "formula | ratio | vs f32 |")
        print("|---|---|---:|---:|---:|---:|---:|")
        base = {}
        for label, name, count, measured, formula in rows:
            base.setdefault(label, measured)
            print(f"| {label} | {name} | {count} | {measured:.0f} | "
                  f"{formula:.0f} | {measured / formula:.2f} | "
                  f"{measured / base[label]:.3f} |")
        return
    tmp = tempfile.mkdtemp()
    gpt = os.path.join(tmp, "gpt4.mlir")
    with open(gpt, "w") as f:
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_gpt.py"),
                        "--layers", "4", "--hidden", "256", "--heads", "4",
                        "--seq", "128", "--batch", "8", "--vocab", "512"],
                       stdout=f, check=True)
    block = os.path.join(ROOT, "examples", "transformer_block.mlir")
    mlp = os.path.join(ROOT, "examples", "mlp_adam.mlir")
    # (model, blocks, activation bytes A, embedding lookups, head split
    # over its vocabulary); every model with blocks ends in a head over
    # 8 x 128 tokens
    models = [("transformer block", block, 1, 8 * 128 * 256 * 4, 0, False),
              ("GPT, 4 blocks", gpt, 4, 8 * 128 * 256 * 4, 1, True),
              ("MLP (AdamW)", mlp, 0, 0, 0, False)]
    rows = []
    for label, path, blocks, act, lookups, head_split in models:
        params = read_step(path)
        P = sum(b for b, _ in params.values())
        P_bwd = sum(b for b, used in params.values() if used)
        strategies = [
            ("mirrored N=4", ["--dist-mirrored=replicas=4"],
             2 * 3 / 4 * (P + 4)),
            ("ZeRO-1 N=4", ["--dist-zero=stage=1 replicas=4"],
             2 * 3 / 4 * (P + 4)),
            ("ZeRO-2 N=4", ["--dist-zero=stage=2 replicas=4"],
             2 * 3 / 4 * (P + 4)),
            ("ZeRO-3 N=4", ["--dist-zero=stage=3 replicas=4"],
             2 * 3 / 4 * (P + 4) + 3 / 4 * P_bwd),
        ]
        if blocks:
            tokens = 8 * 128
            tp = 2 * 1 / 2 * ((4 * blocks + lookups + head_split) * act
                              + head_split * 3 * tokens * 4)
            strategies.append(("tensor parallel T=2",
                               ["--dist-tensor-parallel=size=2"], tp))
            sp = ["--dist-tensor-parallel=size=2 sequence-parallel=true"]
            R = token_split_param_bytes(args.build, path, sp,
                                        head=not head_split)
            loss = 0 if head_split else 4
            strategies.append(("sequence parallel T=2", sp,
                               tp + 2 * 1 / 2 * (R + loss)))
        for name, flags, formula in strategies:
            count, measured = cost(args.build, path, flags)
            rows.append((label, name, count, measured, formula))
    print("| model | strategy | collectives | bus bytes / rank | formula | ratio |")
    print("|---|---|---:|---:|---:|---:|")
    for label, name, count, measured, formula in rows:
        print(f"| {label} | {name} | {count} | {measured:.0f} | {formula:.0f} "
              f"| {measured / formula:.2f} |")


if __name__ == "__main__":
    main()
