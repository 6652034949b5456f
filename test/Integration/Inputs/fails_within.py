# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Runs a command that must fail, and fail fast: exits 0 when the command
ended with a non-zero status within SECONDS, else 1 (it succeeded, or it
was still running after SECONDS and was killed, with everything it
started). Prints the command's stdout, then its stderr (apart, so that a
message is never cut by a line of the other), then "ended with status N
after T s", for FileCheck.

    fails_within.py SECONDS COMMAND [ARG ...]
"""

import os
import signal
import subprocess
import sys
import time


def text(output, errors):
    """stdout then stderr, each ending its last line."""
    parts = [p.decode(errors="replace") for p in (output, errors) if p]
    return "".join(p if p.endswith("\n") else p + "\n" for p in parts)


def main():
    limit = float(sys.argv[1])
    start = time.monotonic()
    # A process group of its own, so that a hung mpirun and its ranks are
    # all killed.
    process = subprocess.Popen(sys.argv[2:], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True)
    try:
        output, errors = process.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        try:
            # Ranks in sessions of their own may still hold the pipes.
            output, errors = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            output, errors = b"", b""
        sys.stdout.write(text(output, errors))
        print(f"still running after {limit:g} s: killed")
        return 1
    elapsed = time.monotonic() - start
    sys.stdout.write(text(output, errors))
    print(f"ended with status {process.returncode} after {elapsed:.1f} s")
    return 0 if process.returncode != 0 else 1


if __name__ == "__main__":
    sys.exit(main())
