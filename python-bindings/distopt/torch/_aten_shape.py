"""Core-ATen ops about shapes and placement: allocations that are only
shape templates, copies into them, random masks, one tensor split into
several and slices scattered back (the handlers register in _aten's
table)."""

import torch

from ._aten import (UnsupportedOp, _dtype, _meta, _shape, _slice, aten,
                    attr_array, attr_f64, attr_i64, handles)


# -- shape templates ------------------------------------------------------------

class ShapeTemplate:
    """An allocation whose values are undefined (aten.empty and kin): ops
    that only take its shape (full_like, bernoulli.p, copy into it) accept
    it; reading its values is refused (`Translator.value`)."""

    def __init__(self, node):
        self.node = node
        self.shape, self.dtype = _shape(node), _dtype(node)


@handles(aten.empty.memory_format, aten.empty_permuted.default,
         aten.empty_like.default, aten.new_empty.default,
         aten.new_empty_strided.default, aten.empty_strided.default)
def _empty(t, node, *_, **__):
    return ShapeTemplate(node)


@handles(aten.copy.default)
def _copy(t, node, destination, source, non_blocking=False):
    """copy_ (functionalized): the source, in the destination's dtype and
    broadcast to its shape."""
    v = t.value(source, _dtype(node))
    return t.broadcast(v, _shape(node))


@handles(aten.fill.Scalar)
def _fill(t, node, x, value):
    return t.e.constant(value, _dtype(node), _shape(node))


RANDOM = (aten.bernoulli.p,)


@handles(aten.bernoulli.p)
def _bernoulli(t, node, x, p=0.5, generator=None):
    """1 with probability p, else 0, in x's shape: train.dropout of ones
    at rate 1 - p (DistOpt's own random stream: the mask is not PyTorch's)."""
    dtype, shape = _dtype(node), _shape(node)
    if p >= 1 or p <= 0:
        return t.e.constant(1 if p >= 1 else 0, dtype, shape)
    if t.seed is None:
        raise UnsupportedOp(node, "a random mask needs the step's seed argument")
    t.dropouts += 1
    seed = t.binary("add", t.seed, t.e.constant(t.dropouts, torch.int64), (),
                    torch.int64)
    kept = t.e.op("dropout", [t.e.constant(1.0, dtype, shape), seed],
                  [(shape, dtype)], {"rate": attr_f64(1 - p)})
    return t.convert(t.convert(kept, torch.bool), dtype)


# -- one tensor into several ----------------------------------------------------

def _pieces(t, node, x, sizes, dim):
    v = t.value(x)
    dim %= v.rank
    results, start = [], 0
    for size in sizes:
        results.append(_slice(t, v, dim, start, start + size, 1))
        start += size
    return tuple(results)


@handles(aten.split_with_sizes.default, aten.split_with_sizes_copy.default)
def _split_with_sizes(t, node, x, sizes, dim=0):
    return _pieces(t, node, x, sizes, dim)


@handles(aten.split.Tensor, aten.split_copy.Tensor)
def _split(t, node, x, size, dim=0):
    return _pieces(t, node, x, [tuple(m.shape)[dim] for m in _meta(node)], dim)


@handles(aten.unbind.int, aten.unbind_copy.int)
def _unbind(t, node, x, dim=0):
    pieces = _pieces(t, node, x, [1] * len(_meta(node)), dim)
    return tuple(t.reshape(p, tuple(m.shape))
                 for p, m in zip(pieces, _meta(node)))


# -- slices scattered back (the backward of slicing) ------------------------------

def _spread(t, v, dim, step):
    """`v` with step - 1 zeros after each element along `dim`."""
    if step == 1:
        return v
    n = v.shape[dim]
    inner = t.reshape(v, v.shape[:dim + 1] + (1,) + v.shape[dim + 1:])
    low, high = [0] * inner.rank, [0] * inner.rank
    high[dim + 1] = step - 1
    shape = list(inner.shape)
    shape[dim + 1] = step
    spread = t.e.op("pad", [inner], [(tuple(shape), v.dtype)],
                    {"low": attr_array(low), "high": attr_array(high),
                     "value": attr_f64(0.0)})
    return t.reshape(spread, v.shape[:dim] + (n * step,) + v.shape[dim + 1:])


def _zeros(base):
    return isinstance(base, torch.fx.Node) and (
        base.target in _ZEROS or (base.target is aten.full.default and
                                  base.args[1] == 0))


def _scatter_slice(t, node, base, src, dim, start, end, step):
    """`base` (a node) with its elements start, start + step, ... < end
    along `dim` replaced by `src`'s (a Value): the source spread and
    padded into place, then a select by position (none where the base is
    all zeros)."""
    dtype = _dtype(node)
    v, src = t.value(base, dtype), t.convert(src, dtype)
    dim %= v.rank
    size = v.shape[dim]
    start, end, _ = slice(start, end, step).indices(size)
    n = src.shape[dim]
    if n == 0:
        return v
    spread = _spread(t, src, dim, step)
    length = (n - 1) * step + 1
    spread = _slice(t, spread, dim, 0, length, 1)
    low, high = [0] * v.rank, [0] * v.rank
    low[dim], high[dim] = start, size - start - length
    placed = t.e.op("pad", [spread], [(v.shape, dtype)],
                    {"low": attr_array(low), "high": attr_array(high),
                     "value": attr_f64(0.0)})
    if _zeros(base):
        return placed
    index = t.e.op("iota", [], [(v.shape, torch.int64)],
                   {"dim": attr_i64(dim)})

    def compare(direction, value):
        return t.e.op("compare", [index, t.e.constant(value, torch.int64)],
                      [(v.shape, torch.bool)],
                      {"direction": f"#train.compare_direction<{direction}>"})

    inside = t.e.op("select", [compare("ge", start), compare("lt", start + length),
                               t.e.constant(False, torch.bool)],
                    [(v.shape, torch.bool)])
    if step != 1:
        offset = t.binary("sub", index, t.e.constant(start, torch.int64),
                          v.shape, torch.int64)
        # (i - start) % step == 0, without a remainder op: i - start equals
        # step * ((i - start) / step) in integer division.
        quotient = t.binary("div", offset, t.e.constant(step, torch.int64),
                            v.shape, torch.int64)
        back = t.binary("mul", quotient, t.e.constant(step, torch.int64),
                        v.shape, torch.int64)
        on = t.e.op("compare", [back, offset], [(v.shape, torch.bool)],
                    {"direction": "#train.compare_direction<eq>"})
        inside = t.e.op("select", [inside, on, t.e.constant(False, torch.bool)],
                        [(v.shape, torch.bool)])
    return t.e.op("select", [inside, placed, v], [(v.shape, dtype)])


_ZEROS = (aten.zeros.default, aten.new_zeros.default, aten.zeros_like.default)


@handles(aten.slice_scatter.default)
def _slice_scatter(t, node, base, source, dim=0, start=None, end=None, step=1):
    return _scatter_slice(t, node, base, t.value(source), dim, start, end,
                          step)


@handles(aten.select_scatter.default)
def _select_scatter(t, node, base, source, dim, index):
    rank = len(_shape(node))
    dim %= rank
    index %= _shape(node)[dim]
    shape = _shape(node)[:dim] + (1,) + _shape(node)[dim + 1:]
    return _scatter_slice(t, node, base, t.reshape(t.value(source), shape),
                          dim, index, index + 1, 1)
