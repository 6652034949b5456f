# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Core-ATen pooling to train ops: max and average pooling (2-D, and 1-D
as 2-D of height 1 by PyTorch's own reshapes), ceil mode with partial
windows, divisor_override, adaptive average and max pooling (the handlers
register in _aten's table)."""

import numpy as np
import torch

from ._aten import (UnsupportedOp, _meta, _shape, _slice, _transposed, aten,
                    attr_array, attr_f64, handles)


def _pair(values, default):
    values = list(values) if values else list(default)
    return values * 2 if len(values) == 1 else values


class _Window:
    """A pooling window over the input `v` pooled to `out` (the [h, w] of
    the pooled tensor): kernel, strides, padding and, in ceil mode, the
    extra rows and columns past the bottom and right edge that partial
    windows cover (PyTorch's rule: a window starts inside the input or its
    left padding)."""

    def __init__(self, node, v, kernel, stride, padding, dilation, ceil_mode,
                 out):
        self.kernel = _pair(kernel, ())
        self.stride = _pair(stride, self.kernel)
        self.padding = _pair(padding, (0, 0))
        if any(d != 1 for d in _pair(dilation, (1, 1))):
            raise UnsupportedOp(node, "dilated pooling")
        if v.rank != 4:
            raise UnsupportedOp(node, f"pooling of a rank-{v.rank} tensor "
                                "(train pooling is 2-D, NCHW)")
        self.input = v.shape[2:]
        self.out = tuple(out)
        self.extra = [max(0, (o - 1) * s + k - (i + 2 * p)) if ceil_mode else 0
                      for o, s, k, i, p in zip(self.out, self.stride,
                                               self.kernel, self.input,
                                               self.padding)]

    def attrs(self, padding=None):
        ph, pw = self.padding if padding is None else padding
        return {"kernel_size": attr_array(self.kernel),
                "strides": attr_array(self.stride),
                "padding": attr_array([ph, ph, pw, pw])}

    def pad(self, t, v, value, whole=False):
        """`v` padded with `value` past its bottom and right edge (and with
        `whole` on every side by the padding too)."""
        low = [0, 0] + (list(self.padding) if whole else [0, 0])
        high = [0, 0] + [e + (p if whole else 0)
                         for e, p in zip(self.extra, self.padding)]
        shape = tuple(d + lo + hi for d, lo, hi in zip(v.shape, low, high))
        return t.e.op("pad", [v], [(shape, v.dtype)],
                      {"low": attr_array(low), "high": attr_array(high),
                       "value": attr_f64(value)})

    def crop(self, t, v, low):
        """The input's part of a gradient of the padded input."""
        for dim in (2, 3):
            start = low[dim - 2]
            v = _slice(t, v, dim, start, start + self.input[dim - 2], 1)
        return v


def _out(node):
    meta = _meta(node)
    return tuple((meta[0] if isinstance(meta, (tuple, list)) else meta).shape)[2:]


# -- max pooling ----------------------------------------------------------------

class _PoolIndices:
    """max_pool2d's indices: only its backward op reads them."""


@handles(aten.max_pool2d_with_indices.default)
def _max_pool(t, node, x, kernel, stride=(), padding=(0,), dilation=(1,),
              ceil_mode=False):
    v = t.value(x)
    w = _Window(node, v, kernel, stride, padding, dilation, ceil_mode,
                _out(node))
    source = w.pad(t, v, float("-inf")) if any(w.extra) else v
    y = t.e.op("max_pool2d", [source], [(_shape(node, 0), v.dtype)], w.attrs())
    return y, _PoolIndices()


@handles(aten.max_pool2d_with_indices_backward.default)
def _max_pool_backward(t, node, grad, x, kernel, stride, padding, dilation,
                       ceil_mode, indices):
    v, g = t.value(x), t.value(grad)
    w = _Window(node, v, kernel, stride, padding, dilation, ceil_mode,
                g.shape[2:])
    if not any(w.extra):
        return t.e.op("max_pool2d_backward", [g, v], [(v.shape, v.dtype)],
                      w.attrs())
    padded = w.pad(t, v, float("-inf"))
    result = t.e.op("max_pool2d_backward", [g, padded],
                    [(padded.shape, v.dtype)], w.attrs())
    return w.crop(t, result, (0, 0))


# -- average pooling ------------------------------------------------------------

def _divisors(w, count_include_pad, divisor_override):
    """PyTorch's divisor of every pooled element: the window's size clipped
    to the padded input (count_include_pad) or to the input."""
    if divisor_override:
        return np.full(w.out, float(divisor_override))
    sizes = []
    for o, s, k, i, p in zip(w.out, w.stride, w.kernel, w.input, w.padding):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, i + p)
        if not count_include_pad:
            start, end = np.maximum(start, 0), np.minimum(end, i)
        sizes.append(end - start)
    return np.outer(*sizes).astype(np.float64)


def _avg_window(node, v, kernel, stride, padding, ceil_mode, out):
    return _Window(node, v, kernel, stride, padding, (1,), ceil_mode, out)


def _exact(w, divisor_override):
    """The train op's divisor is PyTorch's: no partial window, no override."""
    return not any(w.extra) and divisor_override is None


def _scale(t, w, v, divisors):
    """`v` (pooled shape) times kernel size / divisor."""
    factor = np.prod(w.kernel) / divisors
    constant = t.e.dense(torch.from_numpy(factor).to(v.dtype))
    return t.binary("mul", v, t.broadcast(constant, v.shape, [2, 3]),
                    v.shape, v.dtype)


@handles(aten.avg_pool2d.default)
def _avg_pool(t, node, x, kernel, stride=(), padding=(0,), ceil_mode=False,
              count_include_pad=True, divisor_override=None):
    v = t.value(x)
    w = _avg_window(node, v, kernel, stride, padding, ceil_mode, _out(node))
    if _exact(w, divisor_override):
        return t.e.op("avg_pool2d", [v], [(_shape(node), v.dtype)],
                      {**w.attrs(), "count_include_pad":
                       "true" if count_include_pad else "false"})
    # Window sums over the zero-padded input, each divided by PyTorch's
    # divisor for its window.
    padded = w.pad(t, v, 0.0, whole=True)
    mean = t.e.op("avg_pool2d", [padded], [(_shape(node), v.dtype)],
                  w.attrs((0, 0)))
    return _scale(t, w, mean, _divisors(w, count_include_pad,
                                        divisor_override))


@handles(aten.avg_pool2d_backward.default)
def _avg_pool_backward(t, node, grad, x, kernel, stride, padding, ceil_mode,
                       count_include_pad, divisor_override):
    v, g = t.value(x), t.value(grad)
    w = _avg_window(node, v, kernel, stride, padding, ceil_mode, g.shape[2:])
    if _exact(w, divisor_override):
        return t.e.op("avg_pool2d_backward", [g, v], [(v.shape, v.dtype)],
                      {**w.attrs(), "count_include_pad":
                       "true" if count_include_pad else "false"})
    padded = w.pad(t, v, 0.0, whole=True)
    scaled = _scale(t, w, g, _divisors(w, count_include_pad, divisor_override))
    result = t.e.op("avg_pool2d_backward", [scaled, padded],
                    [(padded.shape, v.dtype)], w.attrs((0, 0)))
    return w.crop(t, result, w.padding)


# -- adaptive pooling -----------------------------------------------------------

def _uniform(node, v, out):
    """The kernel (= stride) of an adaptive pooling whose windows all have
    one size, or None."""
    if v.rank != 4:
        raise UnsupportedOp(node, f"adaptive pooling of a rank-{v.rank} tensor")
    size = v.shape[2:]
    if all(i % o == 0 for i, o in zip(size, out)):
        return [i // o for i, o in zip(size, out)]
    return None


def _averaging(size, out, dtype):
    """[out, size]: row j averages PyTorch's adaptive window j
    (floor(j size / out) .. ceil((j + 1) size / out))."""
    m = np.zeros((out, size))
    for j in range(out):
        start, end = (j * size) // out, -((-(j + 1) * size) // out)
        m[j, start:end] = 1.0 / (end - start)
    return torch.from_numpy(m).to(dtype)


def _along_last(t, v, matrix, transpose):
    """v [..., k] times matrix^T ([n, k], transpose) or matrix ([k, n])."""
    rows = matrix.shape[0] if transpose else matrix.shape[1]
    attrs = {"transpose_rhs": None} if transpose else {}
    return t.e.op("matmul", [v, t.e.dense(matrix)],
                  [(v.shape[:-1] + (rows,), v.dtype)], attrs)


def _adaptive_linear(t, v, out, backward):
    """Adaptive average pooling as two products with the averaging
    matrices (any sizes); `backward` applies their transposes."""
    h, w = (v.shape[2:] if not backward else out)
    oh, ow = (out if not backward else v.shape[2:])
    a_h, a_w = _averaging(h, oh, v.dtype), _averaging(w, ow, v.dtype)
    along_w = _along_last(t, v, a_w, not backward)
    swapped = _transposed(t, along_w, [0, 1, 3, 2])
    along_h = _along_last(t, swapped, a_h, not backward)
    return _transposed(t, along_h, [0, 1, 3, 2])


@handles(aten._adaptive_avg_pool2d.default)
def _adaptive_avg_pool(t, node, x, output_size):
    v = t.value(x)
    out = _shape(node)[2:]
    kernel = _uniform(node, v, out)
    if kernel is None:
        return _adaptive_linear(t, v, out, False)
    return t.e.op("avg_pool2d", [v], [(_shape(node), v.dtype)],
                  {"kernel_size": attr_array(kernel),
                   "strides": attr_array(kernel)})


@handles(aten._adaptive_avg_pool2d_backward.default)
def _adaptive_avg_pool_backward(t, node, grad, x):
    v, g = t.value(x), t.value(grad)
    kernel = _uniform(node, v, g.shape[2:])
    if kernel is None:
        return _adaptive_linear(t, g, v.shape[2:], True)
    return t.e.op("avg_pool2d_backward", [g, v], [(v.shape, v.dtype)],
                  {"kernel_size": attr_array(kernel),
                   "strides": attr_array(kernel)})


def _adaptive_max_kernel(node, v, out):
    kernel = _uniform(node, v, out)
    if kernel is None:
        raise UnsupportedOp(node, f"adaptive max pooling of {v.shape[2:]} to "
                            f"{tuple(out)}: only sizes that divide evenly "
                            "(windows of one size) map to train.max_pool2d")
    return {"kernel_size": attr_array(kernel), "strides": attr_array(kernel)}


@handles(aten.adaptive_max_pool2d.default)
def _adaptive_max_pool(t, node, x, output_size):
    v = t.value(x)
    out = _shape(node, 0)
    y = t.e.op("max_pool2d", [v], [(out, v.dtype)],
               _adaptive_max_kernel(node, v, out[2:]))
    return y, _PoolIndices()


@handles(aten.adaptive_max_pool2d_backward.default)
def _adaptive_max_pool_backward(t, node, grad, x, indices):
    v, g = t.value(x), t.value(grad)
    return t.e.op("max_pool2d_backward", [g, v], [(v.shape, v.dtype)],
                  _adaptive_max_kernel(node, v, g.shape[2:]))
