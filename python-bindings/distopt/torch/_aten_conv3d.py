# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""3-D convolution as 2-D ones: each depth tap of the filter is a
train.conv2d over the input's depth slices folded into the batch, and the
taps sum (the backward ops likewise, per tap). Called by _aten_nn's
convolution handlers for rank-5 operands."""

from ._aten import (UnsupportedOp, _slice, _transposed, attr_array, attr_f64,
                    attr_i64)
from ._aten_shape import _spread


def _triple(values, default):
    values = list(values) if values else [default]
    return values * 3 if len(values) == 1 else values


class _Geometry:
    def __init__(self, node, v, w, stride, padding, dilation, transposed,
                 output_padding, groups):
        if transposed:
            raise UnsupportedOp(node, "3-D transposed convolution")
        self.stride = _triple(stride, 1)
        self.padding = _triple(padding, 0)
        self.dilation = _triple(dilation, 1)
        n, _, d, h, width = v.shape
        self.kd = w.shape[2]
        self.out_depth = (d + 2 * self.padding[0] - self.dilation[0] *
                          (self.kd - 1) - 1) // self.stride[0] + 1
        ph, pw = self.padding[1:]
        self.attrs = {"strides": attr_array(self.stride[1:]),
                      "padding": attr_array([ph, ph, pw, pw]),
                      "dilations": attr_array(self.dilation[1:]),
                      "groups": attr_i64(groups)}

    def padded(self, t, v):
        """v padded with zeros along depth."""
        p = self.padding[0]
        if not p:
            return v
        low = [0, 0, p, 0, 0]
        shape = v.shape[:2] + (v.shape[2] + 2 * p,) + v.shape[3:]
        return t.e.op("pad", [v], [(shape, v.dtype)],
                      {"low": attr_array(low), "high": attr_array(low),
                       "value": attr_f64(0.0)})

    def taps(self, t, v):
        """[N * Do, C, H, W] of the padded input for each depth tap."""
        vp = self.padded(t, v)
        span = (self.out_depth - 1) * self.stride[0] + 1
        for k in range(self.kd):
            start = k * self.dilation[0]
            s = _slice(t, vp, 2, start, start + span, self.stride[0])
            yield _fold(t, s)

    def filter(self, t, w, k):
        wk = _slice(t, w, 2, k, k + 1, 1)
        return t.reshape(wk, w.shape[:2] + w.shape[3:])


def _fold(t, v):
    """[N, C, D, H, W] -> [N * D, C, H, W]."""
    n, c, d, h, w = v.shape
    return t.reshape(_transposed(t, v, [0, 2, 1, 3, 4]), (n * d, c, h, w))


def _unfold(t, v, n):
    """[N * D, C, H, W] -> [N, C, D, H, W]."""
    nd, c, h, w = v.shape
    return _transposed(t, t.reshape(v, (n, nd // n, c, h, w)), [0, 2, 1, 3, 4])


def _sum(t, values):
    total = values[0]
    for v in values[1:]:
        total = t.binary("add", total, v, total.shape, total.dtype)
    return total


def convolution(t, node, v, w, conv, shape):
    g = _Geometry(node, v, w, *conv)
    n = v.shape[0]
    out = (n * g.out_depth, w.shape[0]) + shape[3:]
    parts = [t.e.op("conv2d", [x, g.filter(t, w, k)], [(out, v.dtype)], g.attrs)
             for k, x in enumerate(g.taps(t, v))]
    return _unfold(t, _sum(t, parts), n)


def convolution_backward(t, node, grad, v, w, conv, mask):
    g = _Geometry(node, v, w, *conv)
    n = v.shape[0]
    gb = _fold(t, grad)
    results = [None, None]
    if mask[0]:
        depth = v.shape[2] + 2 * g.padding[0]
        span = (g.out_depth - 1) * g.stride[0] + 1
        parts = []
        for k in range(g.kd):
            gx = t.e.op("conv2d_backward_input", [gb, g.filter(t, w, k)],
                        [((n * g.out_depth, v.shape[1]) + v.shape[3:],
                          v.dtype)],
                        {**g.attrs, "input_size": attr_array(v.shape[3:])})
            spread = _slice(t, _spread(t, _unfold(t, gx, n), 2, g.stride[0]),
                            2, 0, span, 1)
            start = k * g.dilation[0]
            low, high = [0] * 5, [0] * 5
            low[2], high[2] = start, depth - start - span
            parts.append(t.e.op(
                "pad", [spread], [(v.shape[:2] + (depth,) + v.shape[3:],
                                   v.dtype)],
                {"low": attr_array(low), "high": attr_array(high),
                 "value": attr_f64(0.0)}))
        total = _sum(t, parts)
        results[0] = _slice(t, total, 2, g.padding[0],
                            g.padding[0] + v.shape[2], 1)
    if mask[1]:
        filters = []
        for k, x in enumerate(g.taps(t, v)):
            wk = g.filter(t, w, k)
            gw = t.e.op("conv2d_backward_filter", [x, gb], [(wk.shape, w.dtype)],
                        {**g.attrs, "kernel_size": attr_array(wk.shape[2:])})
            filters.append(t.reshape(gw, w.shape[:2] + (1,) + w.shape[3:]))
        results[1] = filters[0] if len(filters) == 1 else t.e.op(
            "concat", filters, [(w.shape, w.dtype)], {"dim": attr_i64(2)})
    return results
