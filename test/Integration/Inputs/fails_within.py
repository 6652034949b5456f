"""Runs a command that must fail, and fail fast: exits 0 when the command
ended with a non-zero status within SECONDS, else 1 (it succeeded, or it
was still running after SECONDS and was killed, with everything it
started). Prints the command's output (stdout and stderr together) first,
then "ended with status N after T s", for FileCheck.

    fails_within.py SECONDS COMMAND [ARG ...]
"""

import os
import signal
import subprocess
import sys
import time


def main():
    limit = float(sys.argv[1])
    start = time.monotonic()
    # A process group of its own, so that a hung mpirun and its ranks are
    # all killed.
    process = subprocess.Popen(sys.argv[2:], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT,
                               start_new_session=True)
    try:
        output, _ = process.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        sys.stdout.write(output.decode(errors="replace"))
        print(f"still running after {limit:g} s: killed")
        return 1
    elapsed = time.monotonic() - start
    sys.stdout.write(output.decode(errors="replace"))
    print(f"ended with status {process.returncode} after {elapsed:.1f} s")
    return 0 if process.returncode != 0 else 1


if __name__ == "__main__":
    sys.exit(main())
