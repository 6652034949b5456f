# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Sends SIGNAL to a running command (mpirun, say) once it printed its
first "step " line, and checks that it then ends with a non-zero status
within SECONDS: exits 0 if so, else 1 (the command ended with 0, never
printed a step, or was still running SECONDS after the signal and was
killed, with everything it started). Prints the command's stderr (its
stdout, the step lines, is only watched) and "ended with status N after T
s", for FileCheck.

    interrupt.py SIGNAL SECONDS COMMAND [ARG ...]
"""

import os
import signal
import subprocess
import sys
import threading
import time


def main():
    signum = getattr(signal, "SIG" + sys.argv[1])
    limit = float(sys.argv[2])
    process = subprocess.Popen(sys.argv[3:], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True)
    errors = []
    stepped = threading.Event()

    def watch():
        for line in process.stdout:
            if line.startswith(b"step "):
                stepped.set()
        stepped.set()

    def collect():
        errors.append(process.stderr.read())

    readers = [threading.Thread(target=watch), threading.Thread(target=collect)]
    for reader in readers:
        reader.start()
    stepped.wait(timeout=120)
    ok = process.poll() is None
    if ok:
        start = time.monotonic()
        process.send_signal(signum)
        try:
            process.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            ok = False
        elapsed = time.monotonic() - start
    for reader in readers:
        reader.join()
    sys.stdout.write(errors[0].decode(errors="replace"))
    if not ok:
        print(f"not running when signalled, or still running {limit:g} s "
              f"after it (status {process.returncode})")
        return 1
    print(f"ended with status {process.returncode} after {elapsed:.1f} s")
    return 0 if process.returncode != 0 else 1


if __name__ == "__main__":
    sys.exit(main())
