#!/usr/bin/env python3
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Draws the curves of a dist-run --metrics file to a PNG.

    plot_metrics.py METRICS.jsonl [MORE.jsonl ...] -o OUT.png [--title T]

One column per file (a run): the training loss per step with the
evaluation loss at the steps it was measured, the evaluation accuracy, and
the step time with the time inside communication. A step that appears
twice (a run resumed after a failure re-runs the steps after its last
checkpoint) counts with its last line.
"""

import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(path):
    """(steps, evaluations): dicts by step, the last line of each winning."""
    steps, evaluations = {}, {}
    with open(path) as f:
        for number, text in enumerate(f, 1):
            if not text.strip():
                continue
            try:
                line = json.loads(text)
            except json.JSONDecodeError as e:
                raise SystemExit(f"{path}:{number}: not JSON ({e})")
            if "step" in line:
                steps[line["step"]] = line
            elif "eval_after_step" in line:
                evaluations[line["eval_after_step"]] = line
            else:
                raise SystemExit(f"{path}:{number}: neither a step nor an "
                                 "evaluation line")
    if not steps and not evaluations:
        raise SystemExit(f"{path}: no lines")
    return steps, evaluations


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("metrics", nargs="+")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--title")
    args = parser.parse_args(argv)
    runs = [(os.path.basename(p), *read(p)) for p in args.metrics]
    figure, axes = plt.subplots(3, 1, figsize=(7, 9), sharex=True,
                                squeeze=False)
    loss, accuracy, time = axes[:, 0]
    for name, steps, evaluations in runs:
        x = sorted(steps)
        loss.plot(x, [steps[s]["loss"] for s in x], label=f"{name} train")
        time.plot(x, [steps[s]["step_ms"] for s in x], label=f"{name} step")
        time.plot(x, [steps[s]["comm_ms"] for s in x], linestyle=":",
                  label=f"{name} communication")
        e = sorted(evaluations)
        if e:
            loss.plot(e, [evaluations[s]["loss"] for s in e], marker="o",
                      label=f"{name} eval")
            with_accuracy = [s for s in e if "accuracy" in evaluations[s]]
            accuracy.plot(with_accuracy,
                          [evaluations[s]["accuracy"] for s in with_accuracy],
                          marker="o", label=name)
    loss.set_ylabel("loss")
    loss.legend()
    accuracy.set_ylabel("eval accuracy")
    accuracy.set_ylim(0, 1)
    time.set_ylabel("ms")
    time.set_xlabel("step")
    time.legend()
    if args.title:
        figure.suptitle(args.title)
    figure.tight_layout()
    figure.savefig(args.output, dpi=100)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
