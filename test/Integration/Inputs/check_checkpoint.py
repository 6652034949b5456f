# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Checks a dist-run checkpoint directory with standard tools only (json,
zlib, numpy), as a user would open one.

    check_checkpoint.py CKPT [--shards NAME=COUNT]... [--step N]
                        [--samples N] [--batch N]

Every shard listed in index.json exists, matches its CRC-32, loads with
numpy as the indexed dtype and shape, and the shards of each array tile its
global shape exactly once; the losses hold one value per step.
"""

import argparse
import json
import os
import sys
import zlib

import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("checkpoint")
parser.add_argument("--shards", action="append", default=[])
parser.add_argument("--step", type=int)
parser.add_argument("--samples", type=int)
parser.add_argument("--batch", type=int)
args = parser.parse_args()

with open(os.path.join(args.checkpoint, "index.json")) as f:
    index = json.load(f)
problems = []


def load(record, dtype):
    path = os.path.join(args.checkpoint, record["file"])
    with open(path, "rb") as f:
        if zlib.crc32(f.read()) != record["crc32"]:
            problems.append(f"{record['file']}: CRC-32 mismatch")
    array = np.load(path, mmap_mode="r")
    if array.dtype != np.dtype(dtype) or list(array.shape) != record["shape"]:
        problems.append(f"{record['file']}: {array.dtype} {array.shape}, "
                        f"indexed {dtype} {record['shape']}")
    return array


assert index["format"] == "distopt-checkpoint" and index["version"] == 2
for name, record in index["arrays"].items():
    covered = np.zeros(record["shape"], np.int64)
    for shard in record["shards"]:
        load(shard, record["dtype"])
        box = tuple(slice(o, o + s)
                    for o, s in zip(shard["offsets"], shard["shape"]))
        covered[box] += 1
    if not (covered == 1).all():
        problems.append(f"'{name}': the shards do not tile the array")
losses = load(dict(index["losses"]), "<f4")
if len(losses) != index["step"]:
    problems.append(f"{len(losses)} losses at step {index['step']}")
for spec in args.shards:
    name, count = spec.split("=")
    if len(index["arrays"][name]["shards"]) != int(count):
        problems.append(f"'{name}' has {len(index['arrays'][name]['shards'])}"
                        f" shards, not {count}")
if args.step is not None and index["step"] != args.step:
    problems.append(f"step {index['step']}, not {args.step}")
dataset = index["dataset"]
for key in ("samples", "batch"):
    expected = getattr(args, key)
    if expected is not None and dataset[key] != expected:
        problems.append(f"dataset {key} {dataset[key]}, not {expected}")
if problems:
    print("\n".join(problems))
    sys.exit(1)
print(f"ok: {len(index['arrays'])} arrays at step {index['step']}")
