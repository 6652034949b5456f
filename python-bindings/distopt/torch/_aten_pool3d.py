# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""3-D max and average pooling as 2-D pooling of each depth tap of the
window over the input's depth slices folded into the batch (as
_aten_conv3d does for convolutions): max or mean over the taps."""

import torch

from ._aten import (UnsupportedOp, _shape, _slice, aten, attr_array,
                    attr_f64, handles)
from ._aten_conv3d import _fold, _sum, _unfold
from ._aten_shape import _spread


def _triple(values, default):
    values = list(values) if values else list(default)
    return values * 3 if len(values) == 1 else values


class _Window3d:
    def __init__(self, node, v, kernel, stride, padding, ceil_mode, out,
                 dilation=(1,)):
        if v.rank != 5:
            raise UnsupportedOp(node, f"3-D pooling of a rank-{v.rank} tensor")
        self.kernel = _triple(kernel, ())
        self.stride = _triple(stride, self.kernel)
        self.padding = _triple(padding, (0,))
        if any(d != 1 for d in _triple(dilation, (1,))):
            raise UnsupportedOp(node, "dilated pooling")
        floor = tuple((i + 2 * p - k) // s + 1 for i, p, k, s in zip(
            v.shape[2:], self.padding, self.kernel, self.stride))
        if ceil_mode and tuple(out) != floor:
            raise UnsupportedOp(node, "3-D pooling in ceil mode with partial "
                                "windows")
        self.out_depth = out[0]
        ph, pw = self.padding[1:]
        self.attrs = {"kernel_size": attr_array(self.kernel[1:]),
                      "strides": attr_array(self.stride[1:]),
                      "padding": attr_array([ph, ph, pw, pw])}
        self.depth = v.shape[2] + 2 * self.padding[0]
        self.span = (self.out_depth - 1) * self.stride[0] + 1

    def padded(self, t, v, value):
        p = self.padding[0]
        if not p:
            return v
        low = [0, 0, p, 0, 0]
        return t.e.op("pad", [v], [(v.shape[:2] + (self.depth,) + v.shape[3:],
                                    v.dtype)],
                      {"low": attr_array(low), "high": attr_array(low),
                       "value": attr_f64(value)})

    def taps(self, t, v, value):
        vp = self.padded(t, v, value)
        return [_fold(t, _slice(t, vp, 2, k, k + self.span, self.stride[0]))
                for k in range(self.kernel[0])]

    def back(self, t, parts, v):
        """Each tap's [N * Do, C, H, W] gradient put back at the depth
        positions the tap read, summed, the depth padding cropped."""
        n = v.shape[0]
        placed = []
        for k, part in enumerate(parts):
            spread = _slice(t, _spread(t, _unfold(t, part, n), 2,
                                       self.stride[0]), 2, 0, self.span, 1)
            low, high = [0] * 5, [0] * 5
            low[2], high[2] = k, self.depth - k - self.span
            placed.append(t.e.op(
                "pad", [spread], [(v.shape[:2] + (self.depth,) + v.shape[3:],
                                   v.dtype)],
                {"low": attr_array(low), "high": attr_array(high),
                 "value": attr_f64(0.0)}))
        return _slice(t, _sum(t, placed), 2, self.padding[0],
                      self.padding[0] + v.shape[2], 1)


def _pooled(t, w, taps, op, out, dtype):
    return [t.e.op(op, [x], [(out, dtype)], w.attrs) for x in taps]


def _folded_out(v, shape):
    return (v.shape[0] * shape[2], v.shape[1]) + tuple(shape[3:])


# -- max ------------------------------------------------------------------------

class _Indices3d:
    """max_pool3d's indices: only its backward reads them."""


@handles(aten.max_pool3d_with_indices.default)
def _max_pool3d(t, node, x, kernel, stride=(), padding=(0,), dilation=(1,),
                ceil_mode=False):
    v = t.value(x)
    shape = _shape(node, 0)
    w = _Window3d(node, v, kernel, stride, padding, ceil_mode, shape[2:],
                  dilation)
    pooled = _pooled(t, w, w.taps(t, v, float("-inf")), "max_pool2d",
                     _folded_out(v, shape), v.dtype)
    y = pooled[0]
    for p in pooled[1:]:
        y = t.binary("max", y, p, y.shape, y.dtype)
    return _unfold(t, y, v.shape[0]), _Indices3d()


@handles(aten.max_pool3d_with_indices_backward.default)
def _max_pool3d_backward(t, node, grad, x, kernel, stride, padding, dilation,
                         ceil_mode, indices):
    """The gradient goes to the first tap (in depth order) holding the
    window's maximum, and within it to max_pool2d_backward's choice: the
    first maximum in depth, height, width order, as PyTorch's."""
    v, g = t.value(x), t.value(grad)
    w = _Window3d(node, v, kernel, stride, padding, ceil_mode, g.shape[2:],
                  dilation)
    taps = w.taps(t, v, float("-inf"))
    out = _folded_out(v, g.shape)
    pooled = _pooled(t, w, taps, "max_pool2d", out, v.dtype)
    y = pooled[0]
    for p in pooled[1:]:
        y = t.binary("max", y, p, out, v.dtype)
    gf = _fold(t, g)
    zero, taken, parts = t.e.constant(0.0, v.dtype), None, []
    for x_k, p_k in zip(taps, pooled):
        hit = t.e.op("compare", [p_k, y], [(out, torch.bool)],
                     {"direction": "#train.compare_direction<eq>"})
        if taken is not None:
            hit = t.e.op("select", [taken, t.e.constant(False, torch.bool), hit],
                         [(out, torch.bool)])
            taken = t.e.op("select", [hit, t.e.constant(True, torch.bool),
                                      taken], [(out, torch.bool)])
        else:
            taken = hit
        g_k = t.e.op("select", [hit, gf, zero], [(out, v.dtype)])
        parts.append(t.e.op("max_pool2d_backward", [g_k, x_k],
                            [(x_k.shape, v.dtype)], w.attrs))
    return w.back(t, parts, v)


# -- average --------------------------------------------------------------------

def _check_avg(node, w, count_include_pad, divisor_override):
    if divisor_override is not None:
        raise UnsupportedOp(node, "avg_pool3d with divisor_override")
    if not count_include_pad and any(w.padding):
        raise UnsupportedOp(node, "avg_pool3d with padding and "
                            "count_include_pad=False")


def _avg_attrs(w):
    return {**w.attrs, "count_include_pad": "true"}


@handles(aten.avg_pool3d.default)
def _avg_pool3d(t, node, x, kernel, stride=(), padding=(0,), ceil_mode=False,
                count_include_pad=True, divisor_override=None):
    v = t.value(x)
    shape = _shape(node)
    w = _Window3d(node, v, kernel, stride, padding, ceil_mode, shape[2:])
    _check_avg(node, w, count_include_pad, divisor_override)
    out = _folded_out(v, shape)
    parts = [t.e.op("avg_pool2d", [x_k], [(out, v.dtype)], _avg_attrs(w))
             for x_k in w.taps(t, v, 0.0)]
    mean = t.binary("mul", _sum(t, parts),
                    t.e.constant(1.0 / w.kernel[0], v.dtype), out, v.dtype)
    return _unfold(t, mean, v.shape[0])


@handles(aten.avg_pool3d_backward.default)
def _avg_pool3d_backward(t, node, grad, x, kernel, stride, padding, ceil_mode,
                         count_include_pad, divisor_override):
    v, g = t.value(x), t.value(grad)
    w = _Window3d(node, v, kernel, stride, padding, ceil_mode, g.shape[2:])
    _check_avg(node, w, count_include_pad, divisor_override)
    gf = _fold(t, g)
    gf = t.binary("mul", gf, t.e.constant(1.0 / w.kernel[0], v.dtype),
                  gf.shape, v.dtype)
    parts = [t.e.op("avg_pool2d_backward", [gf, x_k], [(x_k.shape, v.dtype)],
                    _avg_attrs(w)) for x_k in w.taps(t, v, 0.0)]
    return w.back(t, parts, v)


def _adaptive_kernel(node, v, out):
    if v.rank != 5 or any(i % o for i, o in zip(v.shape[2:], out)):
        raise UnsupportedOp(node, f"adaptive 3-D pooling of {v.shape[2:]} to "
                            f"{tuple(out)}: only sizes that divide evenly")
    return [i // o for i, o in zip(v.shape[2:], out)]


@handles(aten._adaptive_avg_pool3d.default)
def _adaptive_avg_pool3d(t, node, x, output_size):
    v = t.value(x)
    k = _adaptive_kernel(node, v, _shape(node)[2:])
    return _avg_pool3d(t, node, x, k, k)


@handles(aten._adaptive_avg_pool3d_backward.default)
def _adaptive_avg_pool3d_backward(t, node, grad, x):
    v, g = t.value(x), t.value(grad)
    k = _adaptive_kernel(node, v, g.shape[2:])
    return _avg_pool3d_backward(t, node, grad, x, k, k, (0,), False, True,
                                None)
