# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""The one writer of files for Python (the rule of dist-run's writers,
tools/dist-run/PartialFile.h):

- an output replaces nothing but a regular file: never a FIFO, a device,
  a socket or a directory (a directory output must be a directory or
  nothing);
- an output is never the same file (device and inode: a symbolic or hard
  link of it) as an input of the process (`protect_input`, or the
  `inputs` of one call);
- a file is written as `PATH.partial.XXXXXX` beside it and renamed onto
  PATH only once complete, after the checks ran again; the temporary is
  removed on any error, on KeyboardInterrupt (SIGINT) and on SIGTERM.

    from distopt import output
    output.write_file("ModelCheckpoint filepath", "best.npz", data)
    with output.open_partial("--out", "state.npz") as f:
        np.savez(f, **arrays)
    with output.open_in_place("CSVLogger filename", "log.csv",
                              append=True) as f:
        f.write(b"...")

Messages name the output as the option or argument that gave it
(`what`), as dist-run's do: "cannot write --out 'x': it is a FIFO, not a
regular file (an output replaces only a regular file)".

Every check goes through `_check`, which is the C++ writer's own
(`_distopt.check_output_target`, distopt/Support/SafeOutput.h), and
in-place opens are its `openOutputInPlace`: Python, the tools and the
runner apply one rule.
"""

import contextlib
import os
import secrets
import signal
import threading

from . import _distopt
from ._distopt import DistOptError

__all__ = ["OutputError", "protect_input", "check_output_target",
           "write_file", "write_files", "open_partial", "open_in_place"]


class OutputError(DistOptError, ValueError):
    """An output that cannot be written without harm, or a write that
    failed (the message names the output and why)."""


_KINDS = ("file", "directory", "stream")

# The inputs no output may be (protect_input): (what, path).
_protected = []


def protect_input(what, path):
    """Registers an input of this process (`what` names it in messages,
    e.g. "--state" or "train_data"): no output may be the same file, for
    the life of the process. Empty paths and "-" are ignored."""
    path = os.fspath(path)
    if path and path != "-":
        _protected.append((what, path))


def _check(what, path, kind, inputs):
    """Raises OutputError naming `what` and `path` when a `kind` output
    cannot be written at `path` without harm; `inputs` are (what, path)
    pairs (the protected inputs and the call's own). THE check: the C++
    one every tool and the runner apply (distopt/Support/SafeOutput.h
    checkOutputTarget), through the extension, so there is one rule."""
    try:
        _distopt.check_output_target(what, path, kind, list(inputs))
    except DistOptError as error:
        raise OutputError(str(error)) from None


def _inputs(inputs):
    """The registered inputs and a call's own (paths, or (what, path))."""
    pairs = list(_protected)
    for entry in inputs:
        if isinstance(entry, tuple):
            pairs.append((entry[0], os.fspath(entry[1])))
        else:
            pairs.append(("the input", os.fspath(entry)))
    return pairs


def check_output_target(what, path, kind="file", inputs=()):
    """Raises OutputError, naming `what` (the option or argument that gave
    the path) and `path`, unless an output of `kind` can be written there:
    "file" (replaced whole by a rename: nothing or a regular file), "stream"
    (written in place: nothing, a regular file or a FIFO) or "directory"
    (written into: nothing or a directory), and not the same file as an
    input (`protect_input`, or `inputs`: paths or (what, path) pairs).
    Creates nothing."""
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {', '.join(_KINDS)}, not "
                         f"{kind!r}")
    _check(what, os.fspath(path), kind, _inputs(inputs))


# ---------------------------------------------------------------------------
# Temporaries in progress, removed on SIGTERM (and SIGINT when its handler
# would end the process without an exception)
# ---------------------------------------------------------------------------

_lock = threading.Lock()
_in_progress = set()
_previous = {}  # signal number -> the handler ours replaced


def _remove_in_progress():
    for path in list(_in_progress):
        try:
            os.unlink(path)
        except OSError:
            pass
        _in_progress.discard(path)


def _on_signal(signum, frame):
    """Removes the temporaries when the signal would end the process; else
    chains to the previous handler (a Python handler, e.g. SIGINT's
    KeyboardInterrupt: the writers' exception path removes them)."""
    previous = _previous.get(signum, signal.SIG_DFL)
    if callable(previous):
        return previous(signum, frame)
    if previous == signal.SIG_IGN:
        return None
    _remove_in_progress()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    return None


def _track(path):
    """Registers a temporary; installs the handlers while one exists (only
    the main thread can; elsewhere the exception path removes it)."""
    with _lock:
        _in_progress.add(path)
        if _previous or threading.current_thread() is not \
                threading.main_thread():
            return
        for signum in (signal.SIGINT, signal.SIGTERM):
            try:
                previous = signal.getsignal(signum)
                if previous is None:  # set outside Python: leave it
                    continue
                _previous[signum] = previous
                signal.signal(signum, _on_signal)
            except (ValueError, OSError):
                _previous.pop(signum, None)


def _untrack(path):
    with _lock:
        _in_progress.discard(path)
        if _in_progress or not _previous or threading.current_thread() is \
                not threading.main_thread():
            return
        for signum, previous in list(_previous.items()):
            # Unless another handler replaced ours meanwhile.
            if signal.getsignal(signum) is _on_signal:
                signal.signal(signum, previous)
        _previous.clear()


def _create_partial(what, path):
    """Opens a new `path.partial.XXXXXX` beside `path` (0666 less the
    umask, as dist-run's); returns (fd, temporary)."""
    directory = os.path.dirname(path)
    if directory and not os.path.isdir(directory):
        state = "is not a directory" if os.path.exists(directory) \
            else "does not exist"
        raise OutputError(f"cannot write {what} '{path}': '{directory}' "
                          f"{state}")
    for _ in range(100):
        partial = f"{path}.partial.{secrets.token_hex(3)}"
        try:
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL |
                         os.O_CLOEXEC | os.O_NOFOLLOW, 0o666)
        except FileExistsError:
            continue
        except OSError as e:
            raise OutputError(f"cannot write {what} '{path}': "
                              f"{e.strerror}") from None
        return fd, partial
    raise OutputError(f"cannot write {what} '{path}': no free temporary "
                      "name beside it")


class _Partial:
    """One file in progress: `path.partial.XXXXXX`, renamed onto `path` by
    commit() (close(), check() and rename()), removed by discard()
    (PartialFile)."""

    def __init__(self, what, path, pairs):
        self.what, self.path, self.pairs = what, path, pairs
        _check(what, path, "file", pairs)
        fd, self.partial = _create_partial(what, path)
        self.file = None
        try:
            _track(self.partial)
            self.file = os.fdopen(fd, "wb")
        except BaseException:
            if self.file is None:
                os.close(fd)
            self.discard()
            raise

    def commit(self):
        self.close()
        self.check()
        self.rename()

    def _failure(self, error):
        return OutputError(f"cannot write {self.what} '{self.path}': "
                           f"{error.strerror or error}")

    def close(self):
        """Flushes, syncs and closes the file."""
        try:
            with self.file:
                self.file.flush()
                os.fsync(self.file.fileno())
        except OSError as e:
            self.discard()
            raise self._failure(e) from e

    def check(self):
        """What `path` became meanwhile: still nothing or a regular file
        that is no input."""
        try:
            _check(self.what, self.path, "file", self.pairs)
        except BaseException:
            self.discard()
            raise

    def rename(self):
        try:
            os.replace(self.partial, self.path)
        except OSError as e:
            self.discard()
            raise self._failure(e) from e
        _untrack(self.partial)
        self.partial = None

    def discard(self):
        try:
            if self.file is not None:
                self.file.close()
        except OSError:
            pass
        if self.partial is not None:
            try:
                os.unlink(self.partial)
            except FileNotFoundError:
                pass
            _untrack(self.partial)
            self.partial = None


@contextlib.contextmanager
def open_partial(what, path, inputs=()):
    """Yields a binary file that becomes `path` when the block ends
    without an exception: written as `path.partial.XXXXXX`, synced,
    checked again and renamed onto `path`. On an exception (including
    KeyboardInterrupt) or SIGTERM the temporary is removed and `path` is
    what it was. Raises OutputError as check_output_target() does, and
    when the write fails."""
    partial = _Partial(what, os.fspath(path), _inputs(inputs))
    try:
        yield partial.file
    except BaseException:
        partial.discard()
        raise
    partial.commit()


def _writer(data):
    return data if callable(data) else (lambda f: f.write(data))


def write_file(what, path, data, inputs=()):
    """Writes `data` (bytes, or a callable given the binary file to write
    into, e.g. `lambda f: np.savez(f, **arrays)`) to `path` through
    open_partial(): `path` is the old file or the whole new one. Returns
    the path."""
    with open_partial(what, path, inputs) as f:
        _writer(data)(f)
    return os.fspath(path)


def write_files(what, files, inputs=()):
    """Writes several files together (`files`: (path, data) pairs, data as
    write_file() takes it): every one is checked, then written under its
    temporary name; the names are renamed only once all are complete and
    checked again, so an error leaves every path what it was. `what`
    names them in messages (a string, or a callable given the path).
    Returns the paths."""
    pairs = _inputs(inputs)
    name = what if callable(what) else (lambda _: what)
    files = [(os.fspath(path), data) for path, data in files]
    for path, _ in files:
        _check(name(path), path, "file", pairs)
    partials = []
    try:
        for path, data in files:
            partials.append(_Partial(name(path), path, pairs))
            _writer(data)(partials[-1].file)
            partials[-1].close()
        for partial in partials:
            partial.check()
    except BaseException:
        for partial in partials:
            partial.discard()
        raise
    for i, partial in enumerate(partials):
        try:
            partial.rename()
        except BaseException:
            for rest in partials[i + 1:]:
                rest.discard()
            raise
    return [path for path, _ in files]


def open_in_place(what, path, append, kind="file", inputs=()):
    """Opens `path` to be written in place, appended to with `append`,
    else emptied: an output that is not renamed (a log appended to, a
    TensorBoard event file). Checks it as check_output_target() does and
    again on the open descriptor (opened without blocking: a FIFO never
    stalls it; a "stream" output may be a FIFO, opened blocking for its
    reader and never emptied). Returns a binary file object (unbuffered
    writes go out whole: one write() per call)."""
    path = os.fspath(path)
    if kind not in ("file", "stream"):
        raise ValueError(f"open_in_place writes a 'file' or a 'stream', not "
                         f"{kind!r}")
    _check(what, path, kind, _inputs(inputs))

    # The open and its checks on the descriptor are the C++ writer's
    # (SafeOutput.h openOutputInPlace), as for dist-run's --metrics.
    try:
        fd = _distopt.open_output_in_place(what, path, append, kind)
    except DistOptError as error:
        raise OutputError(str(error)) from None
    return os.fdopen(fd, "ab" if append else "wb", buffering=0)
