# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Checks and summarises the fake CUDA driver's report (test/lib/FakeCuda).

    check_fake_report.py [--max-launches=N] REPORT.json

Fails (exit 1, saying why) when the report has a violation, when memory
was allocated after the last capture once graphs replay (the steady state
allocates nothing), when a stream ran both kernels and collectives (the
collectives belong on the nccl backend's communication stream), or when a
captured graph launches more than N kernels and products. Prints one line
per graph and one for the streams, for FileCheck.
"""

import json
import sys

args = sys.argv[1:]
limit = None
for a in list(args):
    if a.startswith("--max-launches="):
        limit = int(a.split("=", 1)[1])
        args.remove(a)
report = json.load(open(args[0]))
failed = []
for violation in report["violations"]:
    failed.append("violation: " + violation)
if report["allocations_after_capture"]:
    failed.append(f"{report['allocations_after_capture']} allocations after "
                  "the last capture, with graphs replaying")
for stream in report["streams"]:
    if stream.get("kernels") and stream.get("collectives"):
        failed.append(f"stream {stream['id']} runs kernels and collectives")
print(f"{len(report['violations'])} violations")
for graph in report["graphs"]:
    launches = graph.get("kernels", 0) + graph.get("products", 0)
    print(f"graph: {graph['nodes']} nodes, {graph.get('kernels', 0)} kernels, "
          f"{graph.get('products', 0)} products, "
          f"{graph.get('collectives', 0)} collectives, "
          f"{graph.get('copies', 0)} copies; {graph['launches']} launches")
    if limit is not None and launches > limit:
        failed.append(f"a graph launches {launches} kernels and products, "
                      f"more than {limit}")
kinds = ("kernels", "products", "collectives", "copies")
streams = [s for s in report["streams"] if any(s.get(k) for k in kinds)]
print("streams: " + "; ".join(
    f"{s['id']}: " + ", ".join(f"{k} {s[k]}" for k in kinds if s.get(k))
    for s in streams))
for message in failed:
    print(message)
sys.exit(1 if failed else 0)
