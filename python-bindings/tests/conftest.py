# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="session")
def examples():
    return os.path.join(ROOT, "examples")


@pytest.fixture(scope="session", autouse=True)
def compile_cache(tmp_path_factory):
    """dist-run's compile cache: the session's own, not the user's."""
    os.environ["DISTOPT_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
