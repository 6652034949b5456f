# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Damages a checkpoint's index.json the way a bad copy or a crafted index
would, keeping every CRC-32 valid (only the records move).

    edit_index.py CKPT MODE

MODE: overlap (fc1.weight's second shard record replaced by its first: the
top half listed twice at [0, 0]), gap (fc1.weight's second shard dropped),
swap (the shard lists of fc1.weight and fc1.weight.momentum_buffer
swapped: same shapes), move (fc1.weight's two shards trade files, CRCs and
bindings, each keeping its offsets), version1 (format version 1).
"""

import copy
import json
import os
import sys

checkpoint, mode = sys.argv[1:3]
path = os.path.join(checkpoint, "index.json")
with open(path) as f:
    index = json.load(f)
arrays = index["arrays"]
shards = arrays["fc1.weight"]["shards"]
if mode == "overlap":
    shards[1] = copy.deepcopy(shards[0])
elif mode == "gap":
    del shards[1]
elif mode == "swap":
    other = arrays["fc1.weight.momentum_buffer"]
    arrays["fc1.weight"]["shards"], other["shards"] = other["shards"], shards
elif mode == "move":
    for key in ("file", "crc32", "binding"):
        shards[0][key], shards[1][key] = shards[1][key], shards[0][key]
elif mode == "version1":
    index["version"] = 1
else:
    raise SystemExit(f"unknown mode {mode}")
with open(path, "w") as f:
    json.dump(index, f, indent=1)
