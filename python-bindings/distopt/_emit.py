# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Writing train-dialect IR from Python, for every front end: typed SSA
values, ops in MLIR's generic form (the verifier checks every op and every
result type when the module is parsed), constants, and dead-op removal.

A Value's dtype is the front end's own: a torch dtype (the PyTorch
importer) or a NumPy dtype (JAX, Keras); both name the same element types.
Nothing here imports torch."""

import math
import struct

import numpy as np

# The element types the train dialect has, by the dtype's plain name.
_ELEMENT_OF_NAME = {
    "float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
    "int64": "i64", "int32": "i32", "bool": "i1",
}
_FLOAT_NAMES = ("float32", "float64", "float16", "bfloat16")


def _is_torch_dtype(dtype):
    return type(dtype).__module__ == "torch" and \
        type(dtype).__name__ == "dtype"


def dtype_name(dtype):
    """'float32', 'int64', 'bool', ...: the plain name of a torch dtype, a
    NumPy dtype or scalar type, or None when it is neither."""
    if _is_torch_dtype(dtype):
        return str(dtype).rsplit(".", 1)[-1]
    try:
        return np.dtype(dtype).name
    except TypeError:
        return None


def element_type(dtype):
    name = dtype_name(dtype)
    if name not in _ELEMENT_OF_NAME:
        raise TypeError(f"dtype {dtype} has no train-dialect element type "
                        f"(supported: {', '.join(_ELEMENT_OF_NAME)})")
    return _ELEMENT_OF_NAME[name]


def is_floating(dtype):
    return dtype_name(dtype) in _FLOAT_NAMES


def tensor_type(shape, dtype):
    dims = "".join(f"{d}x" for d in shape)
    return f"tensor<{dims}{element_type(dtype)}>"


class Value:
    """An SSA value with its static shape and dtype (torch or NumPy).
    `info` carries what a backward op needs from its forward op (the train
    op's own statistics, a dropout's seed)."""

    def __init__(self, name, shape, dtype, info=None):
        self.name, self.shape, self.dtype, self.info = (
            name, tuple(shape), dtype, info)

    @property
    def type(self):
        return tensor_type(self.shape, self.dtype)

    @property
    def rank(self):
        return len(self.shape)


def _float_literal(value, dtype):
    value = float(value)
    if math.isfinite(value):
        return "%.16e" % value      # exact, and always with a '.'
    name = dtype_name(dtype)
    if name == "float64":
        return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]
    if name == "float32":
        return "0x%08X" % struct.unpack("<I", struct.pack("<f", value))[0]
    raise TypeError(f"no literal for {value} in {dtype}")


def scalar_literal(value, dtype):
    name = dtype_name(dtype)
    if name == "bool":
        return "true" if value else "false"
    if name in _FLOAT_NAMES:
        return _float_literal(value, dtype)
    return str(int(value))


def attr_f64(value):
    return f"{_float_literal(value, np.float64)} : f64"


def attr_i64(value):
    return f"{int(value)} : i64"


def attr_array(values):
    return "array<i64" + ("" if not values else
                          ": " + ", ".join(str(int(v)) for v in values)) + ">"


def _dense_bytes(array):
    """(little-endian bytes, shape, dtype) of a torch tensor or an array."""
    if hasattr(array, "detach"):            # a torch tensor
        import torch
        array = array.detach().cpu().contiguous()
        data = array.numpy() if array.dtype != torch.bfloat16 else \
            array.view(torch.int16).numpy()
        dtype = array.dtype
    else:
        data = np.ascontiguousarray(np.asarray(array))
        dtype = data.dtype
        element_type(dtype)                 # refuses what has no type
    if dtype_name(dtype) == "bool":
        data = data.astype(np.uint8)
    return data.tobytes(), tuple(array.shape), dtype


class Emitter:
    """Collects the ops of one function body; `body()` drops the ops whose
    results nothing uses (a pattern often leaves the op it replaced)."""

    def __init__(self):
        self._ops = []          # (defined names, used names, text)
        self._count = 0
        self._constants = {}

    def _fresh(self):
        self._count += 1
        return f"%v{self._count}"

    def op(self, name, operands, results, attrs=None):
        """Appends `train.<name>`; `results` is a list of (shape, dtype).
        Returns the result Values (one Value when there is one result)."""
        values = [Value(self._fresh(), shape, dtype) for shape, dtype in results]
        attr_text = ""
        if attrs:
            attr_text = " {" + ", ".join(
                k if v is None else f"{k} = {v}" for k, v in attrs.items()) + "}"
        operand_types = ", ".join(v.type for v in operands)
        result_types = ", ".join(v.type for v in values)
        if len(values) != 1:
            result_types = f"({result_types})"
        text = (f"{', '.join(v.name for v in values)} = \"train.{name}\""
                f"({', '.join(v.name for v in operands)}){attr_text} : "
                f"({operand_types}) -> {result_types}")
        self._ops.append(([v.name for v in values],
                          [v.name for v in operands], text))
        return values[0] if len(values) == 1 else values

    def convert(self, v, dtype):
        """`v` in `dtype` (the front end's own): a bool as 0/1, to a bool as
        `!= 0`, otherwise train.convert; `v` itself when it has `dtype`."""
        if v.dtype == dtype:
            return v
        if dtype_name(v.dtype) == "bool":   # 0/1 in the wider type
            return self.op("select", [v, self.constant(1, dtype),
                                      self.constant(0, dtype)],
                           [(v.shape, dtype)])
        if dtype_name(dtype) == "bool":
            return self.op("compare", [v, self.constant(0, v.dtype)],
                           [(v.shape, dtype)],
                           {"direction": "#train.compare_direction<ne>"})
        return self.op("convert", [v], [(v.shape, dtype)])

    def constant(self, value, dtype, shape=()):
        """A splat constant (cached)."""
        key = (scalar_literal(value, dtype), element_type(dtype), tuple(shape))
        if key not in self._constants:
            self._constants[key] = self.op(
                "constant", [], [(shape, dtype)],
                {"value": f"dense<{key[0]}> : {tensor_type(shape, dtype)}"})
        return self._constants[key]

    def dense(self, array):
        """A constant holding `array` (a torch tensor or a NumPy array), as
        hex."""
        data, shape, dtype = _dense_bytes(array)
        return self.op("constant", [], [(shape, dtype)],
                       {"value": f"dense<\"0x{data.hex().upper()}\">"
                                 f" : {tensor_type(shape, dtype)}"})

    def body(self, live_names):
        """The op lines whose results reach `live_names`, in order."""
        live = set(live_names)
        keep = [False] * len(self._ops)
        for index in range(len(self._ops) - 1, -1, -1):
            defined, used, _ = self._ops[index]
            if any(name in live for name in defined):
                keep[index] = True
                live.update(used)
        return [text for (_, _, text), kept in zip(self._ops, keep) if kept]


def _role(role, arg_name):
    return (f'{{train.role = #train.role<{role}>, train.name = '
            f'"{arg_name}"}}')


def function_text(name, arguments, results, body):
    """The training step `func.func @name`: `arguments` and `results` are
    (Value, role, train.name) triples, `body` the op lines (Emitter.body)."""
    args = ",\n    ".join(f"{v.name}: {v.type} {_role(r, n)}"
                          for v, r, n in arguments)
    rets = ",\n        ".join(f"{v.type} {_role(r, n)}" for v, r, n in results)
    lines = [f"func.func @{name}(\n    {args})\n    -> ({rets}) {{"]
    lines += [f"  {line}" for line in body]
    lines.append("  return " + ", ".join(v.name for v, _, _ in results) +
                 " : " + ", ".join(v.type for v, _, _ in results))
    lines.append("}")
    return "\n".join(lines) + "\n"
