# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Dataset directories: one `.npy` file per input or label name, leading
dim = samples (the format `dist-run --dataset` reads memory-mapped).

    python -m distopt.datasets from-npz data.npz -o data/
    python -m distopt.datasets digits -o digits/      # scikit-learn's digits
    python -m distopt.datasets digits --test 297 -o digits/  # train/ + test/

A directory is written once: files go in under temporary names and are
renamed when all of them are complete, and an existing non-empty
directory is refused, so nothing is lost or overwritten. A file is only
renamed over nothing or a regular file that is not an input (never a
device, FIFO or socket, never the .npz read: same device and inode).
"""

import argparse
import os
import sys
import zipfile

import numpy as np

from . import output

# The dtypes dist-run binds (docs/guides/running-a-step.md).
DTYPES = (np.float32, np.float64, np.int32, np.int64)


class DatasetError(ValueError):
    """A dataset that cannot be written as asked."""


def check_output_target(path, inputs=()):
    """Raises DatasetError unless `path` is nothing or a regular file that
    is none of `inputs` (distopt.output's rule, the one of dist-run's
    writers)."""
    try:
        output.check_output_target("dataset file", path, inputs=inputs)
    except output.OutputError as e:
        raise DatasetError(str(e)) from None


def write_dataset(directory, arrays, inputs=()):
    """Writes `arrays` (name -> array, every one with the same number of
    samples in its leading dim) as `directory/<name>.npy`; returns the
    paths. The directory must not exist or be empty; no file written may
    replace one of `inputs` (paths read)."""
    if not arrays:
        raise DatasetError("no arrays to write")
    samples = None
    checked = {}
    for name, array in arrays.items():
        array = np.asarray(array)
        if not name or os.sep in name or name.startswith("."):
            raise DatasetError(f"'{name}' cannot name a file in a dataset")
        if array.dtype.type not in DTYPES:
            raise DatasetError(
                f"'{name}' has dtype {array.dtype}; a dataset holds "
                f"{', '.join(np.dtype(t).name for t in DTYPES)}")
        if array.ndim == 0:
            raise DatasetError(f"'{name}' is a scalar: a dataset array's "
                               "leading dim counts its samples")
        if samples is None:
            samples, first = array.shape[0], name
        elif array.shape[0] != samples:
            raise DatasetError(f"'{name}' has {array.shape[0]} samples but "
                               f"'{first}' has {samples}")
        checked[name] = np.ascontiguousarray(array)
    if samples == 0:
        raise DatasetError("the arrays have no samples")
    if os.path.exists(directory) and (not os.path.isdir(directory)
                                      or os.listdir(directory)):
        raise DatasetError(f"'{directory}' exists and is not an empty "
                           "directory: a dataset is not written over")
    os.makedirs(directory, exist_ok=True)
    # Every file under a temporary name beside it, all renamed once all
    # are complete (distopt.output).
    files = [(os.path.join(directory, f"{name}.npy"),
              lambda f, array=array: np.save(f, array))
             for name, array in checked.items()]
    try:
        return output.write_files("dataset file", files, inputs)
    except output.OutputError as e:
        raise DatasetError(str(e)) from None


def from_npz(path, directory):
    """A dataset directory from an `.npz` (every member)."""
    with np.load(path) as data:
        return write_dataset(directory, {k: data[k] for k in data.files},
                             inputs=(path,))


def digits(directory, input_name="x", label_name="y", test=0, seed=0):
    """scikit-learn's shipped `digits` (1797 8x8 images, 10 classes):
    inputs float32 [N, 64] scaled to [0, 1], labels int64 [N]. With `test`
    > 0, the samples are shuffled (numpy's default_rng(seed)) and split:
    `directory/train` gets the first 1797 - test, `directory/test` the
    last `test`."""
    from sklearn.datasets import load_digits
    data = load_digits()
    arrays = {input_name: (data.data / 16.0).astype(np.float32),
              label_name: data.target.astype(np.int64)}
    if not test:
        return write_dataset(directory, arrays)
    samples = len(data.target)
    if not 0 < test < samples:
        raise DatasetError(f"--test must be in (0, {samples}), not {test}")
    if os.path.exists(directory) and (not os.path.isdir(directory)
                                      or os.listdir(directory)):
        raise DatasetError(f"'{directory}' exists and is not an empty "
                           "directory: a dataset is not written over")
    order = np.random.default_rng(seed).permutation(samples)
    train, held = order[:samples - test], order[samples - test:]
    return (write_dataset(os.path.join(directory, "train"),
                          {k: v[train] for k, v in arrays.items()}) +
            write_dataset(os.path.join(directory, "test"),
                          {k: v[held] for k, v in arrays.items()}))


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m distopt.datasets",
        description="Write a dataset directory (one .npy per name, leading "
                    "dim = samples).")
    sub = parser.add_subparsers(dest="source", required=True)
    npz = sub.add_parser("from-npz", help="every member of an .npz")
    npz.add_argument("npz")
    npz.add_argument("-o", "--output", required=True)
    dig = sub.add_parser("digits", help="scikit-learn's digits")
    dig.add_argument("--input-name", default="x")
    dig.add_argument("--label-name", default="y")
    dig.add_argument("--test", type=int, default=0,
                     help="hold out this many samples: write DIR/train and "
                          "DIR/test (a seeded shuffle, then a split)")
    dig.add_argument("--seed", type=int, default=0)
    dig.add_argument("-o", "--output", required=True)
    args = parser.parse_args(argv)
    try:
        if args.source == "from-npz":
            paths = from_npz(args.npz, args.output)
        else:
            paths = digits(args.output, args.input_name, args.label_name,
                           args.test, args.seed)
    except (ValueError, OSError, zipfile.BadZipFile) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for path in paths:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
