# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Core-ATen ops (PyTorch's joint forward-backward graph) to train ops.

Every `call_function` node of the graph goes through `Translator.node`;
an op without a handler raises `UnsupportedOp`, never passes through."""

import operator

import torch

from ._emit import Value, attr_array, attr_f64, attr_i64

aten = torch.ops.aten


class UnsupportedOp(Exception):
    """An ATen op (or an argument of one) the train dialect cannot express."""

    def __init__(self, node, reason=""):
        self.node = node
        self.reason = reason
        super().__init__(f"{node.target}{': ' + reason if reason else ''}")


def _meta(node):
    return node.meta["val"]


def _shape(node, index=None):
    value = _meta(node)
    if index is not None:
        value = value[index]
    return tuple(int(d) for d in value.shape)


def _dtype(node, index=None):
    value = _meta(node)
    return value[index].dtype if index is not None else value.dtype


def _dims(dims, rank):
    if dims is None:
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    return sorted(d % rank if rank else 0 for d in dims)


_HANDLERS = {}


def handles(*ops):
    def register(function):
        for op in ops:
            _HANDLERS[op] = function
        return function
    return register


class Translator:
    """Maps fx nodes to Values through an Emitter. `env` holds a Value, a
    tuple of Values (multi-result ops) or None (an absent gradient)."""

    def __init__(self, emitter, seed=None):
        self.e = emitter
        self.env = {}
        self.seed = seed            # the dropout seed argument (Value)
        self.dropouts = 0
        self.constants = {}         # node -> its value (a torch tensor)

    # -- operands -------------------------------------------------------------
    def value(self, arg, dtype=None, like=None):
        """`arg` as a Value: a node's value, or a Python number as a scalar
        constant (of `dtype`, or `like`'s dtype). Converts to `dtype`."""
        if isinstance(arg, torch.fx.Node):
            v = self.env[arg]
            if not isinstance(v, Value):
                if hasattr(v, "node") and hasattr(v, "shape"):
                    # An allocation read (filled piecewise, say): its values
                    # are undefined in PyTorch; here zeros.
                    v = self.e.constant(0, v.dtype, v.shape)
                else:
                    raise UnsupportedOp(arg, "a tuple where a tensor is "
                                        "expected")
        else:
            if dtype is None:
                dtype = like.dtype if like is not None else (
                    torch.float32 if isinstance(arg, float) else torch.int64)
            v = self.e.constant(arg, dtype)
        return self.convert(v, dtype) if dtype is not None else v

    def convert(self, v, dtype):
        return self.e.convert(v, dtype)

    def reshape(self, v, shape):
        shape = tuple(shape)
        if v.shape == shape:
            return v
        return self.e.op("reshape", [v], [(shape, v.dtype)])

    def broadcast(self, v, shape, dims=None):
        shape = tuple(shape)
        if v.shape == shape:
            return v
        if dims is None:            # NumPy's rule: trailing dims align
            dims = list(range(len(shape) - v.rank, len(shape)))
        return self.e.op("broadcast", [v], [(shape, v.dtype)],
                         {"dims": attr_array(dims)})

    def binary(self, name, a, b, shape, dtype):
        return self.e.op(name, [a, b], [(shape, dtype)])

    # -- nodes ----------------------------------------------------------------
    def node(self, node):
        self._fold(node)
        if node.target is operator.getitem:
            source, index = node.args
            self.env[node] = self.env[source][index]
            return
        handler = _HANDLERS.get(node.target)
        if handler is None:
            handler = _HANDLERS.get(getattr(node.target, "overloadpacket", None))
        try:
            if handler is None:
                raise UnsupportedOp(node, "no train-dialect mapping")
            self.env[node] = handler(self, node, *node.args, **node.kwargs)
        except UnsupportedOp:
            if node not in self.constants:
                raise
            # Computed from constants only (position ids, masks, rotary
            # tables): its value, computed here.
            value = self.constants[node]
            self.env[node] = tuple(self.e.dense(v) for v in value) \
                if isinstance(value, tuple) else self.e.dense(value)

    # -- constants ------------------------------------------------------------
    FOLD_LIMIT = 1 << 22        # elements: larger results are not kept

    def _fold(self, node):
        """Records `node`'s value when every tensor it reads is a constant
        (`constants`: unchanged buffers, lifted constants and what is
        computed from them alone), so that an op without a mapping on
        constants only becomes a constant. Random ops never fold."""
        if node.target is operator.getitem:
            source, index = node.args
            if source in self.constants:
                self.constants[node] = self.constants[source][index]
            return
        tags = getattr(node.target, "tags", ())
        if torch.Tag.nondeterministic_seeded in tags:
            return
        meta = node.meta.get("val")
        if any(isinstance(m, torch.Tensor) and m.numel() > self.FOLD_LIMIT
               for m in (meta if isinstance(meta, (tuple, list)) else (meta,))):
            return
        readable = True

        def concrete(a):
            nonlocal readable
            if isinstance(a, torch.fx.Node):
                if a not in self.constants:
                    readable = False
                    return None
                return self.constants[a]
            return a
        args = torch.fx.node.map_aggregate(node.args, concrete)
        kwargs = torch.fx.node.map_aggregate(node.kwargs, concrete)
        if not readable:
            return
        try:
            value = node.target(*args, **kwargs)
        except Exception:   # noqa: BLE001 (an op that needs more than values)
            return
        values = value if isinstance(value, (tuple, list)) else (value,)
        if all(isinstance(v, torch.Tensor) and v.numel() <= self.FOLD_LIMIT
               for v in values):
            self.constants[node] = tuple(values) \
                if isinstance(value, (tuple, list)) else value


# -- elementwise --------------------------------------------------------------

def _elementwise(name):
    def handler(t, node, a, b, alpha=1, **_):
        dtype, shape = _dtype(node), _shape(node)
        lhs, rhs = t.value(a, dtype), t.value(b, dtype)
        if alpha != 1:
            rhs = t.binary("mul", rhs, t.value(alpha, dtype), rhs.shape, dtype)
        return t.binary(name, lhs, rhs, shape, dtype)
    return handler


for _name, _ops in {
        "add": (aten.add.Tensor, aten.add.Scalar),
        "sub": (aten.sub.Tensor, aten.sub.Scalar),
        "mul": (aten.mul.Tensor, aten.mul.Scalar),
        "div": (aten.div.Tensor, aten.div.Scalar),
        "max": (aten.maximum.default,),
        "min": (aten.minimum.default,)}.items():
    handles(*_ops)(_elementwise(_name))


@handles(aten.rsub.Scalar, aten.rsub.Tensor)
def _rsub(t, node, a, b, alpha=1):
    if alpha != 1:
        raise UnsupportedOp(node, "rsub with alpha")
    return _elementwise("sub")(t, node, b, a)


@handles(aten.pow.Tensor_Scalar)
def _pow(t, node, x, exponent):
    dtype, shape = _dtype(node), _shape(node)
    x = t.value(x, dtype)
    if exponent == 2:
        return t.binary("mul", x, x, shape, dtype)
    if exponent == 1:
        return x
    if exponent == 0.5:
        return t.e.op("sqrt", [x], [(shape, dtype)])
    if exponent == -0.5:
        return t.e.op("rsqrt", [x], [(shape, dtype)])
    return t.binary("pow", x, t.value(float(exponent), dtype), shape, dtype)


def _unary(name):
    def handler(t, node, x):
        dtype = _dtype(node)
        return t.e.op(name, [t.value(x, dtype)], [(_shape(node), dtype)])
    return handler


for _name, _op in {"neg": aten.neg.default, "exp": aten.exp.default,
                   "log": aten.log.default, "sqrt": aten.sqrt.default,
                   "rsqrt": aten.rsqrt.default, "tanh": aten.tanh.default,
                   "sigmoid": aten.sigmoid.default, "relu": aten.relu.default,
                   "abs": aten.abs.default}.items():
    handles(_op)(_unary(_name))


@handles(aten.reciprocal.default)
def _reciprocal(t, node, x):
    dtype = _dtype(node)
    return t.binary("div", t.value(1.0, dtype), t.value(x, dtype),
                    _shape(node), dtype)


@handles(aten.clamp.default, aten.hardtanh.default, aten.clamp_min.default,
         aten.clamp_max.default)
def _clamp(t, node, x, low=None, high=None):
    if node.target is aten.clamp_max.default:
        low, high = None, low
    dtype, shape = _dtype(node), _shape(node)
    v = t.value(x, dtype)
    if node.target is aten.hardtanh.default:
        low = -1.0 if low is None else low
        high = 1.0 if high is None else high
    if low is not None:
        v = t.binary("max", v, t.value(low, dtype), shape, dtype)
    if high is not None:
        v = t.binary("min", v, t.value(high, dtype), shape, dtype)
    return v


_COMPARE = {"eq": (aten.eq.Scalar, aten.eq.Tensor),
            "ne": (aten.ne.Scalar, aten.ne.Tensor),
            "lt": (aten.lt.Scalar, aten.lt.Tensor),
            "le": (aten.le.Scalar, aten.le.Tensor),
            "gt": (aten.gt.Scalar, aten.gt.Tensor),
            "ge": (aten.ge.Scalar, aten.ge.Tensor)}


def _compare(direction):
    def handler(t, node, a, b):
        types = [t.env[x].dtype for x in (a, b) if isinstance(x, torch.fx.Node)]
        common = types[0] if len(set(types)) == 1 else torch.promote_types(*types)
        if not isinstance(b, torch.fx.Node) and isinstance(b, float) \
                and not common.is_floating_point:
            common = torch.float32
        return t.e.op("compare", [t.value(a, common), t.value(b, common)],
                      [(_shape(node), torch.bool)],
                      {"direction": f"#train.compare_direction<{direction}>"})
    return handler


for _direction, _ops in _COMPARE.items():
    handles(*_ops)(_compare(_direction))


@handles(aten.where.self)
def _where(t, node, condition, a, b):
    dtype, shape = _dtype(node), _shape(node)
    return t.e.op("select", [t.value(condition, torch.bool), t.value(a, dtype),
                             t.value(b, dtype)], [(shape, dtype)])


def _bool(t, x):
    return t.value(x, torch.bool)


@handles(aten.logical_not.default, aten.bitwise_not.default)
def _not(t, node, x):
    if _dtype(node) != torch.bool:
        raise UnsupportedOp(node, "bitwise not of integers")
    return t.e.op("select", [_bool(t, x), t.e.constant(False, torch.bool),
                             t.e.constant(True, torch.bool)],
                  [(_shape(node), torch.bool)])


@handles(aten.logical_and.default, aten.bitwise_and.Tensor)
def _and(t, node, a, b):
    if _dtype(node) != torch.bool:
        raise UnsupportedOp(node, "bitwise and of integers")
    return t.e.op("select", [_bool(t, a), _bool(t, b),
                             t.e.constant(False, torch.bool)],
                  [(_shape(node), torch.bool)])


@handles(aten.logical_or.default, aten.bitwise_or.Tensor)
def _or(t, node, a, b):
    if _dtype(node) != torch.bool:
        raise UnsupportedOp(node, "bitwise or of integers")
    return t.e.op("select", [_bool(t, a), t.e.constant(True, torch.bool),
                             _bool(t, b)], [(_shape(node), torch.bool)])


# -- reductions -----------------------------------------------------------------

def _reduce(t, node, x, kind, dims, keepdim):
    v = t.value(x)
    dims = _dims(dims, v.rank) if dims not in (None, []) else list(range(v.rank))
    attrs = {"kind": f"#train.reduce_kind<{kind}>", "dims": attr_array(dims)}
    if keepdim:
        attrs["keepdims"] = None
    dtype = _dtype(node)
    return t.e.op("reduce", [t.convert(v, dtype)], [(_shape(node), dtype)], attrs)


@handles(aten.sum.dim_IntList)
def _sum(t, node, x, dims=None, keepdim=False, dtype=None):
    return _reduce(t, node, x, "sum", dims, keepdim)


@handles(aten.sum.default)
def _sum_all(t, node, x, dtype=None):
    return _reduce(t, node, x, "sum", None, False)


@handles(aten.mean.dim)
def _mean(t, node, x, dims=None, keepdim=False, dtype=None):
    return _reduce(t, node, x, "mean", dims, keepdim)


@handles(aten.mean.default)
def _mean_all(t, node, x, dtype=None):
    return _reduce(t, node, x, "mean", None, False)


@handles(aten.amax.default)
def _amax(t, node, x, dims=(), keepdim=False):
    return _reduce(t, node, x, "max", list(dims), keepdim)


@handles(aten.amin.default)
def _amin(t, node, x, dims=(), keepdim=False):
    return _reduce(t, node, x, "min", list(dims), keepdim)


@handles(aten.any.dim, aten.any.dims, aten.any.default)
def _any(t, node, x, dims=None, keepdim=False):
    v = t.convert(t.value(x, torch.bool), torch.float32)
    dims = _dims(dims, v.rank) if dims is not None else list(range(v.rank))
    attrs = {"kind": "#train.reduce_kind<max>", "dims": attr_array(dims)}
    if keepdim:
        attrs["keepdims"] = None
    m = t.e.op("reduce", [v], [(_shape(node), torch.float32)], attrs)
    return t.convert(m, torch.bool)


# -- data movement --------------------------------------------------------------

@handles(aten.view.default, aten._unsafe_view.default, aten.reshape.default,
         aten.squeeze.dims, aten.squeeze.dim, aten.squeeze.default,
         aten.unsqueeze.default, aten.flatten.using_ints, aten.view_as.default)
def _reshape(t, node, x, *_, **__):
    return t.reshape(t.value(x), _shape(node))


@handles(aten.clone.default, aten.alias.default, aten.detach.default,
         aten.lift_fresh_copy.default, aten.contiguous.default)
def _identity(t, node, x, *_, **__):
    return t.value(x)


@handles(aten._to_copy.default)
def _to_copy(t, node, x, dtype=None, **_):
    return t.convert(t.value(x), _dtype(node))


def _transposed(t, v, permutation):
    """`v` with its dims permuted; a transpose of a transpose folds, and
    the result remembers its source for matmul's transpose flags."""
    if isinstance(v.info, tuple) and v.info[0] == "transpose":
        _, v, first = v.info
        permutation = [first[p] for p in permutation]
    if permutation == list(range(v.rank)):
        return v
    shape = tuple(v.shape[p] for p in permutation)
    result = t.e.op("transpose", [v], [(shape, v.dtype)],
                    {"permutation": attr_array(permutation)})
    result.info = ("transpose", v, permutation)
    return result


@handles(aten.permute.default)
def _permute(t, node, x, permutation):
    v = t.value(x)
    return _transposed(t, v, [p % v.rank for p in permutation])


@handles(aten.t.default, aten.transpose.int)
def _transpose(t, node, x, a=0, b=1):
    v = t.value(x)
    permutation = list(range(v.rank))
    if v.rank >= 2:
        a, b = a % v.rank, b % v.rank
        permutation[a], permutation[b] = permutation[b], permutation[a]
    return _transposed(t, v, permutation)


@handles(aten.expand.default)
def _expand(t, node, x, sizes, implicit=False):
    return t.broadcast(t.value(x), _shape(node))


def _slice(t, v, dim, start, end, step):
    if start == 0 and end == v.shape[dim] and step == 1:
        return v
    starts, limits = [0] * v.rank, list(v.shape)
    starts[dim], limits[dim] = start, end
    shape = list(v.shape)
    shape[dim] = max(0, (end - start + step - 1) // step)
    attrs = {"start": attr_array(starts), "limit": attr_array(limits)}
    if step != 1:
        strides = [1] * v.rank
        strides[dim] = step
        attrs["strides"] = attr_array(strides)
    return t.e.op("slice", [v], [(shape, v.dtype)], attrs)


@handles(aten.slice.Tensor)
def _slice_tensor(t, node, x, dim=0, start=None, end=None, step=1):
    v = t.value(x)
    dim %= v.rank
    size = v.shape[dim]
    start, end, _ = slice(start, end, step).indices(size)
    return _slice(t, v, dim, start, max(start, end), step)


@handles(aten.select.int)
def _select(t, node, x, dim, index):
    v = t.value(x)
    dim %= v.rank
    index %= v.shape[dim]
    return t.reshape(_slice(t, v, dim, index, index + 1, 1), _shape(node))


@handles(aten.cat.default)
def _cat(t, node, tensors, dim=0):
    values = [t.value(x, _dtype(node)) for x in tensors]
    values = [v for v in values if v.rank and 0 not in v.shape]
    dim %= len(_shape(node))
    if len(values) == 1:
        return values[0]
    return t.e.op("concat", values, [(_shape(node), _dtype(node))],
                  {"dim": attr_i64(dim)})


@handles(aten.constant_pad_nd.default)
def _pad(t, node, x, pad, value=0):
    v = t.value(x)
    low, high = [0] * v.rank, [0] * v.rank
    for i in range(len(pad) // 2):
        low[v.rank - 1 - i], high[v.rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    for dim in range(v.rank):       # negative padding crops: a slice
        if low[dim] < 0 or high[dim] < 0:
            start, end = max(0, -low[dim]), v.shape[dim] - max(0, -high[dim])
            v = _slice(t, v, dim, start, end, 1)
            low[dim], high[dim] = max(0, low[dim]), max(0, high[dim])
    if not any(low + high):
        return v
    return t.e.op("pad", [v], [(_shape(node), v.dtype)],
                  {"low": attr_array(low), "high": attr_array(high),
                   "value": attr_f64(value)})


# -- constants ------------------------------------------------------------------

@handles(aten.full.default, aten.full_like.default, aten.zeros_like.default,
         aten.ones_like.default, aten.scalar_tensor.default,
         aten.zeros.default, aten.ones.default, aten.new_zeros.default,
         aten.new_ones.default, aten.new_full.default)
def _full(t, node, *args, **_):
    value = {aten.full.default: lambda: args[1],
             aten.full_like.default: lambda: args[1],
             aten.new_full.default: lambda: args[2],
             aten.scalar_tensor.default: lambda: args[0],
             aten.ones_like.default: lambda: 1, aten.ones.default: lambda: 1,
             aten.new_ones.default: lambda: 1}.get(node.target, lambda: 0)()
    return t.e.constant(value, _dtype(node), _shape(node))


@handles(aten.arange.start_step, aten.arange.start, aten.arange.default)
def _arange(t, node, *args, **_):
    numbers = [a for a in args if isinstance(a, (int, float))]
    start, step = (0, 1) if len(numbers) == 1 else (
        numbers[0], numbers[2] if len(numbers) > 2 else 1)
    dtype, shape = _dtype(node), _shape(node)
    v = t.e.op("iota", [], [(shape, dtype)], {"dim": attr_i64(0)})
    if step != 1:
        v = t.binary("mul", v, t.value(step, dtype), shape, dtype)
    if start != 0:
        v = t.binary("add", v, t.value(start, dtype), shape, dtype)
    return v


# -- matrix products ------------------------------------------------------------

def _operand(t, node, arg):
    """A matmul operand, folding a transpose of its two inner dims into
    the product's transpose flag."""
    v = t.value(arg)
    if isinstance(v.info, tuple) and v.info[0] == "transpose":
        _, source, permutation = v.info
        rank = source.rank
        if permutation == list(range(rank - 2)) + [rank - 1, rank - 2]:
            return source, True
    return v, False


def _matmul(t, node, a, b):
    lhs, transpose_lhs = _operand(t, node, a)
    rhs, transpose_rhs = _operand(t, node, b)
    attrs = {}
    if transpose_lhs:
        attrs["transpose_lhs"] = None
    if transpose_rhs:
        attrs["transpose_rhs"] = None
    return t.e.op("matmul", [lhs, rhs], [(_shape(node), _dtype(node))], attrs)


handles(aten.mm.default, aten.bmm.default)(_matmul)


@handles(aten.addmm.default)
def _addmm(t, node, bias, a, b, beta=1, alpha=1):
    dtype, shape = _dtype(node), _shape(node)
    product = _matmul(t, node, a, b)
    if alpha != 1:
        product = t.binary("mul", product, t.value(alpha, dtype), shape, dtype)
    bias = t.value(bias, dtype)
    if beta != 1:
        bias = t.binary("mul", bias, t.value(beta, dtype), bias.shape, dtype)
    return t.binary("add", product, bias, shape, dtype)


# -- softmax and the loss -------------------------------------------------------

def _softmax_like(name):
    def handler(t, node, x, dim, *_):
        v = t.value(x)
        return t.e.op(name, [v], [(_shape(node), _dtype(node))],
                      {"dim": attr_i64(dim % v.rank)})
    return handler


handles(aten._softmax.default)(_softmax_like("softmax"))
handles(aten._log_softmax.default)(_softmax_like("log_softmax"))


@handles(aten._softmax_backward_data.default)
def _softmax_backward(t, node, grad, output, dim, dtype):
    g, y = t.value(grad), t.value(output)
    return t.e.op("softmax_backward", [g, y], [(_shape(node), _dtype(node))],
                  {"dim": attr_i64(dim % y.rank)})


class _CrossEntropyGrad:
    """A pending nll_loss_backward that the following log-softmax
    backward turns into train.cross_entropy_backward."""

    def __init__(self, grad, logits, labels):
        self.grad, self.logits, self.labels = grad, logits, labels


@handles(aten._log_softmax_backward_data.default)
def _log_softmax_backward(t, node, grad, output, dim, dtype):
    pending = t.env[grad]
    if isinstance(pending, _CrossEntropyGrad):
        return t.e.op("cross_entropy_backward",
                      [pending.grad, pending.logits, pending.labels],
                      [(_shape(node), _dtype(node))])
    g, y = t.value(grad), t.value(output)
    return t.e.op("log_softmax_backward", [g, y], [(_shape(node), _dtype(node))],
                  {"dim": attr_i64(dim % y.rank)})


def _logits_of(t, log_probs):
    """The logits when `log_probs` is log_softmax over the last dim."""
    if isinstance(log_probs, torch.fx.Node) and \
            log_probs.target is aten._log_softmax.default:
        logits = t.value(log_probs.args[0])
        if log_probs.args[1] % logits.rank == logits.rank - 1 and logits.rank >= 2:
            return logits
    return None


def _check_nll(node, log_probs_value, ignore_index=-100):
    if log_probs_value.rank != 2:
        raise UnsupportedOp(node, "only [batch, classes] inputs")
    if 0 <= ignore_index < log_probs_value.shape[1]:
        raise UnsupportedOp(node, f"ignore_index={ignore_index}, a class: "
                            "every label counts (labels must be classes)")


def _one_hot(t, labels, shape):
    classes = t.e.op("iota", [], [(shape, labels.dtype)], {"dim": attr_i64(1)})
    return t.e.op("compare", [classes, t.reshape(labels, (shape[0], 1))],
                  [(shape, torch.bool)],
                  {"direction": "#train.compare_direction<eq>"})


def _label_weights(t, weight, y, dtype):
    """weight[label] of every sample ([batch]), or None without weights."""
    if weight is None:
        return None
    return t.e.op("gather", [t.value(weight, dtype), y], [(y.shape, dtype)])


def _sum_all_of(t, v):
    return t.e.op("reduce", [v], [((), v.dtype)],
                  {"kind": "#train.reduce_kind<sum>",
                   "dims": attr_array(list(range(v.rank)))})


@handles(aten.nll_loss_forward.default)
def _nll_loss(t, node, log_probs, labels, weight, reduction, ignore_index):
    """-log_probs[label], per sample (reduction 0), summed (2) or averaged
    (1: over the batch, or over the labels' class weights)."""
    logp = t.value(log_probs)
    _check_nll(node, logp, ignore_index)
    y = t.value(labels)
    dtype, batch = logp.dtype, logp.shape[0]
    weights = _label_weights(t, weight, y, dtype)
    total = t.e.constant(float(batch), _dtype(node, 1)) if weights is None \
        else t.convert(_sum_all_of(t, weights), _dtype(node, 1))
    logits = _logits_of(t, log_probs)
    if reduction == 1 and logits is not None and weights is None:
        return t.e.op("cross_entropy", [logits, y], [((), dtype)]), total
    picked = t.e.op("select", [_one_hot(t, y, logp.shape), logp,
                               t.e.constant(0.0, dtype)], [(logp.shape, dtype)])
    per = t.e.op("neg", [t.e.op("reduce", [picked], [((batch,), dtype)],
                                {"kind": "#train.reduce_kind<sum>",
                                 "dims": attr_array([1])})],
                 [((batch,), dtype)])
    if weights is not None:
        per = t.binary("mul", per, weights, (batch,), dtype)
    if reduction == 0:
        return per, total
    loss = _sum_all_of(t, per)
    if reduction == 1:
        loss = t.binary("div", loss, t.convert(total, dtype), (), dtype)
    return loss, total


@handles(aten.nll_loss_backward.default)
def _nll_loss_backward(t, node, grad, log_probs, labels, weight, reduction,
                       ignore_index, total_weight):
    logp = t.value(log_probs)
    _check_nll(node, logp, ignore_index)
    g, y = t.value(grad), t.value(labels)
    logits = _logits_of(t, log_probs)
    users = list(node.users)
    if reduction == 1 and logits is not None and len(users) == 1 and \
            weight is None and \
            users[0].target is aten._log_softmax_backward_data.default:
        return _CrossEntropyGrad(g, logits, y)
    dtype, shape = logp.dtype, logp.shape
    scale = t.e.op("neg", [g], [(g.shape, dtype)])
    if reduction == 1:
        scale = t.binary("div", scale, t.value(total_weight, dtype),
                         g.shape, dtype)
    weights = _label_weights(t, weight, y, dtype)
    if weights is not None:
        scale = t.binary("mul", t.broadcast(scale, weights.shape), weights,
                         weights.shape, dtype)
    if scale.rank == 1:
        scale = t.reshape(scale, (shape[0], 1))
    return t.e.op("select", [_one_hot(t, y, shape), t.broadcast(scale, shape),
                             t.e.constant(0.0, dtype)], [(shape, dtype)])


from . import _aten_nn, _aten_act, _aten_pool, _aten_shape  # noqa: E402,F401  (register handlers)
from . import _aten_pool3d  # noqa: E402,F401
from ._aten_shape import RANDOM  # noqa: E402,F401


KEPT_WHOLE = [
    # Ops the decompositions would split that the train dialect has whole.
    aten.nll_loss_forward, aten.nll_loss_backward,
    aten._log_softmax_backward_data, aten._softmax_backward_data,
    aten.native_layer_norm, aten.native_layer_norm_backward,
    aten.native_batch_norm_backward, aten._native_batch_norm_legit_functional,
    aten.embedding_dense_backward, aten.native_dropout,
    aten.native_dropout_backward, aten.avg_pool2d_backward,
    aten.max_pool2d_with_indices_backward, aten.gelu,
    aten._adaptive_avg_pool2d, aten._adaptive_avg_pool2d_backward,
    aten.adaptive_max_pool2d, aten.adaptive_max_pool2d_backward,
    aten.native_group_norm, aten.native_group_norm_backward,
    aten._adaptive_avg_pool3d, aten._adaptive_avg_pool3d_backward,
    aten.avg_pool3d_backward, aten.max_pool3d_with_indices_backward,
]


def decompositions():
    """PyTorch's core-ATen decomposition table less the ops the train
    dialect has whole."""
    from torch._decomp import core_aten_decompositions
    table = dict(core_aten_decompositions())
    kept = set(KEPT_WHOLE)
    for op in list(table):
        if getattr(op, "overloadpacket", None) in kept:
            del table[op]
    return table
