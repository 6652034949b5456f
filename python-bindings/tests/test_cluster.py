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
