# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Launch dist-run on the hosts of a TensorFlow-style cluster description,
or describe the cluster for dist-auto.

    python -m distopt.cluster [--cluster FILE] [--processes-per-task K]
                              [--dry-run] -- dist-run STEP.mlir ...
    python -m distopt.cluster describe --preset dgx-a100
                              [--nodes N | --tf-config [FILE] |
                               --hostfile FILE | --slurm]
                              [--devices-per-node K] [-o cluster.json]

`describe` writes a cluster description (`dist-opt
--dist-auto=cluster=cluster.json`): a preset's (or `--from FILE`'s) devices
and links on the nodes of this job, every field checked by the compiler.

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


def _read_text(path):
    """The text of `path`, a regular file (a FIFO would block) within
    MAX_BYTES."""
    status = os.stat(path)
    if not stat.S_ISREG(status.st_mode):
        raise ClusterError(f"'{path}' is not a regular file")
    if status.st_size > MAX_BYTES:
        raise ClusterError(f"'{path}' is {status.st_size} bytes, more than "
                           f"the {MAX_BYTES} allowed")
    with open(path) as f:
        return f.read(MAX_BYTES + 1)


def _hostfile_nodes(text, where):
    """(nodes, slots per node or None) of an MPICH/Open MPI hostfile:
    "host", "host:slots" or "host slots=N" lines; # comments."""
    slots = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"([^\s:\[]+|\[[^\]\s]+\])(?::(\d+))?"
                             r"(?:\s+slots=(\d+))?", line)
        if not match:
            raise ClusterError(f"{where}:{number}: expected 'host', "
                               f"'host:slots' or 'host slots=N', got '{line}'")
        count = match.group(2) or match.group(3)
        slots[match.group(1)] = slots.get(match.group(1), 0) + int(count or 1)
    if not slots:
        raise ClusterError(f"{where}: no hosts")
    counts = set(slots.values())
    return len(slots), counts.pop() if len(counts) == 1 else None


def _slurm_nodes(env):
    """(nodes, devices per node or None) of the Slurm job in `env`."""
    nodes = env.get("SLURM_JOB_NUM_NODES") or env.get("SLURM_NNODES")
    if not nodes:
        raise ClusterError("--slurm: no SLURM_JOB_NUM_NODES in the "
                           "environment (not inside a Slurm job?)")
    per_node = env.get("SLURM_GPUS_ON_NODE") or env.get("SLURM_NTASKS_PER_NODE")
    try:
        return int(nodes), int(per_node.split("(")[0]) if per_node else None
    except ValueError:
        raise ClusterError(f"--slurm: cannot read SLURM_JOB_NUM_NODES="
                           f"{nodes!r} / devices per node {per_node!r}")


def describe(argv):
    """`python -m distopt.cluster describe`: a cluster description for
    dist-auto, a preset's (or a file's) devices on the nodes of this job."""
    from distopt import _distopt

    parser = argparse.ArgumentParser(
        prog="python -m distopt.cluster describe",
        description="Write a cluster description (dist-auto's cluster=) "
                    "with a preset's or a file's devices and links, on the "
                    "nodes of TF_CONFIG, a hostfile or a Slurm job.")
    base = parser.add_mutually_exclusive_group(required=True)
    base.add_argument("--preset", choices=_distopt.cluster_presets())
    base.add_argument("--from", dest="source", metavar="FILE",
                      help="a cluster description to start from")
    nodes = parser.add_mutually_exclusive_group()
    nodes.add_argument("--nodes", type=int)
    nodes.add_argument("--tf-config", metavar="FILE", nargs="?", const="",
                       help="TF_CONFIG-style file (default: $TF_CONFIG): "
                            "one node per distinct host")
    nodes.add_argument("--hostfile", metavar="FILE",
                       help="an mpirun hostfile: one node per host, its "
                            "slots the devices per node")
    nodes.add_argument("--slurm", action="store_true",
                       help="the nodes (and GPUs per node) of this Slurm job")
    parser.add_argument("--devices-per-node", type=int)
    parser.add_argument("--name")
    parser.add_argument("-o", "--output", default="-",
                        help="where to write the JSON ('-': stdout)")
    args = parser.parse_args(argv)
    try:
        if args.preset:
            text = _distopt.cluster_description(args.preset)
        else:
            text = _distopt.cluster_description(_read_text(args.source),
                                                args.source)
        description = json.loads(text)
        count, per_node = None, None
        if args.nodes is not None:
            count = args.nodes
        elif args.tf_config is not None:
            where = args.tf_config or "TF_CONFIG"
            config = (_read_text(args.tf_config) if args.tf_config
                      else os.environ.get("TF_CONFIG"))
            if not config:
                raise ClusterError("--tf-config: no file and no TF_CONFIG")
            count = len(set(read_cluster(config, where)))
        elif args.hostfile:
            count, per_node = _hostfile_nodes(_read_text(args.hostfile),
                                              args.hostfile)
        elif args.slurm:
            count, per_node = _slurm_nodes(os.environ)
        if args.devices_per_node is not None:
            per_node = args.devices_per_node
        if count is not None:
            description["nodes"] = count
        if per_node is not None:
            description["devices_per_node"] = per_node
        if args.name:
            description["name"] = args.name
        # Checked again as a whole: counts in range, links for the nodes.
        text = _distopt.cluster_description(json.dumps(description),
                                            "the description")
    except (ClusterError, OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.output == "-":
        sys.stdout.write(text + "\n")
        return 0
    from distopt import output
    try:
        output.write_file("-o", args.output, (text + "\n").encode())
    except (output.OutputError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["describe"]:
        return describe(argv[1:])
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
            hosts = read_cluster(_read_text(args.cluster), args.cluster)
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
