# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Checks a dist-run --trace file against the plan (--dist-schedule-trace).

    check_trace.py RUN.json PLAN.json STEPS

On every rank the measured units are the planned ones in the planned order,
STEPS times, each step ending with the update (U); units do not overlap on
a rank; every send has the receive of the same channel on its peer (drawn
as an arrow), and no receive is left without its send. Prints a summary.
The plan has a row per pipeline device; when each stage is data or tensor
parallel (R ranks for P devices), rank r runs the row of device
r // (R / P).
"""

import json
import sys
from collections import Counter

path, plan_path, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
planned = {}
for e in sorted(json.load(open(plan_path))["traceEvents"], key=lambda e: e.get("ts", 0)):
    if e.get("ph") == "X":
        planned.setdefault(e["tid"], []).append(e["name"])
events = json.load(open(path))["traceEvents"]
slices = [e for e in events if e.get("ph") == "X"]
failed = []
ranks = sorted({e["tid"] for e in slices})
per_device = len(ranks) // len(planned)
if len(ranks) != per_device * len(planned):
    failed.append(f"{len(ranks)} ranks for {len(planned)} planned devices")
for rank in ranks:
    order = planned[rank // max(per_device, 1)]
    units = sorted((e for e in slices if e["tid"] == rank and e["cat"] in "FBWU"),
                   key=lambda e: e["ts"])
    names = [e["name"] for e in units if e["cat"] != "U"]
    updates = [i for i, e in enumerate(units) if e["cat"] == "U"]
    if names != order * steps or len(updates) != steps or updates[-1] != len(units) - 1:
        failed.append(f"rank {rank} ran {names}, planned {order} x {steps}")
    for a, b in zip(units, units[1:]):
        if a["ts"] + a["dur"] > b["ts"] + 1e-3:
            failed.append(f"rank {rank}: {a['name']} and {b['name']} overlap")
sends = Counter((e["tid"], e["args"]["peer"], e["args"]["channel"])
                for e in slices if e["cat"] == "send")
receives = Counter((e["args"]["peer"], e["tid"], e["args"]["channel"])
                   for e in slices if e["cat"] == "recv")
if sends != receives:
    failed.append(f"sends {dict(sends)} do not match receives {dict(receives)}")
arrows = sum(1 for e in events if e.get("ph") == "s")
if arrows != sum(sends.values()):
    failed.append(f"{arrows} arrows for {sum(sends.values())} transfers")
if failed:
    print("\n".join(failed))
    sys.exit(1)
print(f"trace ok: {len(slices)} slices, {arrows} transfers")
