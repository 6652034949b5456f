# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Core-ATen ops with a train op of their own: normalizations,
convolutions (1-D and 2-D, transposed too), embeddings, dropout (the handlers register in
_aten's table)."""

import torch

from . import _aten_conv3d
from ._aten import (UnsupportedOp, Value, _shape, aten, attr_array,
                    attr_f64, attr_i64, handles)


# -- normalizations -------------------------------------------------------------

def _affine(t, weight, shape, value, dtype):
    return t.value(weight) if weight is not None else \
        t.e.constant(value, dtype, shape)


@handles(aten.native_layer_norm.default)
def _layer_norm(t, node, x, normalized_shape, weight, bias, eps):
    v = t.value(x)
    axis = v.rank - len(normalized_shape)
    shape = tuple(normalized_shape)
    y, mean, rstd = t.e.op(
        "layer_norm", [v, _affine(t, weight, shape, 1.0, v.dtype),
                       _affine(t, bias, shape, 0.0, v.dtype)],
        [(v.shape, v.dtype), (v.shape[:axis], v.dtype),
         (v.shape[:axis], v.dtype)],
        {"axis": attr_i64(axis), "epsilon": attr_f64(eps)})
    stats = []
    for raw, index in ((mean, 1), (rstd, 2)):
        kept = t.reshape(raw, _shape(node, index))
        if kept is not raw:
            kept.info = raw
        stats.append(kept)
    return (y, *stats)


@handles(aten.native_layer_norm_backward.default)
def _layer_norm_backward(t, node, grad, x, normalized_shape, mean, rstd,
                         weight, bias, mask):
    v = t.value(x)
    axis = v.rank - len(normalized_shape)
    stats = []
    for s in (mean, rstd):
        s = t.value(s)
        stats.append(s.info if isinstance(s.info, Value) else
                     t.reshape(s, v.shape[:axis]))
    shape = tuple(normalized_shape)
    gi, gw, gb = t.e.op(
        "layer_norm_backward",
        [t.value(grad), v, *stats, _affine(t, weight, shape, 1.0, v.dtype)],
        [(v.shape, v.dtype), (shape, v.dtype), (shape, v.dtype)],
        {"axis": attr_i64(axis)})
    return tuple(r if m else None for r, m in zip((gi, gw, gb), mask))


class _BatchStats:
    def __init__(self, mean, var, eps):
        self.mean, self.var, self.eps = mean, var, eps


@handles(aten._native_batch_norm_legit_functional.default)
def _batch_norm(t, node, x, weight, bias, running_mean, running_var,
                training, momentum, eps):
    if not training:
        raise UnsupportedOp(node, "batch norm in eval mode inside a training "
                            "step: export the model in train() mode")
    v = t.value(x)
    channels = (v.shape[1],)
    dtype = v.dtype
    y, mean, var = t.e.op(
        "batch_norm", [v, _affine(t, weight, channels, 1.0, dtype),
                       _affine(t, bias, channels, 0.0, dtype)],
        [(v.shape, dtype), (channels, dtype), (channels, dtype)],
        {"epsilon": attr_f64(eps)})
    stats = _BatchStats(mean, var, eps)
    mean.info = stats
    invstd = t.e.op("rsqrt", [t.binary("add", var, t.e.constant(eps, dtype),
                                       channels, dtype)], [(channels, dtype)])
    invstd.info = stats
    count = 1
    for d in v.shape:
        count *= d
    count //= v.shape[1]
    keep = t.e.constant(1.0 - momentum, dtype)
    take = t.e.constant(momentum, dtype)

    def update(old, batch):
        return t.binary("add", t.binary("mul", t.value(old), keep, channels, dtype),
                        t.binary("mul", batch, take, channels, dtype),
                        channels, dtype)

    unbiased = t.binary("mul", var, t.e.constant(count / max(count - 1, 1), dtype),
                        channels, dtype)
    return (y, mean, invstd, update(running_mean, mean),
            update(running_var, unbiased))


@handles(aten.native_batch_norm_backward.default)
def _batch_norm_backward(t, node, grad, x, weight, running_mean, running_var,
                         save_mean, save_invstd, train, eps, mask):
    stats = t.value(save_invstd).info
    if not train or not isinstance(stats, _BatchStats):
        raise UnsupportedOp(node, "batch norm backward in eval mode")
    v = t.value(x)
    channels = (v.shape[1],)
    gi, gw, gb = t.e.op(
        "batch_norm_backward",
        [t.value(grad), v, stats.mean, stats.var,
         _affine(t, weight, channels, 1.0, v.dtype)],
        [(v.shape, v.dtype), (channels, v.dtype), (channels, v.dtype)],
        {"epsilon": attr_f64(stats.eps)})
    return tuple(r if m else None for r, m in zip((gi, gw, gb), mask))


# -- convolution ----------------------------------------------------------------

def _pair(values, default):
    values = list(values) if values else list(default)
    return values * 2 if len(values) == 1 else values


def _conv_attrs(node, stride, padding, dilation, transposed, output_padding,
                groups, rank):
    """conv2d's attributes; a 1-D convolution is a 2-D one of height 1."""
    if rank not in (3, 4):
        raise UnsupportedOp(node, f"{rank - 2}-D convolution (train.conv2d "
                            "is 2-D; 1-D convolutions map to it with height "
                            "1, 3-D ones to one per depth tap)")
    if rank == 3:
        stride, padding, dilation = ([d[0]] + list(_pair(a, d))[:1] for a, d in (
            (stride, (1,)), (padding, (0,)), (dilation, (1,))))
    ph, pw = _pair(padding, (0, 0))
    return {"strides": attr_array(_pair(stride, (1, 1))),
            "padding": attr_array([ph, ph, pw, pw]),
            "dilations": attr_array(_pair(dilation, (1, 1))),
            "groups": attr_i64(groups)}


def _as_2d(t, v):
    """A 1-D convolution's [N, C, L] operand as [N, C, 1, L]."""
    return t.reshape(v, v.shape[:2] + (1,) + v.shape[2:]) if v.rank == 3 else v


def _conv_input_grad(t, g, w, attrs, shape, dtype):
    """The gradient of conv2d's input of `shape` (2-D): a transposed
    convolution of g."""
    return t.e.op("conv2d_backward_input", [g, w], [(shape, dtype)],
                  {**attrs, "input_size": attr_array(shape[2:])})


def _conv_filter_grad(t, a, g, w, attrs):
    return t.e.op("conv2d_backward_filter", [a, g], [(w.shape, w.dtype)],
                  {**attrs, "kernel_size": attr_array(w.shape[2:])})


@handles(aten.convolution.default)
def _convolution(t, node, x, weight, bias, *conv):
    """A convolution, or a transposed one (ConvTranspose: the gradient of
    the convolution whose filter it has, `[in, out / groups, kh, kw]`)."""
    v, w = t.value(x), t.value(weight)
    shape = _shape(node)
    if v.rank == 5:
        y = _aten_conv3d.convolution(t, node, v, w, conv, shape)
        return y if bias is None else t.binary(
            "add", y, t.broadcast(t.value(bias), shape, [1]), shape, v.dtype)
    attrs = _conv_attrs(node, *conv, v.rank)
    transposed = conv[3]
    shape2 = shape[:2] + (1,) + shape[2:] if len(shape) == 3 else shape
    v, w = _as_2d(t, v), _as_2d(t, w)
    if transposed:
        y = _conv_input_grad(t, v, w, attrs, shape2, v.dtype)
    else:
        y = t.e.op("conv2d", [v, w], [(shape2, v.dtype)], attrs)
    y = t.reshape(y, shape)
    if bias is not None:
        y = t.binary("add", y, t.broadcast(t.value(bias), shape, [1]),
                     shape, v.dtype)
    return y


@handles(aten.convolution_backward.default)
def _convolution_backward(t, node, grad, x, weight, bias_sizes, *rest):
    *conv, mask = rest
    g, v, w = t.value(grad), t.value(x), t.value(weight)
    results = [None, None, None]
    if v.rank == 5:
        results[:2] = _aten_conv3d.convolution_backward(t, node, g, v, w,
                                                        conv, mask)
        return _bias_grad(t, g, mask, results)
    attrs = _conv_attrs(node, *conv, v.rank)
    transposed = conv[3]
    g2, v2, w2 = _as_2d(t, g), _as_2d(t, v), _as_2d(t, w)
    if mask[0]:
        gi = t.e.op("conv2d", [g2, w2], [(v2.shape, v.dtype)], attrs) \
            if transposed else \
            _conv_input_grad(t, g2, w2, attrs, v2.shape, v.dtype)
        results[0] = t.reshape(gi, v.shape)
    if mask[1]:
        gw = _conv_filter_grad(t, g2, v2, w2, attrs) if transposed else \
            _conv_filter_grad(t, v2, g2, w2, attrs)
        results[1] = t.reshape(gw, w.shape)
    return _bias_grad(t, g, mask, results)


def _bias_grad(t, g, mask, results):
    if mask[2]:
        results[2] = t.e.op("reduce", [g], [((g.shape[1],), g.dtype)],
                            {"kind": "#train.reduce_kind<sum>",
                             "dims": attr_array([0] + list(range(2, g.rank)))})
    return tuple(results)


# -- embeddings -----------------------------------------------------------------

@handles(aten.embedding.default)
def _embedding(t, node, weight, indices, padding_idx=-1, scale_grad=False,
               sparse=False):
    w = t.value(weight)
    return t.e.op("gather", [w, t.value(indices)], [(_shape(node), w.dtype)])


@handles(aten.embedding_dense_backward.default)
def _embedding_backward(t, node, grad, indices, num_weights, padding_idx,
                        scale_grad_by_freq):
    if scale_grad_by_freq:
        raise UnsupportedOp(node, "scale_grad_by_freq")
    g, idx = t.value(grad), t.value(indices)
    if padding_idx is not None and padding_idx >= 0:
        keep = t.e.op("compare", [idx, t.e.constant(padding_idx, idx.dtype)],
                      [(idx.shape, torch.bool)],
                      {"direction": "#train.compare_direction<ne>"})
        keep = t.broadcast(t.reshape(keep, idx.shape + (1,)), g.shape)
        g = t.e.op("select", [keep, g, t.e.constant(0.0, g.dtype)],
                   [(g.shape, g.dtype)])
    shape = _shape(node)
    return t.e.op("scatter_add", [t.e.constant(0.0, g.dtype, shape), idx, g],
                  [(shape, g.dtype)])


# -- dropout --------------------------------------------------------------------

class _DropoutMask:
    def __init__(self, seed, rate):
        self.seed, self.rate = seed, rate


@handles(aten.native_dropout.default)
def _dropout(t, node, x, p, train):
    v = t.value(x)
    if not train or p == 0:
        return v, t.e.constant(True, torch.bool, v.shape)
    if t.seed is None:
        raise UnsupportedOp(node, "dropout needs the step's seed argument")
    t.dropouts += 1
    seed = t.binary("add", t.seed, t.e.constant(t.dropouts, torch.int64), (),
                    torch.int64)
    y = t.e.op("dropout", [v, seed], [(v.shape, v.dtype)],
               {"rate": attr_f64(p)})
    ones = t.e.op("dropout", [t.e.constant(1.0, v.dtype, v.shape), seed],
                  [(v.shape, v.dtype)], {"rate": attr_f64(p)})
    mask = t.convert(ones, torch.bool)
    mask.info = _DropoutMask(seed, p)
    return y, mask


@handles(aten.native_dropout_backward.default)
def _dropout_backward(t, node, grad, mask, scale):
    g, m = t.value(grad), t.value(mask)
    if isinstance(m.info, _DropoutMask):
        return t.e.op("dropout", [g, m.info.seed], [(g.shape, g.dtype)],
                      {"rate": attr_f64(m.info.rate)})
    kept = t.binary("mul", g, t.convert(m, g.dtype), g.shape, g.dtype)
    return t.binary("mul", kept, t.e.constant(float(scale), g.dtype), g.shape,
                    g.dtype)


# -- group normalization (as layer normalization over each group) ---------------

def _grouped(t, v, groups):
    n = v.shape[0]
    return t.reshape(v, (n, groups, _size(v) // (n * groups)))


def _size(v):
    count = 1
    for d in v.shape:
        count *= d
    return count


def _per_channel(t, w, shape):
    return t.broadcast(t.value(w), shape, [1])


@handles(aten.native_group_norm.default)
def _group_norm(t, node, x, weight, bias, n, c, hw, groups, eps):
    v = t.value(x)
    r = _grouped(t, v, groups)
    k = r.shape[2]
    y, mean, rstd = t.e.op(
        "layer_norm", [r, t.e.constant(1.0, v.dtype, (k,)),
                       t.e.constant(0.0, v.dtype, (k,))],
        [(r.shape, v.dtype), (r.shape[:2], v.dtype), (r.shape[:2], v.dtype)],
        {"axis": attr_i64(2), "epsilon": attr_f64(eps)})
    y = t.reshape(y, v.shape)
    if weight is not None:
        y = t.binary("mul", y, _per_channel(t, weight, v.shape), v.shape, v.dtype)
    if bias is not None:
        y = t.binary("add", y, _per_channel(t, bias, v.shape), v.shape, v.dtype)
    return y, mean, rstd


@handles(aten.native_group_norm_backward.default)
def _group_norm_backward(t, node, grad, x, mean, rstd, weight, n, c, hw,
                         groups, mask):
    g, v = t.value(grad), t.value(x)
    m, s = t.value(mean), t.value(rstd)
    r = _grouped(t, v, groups)
    k = r.shape[2]
    channel_dims = [0] + list(range(2, v.rank))
    results = [None, None, None]
    if mask[0]:
        scaled = g if weight is None else t.binary(
            "mul", g, _per_channel(t, weight, v.shape), v.shape, v.dtype)
        gi, _, _ = t.e.op(
            "layer_norm_backward",
            [_grouped(t, scaled, groups), r, m, s,
             t.e.constant(1.0, v.dtype, (k,))],
            [(r.shape, v.dtype), ((k,), v.dtype), ((k,), v.dtype)],
            {"axis": attr_i64(2)})
        results[0] = t.reshape(gi, v.shape)
    if mask[1]:
        stats = r.shape[:2] + (1,)
        centered = t.binary("sub", r, t.broadcast(t.reshape(m, stats), r.shape),
                            r.shape, v.dtype)
        normalized = t.binary("mul", centered,
                              t.broadcast(t.reshape(s, stats), r.shape),
                              r.shape, v.dtype)
        product = t.binary("mul", g, t.reshape(normalized, v.shape), v.shape,
                           v.dtype)
        results[1] = t.e.op("reduce", [product], [((v.shape[1],), v.dtype)],
                            {"kind": "#train.reduce_kind<sum>",
                             "dims": attr_array(channel_dims)})
    if mask[2]:
        results[2] = t.e.op("reduce", [g], [((v.shape[1],), v.dtype)],
                            {"kind": "#train.reduce_kind<sum>",
                             "dims": attr_array(channel_dims)})
    return tuple(results)
