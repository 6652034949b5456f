# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Core-ATen ops about shapes and placement: allocations that are only
shape templates, copies into them, random masks, one tensor split into
several and slices scattered back (the handlers register in _aten's
table)."""

import torch

from ._aten import (UnsupportedOp, _dtype, _meta, _shape, _slice, _transposed,
                    aten, attr_array, attr_f64, attr_i64, handles)


# -- shape templates ------------------------------------------------------------

class ShapeTemplate:
    """An allocation whose values are undefined (aten.empty and kin): ops
    that only take its shape (full_like, bernoulli.p, copy into it) take
    only that; an op that reads it (a slice scattered into it) reads zeros
    (`Translator.value`)."""

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


# -- no-ops and restrides ---------------------------------------------------------

@handles(aten._assert_tensor_metadata.default)
def _assert_metadata(t, node, *_, **__):
    return None     # a trace-time check of dtype and shape, nothing to run


def _contiguous_strides(shape):
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= d
    return list(reversed(strides))


def _same_layout(shape, strides):
    """Whether `strides` are the contiguous ones of `shape` (dims of size 1
    may have any stride)."""
    return all(s == c or d == 1
               for d, s, c in zip(shape, strides, _contiguous_strides(shape)))


@handles(aten.as_strided.default, aten.as_strided_copy.default)
def _as_strided(t, node, x, size, stride, storage_offset=0):
    """A view of x's contiguous storage that is a reshape of it (what
    functionalization makes of a memory-format change); any other view
    (overlapping, skipping or offset) is refused."""
    v = t.value(x)
    numel = 1
    for d in v.shape:
        numel *= d
    count = 1
    for d in size:
        count *= d
    if (storage_offset or 0) == 0 and count == numel and \
            _same_layout(tuple(size), list(stride)):
        return t.reshape(v, _shape(node))
    raise UnsupportedOp(node, f"as_strided of a {list(v.shape)} tensor to size "
                        f"{list(size)}, strides {list(stride)}, offset "
                        f"{storage_offset or 0} (only a reshape of contiguous "
                        "storage maps)")


@handles(aten.as_strided_scatter.default)
def _as_strided_scatter(t, node, base, source, size, stride, storage_offset=0):
    b, src = _meta(base), t.value(source, _dtype(node))
    if (storage_offset or 0) == 0 and src.shape and \
            tuple(size) == src.shape and b.numel() == _count(src.shape) and \
            _same_layout(tuple(size), list(stride)):
        return t.reshape(src, _shape(node))     # it covers all of base
    raise UnsupportedOp(node, f"as_strided_scatter into {list(b.shape)} of "
                        f"size {list(size)}, strides {list(stride)} (only one "
                        "covering the whole contiguous base maps)")


def _count(shape):
    n = 1
    for d in shape:
        n *= d
    return n


# -- indexing -----------------------------------------------------------------------

def _moved(t, v, dim):
    """v with `dim` moved to the front (and the permutation back)."""
    order = [dim] + [d for d in range(v.rank) if d != dim]
    back = [order.index(d) for d in range(v.rank)]
    return _transposed(t, v, order), back


def _gather_along(t, node, v, dim, index):
    """v[..., index, ...] along `dim` (index: a Value of any rank, whose
    dims replace `dim`)."""
    if dim == 0:
        return t.e.op("gather", [v, index],
                      [(index.shape + v.shape[1:], v.dtype)])
    moved, _ = _moved(t, v, dim)
    g = t.e.op("gather", [moved, index],
               [(index.shape + moved.shape[1:], v.dtype)])
    k = index.rank
    # [index..., others...] -> [others before dim, index..., others after]
    order = list(range(k, k + dim)) + list(range(k)) + \
        list(range(k + dim, g.rank))
    return _transposed(t, g, order)


@handles(aten.index.Tensor)
def _index(t, node, x, indices):
    """x[..., idx, ...] with one index tensor (an embedding-like lookup),
    or x[i0, i1, ..., ik] with index tensors on the leading dims
    (broadcast together: one lookup of the flattened leading dims)."""
    present = [i for i, idx in enumerate(indices) if idx is not None]
    values = [t.value(indices[i]) for i in present]
    if any(v.dtype == torch.bool for v in values):
        raise UnsupportedOp(node, "indexing with a boolean mask (its result's "
                            "shape depends on the values)")
    v = t.value(x)
    if len(present) == 1:
        return _gather_along(t, node, v, present[0], values[0])
    if present != list(range(len(present))):
        raise UnsupportedOp(node, "index tensors on dims "
                            f"{present} (several map when they index the "
                            "leading dims)")
    shape = tuple(torch.broadcast_shapes(*(i.shape for i in values)))
    k = len(present)
    linear, stride = None, 1
    for dim in reversed(range(k)):
        idx = t.broadcast(t.convert(values[dim], torch.int64), shape)
        size = v.shape[dim]
        idx = t.e.op("select", [  # negative indices count from the end
            t.e.op("compare", [idx, t.e.constant(0, torch.int64)],
                   [(shape, torch.bool)],
                   {"direction": "#train.compare_direction<lt>"}),
            t.binary("add", idx, t.e.constant(size, torch.int64), shape,
                     torch.int64), idx], [(shape, torch.int64)])
        term = idx if stride == 1 else t.binary(
            "mul", idx, t.e.constant(stride, torch.int64), shape, torch.int64)
        linear = term if linear is None else t.binary(
            "add", linear, term, shape, torch.int64)
        stride *= size
    table = t.reshape(v, (stride,) + v.shape[k:])
    return t.e.op("gather", [table, linear],
                  [(shape + v.shape[k:], v.dtype)])


@handles(aten.index_select.default)
def _index_select(t, node, x, dim, index):
    v = t.value(x)
    dim %= v.rank
    if index in t.constants:            # a permutation known here: slices
        runs, values = [], [int(i) % v.shape[dim]
                            for i in t.constants[index].reshape(-1)]
        for i in values:
            if runs and runs[-1][1] == i:
                runs[-1][1] += 1
            else:
                runs.append([i, i + 1])
        pieces = [_slice(t, v, dim, a, b, 1) for a, b in runs]
        if len(pieces) == 1:
            return pieces[0]
        return t.e.op("concat", pieces, [(_shape(node), v.dtype)],
                      {"dim": attr_i64(dim)})
    return _gather_along(t, node, v, dim, t.value(index))


@handles(aten.index_put.default, aten._unsafe_index_put.default)
def _index_put(t, node, base, indices, values, accumulate=False):
    """base[idx] += values along dim 0 (the backward of a lookup)."""
    present = [i for i, idx in enumerate(indices) if idx is not None]
    if not accumulate or present != [0]:
        raise UnsupportedOp(node, "index_put without accumulate or off the "
                            "first dim (only base[idx] += values maps)")
    b = t.value(base, _dtype(node))
    return t.e.op("scatter_add", [b, t.value(indices[0]),
                                  t.value(values, _dtype(node))],
                  [(b.shape, b.dtype)])


@handles(aten.index_add.default)
def _index_add(t, node, base, dim, index, source, alpha=1):
    b = t.value(base, _dtype(node))
    dim %= b.rank
    if dim != 0 or alpha != 1:
        raise UnsupportedOp(node, "index_add off the first dim or with alpha")
    return t.e.op("scatter_add", [b, t.value(index),
                                  t.value(source, _dtype(node))],
                  [(b.shape, b.dtype)])
