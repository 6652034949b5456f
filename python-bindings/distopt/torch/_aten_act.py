# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Core-ATen activations and elementwise functions beyond _aten's basic
set: erf, log1p, expm1, sign, ELU / SELU / CELU, leaky ReLU, exact GELU
(the handlers register in _aten's table)."""

import math

import torch

from ._aten import _dtype, _unary, aten, handles


# -- elementwise functions ------------------------------------------------------

handles(aten.erf.default)(_unary("erf"))
handles(aten.log1p.default)(_unary("log1p"))
handles(aten.expm1.default)(_unary("expm1"))


def _scalar(t, value, dtype):
    return t.e.constant(value, dtype)


def _positive(t, v):
    return t.e.op("compare", [v, _scalar(t, 0, v.dtype)],
                  [(v.shape, torch.bool)],
                  {"direction": "#train.compare_direction<gt>"})


@handles(aten.sign.default, aten.sgn.default)
def _sign(t, node, x):
    v = t.value(x, _dtype(node))
    negative = t.e.op("compare", [v, _scalar(t, 0, v.dtype)],
                      [(v.shape, torch.bool)],
                      {"direction": "#train.compare_direction<lt>"})
    lower = t.e.op("select", [negative, _scalar(t, -1, v.dtype),
                              _scalar(t, 0, v.dtype)], [(v.shape, v.dtype)])
    return t.e.op("select", [_positive(t, v), _scalar(t, 1, v.dtype), lower],
                  [(v.shape, v.dtype)])


def _scaled(t, v, factor):
    if factor == 1:
        return v
    return t.binary("mul", v, _scalar(t, float(factor), v.dtype), v.shape,
                    v.dtype)


@handles(aten.elu.default)
def _elu(t, node, x, alpha=1.0, scale=1.0, input_scale=1.0):
    """scale * (x > 0 ? x : alpha * (e^(input_scale * x) - 1)): ELU, SELU
    and CELU."""
    v = t.value(x, _dtype(node))
    negative = _scaled(t, t.e.op("expm1", [_scaled(t, v, input_scale)],
                                 [(v.shape, v.dtype)]), alpha)
    y = t.e.op("select", [_positive(t, v), v, negative], [(v.shape, v.dtype)])
    return _scaled(t, y, scale)


@handles(aten.elu_backward.default)
def _elu_backward(t, node, grad, alpha, scale, input_scale, is_result,
                  self_or_result):
    g, v = t.value(grad), t.value(self_or_result)
    if is_result:       # v = scale * alpha * (e^(s x) - 1) where x <= 0
        slope = t.binary("add", v, _scalar(t, float(scale * alpha), v.dtype),
                         v.shape, v.dtype)
        slope = _scaled(t, slope, input_scale)
    else:
        slope = _scaled(t, t.e.op("exp", [_scaled(t, v, input_scale)],
                                  [(v.shape, v.dtype)]),
                        input_scale * alpha * scale)
    slope = t.e.op("select", [_positive(t, v), _scalar(t, float(scale), v.dtype),
                              slope], [(v.shape, v.dtype)])
    return t.binary("mul", g, slope, v.shape, v.dtype)


@handles(aten.leaky_relu.default)
def _leaky_relu(t, node, x, slope=0.01):
    v = t.value(x, _dtype(node))
    return t.e.op("select", [_positive(t, v), v, _scaled(t, v, slope)],
                  [(v.shape, v.dtype)])


@handles(aten.leaky_relu_backward.default)
def _leaky_relu_backward(t, node, grad, x, slope, self_is_result):
    g, v = t.value(grad), t.value(x)
    return t.e.op("select", [_positive(t, v), g, _scaled(t, g, slope)],
                  [(g.shape, g.dtype)])


@handles(aten.gelu.default)
def _gelu(t, node, x, approximate="none"):
    """train.gelu is the tanh form; the exact form is x/2 (1 + erf(x/sqrt 2))."""
    v = t.value(x, _dtype(node))
    if approximate == "tanh":
        return t.e.op("gelu", [v], [(v.shape, v.dtype)])
    erf = t.e.op("erf", [_scaled(t, v, math.sqrt(0.5))], [(v.shape, v.dtype)])
    one = t.binary("add", erf, _scalar(t, 1.0, v.dtype), v.shape, v.dtype)
    return t.binary("mul", _scaled(t, v, 0.5), one, v.shape, v.dtype)
