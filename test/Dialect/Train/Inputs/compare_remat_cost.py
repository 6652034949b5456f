# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Compares dist-cost-report JSON of a step with and without train-remat.

    compare_remat_cost.py NONE.json POLICY.json...

Each POLICY file must count more FLOPs (the recomputation) and a lower
activation peak than NONE; prints one line per file, fails otherwise.
"""

import json
import os
import sys


def totals(path):
    with open(path) as f:
        step = json.load(f)["functions"][0]
    return step["flops_per_rank"], step["memory"]["activation_peak_bytes"]


base_flops, base_peak = totals(sys.argv[1])
failed = False
for path in sys.argv[2:]:
    flops, peak = totals(path)
    name = os.path.splitext(os.path.basename(path))[0]
    if flops > base_flops and peak < base_peak:
        print(f"{name}: more flops, lower activation peak "
              f"({flops / base_flops:.3f}x flops, {peak / base_peak:.3f}x peak)")
    else:
        print(f"{name}: flops {flops} vs {base_flops}, activation peak "
              f"{peak} vs {base_peak}")
        failed = True
sys.exit(1 if failed else 0)
