# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Random training steps in the train dialect, for differential testing.

    python3 scripts/difftest/gen.py SEED            # print the step of SEED
    python3 scripts/difftest/gen.py SEED --describe # and its layers

`generate(seed)` returns a `Step`: a complete training step (forward,
explicit backward and optimizer update, arguments and results with
`train.role` / `train.name` as in examples/*.mlir), the list of ops it is
made of (which ref.py interprets in float64), and metadata that run.py uses
to fill in the state and the batch (ranges of token ids, scales to start at
one, ...).

Every layer kind knows its forward ops and writes its backward ops by hand,
the way an exporter would (see examples/transformer_block.mlir):

  layer kind       forward                              backward
  ---------------  -----------------------------------  --------------------------------------
  linear           matmul {transpose_rhs} (+ add bias)  matmul {transpose_lhs} (2-D, reshaped
                   or [in, out] weights without         to 2-D, or batched + reduce), reduce
                   transpose                            sum, matmul
  relu/gelu/tanh/  the op                               compare + select / the tanh-form
  sigmoid                                               derivative / 1 - y^2 / y (1 - y)
  exact gelu       x/2 (1 + erf(x/sqrt 2))              Phi(x) + x phi(x) (erf, exp)
  softplus         log1p(exp(x))                        dy sigmoid(x)
  elu              select(x > 0, x, expm1(x))           select(x > 0, dy, dy (y + 1))
  layer_norm       layer_norm                           layer_norm_backward
  batch_norm       batch_norm                           batch_norm_backward
  residual         branch + add                         add of both paths
  attention        q/k/v linears, reshape/transpose     matmuls, softmax_backward, ...
                   heads, matmul, softmax, matmul
  dropout          dropout (counter-based)              dropout of the gradient (same seed)
  gain / scale     mul by a [F] / scalar param          mul, reduce
  positional       add of a [S, F] param or of an       reduce over the batch / nothing
                   input without a batch dim
  shuffle          reshape, transpose, reshape          the inverse
  token mixing     transpose, linear over S, transpose  the inverse
  embedding        gather (ids input)                   scatter_add into zeros
  tied LM head     matmul with the embedding table      matmul (gradients of the table add)
  conv2d           conv2d (+ bias, broadcast or [F,1,1]) conv2d_backward_filter/_input, reduce
  pooling          max_pool2d / avg_pool2d              max_pool2d_backward / avg_pool2d_backward
  flatten          reshape                              reshape
  losses           cross_entropy / mse (sub, mul,       cross_entropy_backward / mul
                   reduce mean) (+ L2 term of a param)
  optimizers       sgd (momentum, nesterov, weight decay), adam, adamw (f32 or i64 step)

plus parameters that are unused (returned unchanged, not returned, or
updated with a zero gradient) or frozen (used in forward, returned as
is). Shapes are random, small (2..32) and sometimes do not divide by 2 or 4.
"""

import random
import sys

# ----------------------------------------------------------------------------
# IR


def ttype(shape, dtype):
    if not shape:
        return f"tensor<{dtype}>"
    return "tensor<" + "x".join(str(d) for d in shape) + f"x{dtype}>"


class Value:
    __slots__ = ("name", "shape", "dtype")

    def __init__(self, name, shape, dtype="f32"):
        self.name, self.shape, self.dtype = name, tuple(shape), dtype

    @property
    def type(self):
        return ttype(self.shape, self.dtype)

    @property
    def rank(self):
        return len(self.shape)

    def __repr__(self):
        return f"%{self.name}:{self.type}"


class Op:
    __slots__ = ("kind", "operands", "results", "attrs", "attr_text", "value_text")

    def __init__(self, kind, operands, results, attrs, attr_text, value_text=None):
        self.kind, self.operands, self.results = kind, operands, results
        self.attrs, self.attr_text, self.value_text = attrs, attr_text, value_text

    def text(self):
        res = ", ".join("%" + r.name for r in self.results)
        if self.kind == "constant":
            return f"{res} = train.constant {self.value_text} : {self.results[0].type}"
        ops = ", ".join("%" + o.name for o in self.operands)
        attrs = (" {" + ", ".join(self.attr_text) + "}") if self.attr_text else ""
        otypes = ", ".join(o.type for o in self.operands)
        rtypes = self.results[0].type if len(self.results) == 1 else \
            "(" + ", ".join(r.type for r in self.results) + ")"
        return f"{res} = train.{self.kind} {ops}{attrs} : ({otypes}) -> {rtypes}"


class Binding:
    """An argument or a result of the step."""
    __slots__ = ("value", "role", "name")

    def __init__(self, value, role, name):
        self.value, self.role, self.name = value, role, name

    def text(self, with_ssa):
        head = f"%{self.value.name}: " if with_ssa else ""
        return (f"{head}{self.value.type} {{train.role = #train.role<{self.role}>, "
                f"train.name = \"{self.name}\"}}")


def ffmt(v):
    return "%.9e" % v


def a_unit(k):
    return (k, k, True)


def a_i64(k, v):
    return (k, f"{k} = {int(v)} : i64", int(v))


def a_f64(k, v):
    return (k, f"{k} = {ffmt(v)} : f64", float(v))


def a_arr(k, vs):
    vs = tuple(int(v) for v in vs)
    body = (": " + ", ".join(map(str, vs))) if vs else ""
    return (k, f"{k} = array<i64{body}>", vs)


def a_enum(k, enum, v):
    return (k, f"{k} = #train.{enum}<{v}>", v)


def a_bool(k, v):
    return (k, f"{k} = {'true' if v else 'false'}", bool(v))


def broadcast_shapes(a, b):
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        assert x == y or x == 1 or y == 1, (a, b)
        out.append(max(x, y))
    return tuple(out)


def prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


class Step:
    """A generated training step: its arguments and results (Bindings),
    its ops (in order), metadata for run.py and a description."""

    def __init__(self, seed, args, results, ops, meta, layers):
        self.seed, self.args, self.results, self.ops = seed, args, results, ops
        self.meta, self.layers = meta, layers

    def describe(self):
        return "; ".join(self.layers)

    def text(self):
        lines = [f"// Generated by scripts/difftest/gen.py, seed {self.seed}.",
                 f"// {self.describe()}",
                 "func.func @train_step("]
        lines.append(",\n".join("    " + a.text(True) for a in self.args))
        lines[-1] += ")"
        lines.append("    -> (" + ",\n        ".join(r.text(False) for r in self.results) + ") {")
        for op in self.ops:
            lines.append("  " + op.text())
        lines.append("  return " + ", ".join("%" + r.value.name for r in self.results))
        lines.append("      : " + ", ".join(r.value.type for r in self.results))
        lines.append("}")
        return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------
# The builder: one method per op, result shapes computed here.


class Builder:
    def __init__(self):
        self.ops = []
        self.counts = {}
        self.consts = {}

    def fresh(self, prefix):
        prefix = "".join(c if c.isalnum() or c == "_" else "_" for c in prefix)
        n = self.counts.get(prefix, 0)
        self.counts[prefix] = n + 1
        return prefix if n == 0 else f"{prefix}_{n}"

    def op(self, kind, operands, results, attrs=(), prefix=None):
        vals = [Value(self.fresh(prefix or kind), s, d) for s, d in results]
        self.ops.append(Op(kind, list(operands), vals, {k: v for k, _, v in attrs},
                           [t for _, t, _ in attrs]))
        return vals if len(vals) > 1 else vals[0]

    # -- constants
    def const(self, v, shape=(), dtype="f32"):
        key = (float(v), tuple(shape), dtype)
        if key not in self.consts:
            val = Value(self.fresh("cst"), shape, dtype)
            text = f"dense<{ffmt(v)}>" if dtype.startswith("f") else f"dense<{int(v)}>"
            self.ops.append(Op("constant", [], [val], {"value": v}, [], text))
            self.consts[key] = val
        return self.consts[key]

    # -- elementwise
    def ew(self, kind, a, b, prefix=None):
        return self.op(kind, [a, b], [(broadcast_shapes(a.shape, b.shape), a.dtype)], prefix=prefix)

    def add(self, a, b, prefix=None):
        return self.ew("add", a, b, prefix)

    def sub(self, a, b, prefix=None):
        return self.ew("sub", a, b, prefix)

    def mul(self, a, b, prefix=None):
        return self.ew("mul", a, b, prefix)

    def unary(self, kind, a, prefix=None):
        return self.op(kind, [a], [(a.shape, a.dtype)], prefix=prefix)

    def compare(self, a, b, direction, prefix=None):
        return self.op("compare", [a, b], [(broadcast_shapes(a.shape, b.shape), "i1")],
                       [a_enum("direction", "compare_direction", direction)], prefix)

    def select(self, c, t, f, prefix=None):
        shape = broadcast_shapes(broadcast_shapes(c.shape, t.shape), f.shape)
        return self.op("select", [c, t, f], [(shape, t.dtype)], prefix=prefix)

    # -- contractions
    def matmul(self, a, b, tl=False, tr=False, prefix=None):
        am, ak = (a.shape[-1], a.shape[-2]) if tl else (a.shape[-2], a.shape[-1])
        bk, bn = (b.shape[-1], b.shape[-2]) if tr else (b.shape[-2], b.shape[-1])
        assert ak == bk, (a, b, tl, tr)
        ba, bb = a.shape[:-2], b.shape[:-2]
        assert not ba or not bb or ba == bb, (a, b)
        shape = (ba or bb) + (am, bn)
        attrs = ([a_unit("transpose_lhs")] if tl else []) + ([a_unit("transpose_rhs")] if tr else [])
        return self.op("matmul", [a, b], [(shape, a.dtype)], attrs, prefix)

    def reduce(self, x, kind, dims, keepdims=False, prefix=None):
        dims = sorted(d % x.rank for d in dims) if x.rank else []
        if keepdims:
            shape = tuple(1 if i in dims else s for i, s in enumerate(x.shape))
        else:
            shape = tuple(s for i, s in enumerate(x.shape) if i not in dims)
        attrs = [a_arr("dims", dims), a_enum("kind", "reduce_kind", kind)]
        if keepdims:
            attrs.append(a_unit("keepdims"))
        return self.op("reduce", [x], [(shape, x.dtype)], attrs, prefix)

    def softmax(self, x, dim, prefix=None):
        return self.op("softmax", [x], [(x.shape, x.dtype)], [a_i64("dim", dim)], prefix)

    def softmax_backward(self, dy, y, dim, prefix=None):
        return self.op("softmax_backward", [dy, y], [(y.shape, y.dtype)], [a_i64("dim", dim)], prefix)

    # -- normalization
    def layer_norm(self, x, w, b, axis, eps=None, prefix=None):
        lead = x.shape[:axis]
        attrs = [a_i64("axis", axis)] + ([a_f64("epsilon", eps)] if eps is not None else [])
        return self.op("layer_norm", [x, w, b], [(x.shape, x.dtype), (lead, x.dtype), (lead, x.dtype)],
                       attrs, prefix)

    def layer_norm_backward(self, dy, x, mean, rstd, w, axis, prefix=None):
        return self.op("layer_norm_backward", [dy, x, mean, rstd, w],
                       [(x.shape, x.dtype), (w.shape, w.dtype), (w.shape, w.dtype)],
                       [a_i64("axis", axis)], prefix)

    def batch_norm(self, x, w, b, eps=None, prefix=None):
        c = (x.shape[1],)
        attrs = [a_f64("epsilon", eps)] if eps is not None else []
        return self.op("batch_norm", [x, w, b], [(x.shape, x.dtype), (c, x.dtype), (c, x.dtype)],
                       attrs, prefix)

    def batch_norm_backward(self, dy, x, mean, var, w, eps=None, prefix=None):
        attrs = [a_f64("epsilon", eps)] if eps is not None else []
        return self.op("batch_norm_backward", [dy, x, mean, var, w],
                       [(x.shape, x.dtype), (w.shape, w.dtype), (w.shape, w.dtype)], attrs, prefix)

    # -- data movement
    def reshape(self, x, shape, prefix=None):
        assert prod(shape) == prod(x.shape), (x, shape)
        return self.op("reshape", [x], [(tuple(shape), x.dtype)], prefix=prefix)

    def transpose(self, x, perm, prefix=None):
        return self.op("transpose", [x], [(tuple(x.shape[p] for p in perm), x.dtype)],
                       [a_arr("permutation", perm)], prefix)

    def broadcast(self, x, dims, shape, prefix=None):
        return self.op("broadcast", [x], [(tuple(shape), x.dtype)], [a_arr("dims", dims)], prefix)

    def slice(self, x, start, limit, strides=None, prefix=None):
        strides = strides or [1] * x.rank
        shape = tuple((l - s + st - 1) // st for s, l, st in zip(start, limit, strides))
        attrs = [a_arr("start", start), a_arr("limit", limit)]
        if any(st != 1 for st in strides):
            attrs.append(a_arr("strides", strides))
        return self.op("slice", [x], [(shape, x.dtype)], attrs, prefix)

    def concat(self, xs, dim, prefix=None):
        shape = list(xs[0].shape)
        shape[dim] = sum(x.shape[dim] for x in xs)
        return self.op("concat", xs, [(tuple(shape), xs[0].dtype)], [a_i64("dim", dim)], prefix)

    def gather(self, table, ids, prefix=None):
        return self.op("gather", [table, ids], [(ids.shape + table.shape[1:], table.dtype)], prefix=prefix)

    def scatter_add(self, init, ids, upd, prefix=None):
        return self.op("scatter_add", [init, ids, upd], [(init.shape, init.dtype)], prefix=prefix)

    def dropout(self, x, seed, rate, prefix=None):
        return self.op("dropout", [x, seed], [(x.shape, x.dtype)], [a_f64("rate", rate)], prefix)

    # -- convolution and pooling
    @staticmethod
    def conv_attrs(strides, padding, dilations, groups):
        attrs = []
        if tuple(strides) != (1, 1):
            attrs.append(a_arr("strides", strides))
        if tuple(padding) != (0, 0, 0, 0):
            attrs.append(a_arr("padding", padding))
        if tuple(dilations) != (1, 1):
            attrs.append(a_arr("dilations", dilations))
        if groups != 1:
            attrs.append(a_i64("groups", groups))
        return attrs

    @staticmethod
    def conv_out(h, w, kh, kw, strides, padding, dilations):
        oh = (h + padding[0] + padding[1] - dilations[0] * (kh - 1) - 1) // strides[0] + 1
        ow = (w + padding[2] + padding[3] - dilations[1] * (kw - 1) - 1) // strides[1] + 1
        return oh, ow

    def conv2d(self, x, w, strides, padding, dilations, groups, prefix=None):
        n, _, h, wd = x.shape
        f, _, kh, kw = w.shape
        oh, ow = self.conv_out(h, wd, kh, kw, strides, padding, dilations)
        return self.op("conv2d", [x, w], [((n, f, oh, ow), x.dtype)],
                       self.conv_attrs(strides, padding, dilations, groups), prefix)

    def conv2d_backward_input(self, dy, w, input_size, strides, padding, dilations, groups, prefix=None):
        n = dy.shape[0]
        c = w.shape[1] * groups
        return self.op("conv2d_backward_input", [dy, w], [((n, c) + tuple(input_size), dy.dtype)],
                       [a_arr("input_size", input_size)] + self.conv_attrs(strides, padding, dilations, groups),
                       prefix)

    def conv2d_backward_filter(self, x, dy, kernel_size, strides, padding, dilations, groups, prefix=None):
        f = dy.shape[1]
        c = x.shape[1] // groups
        return self.op("conv2d_backward_filter", [x, dy], [((f, c) + tuple(kernel_size), x.dtype)],
                       [a_arr("kernel_size", kernel_size)] + self.conv_attrs(strides, padding, dilations, groups),
                       prefix)

    @staticmethod
    def pool_attrs(kind, kernel, strides, padding, include_pad):
        attrs = [a_arr("kernel_size", kernel), a_arr("strides", strides)]
        if tuple(padding) != (0, 0, 0, 0):
            attrs.append(a_arr("padding", padding))
        if kind == "avg" and include_pad is not None:
            attrs.append(a_bool("count_include_pad", include_pad))
        return attrs

    def pool(self, kind, x, kernel, strides, padding, include_pad=None, prefix=None):
        n, c, h, w = x.shape
        oh = (h + padding[0] + padding[1] - kernel[0]) // strides[0] + 1
        ow = (w + padding[2] + padding[3] - kernel[1]) // strides[1] + 1
        return self.op(f"{kind}_pool2d", [x], [((n, c, oh, ow), x.dtype)],
                       self.pool_attrs(kind, kernel, strides, padding, include_pad), prefix)

    def pool_backward(self, kind, dy, x, kernel, strides, padding, include_pad=None, prefix=None):
        return self.op(f"{kind}_pool2d_backward", [dy, x], [(x.shape, x.dtype)],
                       self.pool_attrs(kind, kernel, strides, padding, include_pad), prefix)

    # -- loss
    def cross_entropy(self, logits, labels, prefix=None):
        return self.op("cross_entropy", [logits, labels], [((), logits.dtype)], prefix=prefix)

    def cross_entropy_backward(self, g, logits, labels, prefix=None):
        return self.op("cross_entropy_backward", [g, logits, labels], [(logits.shape, logits.dtype)],
                       prefix=prefix)


# ----------------------------------------------------------------------------
# The generator: parameters, inputs and layers.


class Param:
    def __init__(self, value, name, init, frozen=False):
        self.value, self.name, self.init, self.frozen = value, name, init, frozen
        self.grads = []
        self.used = False


class Gen:
    def __init__(self, seed):
        self.seed = seed
        self.rng = random.Random(seed * 7919 + 17)
        self.b = Builder()
        self.params = []          # Param, in creation order
        self.data = []            # Binding: inputs and labels
        self.hypers = []          # Binding
        self.meta = {"int_inputs": {}, "param_init": {}, "seed_hypers": [],
                     "adam_params": [], "families": []}
        self.layers_desc = []
        self.dropout_seed = None
        self.names = set()
        self.square_linears = []
        # Variants of an activation (exact GELU for gelu, softplus for
        # sigmoid, ELU for tanh) come from a generator of their own, so the
        # seeds' structure -- every other draw -- is what it was before them.
        self.variant_rng = random.Random(seed * 104729 + 3)

    # -- randomness
    def chance(self, p):
        return self.rng.random() < p

    def pick(self, *choices, weights=None):
        return self.rng.choices(choices, weights=weights)[0]

    def variant(self, kind):
        """`kind`, or the activation it shares a role with (half the time)."""
        other = {"gelu": "gelu_erf", "sigmoid": "softplus", "tanh": "elu"}.get(kind)
        return other if other and self.variant_rng.random() < 0.5 else kind

    def dim(self, lo=2, hi=32):
        options = [d for d in (2, 3, 4, 5, 6, 8, 8, 8, 12, 16, 16, 24, 32) if lo <= d <= hi]
        return self.rng.choice(options or [lo])

    def uname(self, name):
        base, n = name, 1
        while name in self.names:
            name = f"{base}{n}"
            n += 1
        self.names.add(name)
        return name

    # -- arguments
    def param(self, name, shape, init, frozen=False):
        name = self.uname(name)
        v = Value(self.b.fresh(name.replace(".", "_")), shape)
        p = Param(v, name, init, frozen)
        p.used = True
        self.params.append(p)
        if init:
            self.meta["param_init"][name] = init
        return p

    def input(self, name, shape, dtype="f32", role="input", int_range=None):
        name = self.uname(name)
        v = Value(self.b.fresh(name.replace(".", "_")), shape, dtype)
        self.data.append(Binding(v, role, name))
        if int_range is not None:
            self.meta["int_inputs"][name] = int_range
        return v

    def hyper(self, name, dtype="f32"):
        name = self.uname(name)
        v = Value(self.b.fresh(name), (), dtype)
        self.hypers.append(Binding(v, "hyper", name))
        return v

    def grad(self, p, g):
        assert g.shape == p.value.shape, (p.name, g, p.value)
        p.grads.append(g)

    def seed_value(self):
        """The dropout seed: a constant or an i64 hyper argument."""
        if self.dropout_seed is None:
            if self.chance(0.5):
                self.dropout_seed = self.hyper("dropout_seed", "i64")
                self.meta["seed_hypers"].append("dropout_seed")
            else:
                self.dropout_seed = self.b.const(self.rng.randrange(1, 2**40), (), "i64")
        return self.dropout_seed


# ----------------------------------------------------------------------------
# Layers. fwd(g, x) -> y emits the forward ops; bwd(g, dy, need_dx) emits
# the backward ops, records parameter gradients and returns dx (or None).


class Layer:
    has_params = False

    def desc(self):
        return type(self).__name__.lower()


def _lead_dims(v):
    return list(range(v.rank - 1))


class Linear(Layer):
    def __init__(self, g, name, out_dim, bias=True, frozen=False, shared=None):
        self.name, self.out_dim, self.bias, self.frozen = name, out_dim, bias, frozen
        # PyTorch's [out, in] with transpose_rhs, or [in, out] (JAX).
        self.torch_layout = g.chance(0.8) if shared is None else shared.torch_layout
        self.shared = shared
        self.has_params = not frozen

    def desc(self):
        return (f"linear({self.in_dim}->{self.out_dim}{'' if self.bias else ', no bias'}"
                f"{'' if self.torch_layout else ', [in,out]'}{', frozen' if self.frozen else ''}"
                f"{', weight of ' + self.shared.name if self.shared else ''})")

    def fwd(self, g, x):
        b = g.b
        self.x = x
        self.in_dim = x.shape[-1]
        wshape = (self.out_dim, self.in_dim) if self.torch_layout else (self.in_dim, self.out_dim)
        if self.shared is not None:
            self.w = self.shared.w
            assert self.w.value.shape == wshape
        else:
            self.w = g.param(f"{self.name}.weight", wshape, None, self.frozen)
            if self.in_dim == self.out_dim and not self.frozen:
                g.square_linears.append(self)
        y = b.matmul(x, self.w.value, tr=self.torch_layout, prefix=f"{self.name}_mm")
        if self.bias:
            self.bb = g.param(f"{self.name}.bias", (self.out_dim,), "small", self.frozen)
            y = b.add(y, self.bb.value, prefix=self.name)
        return y

    def bwd(self, g, dy, need_dx):
        b, x = g.b, self.x
        if not self.frozen:
            if x.rank == 2:
                dw = b.matmul(dy, x, tl=True, prefix=f"d_{self.name}_w") if self.torch_layout else \
                    b.matmul(x, dy, tl=True, prefix=f"d_{self.name}_w")
            elif g.chance(0.5):
                rows = prod(x.shape[:-1])
                dy2 = b.reshape(dy, (rows, dy.shape[-1]), prefix=f"d_{self.name}_2d")
                x2 = b.reshape(x, (rows, x.shape[-1]), prefix=f"{self.name}_in_2d")
                dw = b.matmul(dy2, x2, tl=True, prefix=f"d_{self.name}_w") if self.torch_layout else \
                    b.matmul(x2, dy2, tl=True, prefix=f"d_{self.name}_w")
            else:
                # Batched over the leading dims, then summed.
                bw = b.matmul(dy, x, tl=True, prefix=f"d_{self.name}_wb") if self.torch_layout else \
                    b.matmul(x, dy, tl=True, prefix=f"d_{self.name}_wb")
                dw = b.reduce(bw, "sum", list(range(bw.rank - 2)), prefix=f"d_{self.name}_w")
            g.grad(self.w, dw)
            if self.bias:
                g.grad(self.bb, b.reduce(dy, "sum", _lead_dims(dy), prefix=f"d_{self.name}_b"))
        if not need_dx:
            return None
        return b.matmul(dy, self.w.value, tr=not self.torch_layout, prefix=f"d_{self.name}_in")


class Activation(Layer):
    def __init__(self, kind):
        self.kind = kind

    def desc(self):
        return self.kind

    def fwd(self, g, x):
        self.x = x
        if self.kind in ("gelu", "sigmoid", "tanh"):
            self.kind = g.variant(self.kind)
        b = g.b
        if self.kind in ("softmax", "log_softmax"):
            self.y = b.op(self.kind, [x], [(x.shape, x.dtype)], [a_i64("dim", -1)], prefix=self.kind)
        elif self.kind == "gelu_erf":
            self.erf = b.unary("erf", b.mul(x, b.const(0.7071067811865476), prefix="gelu_xs2"),
                               prefix="gelu_erf")
            cdf = b.mul(b.add(self.erf, b.const(1.0), prefix="gelu_1perf"), b.const(0.5),
                        prefix="gelu_cdf")
            self.cdf, self.y = cdf, b.mul(x, cdf, prefix="gelu_exact")
        elif self.kind == "softplus":
            self.y = b.unary("log1p", b.unary("exp", x, prefix="softplus_exp"), prefix="softplus")
        elif self.kind == "elu":
            positive = b.compare(x, b.const(0.0), "gt", prefix="elu_pos")
            self.positive = positive
            self.y = b.select(positive, x, b.unary("expm1", x, prefix="elu_expm1"), prefix="elu")
        else:
            self.y = b.unary(self.kind, x, prefix=self.kind)
        return self.y

    def bwd(self, g, dy, need_dx):
        if not need_dx:
            return None
        b, x, y = g.b, self.x, self.y
        one = b.const(1.0)
        if self.kind == "softmax":
            return b.softmax_backward(dy, y, -1, prefix="d_softmax")
        if self.kind == "log_softmax":
            return b.op("log_softmax_backward", [dy, y], [(y.shape, y.dtype)], [a_i64("dim", -1)],
                        prefix="d_log_softmax")
        if self.kind == "relu":
            zero = b.const(0.0)
            mask = b.compare(x if g.chance(0.5) else y, zero, "gt", prefix="relu_mask")
            return b.select(mask, dy, zero, prefix="d_relu")
        if self.kind == "tanh":
            y2 = b.mul(y, y, prefix="tanh_sq")
            return b.mul(dy, b.sub(one, y2, prefix="tanh_grad"), prefix="d_tanh")
        if self.kind == "sigmoid":
            om = b.sub(one, y, prefix="sig_1my")
            return b.mul(dy, b.mul(y, om, prefix="sig_grad"), prefix="d_sigmoid")
        if self.kind == "gelu_erf":
            # Phi(x) + x phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi).
            x2 = b.mul(x, x, prefix="gelu_x2")
            pdf = b.mul(b.unary("exp", b.mul(x2, b.const(-0.5), prefix="gelu_mx2"),
                                prefix="gelu_e"), b.const(0.3989422804014327), prefix="gelu_pdf")
            grad = b.add(self.cdf, b.mul(x, pdf, prefix="gelu_xpdf"), prefix="gelu_grad")
            return b.mul(dy, grad, prefix="d_gelu_exact")
        if self.kind == "softplus":
            return b.mul(dy, b.unary("sigmoid", x, prefix="softplus_sig"), prefix="d_softplus")
        if self.kind == "elu":
            inner = b.mul(dy, b.add(y, one, prefix="elu_yp1"), prefix="elu_dneg")
            return b.select(self.positive, dy, inner, prefix="d_elu")
        # gelu, tanh approximation (as examples/transformer_block.mlir).
        half, a, c, a3 = b.const(0.5), b.const(0.044715), b.const(0.7978845608), b.const(0.134145)
        x2 = b.mul(x, x, prefix="gelu_x2")
        x3 = b.mul(x2, x, prefix="gelu_x3")
        inner = b.add(x, b.mul(x3, a, prefix="gelu_ax3"), prefix="gelu_inner")
        t = b.unary("tanh", b.mul(inner, c, prefix="gelu_u"), prefix="gelu_t")
        left = b.mul(b.add(t, one, prefix="gelu_1pt"), half, prefix="gelu_left")
        sech2 = b.sub(one, b.mul(t, t, prefix="gelu_t2"), prefix="gelu_sech2")
        du = b.mul(b.add(b.mul(x2, a3, prefix="gelu_3ax2"), one, prefix="gelu_dinner"), c, prefix="gelu_du")
        right = b.mul(b.mul(b.mul(x, sech2, prefix="gelu_xs"), du, prefix="gelu_xsdu"), half,
                      prefix="gelu_right")
        return b.mul(dy, b.add(left, right, prefix="gelu_grad"), prefix="d_gelu")


class LayerNorm(Layer):
    has_params = True

    def __init__(self, g, name, axis_from_end=1):
        self.name, self.k = name, axis_from_end
        self.eps = None if g.chance(0.5) else g.pick(1e-5, 1e-3)

    def desc(self):
        return f"layer_norm(axis -{self.k})"

    def fwd(self, g, x):
        self.axis = x.rank - self.k
        shape = x.shape[self.axis:]
        self.x = x
        self.w = g.param(f"{self.name}.weight", shape, "norm_scale")
        self.bb = g.param(f"{self.name}.bias", shape, "small")
        self.y, self.mean, self.rstd = g.b.layer_norm(x, self.w.value, self.bb.value, self.axis, self.eps,
                                                      prefix=self.name)
        return self.y

    def bwd(self, g, dy, need_dx):
        dx, dw, db = g.b.layer_norm_backward(dy, self.x, self.mean, self.rstd, self.w.value, self.axis,
                                             prefix=f"d_{self.name}")
        g.grad(self.w, dw)
        g.grad(self.bb, db)
        return dx if need_dx else None


class BatchNorm(Layer):
    has_params = True

    def __init__(self, g, name):
        self.name = name
        self.eps = None if g.chance(0.5) else 1e-3

    def desc(self):
        return "batch_norm"

    def fwd(self, g, x):
        c = (x.shape[1],)
        self.x = x
        self.w = g.param(f"{self.name}.weight", c, "norm_scale")
        self.bb = g.param(f"{self.name}.bias", c, "small")
        y, self.mean, self.var = g.b.batch_norm(x, self.w.value, self.bb.value, self.eps, prefix=self.name)
        return y

    def bwd(self, g, dy, need_dx):
        dx, dw, db = g.b.batch_norm_backward(dy, self.x, self.mean, self.var, self.w.value, self.eps,
                                             prefix=f"d_{self.name}")
        g.grad(self.w, dw)
        g.grad(self.bb, db)
        return dx if need_dx else None


class Dropout(Layer):
    def __init__(self, g):
        self.rate = g.pick(0.1, 0.25, 0.5)

    def desc(self):
        return f"dropout({self.rate})"

    def fwd(self, g, x):
        self.seed = g.seed_value()
        return g.b.dropout(x, self.seed, self.rate, prefix="drop")

    def bwd(self, g, dy, need_dx):
        return g.b.dropout(dy, self.seed, self.rate, prefix="d_drop") if need_dx else None


class Gain(Layer):
    """y = x * w with w a [F] parameter, or a scalar parameter."""
    has_params = True

    def __init__(self, g, name, scalar):
        self.name, self.scalar = name, scalar

    def desc(self):
        return "scale(scalar param)" if self.scalar else "gain([F] param)"

    def fwd(self, g, x):
        self.x = x
        shape = () if self.scalar else (x.shape[-1],)
        self.w = g.param(f"{self.name}.{'scale' if self.scalar else 'gain'}", shape, "one")
        return g.b.mul(x, self.w.value, prefix=self.name) if g.chance(0.5) else \
            g.b.mul(self.w.value, x, prefix=self.name)

    def bwd(self, g, dy, need_dx):
        b = g.b
        p = b.mul(dy, self.x, prefix=f"d_{self.name}_p")
        dims = list(range(p.rank)) if self.scalar else _lead_dims(p)
        g.grad(self.w, b.reduce(p, "sum", dims, prefix=f"d_{self.name}_w"))
        return b.mul(dy, self.w.value, prefix=f"d_{self.name}_in") if need_dx else None


class AddTable(Layer):
    """y = x + t, t of x's shape without the batch dim: a parameter
    (positional embeddings) or an input without a batch dim."""

    def __init__(self, g, name, as_input):
        self.name, self.as_input = name, as_input
        self.has_params = not as_input

    def desc(self):
        return f"add [{'input without batch dim' if self.as_input else 'param'}] {self.shape}"

    def fwd(self, g, x):
        self.shape = x.shape[1:]
        if self.as_input:
            t = g.input(f"{self.name}", self.shape)
            self.p = None
        else:
            self.p = g.param(f"{self.name}.weight", self.shape, "small" if len(self.shape) == 1 else None)
            t = self.p.value
        return g.b.add(x, t, prefix=self.name) if g.chance(0.5) else g.b.add(t, x, prefix=self.name)

    def bwd(self, g, dy, need_dx):
        if self.p is not None:
            g.grad(self.p, g.b.reduce(dy, "sum", [0], prefix=f"d_{self.name}"))
        return dy if need_dx else None


class InputProjection(Layer):
    """y = x @ M with M an input [F, F2] without a batch dim (a fixed
    projection fed as data)."""

    def __init__(self, out_dim):
        self.out_dim = out_dim

    def desc(self):
        return f"matmul by an input without batch dim [{self.in_dim}, {self.out_dim}]"

    def fwd(self, g, x):
        self.in_dim = x.shape[-1]
        self.m = g.input("proj", (self.in_dim, self.out_dim))
        return g.b.matmul(x, self.m, prefix="proj")

    def bwd(self, g, dy, need_dx):
        return g.b.matmul(dy, self.m, tr=True, prefix="d_proj") if need_dx else None


class Shuffle(Layer):
    """[..., a*b] -> [..., a, b] -> [..., b, a] -> [..., a*b]."""

    def __init__(self, a, c):
        self.a, self.c = a, c

    def desc(self):
        return f"shuffle({self.a}x{self.c})"

    def fwd(self, g, x):
        b = g.b
        lead = x.shape[:-1]
        r = b.reshape(x, lead + (self.a, self.c), prefix="shuf_split")
        n = r.rank
        perm = list(range(n - 2)) + [n - 1, n - 2]
        t = b.transpose(r, perm, prefix="shuf_t")
        self.perm = perm
        return b.reshape(t, x.shape, prefix="shuf")

    def bwd(self, g, dy, need_dx):
        if not need_dx:
            return None
        b = g.b
        lead = dy.shape[:-1]
        r = b.reshape(dy, lead + (self.c, self.a), prefix="d_shuf_split")
        t = b.transpose(r, self.perm, prefix="d_shuf_t")
        return b.reshape(t, dy.shape, prefix="d_shuf")


class TokenMix(Layer):
    """[B, S, F] -> [B, F, S] -> linear over S -> [B, F, S2] -> [B, S2, F]."""
    has_params = True

    def __init__(self, g, name, out_len):
        self.lin = Linear(g, name, out_len, bias=g.chance(0.5))

    def desc(self):
        return f"token_mix({self.lin.desc()})"

    def fwd(self, g, x):
        t = g.b.transpose(x, [0, 2, 1], prefix="mix_t")
        y = self.lin.fwd(g, t)
        return g.b.transpose(y, [0, 2, 1], prefix="mix")

    def bwd(self, g, dy, need_dx):
        dt = g.b.transpose(dy, [0, 2, 1], prefix="d_mix_t")
        dx = self.lin.bwd(g, dt, need_dx)
        return g.b.transpose(dx, [0, 2, 1], prefix="d_mix") if need_dx else None


class Reshape(Layer):
    def __init__(self, shape_fn, label):
        self.shape_fn, self.label = shape_fn, label

    def desc(self):
        return self.label

    def fwd(self, g, x):
        self.in_shape = x.shape
        return g.b.reshape(x, self.shape_fn(x.shape), prefix="resh")

    def bwd(self, g, dy, need_dx):
        return g.b.reshape(dy, self.in_shape, prefix="d_resh") if need_dx else None


class Rotate(Layer):
    """Features rotated by k: concat(x[..., k:], x[..., :k]) (slice, concat)."""

    def __init__(self, k):
        self.k = k

    def desc(self):
        return f"rotate({self.k}) (slice, concat)"

    def fwd(self, g, x):
        return rotate(g, x, self.k, "rot")

    def bwd(self, g, dy, need_dx):
        return rotate(g, dy, dy.shape[-1] - self.k, "d_rot") if need_dx else None


def rotate(g, x, k, prefix):
    b, r = g.b, x.rank
    hi = b.slice(x, [0] * (r - 1) + [k], list(x.shape), prefix=prefix + "_hi")
    lo = b.slice(x, [0] * r, list(x.shape[:-1]) + [k], prefix=prefix + "_lo")
    return b.concat([hi, lo], r - 1, prefix=prefix)


class SeqPool(Layer):
    """[B, S, F] -> [B, F]: the mean (or sum) over the sequence."""

    def __init__(self, kind):
        self.kind = kind

    def desc(self):
        return f"sequence {self.kind} pool"

    def fwd(self, g, x):
        self.shape = x.shape
        return g.b.reduce(x, self.kind, [1], prefix=f"seq{self.kind}")

    def bwd(self, g, dy, need_dx):
        if not need_dx:
            return None
        b = g.b
        d = b.broadcast(dy, [0, 2], self.shape, prefix="d_seqpool_b")
        if self.kind == "mean":
            d = b.mul(d, b.const(1.0 / self.shape[1]), prefix="d_seqpool")
        return d


class Sequential(Layer):
    def __init__(self, layers):
        self.layers = layers
        self.has_params = any(l.has_params for l in layers)

    def desc(self):
        return ", ".join(l.desc() for l in self.layers)

    def fwd(self, g, x):
        for l in self.layers:
            x = l.fwd(g, x)
        return x

    def bwd(self, g, dy, need_dx):
        for i in reversed(range(len(self.layers))):
            nd = need_dx or any(l.has_params for l in self.layers[:i])
            dy = self.layers[i].bwd(g, dy, nd)
            if dy is None:
                return None
        return dy


class Residual(Layer):
    def __init__(self, branch):
        self.branch = branch
        self.has_params = branch.has_params

    def desc(self):
        return f"residual[{self.branch.desc()}]"

    def fwd(self, g, x):
        y = self.branch.fwd(g, x)
        return g.b.add(x, y, prefix="res") if g.chance(0.5) else g.b.add(y, x, prefix="res")

    def bwd(self, g, dy, need_dx):
        db = self.branch.bwd(g, dy, need_dx)
        return g.b.add(dy, db, prefix="d_res") if need_dx else None


class Attention(Layer):
    has_params = True

    def __init__(self, g, name, hidden, heads):
        self.name, self.h, self.nh = name, hidden, heads
        bias = g.chance(0.7)
        # No bias for k: softmax over the keys ignores it, so its gradient
        # would be zero in exact arithmetic (rounding noise, which Adam
        # blows up to a full step).
        self.q, self.k, self.v, self.o = (Linear(g, f"{name}.{p}", hidden, bias and p != "k") for p in "qkvo")
        for l in (self.q, self.k, self.v, self.o):
            l.torch_layout = True

    def desc(self):
        return f"attention(h={self.h}, heads={self.nh})"

    def split(self, g, t, prefix):
        if self.nh == 1:
            return t
        bsz, s, _ = t.shape
        r = g.b.reshape(t, (bsz, s, self.nh, self.h // self.nh), prefix=prefix + "_split")
        return g.b.transpose(r, [0, 2, 1, 3], prefix=prefix + "_heads")

    def merge(self, g, t, prefix):
        if self.nh == 1:
            return t
        bsz, _, s, hd = t.shape
        r = g.b.transpose(t, [0, 2, 1, 3], prefix=prefix + "_merged")
        return g.b.reshape(r, (bsz, s, self.h), prefix=prefix)

    def fwd(self, g, x):
        b, n = g.b, self.name
        self.qh = self.split(g, self.q.fwd(g, x), f"{n}_q")
        self.kh = self.split(g, self.k.fwd(g, x), f"{n}_k")
        self.vh = self.split(g, self.v.fwd(g, x), f"{n}_v")
        self.scale = b.const(1.0 / (self.h // self.nh) ** 0.5)
        qk = b.matmul(self.qh, self.kh, tr=True, prefix=f"{n}_qk")
        scores = b.mul(qk, self.scale, prefix=f"{n}_scores")
        self.probs = b.softmax(scores, -1, prefix=f"{n}_probs")
        ctx = self.merge(g, b.matmul(self.probs, self.vh, prefix=f"{n}_ctxh"), f"{n}_ctx")
        return self.o.fwd(g, ctx)

    def bwd(self, g, dy, need_dx):
        b, n = g.b, self.name
        dctx = self.split(g, self.o.bwd(g, dy, True), f"d_{n}_ctx")
        dprobs = b.matmul(dctx, self.vh, tr=True, prefix=f"d_{n}_probs")
        dvh = b.matmul(self.probs, dctx, tl=True, prefix=f"d_{n}_vh")
        dscores = b.softmax_backward(dprobs, self.probs, -1, prefix=f"d_{n}_scores")
        dqk = b.mul(dscores, self.scale, prefix=f"d_{n}_qk")
        dqh = b.matmul(dqk, self.kh, prefix=f"d_{n}_qh")
        dkh = b.matmul(dqk, self.qh, tl=True, prefix=f"d_{n}_kh")
        dx = None
        for lin, dh, p in ((self.q, dqh, "q"), (self.k, dkh, "k"), (self.v, dvh, "v")):
            d = lin.bwd(g, self.merge(g, dh, f"d_{n}_{p}"), need_dx)
            if need_dx:
                dx = d if dx is None else b.add(dx, d, prefix=f"d_{n}_in")
        return dx


class Embedding(Layer):
    has_params = True

    def __init__(self, g, name, vocab, hidden, ids):
        self.name, self.vocab, self.hidden, self.ids = name, vocab, hidden, ids

    def desc(self):
        return f"embedding({self.vocab}x{self.hidden}, ids {list(self.ids.shape)} {self.ids.dtype})"

    def fwd(self, g, x):
        self.table = g.param(f"{self.name}.weight", (self.vocab, self.hidden), None)
        return g.b.gather(self.table.value, self.ids, prefix=self.name)

    def bwd(self, g, dy, need_dx):
        zeros = g.b.const(0.0, self.table.value.shape)
        g.grad(self.table, g.b.scatter_add(zeros, self.ids, dy, prefix=f"d_{self.name}"))
        return None


class Conv(Layer):
    has_params = True

    def __init__(self, g, name, cout, kernel, strides, padding, dilations, groups, bias):
        self.name, self.cout, self.kernel = name, cout, kernel
        self.strides, self.padding, self.dilations, self.groups = strides, padding, dilations, groups
        self.bias = bias  # None, "broadcast" or "f11"

    def desc(self):
        return (f"conv2d({self.cin}->{self.cout}, k={list(self.kernel)}, s={list(self.strides)}, "
                f"p={list(self.padding)}, d={list(self.dilations)}, g={self.groups}, bias={self.bias})")

    def attrs(self):
        return self.strides, self.padding, self.dilations, self.groups

    def fwd(self, g, x):
        b = g.b
        self.x, self.cin = x, x.shape[1]
        self.w = g.param(f"{self.name}.weight", (self.cout, self.cin // self.groups) + tuple(self.kernel), None)
        y = b.conv2d(x, self.w.value, *self.attrs(), prefix=f"{self.name}_conv")
        if self.bias == "broadcast":
            self.bb = g.param(f"{self.name}.bias", (self.cout,), "small")
            bc = b.broadcast(self.bb.value, [1], y.shape, prefix=f"{self.name}_bias")
            y = b.add(y, bc, prefix=self.name)
        elif self.bias == "f11":
            self.bb = g.param(f"{self.name}.bias", (self.cout, 1, 1), "small")
            y = b.add(y, self.bb.value, prefix=self.name)
        return y

    def bwd(self, g, dy, need_dx):
        b = g.b
        g.grad(self.w, b.conv2d_backward_filter(self.x, dy, self.kernel, *self.attrs(), prefix=f"d_{self.name}_w"))
        if self.bias == "broadcast":
            g.grad(self.bb, b.reduce(dy, "sum", [0, 2, 3], prefix=f"d_{self.name}_b"))
        elif self.bias == "f11":
            r = b.reduce(dy, "sum", [0, 2, 3], keepdims=True, prefix=f"d_{self.name}_bk")
            g.grad(self.bb, b.reshape(r, (self.cout, 1, 1), prefix=f"d_{self.name}_b"))
        if not need_dx:
            return None
        return b.conv2d_backward_input(dy, self.w.value, self.x.shape[2:], *self.attrs(),
                                       prefix=f"d_{self.name}_in")


class Pool(Layer):
    def __init__(self, kind, kernel, strides, padding, include_pad):
        self.kind, self.kernel, self.strides = kind, kernel, strides
        self.padding, self.include_pad = padding, include_pad

    def desc(self):
        return f"{self.kind}_pool(k={list(self.kernel)}, s={list(self.strides)}, p={list(self.padding)})"

    def fwd(self, g, x):
        self.x = x
        return g.b.pool(self.kind, x, self.kernel, self.strides, self.padding, self.include_pad,
                        prefix=f"{self.kind}pool")

    def bwd(self, g, dy, need_dx):
        if not need_dx:
            return None
        return g.b.pool_backward(self.kind, dy, self.x, self.kernel, self.strides, self.padding,
                                 self.include_pad, prefix=f"d_{self.kind}pool")


# ----------------------------------------------------------------------------
# Losses: fwd(g, h) -> scalar loss; bwd(g) -> dh.


class CrossEntropy:
    def __init__(self, g, label_dtype):
        self.label_dtype = label_dtype

    def desc(self):
        return f"cross_entropy(logits {list(self.logits.shape)}, labels {self.label_dtype})"

    def fwd(self, g, logits):
        self.logits = logits
        self.labels = g.input("labels", logits.shape[:-1], self.label_dtype, role="label")
        return g.b.cross_entropy(logits, self.labels, prefix="ce")

    def bwd(self, g, dloss):
        return g.b.cross_entropy_backward(dloss, self.logits, self.labels, prefix="d_logits")


class MSE:
    def __init__(self, g):
        self.via_sum = g.chance(0.5)

    def desc(self):
        return f"mse(pred {list(self.pred.shape)}{', sum * 1/N' if self.via_sum else ', mean'})"

    def fwd(self, g, pred):
        b = g.b
        self.pred = pred
        target = g.input("target", pred.shape)
        self.diff = b.sub(pred, target, prefix="mse_diff")
        sq = b.mul(self.diff, self.diff, prefix="mse_sq")
        self.n = prod(pred.shape)
        if self.via_sum:
            s = b.reduce(sq, "sum", list(range(sq.rank)), prefix="mse_sum")
            return b.mul(s, b.const(1.0 / self.n), prefix="mse")
        return b.reduce(sq, "mean", list(range(sq.rank)), prefix="mse")

    def bwd(self, g, dloss):
        b = g.b
        d = b.mul(self.diff, b.const(2.0 / self.n), prefix="d_mse_s")
        return b.mul(d, dloss, prefix="d_pred")


# ----------------------------------------------------------------------------
# Model families.


def dense_block(g, x_shape, name, allow_attention):
    """A random layer list for an activation of shape x_shape (rank 2 or 3)
    whose output has the same feature dim (so it can be a residual branch)."""
    f = x_shape[-1]
    kind = g.pick("mlp", "ln_linear", "act_linear", "attention", "gain",
                  weights=[4, 2, 2, 3 if allow_attention else 0, 1])
    if kind == "mlp":
        m = g.dim(2, 32)
        return [Linear(g, f"{name}.fc1", m, g.chance(0.8)), Activation(g.pick("relu", "gelu", "tanh")),
                Linear(g, f"{name}.fc2", f, g.chance(0.8))]
    if kind == "ln_linear":
        return [LayerNorm(g, f"{name}.ln"), Linear(g, f"{name}.fc", f, g.chance(0.7))]
    if kind == "act_linear":
        return [Activation(g.pick("relu", "gelu", "tanh", "sigmoid")), Linear(g, f"{name}.fc", f)]
    if kind == "attention":
        heads = [h for h in (1, 2, 4) if f % h == 0]
        layers = [Attention(g, f"{name}.attn", f, g.rng.choice(heads))]
        if g.chance(0.5):
            layers.insert(0, LayerNorm(g, f"{name}.ln"))
        return layers
    return [Gain(g, f"{name}.g", g.chance(0.3))]


def zero_gradient_before(layers, norm):
    """True when appending `norm` would give a parameter of the layers
    before it a zero gradient in exact arithmetic (so only rounding noise,
    which differs between runs and which Adam normalizes to a full step):
    a batch norm removes any offset or per-feature scale that is the same
    for every sample (a bias, a gain, a positional table) that reaches it
    through affine layers; a layer norm removes a scalar scale that reaches
    it through linear layers. The caller puts a nonlinearity in between."""
    if isinstance(norm, BatchNorm):
        for l in reversed(layers):
            if isinstance(l, (Linear, Conv)) and l.bias and not getattr(l, "frozen", False):
                return True
            if isinstance(l, (Gain, AddTable)) and l.has_params:
                return True
            if isinstance(l, Residual):
                return True
            if not isinstance(l, (Linear, Conv, Reshape, Shuffle, Rotate, InputProjection, AddTable, Gain,
                                  TokenMix, SeqPool, Pool)):
                return False
        return False
    for l in reversed(layers):
        if isinstance(l, Gain) and l.scalar:
            return True
        if isinstance(l, Residual):
            return True
        if isinstance(l, (Linear, TokenMix)) and not getattr(l, "bias", getattr(getattr(l, "lin", None), "bias", False)):
            continue
        if not isinstance(l, (Reshape, Shuffle, Rotate, Dropout, InputProjection, SeqPool, Pool)):
            return False
    return False


def body_layer(g, shape, i):
    """One random layer for an activation of `shape` (rank 2: [B, F],
    rank 3: [B, S, F]); returns a Layer (not yet applied)."""
    name = f"layers.{i}"  # a numbered module, as PyTorch names them
    rank = len(shape)
    f = shape[-1]
    choices = {
        "linear": 6, "act": 4, "residual": 4, "layer_norm": 2, "dropout": 1.5, "gain": 1,
        "shuffle": 1 if f >= 4 and any(f % a == 0 for a in (2, 3)) else 0,
        "add_table": 1.5, "batch_norm": 1 if rank == 2 else 0, "input_proj": 0.5,
        "token_mix": 1 if rank == 3 else 0, "attention": 2 if rank == 3 else 0,
        "frozen_linear": 0.5, "rotate": 0.7 if f >= 2 else 0, "softmax": 0.5,
        "seq_pool": 0.7 if rank == 3 else 0,
        "shared_linear": 3 if any(l.in_dim == f for l in g.square_linears) else 0,
    }
    kind = g.rng.choices(list(choices), weights=list(choices.values()))[0]
    if kind == "linear":
        return Linear(g, name, g.dim(2, 32), bias=g.chance(0.75))
    if kind == "shared_linear":
        prev = g.rng.choice([l for l in g.square_linears if l.in_dim == f])
        return Linear(g, f"{name}.shared", f, bias=g.chance(0.5), shared=prev)
    if kind == "rotate":
        return Rotate(g.rng.randrange(1, f))
    if kind == "softmax":
        return Activation(g.pick("softmax", "log_softmax"))
    if kind == "seq_pool":
        return SeqPool(g.pick("mean", "sum"))
    if kind == "frozen_linear":
        return Linear(g, f"{name}.frozen", g.dim(2, 32), bias=g.chance(0.5), frozen=True)
    if kind == "act":
        return Activation(g.pick("relu", "gelu", "tanh", "sigmoid", weights=[3, 2, 2, 1]))
    if kind == "residual":
        return Residual(Sequential(dense_block(g, shape, name, rank == 3)))
    if kind == "layer_norm":
        k = 2 if rank == 3 and g.chance(0.15) else 1
        return LayerNorm(g, f"{name}.ln", k)
    if kind == "dropout":
        return Dropout(g)
    if kind == "gain":
        return Gain(g, name, g.chance(0.4))
    if kind == "shuffle":
        a = g.rng.choice([a for a in (2, 3, 4) if f % a == 0 and f // a >= 2] or [2])
        return Shuffle(a, f // a)
    if kind == "input_proj":
        return InputProjection(g.dim(2, 32))
    if kind == "add_table":
        return AddTable(g, f"{name}.pos", as_input=g.chance(0.4))
    if kind == "batch_norm":
        return BatchNorm(g, f"{name}.bn")
    if kind == "token_mix":
        return TokenMix(g, f"{name}.mix", shape[1] if g.chance(0.7) else g.dim(2, 8))
    if kind == "attention":
        heads = [h for h in (1, 2, 4) if f % h == 0]
        return Attention(g, f"{name}.attn", f, g.rng.choice(heads))
    raise AssertionError(kind)


def batch_size(g):
    return g.pick(1, 2, 3, 4, 6, 8, 12, weights=[0.3, 1.5, 0.6, 4, 1, 4, 0.6])


def seq_len(g):
    return g.pick(2, 3, 4, 5, 6, 8, weights=[2, 1, 3, 0.5, 1, 2])


def build(g):
    """Builds the model of g's seed: returns (layers, x, loss layer)."""
    family = g.pick("dense", "seq", "tokens", "image", weights=[3, 3, 3, 2])
    g.meta["families"].append(family)
    bsz = batch_size(g)
    layers = []
    if family == "dense":
        x = g.input("x", (bsz, g.dim(2, 32)))
        n = g.pick(1, 2, 3, 4, weights=[1, 3, 3, 2])
    elif family == "seq":
        x = g.input("x", (bsz, seq_len(g), g.dim(2, 32)))
        n = g.pick(1, 2, 3, 4, weights=[1, 3, 3, 2])
    elif family == "tokens":
        vocab, hidden = g.dim(4, 32) + g.pick(0, 1, 3, weights=[3, 1, 1]), g.dim(2, 32)
        flat = g.chance(0.2)
        ids_shape = (bsz,) if flat else (bsz, seq_len(g))
        ids = g.input("ids", ids_shape, g.pick("i32", "i64"), int_range=vocab)
        emb = Embedding(g, "emb", vocab, hidden, ids)
        layers.append(emb)
        x = None
        if not flat and g.chance(0.5):
            layers.append(AddTable(g, "pos", as_input=g.chance(0.4)))
        n = g.pick(0, 1, 2, 3, weights=[1, 3, 3, 1])
    else:
        c = g.pick(1, 2, 3, 4)
        hw = (g.pick(4, 5, 6, 8), g.pick(4, 5, 6, 8))
        x = g.input("x", (bsz, c) + hw)
        for ci in range(g.pick(1, 2)):
            cout = g.pick(2, 3, 4, 6, 8)
            cin = c
            groups = g.rng.choice([gr for gr in (1, 2, 3) if cin % gr == 0 and cout % gr == 0])
            if g.chance(0.5):
                groups = 1
            k = (g.pick(1, 2, 3), g.pick(1, 2, 3))
            strides = (1, 1) if g.chance(0.6) else (g.pick(1, 2), g.pick(1, 2))
            padding = (0, 0, 0, 0) if g.chance(0.4) else tuple(g.pick(0, 1) for _ in range(4))
            dil = (1, 1) if g.chance(0.8) else (g.pick(1, 2), g.pick(1, 2))
            eh = hw[0] + padding[0] + padding[1] - dil[0] * (k[0] - 1)
            ew = hw[1] + padding[2] + padding[3] - dil[1] * (k[1] - 1)
            if eh < 1 or ew < 1:
                k, dil = (1, 1), (1, 1)
            conv = Conv(g, f"conv{ci}", cout, k, strides, padding, dil, groups,
                        g.pick(None, "broadcast", "f11"))
            layers.append(conv)
            oh, ow = Builder.conv_out(hw[0], hw[1], k[0], k[1], strides, padding, dil)
            c, hw = cout, (oh, ow)
            extra = g.pick("relu", "bn_relu", "pool", "none", weights=[3, 1, 2, 1])
            if extra in ("bn_relu",):
                bn = BatchNorm(g, f"conv{ci}.bn")
                if zero_gradient_before(layers, bn):
                    conv.bias = None  # as frameworks do before a batch norm
                layers.append(bn)
            if extra in ("relu", "bn_relu", "pool"):
                layers.append(Activation("relu"))
            if extra == "pool" and min(hw) >= 2:
                kind = g.pick("max", "avg")
                kern = (2, 2) if g.chance(0.7) else (g.pick(1, 2), g.pick(2, 3 if min(hw) >= 3 else 2))
                pstr = (2, 2) if g.chance(0.6) else (1, 1)
                pad = (0, 0, 0, 0) if g.chance(0.7) or min(kern) < 2 else (1, 0, 1, 0)
                layers.append(Pool(kind, kern, pstr, pad, g.pick(None, True, False) if kind == "avg" else None))
                oh = (hw[0] + pad[0] + pad[1] - kern[0]) // pstr[0] + 1
                ow = (hw[1] + pad[2] + pad[3] - kern[1]) // pstr[1] + 1
                hw = (oh, ow)
        layers.append(Reshape(lambda s: (s[0], prod(s[1:])), "flatten"))
        n = g.pick(0, 1, 2)
    # Apply the stem, then add body layers one at a time (their shapes
    # depend on the current activation).
    h = x
    for l in layers:
        h = l.fwd(g, h)
    for i in range(n):
        if h.rank == 2 and h.shape[-1] >= 4 and g.chance(0.08):
            f = h.shape[-1]
            a = g.rng.choice([a for a in (2, 3, 4) if f % a == 0] or [1])
            if a > 1:
                l = Reshape(lambda s, a=a: (s[0], a, s[1] // a), f"unflatten(->[B, {a}, {f // a}])")
                layers.append(l)
                h = l.fwd(g, h)
                continue
        if h.rank == 3 and g.chance(0.08):
            l = Reshape(lambda s: (s[0], s[1] * s[2]), "flatten")
            layers.append(l)
            h = l.fwd(g, h)
            continue
        l = body_layer(g, h.shape, i)
        if isinstance(l, (BatchNorm, LayerNorm)) and zero_gradient_before(layers, l):
            act = Activation("tanh")
            layers.append(act)
            h = act.fwd(g, h)
        layers.append(l)
        h = l.fwd(g, h)
    # Head and loss.
    emb = layers[0] if layers and isinstance(layers[0], Embedding) else None
    if emb is not None and h.shape[-1] == emb.hidden and g.chance(0.5):
        head = TiedHead(emb)
        h = head.fwd(g, h)
        loss = CrossEntropy(g, g.pick("i32", "i64"))
    elif g.chance(0.75):
        head = Linear(g, "head", g.dim(2, 16), bias=g.chance(0.8))
        h = head.fwd(g, h)
        loss = CrossEntropy(g, g.pick("i32", "i64"))
    else:
        head = Linear(g, "head", g.dim(1, 8), bias=g.chance(0.8))
        h = head.fwd(g, h)
        loss = MSE(g)
    layers.append(head)
    return layers, x, loss, h


class TiedHead(Layer):
    """logits = h @ table^T with the embedding's table (tied weights)."""
    has_params = True

    def __init__(self, emb):
        self.emb = emb

    def desc(self):
        return "tied LM head (embedding table)"

    def fwd(self, g, h):
        self.h = h
        return g.b.matmul(h, self.emb.table.value, tr=True, prefix="tied_logits")

    def bwd(self, g, dy, need_dx):
        b = g.b
        rows = prod(dy.shape[:-1])
        dy2 = b.reshape(dy, (rows, dy.shape[-1]), prefix="d_tied_2d") if dy.rank > 2 else dy
        h2 = b.reshape(self.h, (rows, self.h.shape[-1]), prefix="tied_in_2d") if dy.rank > 2 else self.h
        g.grad(self.emb.table, b.matmul(dy2, h2, tl=True, prefix="d_tied_w"))
        return b.matmul(dy, self.emb.table.value, prefix="d_tied_in") if need_dx else None


# ----------------------------------------------------------------------------
# Optimizers.


def make_optimizer(g):
    kind = g.pick("sgd", "adam", "adamw", weights=[4, 2, 3])
    cfg = {"kind": kind}
    if kind == "sgd":
        cfg["momentum"] = g.pick(0.0, 0.9, 0.5, weights=[1, 2, 1])
        cfg["nesterov"] = cfg["momentum"] > 0 and g.chance(0.3)
        cfg["weight_decay"] = g.pick(0.0, 1e-4, 0.01, weights=[2, 1, 1])
    else:
        cfg["beta1"] = g.pick(None, 0.9, 0.8)
        cfg["beta2"] = g.pick(None, 0.999, 0.99)
        cfg["epsilon"] = g.pick(None, 1e-8, 1e-6)
        cfg["weight_decay"] = g.pick(None, 0.0, 0.01, 0.1)
        cfg["step_dtype"] = g.pick("f32", "i64", weights=[3, 1])
    # Parameter groups: no weight decay for vectors (sometimes).
    cfg["no_decay_vectors"] = g.chance(0.3)
    return cfg


def apply_optimizer(g, cfg, p, grad, lr, state_args, state_results):
    b = g.b
    kind = cfg["kind"]
    vector = p.value.rank <= 1
    wd = cfg["weight_decay"]
    if cfg["no_decay_vectors"] and vector and wd is not None:
        wd = 0.0
    pname = p.name
    sn = p.value.name

    def state(suffix, shape, dtype="f32"):
        name = f"{pname}.{suffix}"
        v = Value(b.fresh(f"{sn}_{suffix}"), shape, dtype)
        state_args.append(Binding(v, "opt_state", name))
        return v, name

    if kind == "sgd":
        attrs = []
        operands = [p.value, grad, lr]
        res = [(p.value.shape, "f32")]
        names = []
        if cfg["momentum"] > 0:
            buf, bn = state("momentum_buffer", p.value.shape)
            operands.append(buf)
            res.append((p.value.shape, "f32"))
            names.append(bn)
            attrs.append(a_f64("momentum", cfg["momentum"]))
            if cfg["nesterov"]:
                attrs.append(a_unit("nesterov"))
        if wd:
            attrs.append(a_f64("weight_decay", wd))
        out = b.op("sgd", operands, res, attrs, prefix=f"{sn}_new")
        out = out if isinstance(out, list) else [out]
        for v, n in zip(out[1:], names):
            state_results.append(Binding(v, "opt_state", n))
        return out[0]
    m, mn = state("exp_avg", p.value.shape)
    v, vn = state("exp_avg_sq", p.value.shape)
    s, sname = state("step", (), cfg["step_dtype"])
    g.meta["adam_params"].append(pname)
    attrs = []
    for key in ("beta1", "beta2", "epsilon"):
        if cfg[key] is not None:
            attrs.append(a_f64(key, cfg[key]))
    if wd is not None:
        attrs.append(a_f64("weight_decay", wd))
    outs = b.op(kind, [p.value, grad, m, v, s, lr],
                [(p.value.shape, "f32"), (p.value.shape, "f32"), (p.value.shape, "f32"), ((), cfg["step_dtype"])],
                attrs, prefix=f"{sn}_new")
    for val, n in zip(outs[1:], (mn, vn, sname)):
        state_results.append(Binding(val, "opt_state", n))
    return outs[0]


# ----------------------------------------------------------------------------


def generate(seed):
    g = Gen(seed)
    b = g.b
    layers, x, loss_layer, logits = build(g)
    loss = loss_layer.fwd(g, logits)
    desc = [l.desc() for l in layers] + [loss_layer.desc()]
    # An L2 term of one parameter in the loss (computed outside the batch).
    l2 = None
    trainable = [p for p in g.params if not p.frozen]
    if trainable and g.chance(0.2):
        p = g.rng.choice(trainable)
        coef = g.pick(1e-3, 0.01)
        sq = b.mul(p.value, p.value, prefix="reg_sq")
        s = b.reduce(sq, "sum", list(range(sq.rank)), prefix="reg_sum") if sq.rank else sq
        loss = b.add(loss, b.mul(s, b.const(coef), prefix="reg"), prefix="loss_total")
        l2 = (p, coef)
        desc.append(f"+ {coef} * |{p.name}|^2")
    # A metric: the mean of the logits (not compared: dist-run does not write metrics).
    metric = None
    if g.chance(0.1):
        metric = b.reduce(logits, "mean", list(range(logits.rank)), prefix="metric")
        desc.append("metric mean(logits)")

    # Backward.
    one = b.const(1.0)
    dh = loss_layer.bwd(g, one)
    for i in reversed(range(len(layers))):
        need_dx = any(l.has_params for l in layers[:i])
        dh = layers[i].bwd(g, dh, need_dx)
        if dh is None:
            break
    if l2 is not None:
        p, coef = l2
        g.grad(p, b.mul(p.value, b.const(2 * coef), prefix="d_reg"))

    # Unused parameters.
    unused = []
    for k in range(g.pick(0, 1, 2, weights=[5, 3, 1])):
        how = g.pick("returned", "not_returned", "updated")
        shape = g.pick((g.dim(2, 16), g.dim(2, 16)), (g.dim(2, 16),), ())
        p = g.param(f"unused{k}.weight", shape, "small" if len(shape) < 2 else None)
        p.used = False
        p.frozen = how != "updated"
        p.unused_how = how
        if how == "updated":
            g.grad(p, b.const(0.0, shape))
        unused.append(p)
        desc.append(f"unused param {list(shape)} ({how.replace('_', ' ')})")

    # Optimizer.
    lr = g.hyper("lr")
    cfg = make_optimizer(g)
    state_args, state_results, param_results = [], [], []
    for p in g.params:
        if p.frozen:
            if getattr(p, "unused_how", "returned") != "not_returned":
                param_results.append(Binding(p.value, "param", p.name))
            continue
        grads = p.grads
        assert grads, p.name
        gsum = grads[0]
        for extra in grads[1:]:
            gsum = b.add(gsum, extra, prefix=f"d_{p.value.name}_sum")
        new = apply_optimizer(g, cfg, p, gsum, lr, state_args, state_results)
        param_results.append(Binding(new, "param", p.name))
    opt_desc = cfg["kind"] + "(" + ", ".join(f"{k}={v}" for k, v in cfg.items()
                                             if k != "kind" and v not in (None, False)) + ")"
    desc.append(opt_desc)
    g.meta["optimizer"] = cfg

    args = [Binding(p.value, "param", p.name) for p in g.params] + state_args + g.data + g.hypers
    results = param_results + state_results + [Binding(loss, "loss", "loss")]
    if metric is not None:
        results.append(Binding(metric, "metric", "logits_mean"))
    if g.chance(0.2):
        g.rng.shuffle(args)
        desc.append("arguments shuffled")
    if g.chance(0.2):
        g.rng.shuffle(results)
        desc.append("results shuffled")
    # A parameter's old value read after its update (drawn last, so the
    # steps of every seed before it are unchanged): the update cannot be
    # written over the state while the step still reads it.
    updated = [p for p in g.params if not p.frozen and p.value.rank >= 1]
    if updated and g.chance(0.25):
        p = g.rng.choice(updated)
        old = b.reduce(p.value, "sum", list(range(p.value.rank)),
                       prefix="old_sum")
        results.append(Binding(old, "metric", f"{p.name}.old_sum"))
        desc.append(f"metric of {p.name} read after its update")
    g.meta["grads"] = {p.name: (p.grads[0].name if len(p.grads) == 1 else None)
                       for p in g.params if p.grads}
    step = Step(seed, args, results, b.ops, g.meta, desc)
    # The gradient fed to each optimizer op (for the gradient check).
    step.param_grads = {}
    for op in b.ops:
        if op.kind in ("sgd", "adam", "adamw"):
            pv = op.operands[0]
            name = next(a.name for a in args if a.value is pv)
            step.param_grads[name] = op.operands[1]
    step.loss = loss
    return step


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("seed", type=int)
    ap.add_argument("--describe", action="store_true", help="print only the layer list")
    args = ap.parse_args(argv)
    step = generate(args.seed)
    if args.describe:
        print("\n".join(step.layers))
    else:
        sys.stdout.write(step.text())


if __name__ == "__main__":
    main(sys.argv[1:])
