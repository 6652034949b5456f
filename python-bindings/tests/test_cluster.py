# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""distopt.cluster: a TF_CONFIG-style cluster description to mpirun's
hostfile; the command runs on its hosts; what is refused."""

import json
import os
import re
import subprocess
import sys

import pytest

from distopt import cluster


def run(args, env=None):
    return subprocess.run([sys.executable, "-m", "distopt.cluster"] + args,
                          capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})))


def test_hostfile_from_file(tmp_path):
    config = {"cluster": {"chief": ["node0:2222"],
                          "worker": ["node1:2222", "node2:2222", "node1:2223"],
                          "ps": ["[fe80::1]:2222"], "evaluator": ["e:1"]},
              "task": {"type": "worker", "index": 0}}
    (tmp_path / "c.json").write_text(json.dumps(config))
    done = run(["--cluster", str(tmp_path / "c.json"), "--processes-per-task",
                "2", "--mpirun", "mpirun", "--dry-run", "--", "dist-run",
                "step.mlir", "--steps=3"])
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # node1 has two tasks: its slots together, in the order of its first.
    assert lines[:4] == ["node0:2", "node1:4", "node2:2", "fe80::1:2"]
    assert lines[4].startswith("mpirun -f ")
    assert lines[4].endswith(" -np 10 dist-run step.mlir --steps=3")


def test_tf_config_environment_runs_the_command(tmp_path):
    config = json.dumps({"cluster": {"worker": ["localhost:1", "localhost:2"]}})
    # Each rank writes a file of its own: the ranks' standard outputs reach
    # mpirun's in pieces that may interleave.
    done = run(["--", sys.executable, "-c",
                "import os, sys; open(os.path.join(sys.argv[1], 'rank' + "
                "os.environ['PMI_RANK']), 'w').close()", str(tmp_path)],
               env={"TF_CONFIG": config})
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(tmp_path)) == ["rank0", "rank1"]


def test_refused(tmp_path):
    for text, message in [("{", "not JSON"), ("[]", "no \"cluster\" object"),
                          ('{"cluster": {"workers": []}}', "unknown job"),
                          ('{"cluster": {"worker": "h:1"}}', "must be a list"),
                          ('{"cluster": {"worker": [3]}}', "worker[0] must be"),
                          ('{"cluster": {"evaluator": ["e:1"]}}',
                           "no chief, worker or ps task")]:
        try:
            cluster.read_cluster(text, "x.json")
        except cluster.ClusterError as e:
            assert message in str(e), (text, e)
        else:
            raise AssertionError(f"accepted {text}")
    done = run(["--", "true"], env={"TF_CONFIG": ""})
    assert done.returncode == 2 and "no --cluster file and no TF_CONFIG" in done.stderr
    done = run(["--cluster", str(tmp_path / "missing.json"), "--", "true"])
    assert done.returncode == 2 and "missing.json" in done.stderr
    done = run(["--cluster", str(tmp_path / "missing.json")])
    assert done.returncode == 2 and "no command to run" in done.stderr


def test_bounded(tmp_path):
    """A description nesting deeper than 64 levels or larger than 1 MiB is
    refused before json.loads (which recursed once per level); a FIFO as
    --cluster is refused, not waited on."""
    MAX = cluster.MAX_BYTES
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100000)
    done = run(["--cluster", str(deep), "--dry-run", "--", "true"])
    assert done.returncode == 2
    assert done.stderr.strip().endswith("deep.json: JSON nests deeper than "
                                        "64 levels"), done.stderr
    big = tmp_path / "big.json"
    big.write_text('{"cluster": {"worker": ["' + "a" * (1 << 20) + ':1"]}}')
    done = run(["--cluster", str(big), "--dry-run", "--", "true"])
    assert done.returncode == 2
    assert re.search(r"big.json' is \d+ bytes, more than the 1048576 allowed",
                     done.stderr), done.stderr
    with pytest.raises(cluster.ClusterError, match="TF_CONFIG is 1048577 "
                       "bytes, more than the 1048576 allowed"):
        cluster.read_cluster(" " * (MAX + 1), "TF_CONFIG")
    # Brackets inside strings do not count.
    assert cluster.read_cluster(
        json.dumps({"cluster": {"worker": ["[" * 100 + ":1"]}}), "x")
    os.mkfifo(tmp_path / "fifo")
    done = run(["--cluster", str(tmp_path / "fifo"), "--dry-run", "--",
                "true"])
    assert done.returncode == 2
    assert "is not a regular file" in done.stderr


# `describe`: a cluster description for dist-auto, every field checked by
# the compiler's reader.

def describe(args, env=None):
    return run(["describe"] + args, env)


def test_describe_preset_on_nodes(tmp_path):
    done = describe(["--preset", "dgx-h100", "--nodes", "4", "-o",
                     str(tmp_path / "c.json")])
    assert done.returncode == 0, done.stderr
    description = json.loads((tmp_path / "c.json").read_text())
    assert description["nodes"] == 4
    assert description["devices_per_node"] == 8
    assert description["device"]["peak_tflops"]["bf16"] == 989.4


def test_describe_from_hostfile_slurm_and_tf_config(tmp_path):
    (tmp_path / "hosts").write_text("# two nodes\nnode0:4\nnode1 slots=4\n")
    done = describe(["--preset", "dgx-a100", "--hostfile",
                     str(tmp_path / "hosts")])
    assert done.returncode == 0, done.stderr
    description = json.loads(done.stdout)
    assert (description["nodes"], description["devices_per_node"]) == (2, 4)
    done = describe(["--preset", "dgx-a100", "--slurm"],
                    {"SLURM_JOB_NUM_NODES": "3", "SLURM_GPUS_ON_NODE": "2"})
    assert done.returncode == 0, done.stderr
    description = json.loads(done.stdout)
    assert (description["nodes"], description["devices_per_node"]) == (3, 2)
    config = {"cluster": {"chief": ["h0:1"], "worker": ["h1:1", "h1:2"]}}
    done = describe(["--preset", "cpu", "--tf-config"],
                    {"TF_CONFIG": json.dumps(config)})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["nodes"] == 2


def test_describe_from_a_file_and_the_planner_reads_it(tmp_path):
    done = describe(["--preset", "cpu", "--name", "mine", "-o",
                     str(tmp_path / "base.json")])
    assert done.returncode == 0, done.stderr
    done = describe(["--from", str(tmp_path / "base.json"),
                     "--devices-per-node", "1", "--nodes", "2"])
    assert done.returncode == 0, done.stderr
    (tmp_path / "c.json").write_text(done.stdout)
    description = json.loads(done.stdout)
    assert (description["name"], description["nodes"],
            description["devices_per_node"]) == ("mine", 2, 1)


def test_describe_refusals(tmp_path):
    (tmp_path / "typo.json").write_text('{"name": "x", "nodez": 1}')
    done = describe(["--from", str(tmp_path / "typo.json")])
    assert done.returncode == 2
    assert "typo.json: cluster: unknown key 'nodez'" in done.stderr
    done = describe(["--preset", "cpu", "--nodes", "0"])
    assert done.returncode == 2
    assert ("the description: cluster.nodes: expected an integer from 1 to "
            "65536") in done.stderr
    (tmp_path / "hosts").write_text("node0:four\n")
    done = describe(["--preset", "cpu", "--hostfile", str(tmp_path / "hosts")])
    assert done.returncode == 2
    assert "hosts:1: expected 'host', 'host:slots' or 'host slots=N'" in \
        done.stderr
    done = describe(["--preset", "cpu", "--slurm"],
                    {"SLURM_JOB_NUM_NODES": "", "SLURM_NNODES": ""})
    assert done.returncode == 2
    assert "no SLURM_JOB_NUM_NODES" in done.stderr
    done = describe(["--preset", "cpu", "-o",
                     str(tmp_path / "missing" / "c.json")])
    assert done.returncode == 2
    assert "does not exist" in done.stderr
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    done = describe(["--from", str(fifo)])
    assert done.returncode == 2
    assert "is not a regular file" in done.stderr
