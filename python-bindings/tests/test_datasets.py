# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""distopt.datasets: dataset directories (one .npy per name, leading dim =
samples) from an .npz and from scikit-learn's digits; what is refused."""

import os
import subprocess
import sys

import numpy as np
import pytest

from distopt import datasets


def test_from_npz_round_trip(tmp_path):
    x = np.arange(24, dtype=np.float32).reshape(6, 4)
    y = np.array([0, 1, 2, 0, 1, 2], np.int64)
    np.savez(tmp_path / "data.npz", x=x, y=y)
    paths = datasets.from_npz(tmp_path / "data.npz", tmp_path / "ds")
    assert sorted(os.path.basename(p) for p in paths) == ["x.npy", "y.npy"]
    assert sorted(os.listdir(tmp_path / "ds")) == ["x.npy", "y.npy"]
    assert np.array_equal(np.load(tmp_path / "ds" / "x.npy", mmap_mode="r"), x)
    assert np.array_equal(np.load(tmp_path / "ds" / "y.npy"), y)


def test_refused(tmp_path):
    x = np.zeros((6, 4), np.float32)
    with pytest.raises(datasets.DatasetError, match="'y' has 5 samples but 'x' has 6"):
        datasets.write_dataset(tmp_path / "a", {"x": x, "y": np.zeros(5, np.int64)})
    with pytest.raises(datasets.DatasetError, match="dtype uint8"):
        datasets.write_dataset(tmp_path / "b", {"x": np.zeros(3, np.uint8)})
    with pytest.raises(datasets.DatasetError, match="is a scalar"):
        datasets.write_dataset(tmp_path / "c", {"x": np.float32(1)})
    with pytest.raises(datasets.DatasetError, match="no samples"):
        datasets.write_dataset(tmp_path / "d", {"x": np.zeros((0, 2), np.float32)})
    # Nothing was written by the refused calls; an existing dataset is kept.
    assert not any(os.path.exists(tmp_path / n) for n in "abcd")
    datasets.write_dataset(tmp_path / "e", {"x": x})
    with pytest.raises(datasets.DatasetError, match="not written over"):
        datasets.write_dataset(tmp_path / "e", {"x": x + 1})
    assert np.array_equal(np.load(tmp_path / "e" / "x.npy"), x)


def test_digits_command_line(tmp_path):
    out = tmp_path / "digits"
    done = subprocess.run([sys.executable, "-m", "distopt.datasets", "digits",
                           "-o", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    x, y = np.load(out / "x.npy"), np.load(out / "y.npy")
    assert x.shape == (1797, 64) and x.dtype == np.float32
    assert 0 <= x.min() and x.max() <= 1
    assert y.shape == (1797,) and y.dtype == np.int64 and set(y) == set(range(10))
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    bad = subprocess.run([sys.executable, "-m", "distopt.datasets", "from-npz",
                          str(tmp_path / "bad.npz"), "-o", str(tmp_path / "b")],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and bad.stderr.startswith("error:"), bad.stderr


def test_digits_split(tmp_path):
    out = tmp_path / "digits"
    paths = datasets.digits(out, test=297)
    assert len(paths) == 4
    train_x, test_x = np.load(out / "train" / "x.npy"), np.load(out / "test" / "x.npy")
    train_y, test_y = np.load(out / "train" / "y.npy"), np.load(out / "test" / "y.npy")
    assert train_x.shape == (1500, 64) and test_x.shape == (297, 64)
    assert train_y.shape == (1500,) and test_y.shape == (297,)
    # Every sample once, in one part or the other.
    whole = np.concatenate([train_x, test_x])
    assert len(np.unique(whole, axis=0)) == len(np.unique(
        np.load(datasets.digits(tmp_path / "all")[0]), axis=0))
    # The same seed splits alike; the split is refused outside (0, 1797).
    again = datasets.digits(tmp_path / "again", test=297)
    assert np.array_equal(np.load(again[0]), train_x)
    with pytest.raises(datasets.DatasetError, match=r"--test must be in \(0, 1797\)"):
        datasets.digits(tmp_path / "bad", test=1797)
    with pytest.raises(datasets.DatasetError, match="not written over"):
        datasets.digits(out, test=10)


def test_output_targets(tmp_path, monkeypatch):
    """Only nothing or a regular file that is no input is replaced (the
    rule of dist-run's writers); a FIFO or a device stays what it was."""
    import stat
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(datasets.DatasetError,
                       match="it is a FIFO, not a regular file"):
        datasets.check_output_target(fifo)
    if os.geteuid() == 0:
        null = tmp_path / "null"
        os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        with pytest.raises(datasets.DatasetError,
                           match="it is a character device, not a regular"):
            datasets.check_output_target(null)
        assert stat.S_ISCHR(os.stat(null).st_mode)
    np.savez(tmp_path / "data.npz", x=np.zeros((2, 2), np.float32))
    os.link(tmp_path / "data.npz", tmp_path / "hard.npz")
    with pytest.raises(datasets.DatasetError, match="is the same file as"):
        datasets.check_output_target(tmp_path / "hard.npz",
                                     [tmp_path / "data.npz"])
    datasets.check_output_target(tmp_path / "new.npy", [tmp_path / "data.npz"])
    # A FIFO that appears at a name while the files are written is not
    # renamed over; the partial files are removed.
    save = np.save

    def save_and_plant(f, array):
        save(f, array)
        if not os.path.exists(tmp_path / "ds" / "x.npy"):
            os.mkfifo(tmp_path / "ds" / "x.npy")
    monkeypatch.setattr(np, "save", save_and_plant)
    with pytest.raises(datasets.DatasetError, match="it is a FIFO"):
        datasets.from_npz(tmp_path / "data.npz", tmp_path / "ds")
    assert os.listdir(tmp_path / "ds") == ["x.npy"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert stat.S_ISFIFO(os.stat(tmp_path / "ds" / "x.npy").st_mode)
