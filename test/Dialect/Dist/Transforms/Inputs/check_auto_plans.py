# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Checks a dist-auto explain file and writes the chosen hand strategy.

    check_auto_plans.py PLANS.json STRATEGY.txt [--devices N] [--max-tp T]

The chosen plan (the first) fits and is predicted no slower than any other
plan that fits; plans that fit come before those over memory, then the
analytic mode's plans left at their lower bounds (with why: their bound is
slower than the chosen plan, or they are over memory already), and refused
plans (with their reason) last; each plan has the fields the guide lists.
An analytic plan's predicted step is at least its lower bound.
STRATEGY.txt gets the chosen plan's strategy pipeline ("" for one device)
for a RUN line to apply by hand and compare.
"""

import argparse
import json
import sys

FIELDS = ("dp", "tp", "pp", "zero", "sequence_parallel", "microbatches",
          "schedule", "remat", "strategy")
PREDICTED = ("step_time_s", "memory_bytes_per_device", "bubble_fraction",
             "comm_bytes_per_device", "fits_memory")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("plans")
    ap.add_argument("strategy")
    ap.add_argument("--devices", type=int)
    ap.add_argument("--max-tp", type=int,
                    help="no plan splits tensors over more devices (a node's)")
    args = ap.parse_args()
    with open(args.plans) as f:
        explain = json.load(f)
    plans = explain["plans"]
    problems = []
    if args.devices and explain["devices"] != args.devices:
        problems.append(f"devices {explain['devices']}, expected {args.devices}")
    if explain["search_time_s"] < 0:
        problems.append("negative search time")
    state = 0  # 0: fitting plans, 1: over memory, 2: pruned, 3: refused
    for i, plan in enumerate(plans):
        missing = [k for k in FIELDS if k not in plan]
        if plan["dp"] * plan["tp"] * plan["pp"] != explain["devices"]:
            problems.append(f"plan {i} does not use every device: {plan}")
        if args.max_tp and plan["tp"] > args.max_tp:
            problems.append(f"plan {i} has tp={plan['tp']} > {args.max_tp}")
        if "refused" in plan:
            kind = 3
            if not plan["refused"]:
                problems.append(f"plan {i} is refused without a reason")
        elif "pruned" in plan:
            kind = 2
            bound = plan.get("lower_bound_step_time_s", 0)
            over = plan.get("memory_bytes_per_device_at_least", 0) > \
                explain["cluster"]["device"]["memory_bytes"]
            if explain.get("mode") != "analytic":
                problems.append(f"plan {i} is pruned in build mode")
            elif "memory" in plan["pruned"]:
                if not over:
                    problems.append(f"plan {i} is pruned for memory it has")
            elif bound < plans[0].get("step_time_s", float("inf")):
                problems.append(f"plan {i} is pruned below the chosen plan")
        else:
            missing += [k for k in PREDICTED if k not in plan]
            kind = 0 if plan["fits_memory"] else 1
            bound = plan.get("lower_bound_step_time_s")
            if bound is not None and plan["step_time_s"] < bound * (1 - 1e-9):
                problems.append(f"plan {i} is predicted under its lower bound")
        if missing:
            problems.append(f"plan {i} lacks {missing}")
        if kind < state:
            problems.append(f"plan {i} is out of order")
        state = kind
    fitting = [p for p in plans if p.get("fits_memory")]
    if not fitting or fitting[0] is not plans[0]:
        problems.append("the first plan does not fit")
    elif any(p["step_time_s"] < plans[0]["step_time_s"] for p in fitting):
        problems.append("a plan that fits is predicted faster than the chosen")
    if problems:
        print("\n".join(problems))
        return 1
    with open(args.strategy, "w") as f:
        f.write(plans[0]["strategy"])
    print(f"ok: {len(plans)} plans, chosen {plans[0]['strategy'] or 'single device'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
