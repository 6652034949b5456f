"""Core-ATen ops with a train op of their own: normalizations,
convolutions and pooling, embeddings, dropout (the handlers register in
_aten's table)."""

import torch

from ._aten import (UnsupportedOp, Value, _meta, _shape, aten, attr_array,
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


# -- convolution and pooling ----------------------------------------------------

def _pair(values, default):
    values = list(values) if values else list(default)
    return values * 2 if len(values) == 1 else values


def _conv_attrs(node, stride, padding, dilation, transposed, output_padding,
                groups, rank):
    if transposed:
        raise UnsupportedOp(node, "transposed convolution")
    if rank != 4:
        raise UnsupportedOp(node, f"{rank - 2}-D convolution (train.conv2d is 2-D)")
    ph, pw = _pair(padding, (0, 0))
    return {"strides": attr_array(_pair(stride, (1, 1))),
            "padding": attr_array([ph, ph, pw, pw]),
            "dilations": attr_array(_pair(dilation, (1, 1))),
            "groups": attr_i64(groups)}


@handles(aten.convolution.default)
def _convolution(t, node, x, weight, bias, *conv):
    v, w = t.value(x), t.value(weight)
    attrs = _conv_attrs(node, *conv, v.rank)
    shape = _shape(node)
    y = t.e.op("conv2d", [v, w], [(shape, v.dtype)], attrs)
    if bias is not None:
        y = t.binary("add", y, t.broadcast(t.value(bias), shape, [1]),
                     shape, v.dtype)
    return y


@handles(aten.convolution_backward.default)
def _convolution_backward(t, node, grad, x, weight, bias_sizes, *rest):
    *conv, mask = rest
    g, v, w = t.value(grad), t.value(x), t.value(weight)
    attrs = _conv_attrs(node, *conv, v.rank)
    results = [None, None, None]
    if mask[0]:
        results[0] = t.e.op("conv2d_backward_input", [g, w], [(v.shape, v.dtype)],
                            {**attrs, "input_size": attr_array(v.shape[2:])})
    if mask[1]:
        results[1] = t.e.op("conv2d_backward_filter", [v, g],
                            [(w.shape, w.dtype)],
                            {**attrs, "kernel_size": attr_array(w.shape[2:])})
    if mask[2]:
        results[2] = t.e.op("reduce", [g], [((g.shape[1],), g.dtype)],
                            {"kind": "#train.reduce_kind<sum>",
                             "dims": attr_array([0, 2, 3])})
    return tuple(results)


def _pool_attrs(node, v, kernel, stride, padding, dilation=(1,),
                ceil_mode=False):
    kernel = _pair(kernel, ())
    stride = _pair(stride, kernel)
    ph, pw = _pair(padding, (0, 0))
    if any(d != 1 for d in _pair(dilation, (1, 1))):
        raise UnsupportedOp(node, "dilated pooling")
    if ceil_mode:
        floor = tuple((v.shape[2 + i] + 2 * p - kernel[i]) // stride[i] + 1
                      for i, p in enumerate((ph, pw)))
        out = _shape(node, 0) if isinstance(_meta(node), (tuple, list)) \
            else _shape(node)
        if tuple(out[2:]) != floor:
            raise UnsupportedOp(node, "ceil_mode pooling with a partial window")
    return {"kernel_size": attr_array(kernel), "strides": attr_array(stride),
            "padding": attr_array([ph, ph, pw, pw])}


class _PoolIndices:
    """max_pool2d's indices: only its backward op reads them."""


@handles(aten.max_pool2d_with_indices.default)
def _max_pool(t, node, x, kernel, stride=(), padding=(0,), dilation=(1,),
              ceil_mode=False):
    v = t.value(x)
    y = t.e.op("max_pool2d", [v], [(_shape(node, 0), v.dtype)],
               _pool_attrs(node, v, kernel, stride, padding, dilation, ceil_mode))
    return y, _PoolIndices()


@handles(aten.max_pool2d_with_indices_backward.default)
def _max_pool_backward(t, node, grad, x, kernel, stride, padding, dilation,
                       ceil_mode, indices):
    v = t.value(x)
    return t.e.op("max_pool2d_backward", [t.value(grad), v], [(v.shape, v.dtype)],
                  _pool_attrs(node, v, kernel, stride, padding, dilation,
                              ceil_mode))


def _avg_attrs(node, v, kernel, stride, padding, ceil_mode, count_include_pad,
               divisor_override):
    if divisor_override is not None:
        raise UnsupportedOp(node, "avg_pool2d with divisor_override")
    attrs = _pool_attrs(node, v, kernel, stride, padding, (1,), ceil_mode)
    attrs["count_include_pad"] = "true" if count_include_pad else "false"
    return attrs


@handles(aten.avg_pool2d.default)
def _avg_pool(t, node, x, kernel, stride=(), padding=(0,), ceil_mode=False,
              count_include_pad=True, divisor_override=None):
    v = t.value(x)
    return t.e.op("avg_pool2d", [v], [(_shape(node), v.dtype)],
                  _avg_attrs(node, v, kernel, stride, padding, ceil_mode,
                             count_include_pad, divisor_override))


@handles(aten.avg_pool2d_backward.default)
def _avg_pool_backward(t, node, grad, x, kernel, stride, padding, ceil_mode,
                       count_include_pad, divisor_override):
    v = t.value(x)
    return t.e.op("avg_pool2d_backward", [t.value(grad), v], [(v.shape, v.dtype)],
                  _avg_attrs(node, v, kernel, stride, padding, ceil_mode,
                             count_include_pad, divisor_override))


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
