# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""JAX primitives (a traced step's jaxpr) to train ops.

Every equation goes through `Translator.eqn`; a primitive without a handler
raises `UnsupportedPrimitive`, never passes through. Call-like primitives
(jit, custom_jvp_call, custom_vjp_call, checkpoint, closed_call) are
inlined: their inner jaxprs are translated in place."""

import numpy as np
from jax import core as _core

from .._emit import Value, attr_array, attr_f64, is_floating

try:                                    # jax >= 0.4.36
    from jax.extend.core import Literal
except ImportError:                     # pragma: no cover
    Literal = _core.Literal


class UnsupportedPrimitive(Exception):
    """A primitive (or a parameter of one) the train dialect cannot express."""

    def __init__(self, eqn, reason=""):
        self.eqn, self.reason = eqn, reason
        self.calls = []             # the calls it is inside, outermost first
        super().__init__(f"{eqn.primitive.name}{': ' + reason if reason else ''}")


_HANDLERS = {}
_CALLS = ("jit", "pjit", "closed_call", "core_call", "custom_jvp_call",
          "custom_vjp_call", "custom_vjp_call_jaxpr", "checkpoint", "remat",
          "custom_lin")


def handles(*names):
    def register(function):
        for name in names:
            _HANDLERS[name] = function
        return function
    return register


def _aval(var):
    return tuple(int(d) for d in var.aval.shape), np.dtype(var.aval.dtype)


_FOLD_LIMIT = 1024      # elements: larger constants are computed in the step


def _prod(shape):
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


class Translator:
    """Maps jaxpr variables to Values through an Emitter."""

    def __init__(self, emitter):
        self.e = emitter
        self.env = {}
        self.name_stack = []            # the enclosing calls' name stacks
        self.calls = []                 # the enclosing call equations
        self.known = {}                 # var -> its value, when a constant

    # -- operands ---------------------------------------------------------------
    def read(self, atom):
        if isinstance(atom, Literal):
            shape, dtype = _aval(atom)
            value = np.asarray(atom.val, dtype)
            if value.ndim == 0:
                return self.e.constant(value.item(), dtype)
            return self.e.dense(value)
        return self.env[atom]

    def constant(self, value, like):
        return self.e.constant(value, like.dtype)

    def convert(self, v, dtype):
        return self.e.convert(v, np.dtype(dtype))

    def reshape(self, v, shape):
        shape = tuple(shape)
        if v.shape == shape:
            return v
        return self.e.op("reshape", [v], [(shape, v.dtype)])

    def transpose(self, v, perm):
        perm = list(perm)
        if perm == list(range(v.rank)):
            return v
        return self.e.op("transpose", [v], [(tuple(v.shape[p] for p in perm),
                                             v.dtype)],
                         {"permutation": attr_array(perm)})

    def broadcast(self, v, shape, dims):
        shape = tuple(shape)
        if v.shape == shape:
            return v
        return self.e.op("broadcast", [v], [(shape, v.dtype)],
                         {"dims": attr_array(dims)})

    # -- equations --------------------------------------------------------------
    def jaxpr(self, jaxpr, consts, args):
        """Translates `jaxpr` (open) with `consts` and `args` (Values);
        returns the Values of its outputs."""
        for var, value in zip(jaxpr.constvars, consts):
            self.env[var] = value
        for var, value in zip(jaxpr.invars, args):
            self.env[var] = value
        for eqn in jaxpr.eqns:
            self.eqn(eqn)
        return [self.read(v) for v in jaxpr.outvars]

    def closed(self, closed_jaxpr, args):
        consts = [self.e.dense(np.asarray(c)) if np.ndim(c) else
                  self.e.constant(np.asarray(c).item(), np.asarray(c).dtype)
                  for c in closed_jaxpr.consts]
        for var, c in zip(closed_jaxpr.jaxpr.constvars, closed_jaxpr.consts):
            if np.size(c) <= _FOLD_LIMIT:
                self.known[var] = np.asarray(c)
        return self.jaxpr(closed_jaxpr.jaxpr, consts, args)

    def known_value(self, atom):
        if isinstance(atom, Literal):
            return np.asarray(atom.val, _aval(atom)[1])
        return self.known.get(atom)

    def fold(self, eqn):
        """Evaluates an equation of constants (a shape computation: the
        element count a mean divides by) with JAX itself; True if done."""
        if eqn.primitive.name in _CALLS or eqn.effects or any(
                _prod(_aval(v)[0]) > _FOLD_LIMIT for v in eqn.outvars):
            return False
        values = [self.known_value(v) for v in eqn.invars]
        if any(v is None for v in values):
            return False
        try:
            outs = eqn.primitive.bind(*values, **eqn.params)
        except Exception:
            return False
        if not eqn.primitive.multiple_results:
            outs = [outs]
        for var, value in zip(eqn.outvars, outs):
            value = np.asarray(value)
            self.known[var] = value
            self.env[var] = (self.e.dense(value) if value.ndim else
                             self.e.constant(value.item(), value.dtype))
        return True

    def eqn(self, eqn):
        try:
            self._eqn(eqn)
        except TypeError as error:      # an element type the dialect lacks
            raise UnsupportedPrimitive(eqn, str(error)) from None

    def _eqn(self, eqn):
        name = eqn.primitive.name
        if eqn.invars and self.fold(eqn):
            return
        invals = [self.read(v) for v in eqn.invars]
        if name in _CALLS:
            inner = next((eqn.params[k] for k in ("jaxpr", "call_jaxpr",
                                                   "fun_jaxpr")
                          if k in eqn.params), None)
            if inner is None:
                raise UnsupportedPrimitive(eqn, "a call without a jaxpr")
            self.name_stack.append(eqn.source_info.name_stack)
            self.calls.append(eqn)
            body = inner.jaxpr if hasattr(inner, "consts") else inner
            # Constants flow into the call (jnp.pad's padding value) and
            # out of it.
            for var, atom in zip(body.invars, eqn.invars):
                value = self.known_value(atom)
                if value is not None:
                    self.known[var] = value
            try:
                if hasattr(inner, "consts"):
                    outs = self.closed(inner, invals)
                else:
                    outs = self.jaxpr(inner, [], invals)
            finally:
                self.name_stack.pop()
                self.calls.pop()
            for var, atom in zip(eqn.outvars, body.outvars):
                value = self.known_value(atom)
                if value is not None:
                    self.known[var] = value
        else:
            handler = _HANDLERS.get(name)
            try:
                if handler is None:
                    raise UnsupportedPrimitive(eqn, "no train-dialect mapping")
                outs = handler(self, eqn, *invals, **eqn.params)
            except UnsupportedPrimitive as error:
                if not error.calls:
                    error.calls = list(self.calls)
                raise
            if isinstance(outs, Value):
                outs = [outs]
        for var, value in zip(eqn.outvars, outs):
            if type(var).__name__ != "DropVar":
                shape, dtype = _aval(var)
                if value.shape != shape or value.dtype != dtype:
                    raise UnsupportedPrimitive(
                        eqn, f"translated to {value.type}, expected "
                             f"{shape} {dtype}")
                self.env[var] = value


def _out(eqn, index=0):
    return _aval(eqn.outvars[index])


# -- elementwise ----------------------------------------------------------------

def _binary(op):
    def handler(t, eqn, a, b, **_):
        shape, dtype = _out(eqn)
        return t.e.op(op, [a, b], [(shape, dtype)])
    return handler


for _prim, _op in {"add": "add", "add_any": "add", "sub": "sub", "mul": "mul",
                   "div": "div", "max": "max", "min": "min"}.items():
    handles(_prim)(_binary(_op))


@handles("pow")
def _pow(t, eqn, x, y, **_):
    shape, dtype = _out(eqn)
    if not is_floating(dtype):
        raise UnsupportedPrimitive(eqn, "a power of an integer tensor")
    # An integer exponent (optax's bias correction: b1 ** count).
    return t.e.op("pow", [x, t.convert(y, dtype)], [(shape, dtype)])


def _unary(op):
    def handler(t, eqn, x, **_):
        shape, dtype = _out(eqn)
        return t.e.op(op, [x], [(shape, dtype)])
    return handler


for _prim, _op in {"neg": "neg", "abs": "abs", "exp": "exp", "log": "log",
                   "sqrt": "sqrt", "rsqrt": "rsqrt", "tanh": "tanh",
                   "logistic": "sigmoid", "erf": "erf", "log1p": "log1p",
                   "expm1": "expm1"}.items():
    handles(_prim)(_unary(_op))


@handles("copy", "copy_p", "reduce_precision", "optimization_barrier",
         "stop_gradient")
def _identity(t, eqn, *xs, **_):
    for x, var in zip(xs, eqn.outvars):
        if x.dtype != _aval(var)[1]:
            raise UnsupportedPrimitive(eqn, "changes the element type")
    return list(xs)


@handles("square")
def _square(t, eqn, x, **_):
    return t.e.op("mul", [x, x], [_out(eqn)])


@handles("integer_pow")
def _integer_pow(t, eqn, x, y, **_):
    shape, dtype = _out(eqn)
    if y == 1:
        return x
    if y == 2:
        return t.e.op("mul", [x, x], [(shape, dtype)])
    if y == -1:
        return t.e.op("div", [t.constant(1, x), x], [(shape, dtype)])
    if not is_floating(dtype):
        raise UnsupportedPrimitive(eqn, "an integer power of an integer tensor")
    return t.e.op("pow", [x, t.constant(float(y), x)], [(shape, dtype)])


@handles("exp2")
def _exp2(t, eqn, x, **_):
    shape, dtype = _out(eqn)
    scaled = t.e.op("mul", [x, t.constant(float(np.log(2.0)), x)],
                    [(shape, dtype)])
    return t.e.op("exp", [scaled], [(shape, dtype)])


@handles("sign")
def _sign(t, eqn, x, **_):
    shape, dtype = _out(eqn)
    zero = t.constant(0, x)
    positive = t.e.op("compare", [x, zero], [(shape, np.dtype(bool))],
                      {"direction": "#train.compare_direction<gt>"})
    negative = t.e.op("compare", [x, zero], [(shape, np.dtype(bool))],
                      {"direction": "#train.compare_direction<lt>"})
    inner = t.e.op("select", [negative, t.constant(-1, x), zero],
                   [(shape, dtype)])
    return t.e.op("select", [positive, t.constant(1, x), inner],
                  [(shape, dtype)])


for _prim in ("eq", "ne", "lt", "le", "gt", "ge"):
    def _compare(t, eqn, a, b, _direction=_prim, **_):
        return t.e.op("compare", [a, b], [_out(eqn)],
                      {"direction": f"#train.compare_direction<{_direction}>"})
    handles(_prim)(_compare)


@handles("not")
def _not(t, eqn, x, **_):
    if x.dtype != np.bool_:
        raise UnsupportedPrimitive(eqn, "bitwise not of an integer tensor")
    return t.e.op("compare", [x, t.constant(False, x)], [_out(eqn)],
                  {"direction": "#train.compare_direction<eq>"})


@handles("and", "or")
def _logical(t, eqn, a, b, **_):
    if a.dtype != np.bool_:
        raise UnsupportedPrimitive(eqn, "bitwise logic on integer tensors")
    shape, dtype = _out(eqn)
    if eqn.primitive.name == "and":
        return t.e.op("select", [a, b, t.constant(False, a)], [(shape, dtype)])
    return t.e.op("select", [a, t.constant(True, a), b], [(shape, dtype)])


@handles("select_n")
def _select_n(t, eqn, which, *cases, **_):
    shape, dtype = _out(eqn)
    if len(cases) == 1:
        return cases[0]
    if len(cases) != 2:
        raise UnsupportedPrimitive(eqn, f"select_n of {len(cases)} cases")
    condition = t.convert(which, np.bool_)
    return t.e.op("select", [condition, cases[1], cases[0]], [(shape, dtype)])


@handles("clamp")
def _clamp(t, eqn, low, x, high, **_):
    shape, dtype = _out(eqn)
    v = t.e.op("max", [x, low], [(shape, dtype)])
    return t.e.op("min", [v, high], [(shape, dtype)])


@handles("convert_element_type")
def _convert(t, eqn, x, new_dtype=None, **_):
    return t.convert(x, _out(eqn)[1])


# -- shapes ---------------------------------------------------------------------

@handles("broadcast_in_dim")
def _broadcast_in_dim(t, eqn, x, *dynamic, shape, broadcast_dimensions, **_):
    if dynamic:
        raise UnsupportedPrimitive(eqn, "a dynamic shape")
    return t.broadcast(x, shape, list(broadcast_dimensions))


@handles("reshape", "squeeze", "expand_dims")
def _reshape(t, eqn, x, *dynamic, dimensions=None, **_):
    if dynamic:
        raise UnsupportedPrimitive(eqn, "a dynamic shape")
    if eqn.primitive.name == "reshape" and dimensions not in (None, ()):
        x = t.transpose(x, dimensions)
    return t.reshape(x, _out(eqn)[0])


@handles("transpose")
def _transpose(t, eqn, x, permutation, **_):
    return t.transpose(x, permutation)


@handles("reduce_sum", "reduce_max", "reduce_min")
def _reduce(t, eqn, x, axes, **_):
    if not axes:
        return x
    kind = eqn.primitive.name[len("reduce_"):]
    return t.e.op("reduce", [x], [_out(eqn)],
                  {"dims": attr_array(sorted(axes)),
                   "kind": f"#train.reduce_kind<{kind}>"})


@handles("iota")
def _iota(t, eqn, dtype, shape, dimension, **_):
    shape, dtype = _out(eqn)
    return t.e.op("iota", [], [(shape, dtype)],
                  {"dim": f"{int(dimension)} : i64"})


@handles("slice")
def _slice(t, eqn, x, start_indices, limit_indices, strides=None, **_):
    attrs = {"start": attr_array(start_indices),
             "limit": attr_array(limit_indices)}
    if strides is not None and any(s != 1 for s in strides):
        attrs["strides"] = attr_array(strides)
    return t.e.op("slice", [x], [_out(eqn)], attrs)


@handles("split")
def _split(t, eqn, x, sizes, axis, **_):
    outs, start = [], 0
    for index, size in enumerate(sizes):
        begin = [0] * x.rank
        end = list(x.shape)
        begin[axis], end[axis] = start, start + size
        outs.append(t.e.op("slice", [x], [_out(eqn, index)],
                           {"start": attr_array(begin),
                            "limit": attr_array(end)}))
        start += size
    return outs


@handles("concatenate")
def _concatenate(t, eqn, *xs, dimension, **_):
    return t.e.op("concat", list(xs), [_out(eqn)],
                  {"dim": f"{int(dimension)} : i64"})


def _interior(t, x, dim, gap):
    """`x` with `gap` zeros between neighbours along `dim`: each element
    and its zeros side by side in a new dim, flattened, the trailing zeros
    cut."""
    n = x.shape[dim]
    if gap == 0 or n <= 1:
        return x
    column = t.reshape(x, x.shape[:dim + 1] + (1,) + x.shape[dim + 1:])
    zeros = t.e.op("broadcast", [t.e.constant(0, x.dtype)],
                   [(x.shape[:dim + 1] + (gap,) + x.shape[dim + 1:], x.dtype)],
                   {"dims": attr_array([])})
    spread = t.e.op("concat", [column, zeros],
                    [(x.shape[:dim + 1] + (gap + 1,) + x.shape[dim + 1:],
                      x.dtype)], {"dim": f"{dim + 1} : i64"})
    flat = t.reshape(spread, x.shape[:dim] + (n * (gap + 1),) +
                     x.shape[dim + 1:])
    limit = list(flat.shape)
    limit[dim] = n + (n - 1) * gap
    return t.e.op("slice", [flat], [(tuple(limit), x.dtype)],
                  {"start": attr_array([0] * x.rank),
                   "limit": attr_array(limit)})


@handles("pad")
def _pad(t, eqn, x, value, padding_config, **_):
    pad_literal = eqn.invars[1]
    pad_value = t.known_value(pad_literal)
    if pad_value is None:
        raise UnsupportedPrimitive(eqn, "a padding value computed in the step")
    interior = [int(i) for _, _, i in padding_config]
    if any(interior) and float(pad_value) != 0:
        raise UnsupportedPrimitive(eqn, "interior padding with a value other "
                                        "than zero")
    for dim, gap in enumerate(interior):
        x = _interior(t, x, dim, gap)
    # Negative padding crops: a slice first, then the non-negative pad.
    start = [max(0, -int(lo)) for lo, _, _ in padding_config]
    limit = [size - max(0, -int(hi))
             for size, (_, hi, _) in zip(x.shape, padding_config)]
    if any(start) or list(limit) != list(x.shape):
        x = t.e.op("slice", [x], [(tuple(b - a for a, b in zip(start, limit)),
                                   x.dtype)],
                   {"start": attr_array(start), "limit": attr_array(limit)})
    low = [max(0, int(lo)) for lo, _, _ in padding_config]
    high = [max(0, int(hi)) for _, hi, _ in padding_config]
    if not any(low) and not any(high):
        return x
    return t.e.op("pad", [x], [_out(eqn)],
                  {"low": attr_array(low), "high": attr_array(high),
                   "value": attr_f64(float(pad_value))})


# -- pooling --------------------------------------------------------------------

class _Window:
    """A reduce_window's pooled dims (at most two: train's pools are 2-D)
    and the transposes to and from [rest, 1, h, w]."""

    def __init__(self, eqn, rank, window_dimensions, window_strides, padding,
                 base_dilation=None, window_dilation=None):
        if any(d != 1 for d in (base_dilation or ())) or \
                any(d != 1 for d in (window_dilation or ())):
            raise UnsupportedPrimitive(eqn, "a dilated window")
        self.active = [d for d in range(rank)
                       if window_dimensions[d] != 1 or window_strides[d] != 1
                       or tuple(padding[d]) != (0, 0)]
        if len(self.active) > 2:
            raise UnsupportedPrimitive(eqn, f"a window over {len(self.active)}"
                                            " dims (train pools are 2-D)")
        self.passive = [d for d in range(rank) if d not in self.active]
        fill = [1] * (2 - len(self.active))
        self.kernel = fill + [int(window_dimensions[d]) for d in self.active]
        self.strides = fill + [int(window_strides[d]) for d in self.active]
        pads = [(0, 0)] * len(fill) + [tuple(map(int, padding[d]))
                                       for d in self.active]
        self.padding = [pads[0][0], pads[0][1], pads[1][0], pads[1][1]]
        self.attrs = {"kernel_size": attr_array(self.kernel),
                      "strides": attr_array(self.strides),
                      "padding": attr_array(self.padding)}

    def to_pool(self, t, x):
        v = t.transpose(x, self.passive + self.active)
        rest = _prod([x.shape[d] for d in self.passive])
        spatial = [x.shape[d] for d in self.active]
        return t.reshape(v, (rest, 1) + (1,) * (2 - len(spatial)) +
                         tuple(spatial))

    def from_pool(self, t, v, shape):
        ordered = tuple(shape[d] for d in self.passive + self.active)
        v = t.reshape(v, ordered)
        return t.transpose(v, list(np.argsort(self.passive + self.active)))

    def pooled_shape(self, shape):
        rest = _prod([shape[d] for d in self.passive])
        spatial = [shape[d] for d in self.active]
        return (rest, 1) + (1,) * (2 - len(spatial)) + tuple(spatial)


@handles("reduce_window_max", "reduce_window_sum")
def _reduce_window(t, eqn, x, window_dimensions, window_strides, padding,
                   base_dilation=None, window_dilation=None, **_):
    shape, dtype = _out(eqn)
    if not is_floating(dtype):
        raise UnsupportedPrimitive(eqn, "pooling an integer tensor")
    w = _Window(eqn, x.rank, window_dimensions, window_strides, padding,
                base_dilation, window_dilation)
    if eqn.primitive.name == "reduce_window_max":
        if any(p * 2 > k for p, k in zip(w.padding, w.kernel * 2)):
            raise UnsupportedPrimitive(eqn, "max pooling padded by more than "
                                            "half the window")
        y = t.e.op("max_pool2d", [w.to_pool(t, x)],
                   [(w.pooled_shape(shape), dtype)], w.attrs)
    else:
        # A windowed sum: the average counting padded zeros, times the
        # window's size.
        attrs = dict(w.attrs, count_include_pad="true")
        avg = t.e.op("avg_pool2d", [w.to_pool(t, x)],
                     [(w.pooled_shape(shape), dtype)], attrs)
        y = t.e.op("mul", [avg, t.e.constant(float(_prod(w.kernel)), dtype)],
                   [(avg.shape, dtype)])
    return w.from_pool(t, y, shape)


@handles("select_and_scatter_add")
def _select_and_scatter_add(t, eqn, source, operand, select_prim,
                            window_dimensions, window_strides, padding, **_):
    shape, dtype = _out(eqn)
    if select_prim.name != "ge":
        raise UnsupportedPrimitive(eqn, f"a window selection by "
                                        f"{select_prim.name} (max pooling "
                                        "selects by ge)")
    w = _Window(eqn, operand.rank, window_dimensions, window_strides, padding)
    g = t.e.op("max_pool2d_backward",
               [w.to_pool(t, source), w.to_pool(t, operand)],
               [(w.pooled_shape(shape), dtype)], w.attrs)
    return w.from_pool(t, g, shape)


# -- contractions ---------------------------------------------------------------

@handles("dot_general")
def _dot_general(t, eqn, lhs, rhs, dimension_numbers, preferred_element_type=None,
                 **_):
    (lc, rc), (lb, rb) = [[list(map(int, d)) for d in pair]
                          for pair in dimension_numbers]
    out_shape, out_dtype = _out(eqn)
    if lhs.dtype != rhs.dtype:
        raise UnsupportedPrimitive(eqn, "operands of different element types")
    lf = [d for d in range(lhs.rank) if d not in lc and d not in lb]
    rf = [d for d in range(rhs.rank) if d not in rc and d not in rb]
    batch = [lhs.shape[d] for d in lb]
    k = _prod([lhs.shape[d] for d in lc])
    m = _prod([lhs.shape[d] for d in lf])
    n = _prod([rhs.shape[d] for d in rf])
    attrs = {}
    if not lb and len(rf) == 1 and len(rc) == 1 and lc == [lhs.rank - 1] \
            and lhs.rank >= 2:
        # [..., m, k] x [k, n] / [n, k]: the leading dims stay (a linear
        # layer on a sequence), the weight is shared.
        a = lhs
        b = rhs
        if rc == [1]:
            attrs["transpose_rhs"] = None
        mm_shape = lhs.shape[:-1] + (n,)
    else:
        # [batch..., m, k] x [batch..., k, n], transposing where needed.
        if lc + lf == list(range(lhs.rank))[len(lb):] and lb == list(
                range(len(lb))) and lf and lc:
            a = t.reshape(lhs, batch + [k, m])
            attrs["transpose_lhs"] = None
        else:
            a = t.reshape(t.transpose(lhs, lb + lf + lc), batch + [m, k])
        if rf + rc == list(range(rhs.rank))[len(rb):] and rb == list(
                range(len(rb))) and rf and rc:
            b = t.reshape(rhs, batch + [n, k])
            attrs["transpose_rhs"] = None
        else:
            b = t.reshape(t.transpose(rhs, rb + rc + rf), batch + [k, n])
        mm_shape = tuple(batch) + (m, n)
    product = t.e.op("matmul", [a, b], [(mm_shape, lhs.dtype)], attrs or None)
    return t.convert(t.reshape(product, out_shape), out_dtype)


# -- embeddings -----------------------------------------------------------------

def _row_lookup(eqn, operand, dimension_numbers, slice_sizes, index_rank):
    """True when a gather/scatter takes whole rows of `operand` by one index
    per lookup (an embedding): the indices end in a dim of size 1 naming
    operand dim 0."""
    dn = dimension_numbers
    start_map = tuple(getattr(dn, "start_index_map",
                              getattr(dn, "scatter_dims_to_operand_dims", ())))
    collapsed = tuple(getattr(dn, "collapsed_slice_dims",
                              getattr(dn, "inserted_window_dims", ())))
    batching = tuple(getattr(dn, "operand_batching_dims", ()))
    return (start_map == (0,) and collapsed == (0,) and not batching and
            (slice_sizes is None or
             tuple(slice_sizes) == (1,) + tuple(operand.shape[1:])))


@handles("gather")
def _gather(t, eqn, operand, indices, dimension_numbers, slice_sizes, mode=None,
            **_):
    shape, dtype = _out(eqn)
    if not _row_lookup(eqn, operand, dimension_numbers, slice_sizes,
                       indices.rank) or indices.shape[-1:] != (1,):
        raise UnsupportedPrimitive(
            eqn, "only row lookups (an embedding: table[ids]) are supported")
    offsets = tuple(dimension_numbers.offset_dims)
    expected = tuple(range(indices.rank - 1, indices.rank - 1 + operand.rank - 1))
    if offsets != expected:
        raise UnsupportedPrimitive(eqn, "a gather whose row dims are not last")
    ids = t.reshape(indices, indices.shape[:-1])
    return t.e.op("gather", [operand, ids], [(shape, dtype)])


@handles("scatter-add", "scatter_add")
def _scatter_add(t, eqn, operand, indices, updates, dimension_numbers, **_):
    shape, dtype = _out(eqn)
    if not _row_lookup(eqn, operand, dimension_numbers, None, indices.rank) \
            or indices.shape[-1:] != (1,):
        raise UnsupportedPrimitive(
            eqn, "only row scatters (an embedding's gradient) are supported")
    window = tuple(dimension_numbers.update_window_dims)
    if window != tuple(range(indices.rank - 1, updates.rank)):
        raise UnsupportedPrimitive(eqn, "a scatter whose row dims are not last")
    ids = t.reshape(indices, indices.shape[:-1])
    return t.e.op("scatter_add", [operand, ids, updates], [(shape, dtype)])


# -- convolutions ---------------------------------------------------------------

@handles("rev")
def _rev(t, eqn, x, dimensions, **_):
    """Reverses `dimensions` (a gather of reversed row indices per dim);
    remembers its source, so that a convolution of a reversed filter (an
    input gradient) uses the filter itself."""
    v = x
    for d in dimensions:
        perm = [d] + [i for i in range(x.rank) if i != d]
        moved = t.transpose(v, perm)
        ids = t.e.dense(np.arange(x.shape[d] - 1, -1, -1, dtype=np.int32))
        gathered = t.e.op("gather", [moved, ids], [(moved.shape, x.dtype)])
        v = t.transpose(gathered, list(np.argsort(perm)))
    v.info = ("rev", x, tuple(dimensions))
    return v


def _to_nchw(t, v, spec):
    """`v` with the dims `spec` names (batch, feature, spatial...) first,
    as [n, c, h, w] (one spatial dim gets height 1)."""
    v = t.transpose(v, list(spec))
    if v.rank == 3:
        v = t.reshape(v, v.shape[:2] + (1,) + v.shape[2:])
    return v


def _from_nchw(t, v, spec, shape):
    """The [n, c, h, w] result in the layout `spec` names."""
    logical = tuple(shape[d] for d in spec)
    v = t.reshape(v, logical)
    return t.transpose(v, list(np.argsort(spec)))


@handles("conv_general_dilated")
def _conv(t, eqn, lhs, rhs, window_strides, padding, lhs_dilation,
          rhs_dilation, dimension_numbers, feature_group_count,
          batch_group_count, **_):
    shape, dtype = _out(eqn)
    spatial = len(window_strides)
    if spatial not in (1, 2):
        raise UnsupportedPrimitive(eqn, f"{spatial}-D convolution (train.conv2d "
                                        "covers 1-D and 2-D)")
    dn = dimension_numbers
    lhs_spec, rhs_spec, out_spec = (tuple(dn.lhs_spec), tuple(dn.rhs_spec),
                                    tuple(dn.out_spec))
    if batch_group_count != 1:
        return _grouped_filter_gradient(
            t, eqn, lhs, rhs, window_strides, padding, lhs_dilation,
            rhs_dilation, lhs_spec, rhs_spec, out_spec, batch_group_count)

    def pair(values, fill):
        values = list(values)
        return [fill] + values if spatial == 1 else values

    pads = [(int(lo), int(hi)) for lo, hi in padding]
    pads = ([(0, 0)] if spatial == 1 else []) + pads
    kernel = [rhs.shape[d] for d in rhs_spec[2:]]
    kernel = pair(kernel, 1)
    out_nchw = tuple(shape[d] for d in out_spec)
    out_nchw = out_nchw[:2] + (1,) * (spatial == 1) + out_nchw[2:]
    if all(d == 1 for d in lhs_dilation):
        attrs = {"strides": attr_array(pair(window_strides, 1)),
                 "padding": attr_array([pads[0][0], pads[0][1],
                                        pads[1][0], pads[1][1]]),
                 "dilations": attr_array(pair(rhs_dilation, 1)),
                 "groups": f"{int(feature_group_count)} : i64"}
        x = _to_nchw(t, lhs, lhs_spec)
        if any(lo < 0 or hi < 0 for lo, hi in pads):
            # Negative padding crops the input (a filter gradient's).
            start = [0, 0] + [max(0, -lo) for lo, _ in pads]
            limit = list(x.shape[:2]) + [size - max(0, -hi) for size, (_, hi)
                                         in zip(x.shape[2:], pads)]
            x = t.e.op("slice", [x], [(tuple(b - a for a, b in
                                             zip(start, limit)), x.dtype)],
                       {"start": attr_array(start),
                        "limit": attr_array(limit)})
            pads = [(max(0, lo), max(0, hi)) for lo, hi in pads]
            attrs["padding"] = attr_array([pads[0][0], pads[0][1],
                                           pads[1][0], pads[1][1]])
        y = t.e.op("conv2d", [x, _to_nchw(t, rhs, rhs_spec)],
                   [(out_nchw, dtype)], attrs)
        return _from_nchw(t, y, out_spec, shape)
    if any(lo < 0 or hi < 0 for lo, hi in pads):
        raise UnsupportedPrimitive(eqn, "negative padding of a dilated input")
    # An input gradient: the output gradient, dilated by the forward
    # strides, convolved with the reversed filter (in and out swapped).
    info = rhs.info
    if not (info and info[0] == "rev" and
            set(info[2]) == set(rhs_spec[2:])) or feature_group_count != 1 \
            or any(d != 1 for d in window_strides):
        raise UnsupportedPrimitive(
            eqn, "a dilated input that is not a convolution's input gradient")
    filter_ = info[1]
    forward_spec = (rhs_spec[1], rhs_spec[0]) + rhs_spec[2:]
    strides = pair(lhs_dilation, 1)
    dilations = pair(rhs_dilation, 1)
    forward_pads = []
    grad_size = [lhs.shape[d] for d in lhs_spec[2:]]
    grad_size = pair(grad_size, 1)
    for (lo, hi), k, d, s_, n, o in zip(pads, kernel, dilations, strides,
                                        out_nchw[2:], grad_size):
        # JAX pads the dilated gradient by (extent - lo, extent - hi + r),
        # r the rows the forward floor dropped; those get no gradient.
        extent = (k - 1) * d
        low, high = extent - lo, max(0, extent - hi)
        if low < 0 or (n + low + high - extent - 1) // s_ + 1 != o:
            raise UnsupportedPrimitive(eqn, "a dilated input that is not a "
                                            "convolution's input gradient")
        forward_pads += [low, high]
    attrs = {"input_size": attr_array(out_nchw[2:]),
             "strides": attr_array(strides),
             "padding": attr_array(forward_pads),
             "dilations": attr_array(dilations)}
    y = t.e.op("conv2d_backward_input",
               [_to_nchw(t, lhs, lhs_spec), _to_nchw(t, filter_, forward_spec)],
               [(out_nchw, dtype)], attrs)
    return _from_nchw(t, y, out_spec, shape)


@handles("erfc")
def _erfc(t, eqn, x, **_):
    shape, dtype = _out(eqn)
    erf = t.e.op("erf", [x], [(shape, dtype)])
    return t.e.op("sub", [t.constant(1, x), erf], [(shape, dtype)])


@handles("stack")
def _stack(t, eqn, *xs, axis, **_):
    shape, dtype = _out(eqn)
    pieces = [t.reshape(x, x.shape[:axis] + (1,) + x.shape[axis:]) for x in xs]
    return t.e.op("concat", pieces, [(shape, dtype)],
                  {"dim": f"{int(axis)} : i64"})


def _grouped_filter_gradient(t, eqn, lhs, rhs, window_strides, padding,
                             lhs_dilation, rhs_dilation, lhs_spec, rhs_spec,
                             out_spec, groups):
    """JAX's filter gradient of a grouped convolution (a depthwise one):
    the forward input (batch and feature swapped) convolved with the output
    gradient, `batch_group_count` groups: conv2d_backward_filter."""
    shape, dtype = _out(eqn)
    spatial = len(window_strides)
    if feature_group_count_of(eqn) != 1 or any(d != 1 for d in lhs_dilation):
        raise UnsupportedPrimitive(eqn, "batch_group_count > 1 with other "
                                        "groups or a dilated input")
    fill = [1] * (2 - spatial)
    x = _to_nchw(t, lhs, (lhs_spec[1], lhs_spec[0]) + lhs_spec[2:])
    g = _to_nchw(t, rhs, (rhs_spec[1], rhs_spec[0]) + rhs_spec[2:])
    kernel = fill + [shape[d] for d in out_spec[2:]]
    strides = fill + [int(d) for d in rhs_dilation]
    dilations = fill + [int(d) for d in window_strides]
    pads = [(0, 0)] * len(fill) + [(int(lo), int(hi)) for lo, hi in padding]
    forward = []
    for (lo, hi), k, s_, d, n, o in zip(pads, kernel, strides, dilations,
                                        x.shape[2:], g.shape[2:]):
        extent = (k - 1) * d
        if lo < 0:
            raise UnsupportedPrimitive(eqn, "negative low padding")
        # JAX trims the rows the forward floor dropped off the high side.
        for high in range(max(0, hi), max(0, hi) + s_):
            if (n + lo + high - extent - 1) // s_ + 1 == o:
                break
        else:
            raise UnsupportedPrimitive(eqn, "a filter gradient whose sizes "
                                            "do not match a convolution")
        forward += [lo, high]
    f_out = tuple(shape[d] for d in (out_spec[1], out_spec[0]) + out_spec[2:])
    f_out = f_out[:2] + (1,) * len(fill) + f_out[2:]
    y = t.e.op("conv2d_backward_filter", [x, g], [(f_out, dtype)],
               {"kernel_size": attr_array(kernel),
                "strides": attr_array(strides),
                "padding": attr_array(forward),
                "dilations": attr_array(dilations),
                "groups": f"{int(groups)} : i64"})
    return _from_nchw(t, y, (out_spec[1], out_spec[0]) + out_spec[2:], shape)


def feature_group_count_of(eqn):
    return int(eqn.params.get("feature_group_count", 1))
