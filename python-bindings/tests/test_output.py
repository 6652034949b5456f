# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""distopt.output: the one writer of Python's files (the rule of #14: an
output replaces only a regular file that is no input; a file is written
beside its target and renamed when complete; temporaries never stay)."""

import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

from distopt import output
from distopt.output import OutputError


def leftovers(directory):
    return sorted(n for n in os.listdir(directory) if ".partial." in n)


def test_fifo_is_never_replaced(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    message = (f"cannot write --out '{fifo}': it is a FIFO, not a regular "
               "file (an output replaces only a regular file)")
    with pytest.raises(OutputError) as error:
        output.check_output_target("--out", fifo)
    assert str(error.value) == message
    with pytest.raises(OutputError, match="it is a FIFO, not a regular file"):
        output.write_file("--out", fifo, b"data")
    # In place: refused before any open (an open for writing would block).
    with pytest.raises(OutputError, match="it is a FIFO, not a regular file"):
        output.open_in_place("CSVLogger filename", fifo, append=True)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert leftovers(tmp_path) == []
    # A stream output may be a FIFO; a directory output may not.
    output.check_output_target("--events", fifo, kind="stream")
    with pytest.raises(OutputError, match="it is a FIFO, not a directory"):
        output.check_output_target("log_dir", fifo, kind="directory")


def test_directory_is_never_replaced(tmp_path):
    target = tmp_path / "dir"
    target.mkdir()
    (target / "kept").write_text("kept")
    with pytest.raises(OutputError) as error:
        output.write_file("ModelCheckpoint filepath", target, b"data")
    assert str(error.value) == (
        f"cannot write ModelCheckpoint filepath '{target}': it is a "
        "directory, not a regular file (an output replaces only a regular "
        "file)")
    assert (target / "kept").read_text() == "kept"
    output.check_output_target("log_dir", target, kind="directory")
    output.check_output_target("log_dir", tmp_path / "new", kind="directory")
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match="it is a regular file, not a "
                                          "directory"):
        output.check_output_target("log_dir", tmp_path / "file",
                                   kind="directory")
    with pytest.raises(ValueError, match="kind must be one of"):
        output.check_output_target("x", target, kind="files")


def test_links_to_an_input_are_refused(tmp_path):
    data = tmp_path / "data.npz"
    np.savez(data, x=np.arange(3))
    before = data.read_bytes()
    os.symlink(data, tmp_path / "soft.npz")
    os.link(data, tmp_path / "hard.npz")
    for link in ("soft.npz", "hard.npz"):
        with pytest.raises(OutputError) as error:
            output.write_file("--out", tmp_path / link, b"over",
                              inputs=[("--state", data)])
        assert str(error.value) == (
            f"--out '{tmp_path / link}' is the same file as --state "
            f"'{data}': it would overwrite its input")
    # A plain path is "the input"; a registered input holds for every call.
    with pytest.raises(OutputError, match="is the same file as the input"):
        output.check_output_target("--out", tmp_path / "hard.npz",
                                   inputs=[data])
    output.protect_input("train_data", data)
    try:
        with pytest.raises(OutputError, match="as train_data"):
            with output.open_in_place("CSVLogger filename",
                                      tmp_path / "soft.npz", append=True):
                pass
        # A name that does not exist yet is compared by its canonical path.
        output.check_output_target("--out", tmp_path / "other.npz")
        with pytest.raises(OutputError, match="same file as train_data"):
            output.check_output_target(
                "--out", tmp_path / "sub" / ".." / "data.npz")
    finally:
        output._protected.remove(("train_data", os.fspath(data)))
    assert data.read_bytes() == before
    assert leftovers(tmp_path) == []


def test_a_regular_file_is_replaced_whole(tmp_path):
    target = tmp_path / "state.npz"
    target.write_bytes(b"old")
    other = tmp_path / "other"
    os.link(target, other)  # the old file stays what it was under its
    inode = os.stat(target).st_ino  # other name: a rename, not a rewrite
    with output.open_partial("--out", target) as f:
        np.savez(f, x=np.arange(4))
        # Until the block ends, the target is the old file and the new one
        # is a temporary beside it.
        assert target.read_bytes() == b"old"
        partial, = leftovers(tmp_path)
        assert partial.startswith("state.npz.partial.")
    assert os.stat(target).st_ino != inode
    assert other.read_bytes() == b"old"
    np.testing.assert_array_equal(np.load(target)["x"], np.arange(4))
    assert output.write_file("--out", target, lambda f: f.write(b"new")) \
        == os.fspath(target)
    assert target.read_bytes() == b"new"
    assert leftovers(tmp_path) == []
    # The file gets the umask's permissions, as a file open() makes.
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o666 & ~umask


def test_temporaries_go_on_an_exception(tmp_path):
    handlers = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)]
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError, match="in the middle"):
        with output.open_partial("--out", target) as f:
            f.write(b"half")
            raise RuntimeError("in the middle")
    assert target.read_bytes() == b"old"
    assert leftovers(tmp_path) == []
    # Several files together: all or none.
    with pytest.raises(ZeroDivisionError):
        output.write_files("--out", [(tmp_path / "a", b"a"),
                                     (tmp_path / "b", lambda f: 1 / 0)])
    assert sorted(os.listdir(tmp_path)) == ["out.bin"]
    # A FIFO that appears at the name while the file is written is not
    # renamed over.
    with pytest.raises(OutputError, match="it is a FIFO"):
        with output.open_partial("--out", tmp_path / "late") as f:
            f.write(b"x")
            os.mkfifo(tmp_path / "late")
    assert stat.S_ISFIFO(os.stat(tmp_path / "late").st_mode)
    assert leftovers(tmp_path) == []
    # No handler stays installed once nothing is in progress.
    assert [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)] \
        == handlers


def test_read_only_or_missing_directory(tmp_path):
    missing = tmp_path / "no" / "out.npz"
    with pytest.raises(OutputError) as error:
        output.write_file("--out", missing, b"x")
    assert str(error.value) == (f"cannot write --out '{missing}': "
                                f"'{tmp_path / 'no'}' does not exist")
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError) as error:
        output.write_file("--out", tmp_path / "file" / "out.npz", b"x")
    assert str(error.value) == (
        f"cannot write --out '{tmp_path / 'file' / 'out.npz'}': "
        f"'{tmp_path / 'file'}' is not a directory")


def test_read_only_directory(tmp_path):
    """A directory the process may not write into: the write fails naming
    the output and why, and leaves nothing. (As root a mode stops nothing:
    the write then runs as nobody, in a directory nobody can reach.)"""
    base = tempfile.mkdtemp(prefix="distopt-test-output-")
    try:
        os.chmod(base, 0o755)
        locked = os.path.join(base, "locked")
        os.mkdir(locked, 0o555)
        os.chmod(locked, 0o555)
        target = os.path.join(locked, "out.npz")
        child = subprocess.run(
            [sys.executable, "-c",
             "import sys\nfrom distopt import output\n"
             "try:\n    output.write_file('--out', sys.argv[1], b'x')\n"
             "except output.OutputError as e:\n    sys.exit(str(e))",
             target], capture_output=True, text=True, timeout=60,
            preexec_fn=(lambda: (os.setgid(65534), os.setuid(65534)))
            if os.geteuid() == 0 else None)
        assert child.returncode == 1
        assert child.stderr.strip() == (f"cannot write --out '{target}': "
                                        "Permission denied"), child.stderr
        assert os.listdir(locked) == []
    finally:
        shutil.rmtree(base)


def test_in_place_append_and_truncate(tmp_path):
    log = tmp_path / "log.csv"
    with output.open_in_place("CSVLogger filename", log, append=False) as f:
        f.write(b"a\n")
    with output.open_in_place("CSVLogger filename", log, append=True) as f:
        f.write(b"b\n")
    assert log.read_text() == "a\nb\n"
    with output.open_in_place("CSVLogger filename", log, append=False) as f:
        f.write(b"c\n")
    assert log.read_text() == "c\n"


_CHILD = textwrap.dedent("""
    import sys, time
    from distopt import output
    with output.open_partial("--out", sys.argv[1]) as f:
        f.write(b"half of it")
        f.flush()
        print("writing", flush=True)
        time.sleep(60)
        f.write(b"the rest")
""")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_temporaries_go_on_a_signal(tmp_path, signum):
    """A process interrupted in the middle of a write leaves the target as
    it was and no temporary: SIGINT through KeyboardInterrupt, SIGTERM
    through the handler installed while a temporary exists."""
    target = tmp_path / "state.npz"
    target.write_bytes(b"old")
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(target)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout.readline() == "writing\n"
        assert len(leftovers(tmp_path)) == 1
        child.send_signal(signum)
        _, stderr = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    if signum == signal.SIGINT:
        # (An uncaught KeyboardInterrupt ends Python by SIGINT itself.)
        assert "KeyboardInterrupt" in stderr
        assert child.returncode == -signal.SIGINT
    else:
        assert child.returncode == -signal.SIGTERM, stderr
    assert target.read_bytes() == b"old"
    assert leftovers(tmp_path) == []
