# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Writes a damaged copy of an .npz archive: one member (MEMBER.npy) gets
a malformed .npy header or the wrong number of bytes (written with a
correct zip CRC, so only the .npy is wrong), or its stored bytes are
flipped inside the archive (a CRC mismatch).

    npz_tamper.py MODE SOURCE.npz DEST.npz MEMBER

MODE: garbage (a header that is not a dict), negative (a negative size),
huge (declares 10^11 elements), overflow (a shape whose product overflows
64 bits), version (format version 9.0), header-length (a header length
past the end of the member), missing-key (no 'shape'), truncated (the data
cut short by 8 bytes), trailing (8 bytes more than the shape), flip (bytes
of the stored data flipped after the CRC was written), unterminated (the
shape tuple runs to the end of the header), duplicate (the member twice),
long-header (a format 2.0 header padded past 1 MiB).
"""

import struct
import sys
import warnings
import zipfile

import numpy as np


def npy_bytes(header, data, version=(1, 0), length=None):
    """An .npy file with `header` (a dict literal) padded as NumPy does."""
    prefix = 10 if version[0] == 1 else 12
    text = header + " " * (-(prefix + len(header) + 1) % 64) + "\n"
    size = len(text) if length is None else length
    packed = struct.pack("<H" if version[0] == 1 else "<I", size)
    return (b"\x93NUMPY" + bytes(version) + packed + text.encode("latin1") +
            data)


def tamper(mode, array):
    data = array.tobytes()
    descr = array.dtype.str
    shape = str(tuple(array.shape))

    def header(shape_text=shape, keys=None):
        fields = keys or {"descr": repr(descr), "fortran_order": "False",
                          "shape": shape_text}
        return "{" + ", ".join(f"'{k}': {v}" for k, v in fields.items()) + \
            ", }"

    if mode == "garbage":
        return npy_bytes("this is not a dict", data)
    if mode == "negative":
        return npy_bytes(header("(4, -3)"), data)
    if mode == "huge":
        return npy_bytes(header("(100000000000,)"), data)
    if mode == "overflow":
        return npy_bytes(header("(4294967296, 4294967296, 16)"), data)
    if mode == "version":
        return npy_bytes(header(), data, version=(9, 0))
    if mode == "header-length":
        return npy_bytes(header(), data, length=60000)
    if mode == "missing-key":
        return npy_bytes(header(keys={"descr": repr(descr),
                                      "fortran_order": "False"}), data)
    if mode == "truncated":
        return npy_bytes(header(), data[:-8])
    if mode == "trailing":
        return npy_bytes(header(), data + b"\0" * 8)
    if mode == "long-header":
        return npy_bytes(header() + " " * (2 << 20), data, version=(2, 0))
    if mode == "unterminated":
        return npy_bytes("{'descr': %r, 'fortran_order': False, 'shape': (%s, "
                         % (descr, ", ".join(map(str, array.shape))), data)
    raise SystemExit(f"unknown mode {mode}")


def main():
    mode, source, dest, member = sys.argv[1:5]
    arrays = dict(np.load(source))
    if mode == "flip":
        np.savez(dest, **arrays)
        with zipfile.ZipFile(dest) as archive:
            info = archive.getinfo(member + ".npy")
        with open(dest, "r+b") as f:
            # The local header: 30 bytes, the name and the extra field.
            f.seek(info.header_offset + 26)
            name_length, extra_length = struct.unpack("<HH", f.read(4))
            start = info.header_offset + 30 + name_length + extra_length
            f.seek(start + info.file_size - 4)
            last = f.read(4)
            f.seek(start + info.file_size - 4)
            f.write(bytes(b ^ 0xFF for b in last))
        return
    with zipfile.ZipFile(dest, "w") as archive:
        for name, array in arrays.items():
            if name == member and mode == "duplicate":
                warnings.simplefilter("ignore")  # zipfile's "Duplicate name"
                for _ in range(2):
                    with archive.open(name + ".npy", "w") as f:
                        np.lib.format.write_array(f, array)
            elif name == member:
                archive.writestr(name + ".npy", tamper(mode, array))
            else:
                with archive.open(name + ".npy", "w") as f:
                    np.lib.format.write_array(f, array)


if __name__ == "__main__":
    main()
