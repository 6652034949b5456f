# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Compares dist-auto's analytic predictions with its built ones.

    compare_auto_modes.py BUILD.json ANALYTIC.json --min-rho R --max-ratio X

Over the plans predicted in both explain files (matched by strategy): the
Spearman rank correlation of their step times is at least R, every step
time and memory is within a factor X of the built one, and both modes
choose the same plan.
"""

import argparse
import json
import sys


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0.0] * len(values)
    i = 0
    while i < len(order):  # ties share their mean rank
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            result[order[k]] = (i + j) / 2
        i = j + 1
    return result


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    n = len(a)
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra) ** 0.5
    vb = sum((y - mb) ** 2 for y in rb) ** 0.5
    return cov / (va * vb) if va and vb else 1.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("analytic")
    ap.add_argument("--min-rho", type=float, required=True)
    ap.add_argument("--max-ratio", type=float, required=True)
    args = ap.parse_args()
    build, analytic = (json.load(open(p)) for p in (args.build, args.analytic))
    problems = []
    if build.get("mode") != "build" or analytic.get("mode") != "analytic":
        problems.append("the files are not a build and an analytic search")
    built = {p["strategy"]: p for p in build["plans"] if "step_time_s" in p}
    pairs = [(p, built[p["strategy"]]) for p in analytic["plans"]
             if "step_time_s" in p and p["strategy"] in built]
    if len(pairs) < 10:
        problems.append(f"only {len(pairs)} plans predicted in both")
    for a, b in pairs:
        for key in ("step_time_s", "memory_bytes_per_device"):
            ratio = a[key] / b[key]
            if not 1 / args.max_ratio <= ratio <= args.max_ratio:
                problems.append(f"{a['strategy']}: {key} {a[key]:.4g} "
                                f"analytic vs {b[key]:.4g} built")
    rho = spearman([a["step_time_s"] for a, _ in pairs],
                   [b["step_time_s"] for _, b in pairs]) if pairs else 0
    if rho < args.min_rho:
        problems.append(f"step-time rank correlation {rho:.3f} < "
                        f"{args.min_rho}")
    if build["plans"][0]["strategy"] != analytic["plans"][0]["strategy"]:
        problems.append(f"build chose {build['plans'][0]['strategy']}, "
                        f"analytic {analytic['plans'][0]['strategy']}")
    if problems:
        print("\n".join(problems))
        return 1
    print(f"ok: {len(pairs)} plans in both, rho {rho:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
