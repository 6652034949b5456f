#!/usr/bin/env python3
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""dist-auto on the GPT configurations of Megatron-LM's Table 1.

Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
Clusters Using Megatron-LM" (SC'21), Table 1: ten GPT models from 1.7B to
1T parameters (vocabulary 51,200, sequence 2048) trained on up to 3072
A100-80GB GPUs (DGX A100 nodes of 8), each with its hand-tuned tensor (t),
pipeline (p) and data (d) parallel sizes and the measured per-GPU
throughput.

For each configuration this script generates the training step at full
size (bench/gen_gpt.py: forward, backward, AdamW), runs it in 16 bits
(train-mixed-precision compute=f16, as Megatron trained) and asks
`dist-auto` (analytic mode, the dgx-a100 preset with as many nodes, the
plan not applied) for a plan. It reports the chosen plan, its predicted
step time and memory, the throughput that step time gives by Megatron's
own FLOP count (eq. 3: 96 B s l h^2 (1 + s/6h + V/16lh), which counts the
recomputation Megatron ran with), Megatron's plan as dist-auto predicts it,
and the search time.

    python3 bench/megatron_table1.py [--dist-opt build/bin/dist-opt]
        [--only 1.7B,39.1B] [--json out.json] [--markdown out.md]

Only the Python standard library is used.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))

VOCAB, SEQ = 51200, 2048

# (name, heads, hidden, layers, t, p, GPUs, batch, TFLOP/s per GPU)
TABLE1 = [
    ("1.7B", 24, 2304, 24, 1, 1, 32, 512, 137),
    ("3.6B", 32, 3072, 30, 2, 1, 64, 512, 138),
    ("7.5B", 32, 4096, 36, 4, 1, 128, 512, 142),
    ("18.4B", 48, 6144, 40, 8, 1, 256, 1024, 135),
    ("39.1B", 64, 8192, 48, 8, 2, 512, 1536, 138),
    ("76.1B", 80, 10240, 60, 8, 4, 1024, 1792, 140),
    ("145.6B", 96, 12288, 80, 8, 8, 1536, 2304, 148),
    ("310.1B", 128, 16384, 96, 8, 16, 1920, 2160, 155),
    ("529.6B", 128, 20480, 105, 8, 35, 2520, 2520, 163),
    ("1008.0B", 160, 25600, 128, 8, 64, 3072, 3072, 163),
]


def megatron_flops(batch, layers, hidden):
    """Megatron's eq. 3: FLOPs per step with activation recomputation."""
    return (96 * batch * SEQ * layers * hidden ** 2 *
            (1 + SEQ / (6 * hidden) + VOCAB / (16 * layers * hidden)))


def plan_text(plan):
    text = f"t={plan['tp']} p={plan['pp']} d={plan['dp']}"
    if plan["zero"]:
        text += f" ZeRO-{plan['zero']}"
    if plan["pp"] > 1:
        text += f" m={plan['microbatches']} {plan['schedule']}"
    if plan["remat"] != "none":
        text += f" remat={plan['remat']}"
    return text


def find_megatron_plan(plans, t, p, d, batch):
    """Megatron's layout as dist-auto saw it: no ZeRO, 1F1B, one sample per
    microbatch, each layer recomputed (as Table 1 ran)."""
    microbatches = batch // d if p > 1 else 1
    for plan in plans:
        if (plan["tp"], plan["pp"], plan["dp"], plan["zero"]) != (t, p, d, 0):
            continue
        if plan["remat"] != "layer":
            continue
        if p > 1 and (plan["schedule"] != "1f1b" or
                      plan["microbatches"] != microbatches):
            continue
        return plan
    return None


def run(args, config, workdir):
    name, heads, hidden, layers, t, p, gpus, batch, tflops = config
    step = os.path.join(workdir, f"gpt_{name}.mlir")
    subprocess.run([sys.executable, os.path.join(HERE, "gen_gpt.py"),
                    "--layers", str(layers), "--hidden", str(hidden),
                    "--heads", str(heads), "--seq", str(SEQ),
                    "--batch", str(batch), "--vocab", str(VOCAB),
                    "--output", step], check=True)
    explain = os.path.join(workdir, f"plans_{name}.json")
    out = os.path.join(workdir, f"out_{name}.mlir")
    start = time.monotonic()
    result = subprocess.run(
        [args.dist_opt, step, "--train-mixed-precision=compute=f16",
         f"--dist-auto=cluster=dgx-a100 nodes={gpus // 8} mode=analytic "
         f"apply=false explain={explain}", "-o", out],
        capture_output=True, text=True)
    wall = time.monotonic() - start
    if result.returncode != 0:
        return {"model": name, "error": result.stderr.strip()[-2000:]}
    with open(explain) as f:
        plans = json.load(f)
    chosen = plans["plans"][0]
    flops = megatron_flops(batch, layers, hidden)
    megatron_step = flops / (gpus * tflops * 1e12)
    row = {
        "model": name, "gpus": gpus, "batch": batch,
        "megatron_plan": f"t={t} p={p} d={gpus // (t * p)}",
        "megatron_tflops_per_gpu": tflops,
        "megatron_step_s": megatron_step,
        "chosen_plan": plan_text(chosen),
        "chosen_strategy": chosen["strategy"],
        "predicted_step_s": chosen["step_time_s"],
        "predicted_memory_gb": chosen["memory_bytes_per_device"] / 1e9,
        "predicted_bubble": chosen["bubble_fraction"],
        "predicted_tflops_per_gpu": flops / (gpus * chosen["step_time_s"])
        / 1e12,
        "plans": len(plans["plans"]),
        "search_time_s": plans["search_time_s"],
        "wall_time_s": wall,
    }
    mine = find_megatron_plan(plans["plans"], t, p, gpus // (t * p), batch)
    if mine is None:
        row["megatron_plan_predicted"] = "not in the search space"
    elif "step_time_s" in mine:
        row["megatron_plan_predicted"] = (
            f"{mine['step_time_s']:.2f} s, "
            f"{mine['memory_bytes_per_device'] / 1e9:.1f} GB"
            + ("" if mine["fits_memory"] else " (over memory)"))
    elif "pruned" in mine:
        row["megatron_plan_predicted"] = (
            f">= {mine['lower_bound_step_time_s']:.2f} s, >= "
            f"{mine['memory_bytes_per_device_at_least'] / 1e9:.1f} GB "
            f"({mine['pruned']})")
    else:
        row["megatron_plan_predicted"] = "refused: " + mine["refused"]
    return row


def markdown(rows):
    lines = [
        "| model | GPUs | Megatron (t, p, d) | Megatron TFLOP/s/GPU (step s) "
        "| dist-auto's plan | predicted step s | TFLOP/s/GPU (eq. 3) "
        "| GB/device | Megatron's plan, predicted | search s |",
        "| --- | ---: | --- | ---: | --- | ---: | ---: | ---: | --- | ---: |"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | | | | error: "
                         f"{r['error'].splitlines()[-1]} | | | | | |")
            continue
        lines.append(
            f"| {r['model']} | {r['gpus']} | {r['megatron_plan']} "
            f"| {r['megatron_tflops_per_gpu']} ({r['megatron_step_s']:.2f}) "
            f"| {r['chosen_plan']} | {r['predicted_step_s']:.2f} "
            f"| {r['predicted_tflops_per_gpu']:.0f} "
            f"| {r['predicted_memory_gb']:.1f} "
            f"| {r['megatron_plan_predicted']} | {r['search_time_s']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dist-opt", default=os.path.join(
        HERE, "..", "build", "bin", "dist-opt"))
    ap.add_argument("--only", help="comma-separated model names (1.7B,...)")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--markdown", help="write the table here")
    args = ap.parse_args(argv)
    configs = TABLE1
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - {c[0] for c in TABLE1}
        if unknown:
            ap.error(f"unknown models {sorted(unknown)}; Table 1 has "
                     f"{', '.join(c[0] for c in TABLE1)}")
        configs = [c for c in TABLE1 if c[0] in wanted]
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for config in configs:
            row = run(args, config, workdir)
            rows.append(row)
            print(json.dumps(row), flush=True)
    table = markdown(rows)
    sys.stdout.write(table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
