# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Launch dist-run on the hosts of a TensorFlow-style cluster description.

    python -m distopt.cluster [--cluster FILE] [--processes-per-task K]
                              [--dry-run] -- dist-run STEP.mlir ...

The cluster comes from FILE or the TF_CONFIG environment variable, in
TensorFlow's format:

    {"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222", "host2:2222"],
                 "ps": ["host3:2222"]},
     "task": {"type": "worker", "index": 0}}

Every task of the chief, worker and ps jobs (in that order; "evaluator" is
not part of training and is skipped) runs K processes (default 1) on its
host; ports are ignored (MPICH's launcher connects the processes) and
"task" is ignored (one command starts every process). The hosts go to
`mpirun -f HOSTFILE -np N` (a host listed by several tasks gets their
slots together, in the order of its first task), which runs the command:
ranks 0..K-1 on the chief's host, and so on.
"""

import argparse
import json
import os
import re
import shutil
import stat
import sys
import tempfile

JOBS = ("chief", "worker", "ps")
# A description is read only this large and nested this deep (json.loads
# recurses once per level), checked before it is parsed.
MAX_BYTES = 1 << 20
MAX_DEPTH = 64


class ClusterError(ValueError):
    """A cluster description that cannot be launched."""


def _check_bounds(text, where):
    """Raises ClusterError when `text` is larger than MAX_BYTES or nests
    JSON arrays and objects deeper than MAX_DEPTH (strings skipped)."""
    if len(text) > MAX_BYTES:
        raise ClusterError(f"{where} is {len(text)} bytes, more than the "
                           f"{MAX_BYTES} allowed")
    depth = 0
    for bracket in re.finditer(r'"(?:[^"\\]|\\.)*"?|[\[{\]}]', text):
        c = bracket.group()
        if c in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise ClusterError(f"{where}: JSON nests deeper than "
                                   f"{MAX_DEPTH} levels")
        elif c in "]}" and depth:
            depth -= 1


def read_cluster(text, where):
    """The (host, slots) list of a TF_CONFIG-style JSON text."""
    _check_bounds(text, where)
    try:
        config = json.loads(text)
    except json.JSONDecodeError as e:
        raise ClusterError(f"{where}: not JSON ({e})")
    cluster = config.get("cluster") if isinstance(config, dict) else None
    if not isinstance(cluster, dict):
        raise ClusterError(f"{where}: no \"cluster\" object")
    unknown = set(cluster) - set(JOBS) - {"evaluator"}
    if unknown:
        raise ClusterError(f"{where}: unknown job(s) {sorted(unknown)} "
                           f"(known: {', '.join(JOBS)}, evaluator)")
    hosts = []
    for job in JOBS:
        tasks = cluster.get(job, [])
        if not isinstance(tasks, list):
            raise ClusterError(f"{where}: \"{job}\" must be a list of "
                               "\"host:port\" strings")
        for i, task in enumerate(tasks):
            if not isinstance(task, str) or not task.strip():
                raise ClusterError(f"{where}: {job}[{i}] must be a "
                                   "\"host:port\" string")
            host = task.rsplit(":", 1)[0] if ":" in task else task
            if host.startswith("[") and host.endswith("]"):
                host = host[1:-1]  # an IPv6 address
            hosts.append(host)
    if not hosts:
        raise ClusterError(f"{where}: no chief, worker or ps task")
    return hosts


def hostfile_lines(hosts, per_task):
    """MPICH hostfile lines ("host:slots"), each host once."""
    slots = {}
    for host in hosts:
        slots[host] = slots.get(host, 0) + per_task
    return [f"{host}:{count}" for host, count in slots.items()]


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m distopt.cluster",
        description="Run a command under mpirun on the hosts of a "
                    "TF_CONFIG-style cluster description.")
    parser.add_argument("--cluster", help="JSON file (default: $TF_CONFIG)")
    parser.add_argument("--processes-per-task", type=int, default=1)
    parser.add_argument("--mpirun", default=shutil.which("mpirun") or "mpirun")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the hostfile and the command, run nothing")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    try:
        if not command:
            raise ClusterError("no command to run (python -m distopt.cluster "
                               "... -- dist-run STEP.mlir ...)")
        if args.processes_per_task < 1:
            raise ClusterError("--processes-per-task must be at least 1")
        if args.cluster:
            # Only a regular file (a FIFO would block) within the bound.
            status = os.stat(args.cluster)
            if not stat.S_ISREG(status.st_mode):
                raise ClusterError(f"'{args.cluster}' is not a regular file")
            if status.st_size > MAX_BYTES:
                raise ClusterError(f"'{args.cluster}' is {status.st_size} "
                                   f"bytes, more than the {MAX_BYTES} allowed")
            with open(args.cluster) as f:
                hosts = read_cluster(f.read(MAX_BYTES + 1), args.cluster)
        elif os.environ.get("TF_CONFIG"):
            hosts = read_cluster(os.environ["TF_CONFIG"], "TF_CONFIG")
        else:
            raise ClusterError("no --cluster file and no TF_CONFIG")
    except (ClusterError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    lines = hostfile_lines(hosts, args.processes_per_task)
    total = len(hosts) * args.processes_per_task
    with tempfile.NamedTemporaryFile("w", prefix="distopt-hosts-",
                                     suffix=".txt", delete=False) as f:
        f.write("\n".join(lines) + "\n")
        hostfile = f.name
    try:
        mpirun = [args.mpirun, "-f", hostfile, "-np", str(total)] + command
        if args.dry_run:
            print("\n".join(lines))
            print(" ".join(mpirun))
            return 0
        import subprocess
        return subprocess.call(mpirun)
    finally:
        os.unlink(hostfile)


if __name__ == "__main__":
    sys.exit(main())
