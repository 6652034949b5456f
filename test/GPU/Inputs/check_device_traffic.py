# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Checks that a run kept its state on the device.

    check_device_traffic.py [--graphs] [--staged] [--fixed-data]
                            EVENTS.jsonl STATE.npz [HYPER...]

EVENTS is dist-run --events of a run on a device (--device=cuda, or
--gpu-mapped's stand-in); STATE the state it started from, less the arrays
named HYPER (hyper-parameters such as `lr`, which are not state: they are
copied before every step). The first step
copies the state and the batch to the device; every later step copies only
what is not state (the batch, hyper-parameters): exactly the first step's
bytes less the state's, never the state again. Every step copies back only
its loss and metrics (a few bytes: no state array), and the runner
allocates nothing on the device after the first step. With --graphs, the
step is captured as a graph at step 2 and every step from then on is one
launch of it (dist-run --step-graphs, the default).

With --staged (dist-run --stage-batches, a dataset), every step but the
last stages the next step's batch (the same bytes each time), and every
later step copies only the hyper-parameters: the batch went to the device
while the step before ran.

With --fixed-data (a run on one batch, dist-run --data), the batch goes to
the device with the state at the first step and stays there: every later
step copies the same few bytes (the hyper-parameters), fewer than the
first step's beside the state.
"""

import json
import sys

import numpy as np

args = sys.argv[1:]
graphs = "--graphs" in args
staged = "--staged" in args
fixed = "--fixed-data" in args
args = [a for a in args if a not in ("--graphs", "--staged", "--fixed-data")]
events_path, state_path, hyper = args[0], args[1], args[2:]
state = np.load(state_path)
state_bytes = sum(state[name].nbytes for name in state.files
                  if name not in hyper)
steps = [e for e in map(json.loads, open(events_path)) if e["event"] == "step"]
if len(steps) < 2:
    sys.exit(f"{events_path}: {len(steps)} step events, want at least 2")
failed = False


def fail(message):
    global failed
    print(message)
    failed = True


first = steps[0]["device"]
if first["to_device_bytes"] < state_bytes:
    fail(f"step 1 copied {first['to_device_bytes']} bytes to the device, "
         f"less than the state's {state_bytes}")
data_bytes = first["to_device_bytes"] - state_bytes
batch_bytes = first["staged_bytes"] if staged else 0
if fixed:
    batch_bytes = data_bytes - steps[1]["device"]["to_device_bytes"]
    if batch_bytes <= 0:
        fail(f"step 2 copied {steps[1]['device']['to_device_bytes']} bytes, "
             f"want fewer than step 1's {data_bytes} beside the state (the "
             "batch stays on the device)")
if staged and not 0 < batch_bytes <= data_bytes:
    fail(f"step 1 staged {batch_bytes} bytes, want a batch of at most "
         f"{data_bytes}")
for event in steps:
    device, step = event["device"], event["step"]
    copied = device["to_device_bytes"]
    if step > 1 and copied != data_bytes - batch_bytes:
        fail(f"step {step} copied {copied} bytes to the device, want "
             f"{data_bytes - batch_bytes} (the "
             + ("hyper-parameters: its batch was staged)" if staged else
                "hyper-parameters: the batch stays on the device)" if fixed
                else "batch and hyper-parameters)"))
    want_staged = batch_bytes if staged and step < len(steps) else 0
    if device["staged_bytes"] != want_staged:
        fail(f"step {step} staged {device['staged_bytes']} bytes, want "
             f"{want_staged}")
    if step > 1 and device["allocations"] != 0:
        fail(f"step {step}: {device['allocations']} runner allocations")
    want = (0, 0) if step == 1 or not graphs else (1 if step == 2 else 0, 1)
    found = (device["graph_captures"], device["graph_launches"])
    if graphs and found != want:
        fail(f"step {step}: {found[0]} graph captures and {found[1]} "
             f"launches, want {want[0]} and {want[1]}")
    if device["to_host_bytes"] > 64:
        fail(f"step {step} copied {device['to_host_bytes']} bytes to the "
             f"host (only the loss and metrics should come back)")
print(f"{len(steps)} steps: state {state_bytes} bytes copied once, "
      f"{data_bytes} bytes of data per step"
      + (f" ({batch_bytes} staged while the step before ran)" if staged
         else f" ({batch_bytes} of them, the batch, once)" if fixed
         else "") + ", "
      f"{steps[-1]['device']['to_host_bytes']} bytes back per step"
      + (f", {sum(e['device']['graph_launches'] for e in steps)} graph "
         "launches" if graphs else ""))
sys.exit(1 if failed else 0)
