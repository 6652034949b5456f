# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Checks a dist-run --metrics file.

    check_metrics.py METRICS.jsonl STEPS EVAL_STEPS

Every line is JSON; the last line of each step 1..STEPS holds a finite
loss, a positive step time, communication time and collective bytes (a
data-parallel step all-reduces its gradients) and a peak RSS; EVAL_STEPS
(comma-separated, possibly empty) are the steps with an evaluation line.
"""

import json
import math
import sys

steps, evaluations = {}, {}
for line in open(sys.argv[1]):
    record = json.loads(line)
    if "step" in record:
        steps[record["step"]] = record
    else:
        evaluations[record["eval_after_step"]] = record
expected = set(range(1, int(sys.argv[2]) + 1))
assert set(steps) == expected, sorted(steps)
for record in steps.values():
    assert math.isfinite(record["loss"]), record
    assert record["step_ms"] > 0 and record["peak_rss_mb"] > 0, record
    assert record["comm_ms"] > 0 and record["collective_bytes"] > 0, record
    assert record["comm_ms"] <= record["step_ms"], record
    # The CPU's kernels (libdistopt_cpu): OpenBLAS's core, none below the CPU.
    assert record["cpu_kernels"].startswith("products: openblas "), record
    assert "below the CPU" not in record["cpu_kernels"], record
    # Its 16-bit products: oneDNN's bf16 gemm, or f32 sgemm with the reason.
    assert record["cpu_sixteen_bit_kernels"].startswith("bf16: "), record
eval_steps = {int(s) for s in sys.argv[3].split(",") if s}
assert set(evaluations) == eval_steps, sorted(evaluations)
for record in evaluations.values():
    assert 0 <= record["accuracy"] <= 1 and record["samples"] == 128, record
print(f"ok: {len(steps)} steps, {len(evaluations)} evaluations")
