# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""The benchmarks' comparison environment: a virtual environment with
TensorFlow (CPU) and PyTorch from PyPI (bench/peers/requirements.txt),
created on first use under $DISTOPT_BENCH_VENV (default
~/.cache/distopt-bench/venv). PyTorch's wheels come from the set-up's wheel
cache (~/.cache/distopt-wheels) when it has them."""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache"))
VENV = os.environ.get("DISTOPT_BENCH_VENV",
                      os.path.join(CACHE, "distopt-bench", "venv"))
WHEELS = os.path.join(CACHE, "distopt-wheels")
PYTHON = os.path.join(VENV, "bin", "python")


def _ready():
    if not os.path.exists(PYTHON):
        return False
    check = ("import tensorflow as tf, torch; "
             "assert tf.__version__ == '2.21.0' and "
             "torch.__version__.startswith('2.15.0')")
    return subprocess.run([PYTHON, "-c", check], capture_output=True,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
                          ).returncode == 0


def python():
    """The environment's interpreter, installing it first if needed."""
    if _ready():
        return PYTHON
    print(f"== creating the comparison environment {VENV} "
          "(tensorflow-cpu, torch from PyPI)", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
    links = ["--find-links", WHEELS] if os.path.isdir(WHEELS) else []
    subprocess.run([PYTHON, "-m", "pip", "install", "--quiet", *links, "-r",
                    os.path.join(HERE, "requirements.txt")], check=True)
    if not _ready():
        sys.exit(f"{VENV}: tensorflow 2.21.0 or torch 2.15.0 did not import")
    return PYTHON
