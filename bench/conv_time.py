#!/usr/bin/env python3
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Time of a convolution layer's step (conv2d and both gradients) against
PyTorch eager, same machine.

For each configuration, writes a training step with one `train.conv2d`,
its `conv2d_backward_input` and `conv2d_backward_filter` (loss = sum(y * g)
+ sum(dx), SGD on the filter), runs it with `dist-run` (dist-lower-cpu:
stride-1 layers through distopt_conv2d_f32's batch-reduce products,
strided ones as im2col / col2im and one sgemm per group and op) and runs
the same three convolutions in PyTorch (`y = conv2d(x, w)`,
`y.backward(g)`), both with one thread (the thread counts set as
bench/step_time.py sets them). PyTorch 2.15 runs in the comparison
environment bench/peers/env.py creates (bench/peers/torch_conv.py). Runs are
interleaved over --rounds rounds; each run's median step (the first, which
includes dist-run's JIT, left out), then the median over the rounds with
the spread (min-max). The loss after step 1 is printed for both.

    python3 bench/conv_time.py                 # prints a Markdown table
    python3 bench/conv_time.py --steps 20 --rounds 5

Needs a build in build/.
"""

import argparse
import os
import statistics
import sys
import tempfile

from step_time import BIN, dist_run_times, peer_times, peer_env, run

# (name, batch, in channels, out channels, size, kernel, stride, pad, groups)
CONFIGS = [
    ("3x3, 64->64, 32x32", 8, 64, 64, 32, 3, 1, 1, 1),
    ("5x5 stride 2, 3->32, 64x64", 8, 3, 32, 64, 5, 2, 2, 1),
    ("3x3, 64->64 in 4 groups, 32x32", 8, 64, 64, 32, 3, 1, 1, 4),
]

STEP = """func.func @train_step(
    %w: tensor<{f}x{cg}x{k}x{k}xf32> {{train.role = #train.role<param>, train.name = "w"}},
    %x: tensor<{n}x{c}x{h}x{h}xf32> {{train.role = #train.role<input>, train.name = "x"}},
    %g: tensor<{n}x{f}x{o}x{o}xf32> {{train.role = #train.role<input>, train.name = "g"}},
    %lr: tensor<f32> {{train.role = #train.role<hyper>, train.name = "lr"}})
    -> (tensor<{f}x{cg}x{k}x{k}xf32> {{train.role = #train.role<param>, train.name = "w"}},
        tensor<f32> {{train.role = #train.role<loss>, train.name = "loss"}}) {{
  %y = train.conv2d %x, %w {{{attrs}}} : (tensor<{n}x{c}x{h}x{h}xf32>, tensor<{f}x{cg}x{k}x{k}xf32>) -> tensor<{n}x{f}x{o}x{o}xf32>
  %p = train.mul %y, %g : (tensor<{n}x{f}x{o}x{o}xf32>, tensor<{n}x{f}x{o}x{o}xf32>) -> tensor<{n}x{f}x{o}x{o}xf32>
  %l = train.reduce %p {{dims = array<i64: 0, 1, 2, 3>, kind = #train.reduce_kind<sum>}} : (tensor<{n}x{f}x{o}x{o}xf32>) -> tensor<f32>
  %dx = train.conv2d_backward_input %g, %w {{input_size = array<i64: {h}, {h}>, {attrs}}} : (tensor<{n}x{f}x{o}x{o}xf32>, tensor<{f}x{cg}x{k}x{k}xf32>) -> tensor<{n}x{c}x{h}x{h}xf32>
  %dw = train.conv2d_backward_filter %x, %g {{kernel_size = array<i64: {k}, {k}>, {attrs}}} : (tensor<{n}x{c}x{h}x{h}xf32>, tensor<{n}x{f}x{o}x{o}xf32>) -> tensor<{f}x{cg}x{k}x{k}xf32>
  %s = train.reduce %dx {{dims = array<i64: 0, 1, 2, 3>, kind = #train.reduce_kind<sum>}} : (tensor<{n}x{c}x{h}x{h}xf32>) -> tensor<f32>
  %loss = train.add %l, %s : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %w_new = train.sgd %w, %dw, %lr : (tensor<{f}x{cg}x{k}x{k}xf32>, tensor<{f}x{cg}x{k}x{k}xf32>, tensor<f32>) -> tensor<{f}x{cg}x{k}x{k}xf32>
  return %w_new, %loss : tensor<{f}x{cg}x{k}x{k}xf32>, tensor<f32>
}}
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    python = peer_env.python()
    ours, theirs, losses = {}, {}, {}
    with tempfile.TemporaryDirectory() as work:
        layers = []
        for name, n, c, f, h, k, stride, pad, groups in CONFIGS:
            o = (h + 2 * pad - k) // stride + 1
            attrs = (f"strides = array<i64: {stride}, {stride}>, "
                     f"padding = array<i64: {pad}, {pad}, {pad}, {pad}>, "
                     f"groups = {groups} : i64")
            tag = str(len(layers))
            step = os.path.join(work, f"conv{tag}.mlir")
            with open(step, "w") as out:
                out.write(STEP.format(n=n, c=c, f=f, h=h, k=k, o=o,
                                      cg=c // groups, attrs=attrs))
            state = os.path.join(work, f"state{tag}.npz")
            data = os.path.join(work, f"data{tag}.npz")
            run([os.path.join(BIN, "dist-run"), step, "--init-state=" + state,
                 "--init-data=" + data, "--seed=1"])
            flops = 3 * 2 * n * f * o * o * (c // groups) * k * k
            layers.append((name, step, state, data, stride, pad, groups,
                           flops))
        for round_ in range(args.rounds):
            for name, step, state, data, stride, pad, groups, _ in layers:
                ms, loss = dist_run_times(
                    [os.path.join(BIN, "dist-run"), step, "--state=" + state,
                     "--data=" + data, "--steps=" + str(args.steps),
                     "--cache-dir=" + os.path.join(work, "cache")], 1)
                ours.setdefault(name, []).append(ms)
                ms, their_loss = peer_times(
                    python, "torch_conv.py",
                    [state, data, args.steps, stride, pad, groups, 1], 1)
                theirs.setdefault(name, []).append(ms)
                losses[name] = (loss, their_loss)
            print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr)
    print("| conv layer (batch 8) | dist-run ms | PyTorch ms | ratio | "
          "GFLOP/s (ours) | loss after step 1 (ours / PyTorch) |")
    print("|---|---:|---:|---:|---:|---|")
    for name, *_, flops in layers:
        a, b = statistics.median(ours[name]), statistics.median(theirs[name])
        la, lb = losses[name]
        print(f"| {name} | {a:.2f} ({min(ours[name]):.2f}-{max(ours[name]):.2f})"
              f" | {b:.2f} ({min(theirs[name]):.2f}-{max(theirs[name]):.2f}) | "
              f"{a / b:.2f}x | {flops / a / 1e6:.1f} | {la:.6g} / {lb:.6g} |")


if __name__ == "__main__":
    main()
