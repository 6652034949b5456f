#!/usr/bin/env python3
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Generate a `train` dialect training step for one pre-LN transformer block.

The step is written by hand-derived reverse-mode differentiation: the forward
pass, the full backward pass and an AdamW update of every parameter.

    x -> ln1 -> multi-head self-attention (separate q, k, v, out projections)
      -> + x -> ln2 -> MLP (fc1, gelu, fc2) -> + -> linear head -> cross_entropy

Usage:
    python3 scripts/gen_transformer_block.py --output examples/transformer_block.mlir
    python3 scripts/gen_transformer_block.py --batch 2 --seq 16 --hidden 32 --heads 2 \\
        --ffn 64 --classes 8          # prints to stdout

Only the Python standard library is used. The emitter (Builder) and the
block's forward and backward passes (block_forward, block_backward) are
importable: bench/gen_gpt.py stacks L such blocks into a GPT-like model.
"""

import argparse
import math
import sys

F32 = "f32"

# Attribute spellings of the train dialect.
SUM = "#train.reduce_kind<sum>"
ADAMW_ATTRS = ("{beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, "
               "epsilon = 1.000000e-08 : f64, weight_decay = 1.000000e-02 : f64}")


def tensor_type(shape, elem=F32):
    """`tensor<8x128x256xf32>`, or `tensor<f32>` for a scalar."""
    if not shape:
        return f"tensor<{elem}>"
    return "tensor<" + "x".join(str(d) for d in shape) + f"x{elem}>"


def fmt_float(value):
    """An MLIR float literal that round-trips through f32 exactly enough."""
    return f"{value:.9e}"


def dense_i64(values):
    return "array<i64: " + ", ".join(str(v) for v in values) + ">"


class Value:
    """An SSA value: its name (without `%`), shape and element type."""

    def __init__(self, name, shape, elem=F32):
        self.name = name
        self.shape = tuple(shape)
        self.elem = elem

    @property
    def ref(self):
        return "%" + self.name

    @property
    def type(self):
        return tensor_type(self.shape, self.elem)


class Builder:
    """Emits train dialect ops with readable SSA names and checked shapes."""

    def __init__(self):
        self.lines = []
        self.names = set()
        # When False, comment() and blank() emit nothing (a generator that
        # repeats a block explains only its first copy).
        self.explain = True
        self._flat = {}

    # -- bookkeeping -------------------------------------------------------
    def _fresh(self, name):
        if name in self.names:
            raise ValueError(f"SSA name %{name} defined twice")
        self.names.add(name)
        return name

    def arg(self, name, shape, elem=F32):
        return Value(self._fresh(name), shape, elem)

    def comment(self, text=""):
        if self.explain:
            self.lines.append(("  // " + text) if text else "")

    def blank(self):
        if self.explain:
            self.lines.append("")

    def _op(self, name, op, operands, attrs, result_shape, elem=F32):
        result = Value(self._fresh(name), result_shape, elem)
        attr_text = f" {attrs}" if attrs else ""
        operand_refs = ", ".join(v.ref for v in operands)
        operand_types = ", ".join(v.type for v in operands)
        self.lines.append(
            f"  {result.ref} = train.{op} {operand_refs}{attr_text} : "
            f"({operand_types}) -> {result.type}")
        return result

    # -- ops ---------------------------------------------------------------
    def constant(self, name, value, shape=()):
        result = Value(self._fresh(name), shape)
        self.lines.append(f"  {result.ref} = train.constant "
                          f"dense<{fmt_float(value)}> : {result.type}")
        return result

    @staticmethod
    def _broadcast(a, b):
        ra, rb = list(reversed(a)), list(reversed(b))
        out = []
        for i in range(max(len(ra), len(rb))):
            da = ra[i] if i < len(ra) else 1
            db = rb[i] if i < len(rb) else 1
            if da != db and 1 not in (da, db):
                raise ValueError(f"cannot broadcast {a} and {b}")
            out.append(max(da, db))
        return tuple(reversed(out))

    def binary(self, op, name, lhs, rhs):
        return self._op(name, op, [lhs, rhs], "",
                        self._broadcast(lhs.shape, rhs.shape))

    def add(self, name, lhs, rhs):
        return self.binary("add", name, lhs, rhs)

    def sub(self, name, lhs, rhs):
        return self.binary("sub", name, lhs, rhs)

    def mul(self, name, lhs, rhs):
        return self.binary("mul", name, lhs, rhs)

    def unary(self, op, name, operand):
        return self._op(name, op, [operand], "", operand.shape)

    def matmul(self, name, lhs, rhs, transpose_lhs=False, transpose_rhs=False):
        ls, rs = lhs.shape, rhs.shape
        m, k = (ls[-1], ls[-2]) if transpose_lhs else (ls[-2], ls[-1])
        k2, n = (rs[-1], rs[-2]) if transpose_rhs else (rs[-2], rs[-1])
        if k != k2:
            raise ValueError(f"matmul {name}: contracting dims {k} != {k2}")
        lb, rb = ls[:-2], rs[:-2]
        if lb and rb and lb != rb:
            raise ValueError(f"matmul {name}: batch dims {lb} != {rb}")
        flags = [f for f, on in (("transpose_lhs", transpose_lhs),
                                 ("transpose_rhs", transpose_rhs)) if on]
        attrs = "{" + ", ".join(flags) + "}" if flags else ""
        return self._op(name, "matmul", [lhs, rhs], attrs,
                        (lb or rb) + (m, n))

    def gather(self, name, table, indices):
        """Embedding lookup: [v, d...] rows at `indices` -> [indices..., d...]."""
        return self._op(name, "gather", [table, indices], "",
                        indices.shape + table.shape[1:])

    def scatter_add(self, name, init, indices, updates):
        """Adds updates [indices..., d...] into the rows of init [v, d...]."""
        if updates.shape != indices.shape + init.shape[1:]:
            raise ValueError(f"scatter_add {name}: updates {updates.shape}, "
                             f"indices {indices.shape}, init {init.shape}")
        return self._op(name, "scatter_add", [init, indices, updates], "",
                        init.shape)

    def reshape(self, name, operand, shape):
        if math.prod(shape) != math.prod(operand.shape):
            raise ValueError(f"reshape {name}: {operand.shape} -> {shape}")
        return self._op(name, "reshape", [operand], "", shape)

    def transpose(self, name, operand, perm):
        shape = tuple(operand.shape[p] for p in perm)
        return self._op(name, "transpose", [operand],
                        f"{{permutation = {dense_i64(perm)}}}", shape)

    def reduce_sum(self, name, operand, dims):
        shape = tuple(d for i, d in enumerate(operand.shape) if i not in dims)
        return self._op(name, "reduce", [operand],
                        f"{{dims = {dense_i64(dims)}, kind = {SUM}}}", shape)

    def softmax(self, name, operand, dim):
        return self._op(name, "softmax", [operand], f"{{dim = {dim} : i64}}",
                        operand.shape)

    def softmax_backward(self, name, grad, output, dim):
        return self._op(name, "softmax_backward", [grad, output],
                        f"{{dim = {dim} : i64}}", output.shape)

    def _multi(self, names, op, operands, attrs, shapes, elems=None):
        elems = elems or [F32] * len(shapes)
        results = [Value(self._fresh(n), s, e)
                   for n, s, e in zip(names, shapes, elems)]
        attr_text = f" {attrs}" if attrs else ""
        self.lines.append(
            "  " + ", ".join(r.ref for r in results) + f" = train.{op} "
            + ", ".join(v.ref for v in operands) + attr_text + " : ("
            + ", ".join(v.type for v in operands) + ") -> ("
            + ", ".join(r.type for r in results) + ")")
        return results

    def layer_norm(self, prefix, x, weight, bias, axis):
        stats = x.shape[:axis]
        return self._multi([prefix, prefix + "_mean", prefix + "_rstd"],
                           "layer_norm", [x, weight, bias],
                           f"{{axis = {axis} : i64}}",
                           [x.shape, stats, stats])

    def layer_norm_backward(self, names, grad, x, mean, rstd, weight, axis):
        return self._multi(names, "layer_norm_backward",
                           [grad, x, mean, rstd, weight],
                           f"{{axis = {axis} : i64}}",
                           [x.shape, weight.shape, weight.shape])

    def cross_entropy(self, name, logits, labels):
        return self._op(name, "cross_entropy", [logits, labels], "", ())

    def cross_entropy_backward(self, name, grad_loss, logits, labels):
        return self._op(name, "cross_entropy_backward",
                        [grad_loss, logits, labels], "", logits.shape)

    def flat(self, value):
        """[..., n] -> [prod(...), n], named `<value>_2d`; each value is
        flattened once and the reshape reused."""
        if value.name not in self._flat:
            rows = math.prod(value.shape[:-1])
            self._flat[value.name] = self.reshape(value.name + "_2d", value,
                                                  (rows, value.shape[-1]))
        return self._flat[value.name]

    def adamw(self, prefix, param, grad, exp_avg, exp_avg_sq, step, lr):
        return self._multi(
            [prefix + "_new", prefix + "_exp_avg_new",
             prefix + "_exp_avg_sq_new", prefix + "_step_new"],
            "adamw", [param, grad, exp_avg, exp_avg_sq, step, lr],
            ADAMW_ATTRS, [param.shape, param.shape, param.shape, step.shape])


def role_attrs(role, name):
    return f'{{train.role = #train.role<{role}>, train.name = "{name}"}}'


# -- reusable pieces: linear layers and one pre-LN transformer block -----------

GELU_C = math.sqrt(2.0 / math.pi)
GELU_A = 0.044715


class BlockDims:
    """Sizes of a transformer block: batch B, sequence S, hidden H, heads NH,
    MLP inner size FF; HD = H / NH is the head dim."""

    def __init__(self, batch, seq, hidden, heads, ffn):
        if hidden % heads:
            raise ValueError(f"hidden ({hidden}) must be divisible by "
                             f"heads ({heads})")
        self.B, self.S, self.H, self.NH, self.FF = (batch, seq, hidden, heads,
                                                    ffn)
        self.HD = hidden // heads
        self.BS = batch * seq


def block_param_specs(H, FF):
    """The 16 parameters of one block, in model order:
    (SSA stem, train.name suffix, shape)."""
    return [
        ("ln1_w", "ln1.weight", (H,)),
        ("ln1_b", "ln1.bias", (H,)),
        ("wq", "attn.q.weight", (H, H)),
        ("bq", "attn.q.bias", (H,)),
        ("wk", "attn.k.weight", (H, H)),
        ("bk", "attn.k.bias", (H,)),
        ("wv", "attn.v.weight", (H, H)),
        ("bv", "attn.v.bias", (H,)),
        ("wo", "attn.out.weight", (H, H)),
        ("bo", "attn.out.bias", (H,)),
        ("ln2_w", "ln2.weight", (H,)),
        ("ln2_b", "ln2.bias", (H,)),
        ("w1", "mlp.fc1.weight", (FF, H)),
        ("b1", "mlp.fc1.bias", (FF,)),
        ("w2", "mlp.fc2.weight", (H, FF)),
        ("b2", "mlp.fc2.bias", (H,)),
    ]


def linear(b, name, inp, w, bias):
    """y = inp @ w^T + bias for a 3-D activation and a [out, in] weight."""
    y = b.matmul(name + "_mm", inp, w, transpose_rhs=True)
    return b.add(name, y, bias)


def linear_backward(b, name, dy, inp, w, dinp_name, prefix=""):
    """Gradients of y = inp @ w^T + bias, inp [B, S, in], dy [B, S, out].

    d_w = dy^T @ inp over the B*S rows (both flattened to 2-D),
    d_bias = sum of dy over dims 0 and 1, d_inp = dy @ w. The gradients are
    named `<prefix>d_<name>_w` and `<prefix>d_<name>_b`."""
    dw = b.matmul(prefix + "d_" + name + "_w", b.flat(dy), b.flat(inp),
                  transpose_lhs=True)
    db = b.reduce_sum(prefix + "d_" + name + "_b", dy, [0, 1])
    dinp = b.matmul(dinp_name, dy, w)
    return dw, db, dinp


def block_forward(b, x, P, dims, prefix=""):
    """Emits the forward pass of one pre-LN block on x [B, S, H].

    P maps the stems of block_param_specs to their values; every SSA name is
    prefixed with `prefix`. Returns (out, saved) where saved holds what the
    backward pass needs."""
    B, S, H, NH, HD = dims.B, dims.S, dims.H, dims.NH, dims.HD
    p = lambda name: prefix + name  # noqa: E731
    scale = 1.0 / math.sqrt(HD)

    b.comment("ln1 = layer_norm(x) over the hidden dim (epsilon 1e-5).")
    ln1, ln1_mean, ln1_rstd = b.layer_norm(p("ln1"), x, P["ln1_w"],
                                           P["ln1_b"], 2)
    b.blank()
    b.comment("q, k, v projections: [B, S, H] @ W^T + bias (W is [out, in]).")
    q = linear(b, p("q"), ln1, P["wq"], P["bq"])
    k = linear(b, p("k"), ln1, P["wk"], P["bk"])
    v = linear(b, p("v"), ln1, P["wv"], P["bv"])
    b.blank()
    b.comment(f"Split heads: [B, S, H] -> [B, S, nh, hd] -> [B, nh, S, hd] "
              f"(nh = {NH}, hd = {HD}).")
    heads = {}
    for nm, val in (("q", q), ("k", k), ("v", v)):
        split = b.reshape(p(nm + "_split"), val, (B, S, NH, HD))
        heads[nm] = b.transpose(p(nm + "_heads"), split, [0, 2, 1, 3])
    qh, kh, vh = heads["q"], heads["k"], heads["v"]
    b.blank()
    b.comment(f"Attention: scores = q @ k^T * (1 / sqrt(hd)) = "
              f"q @ k^T * {scale!r}, probs = softmax(scores).")
    scale_c = b.constant(p("attn_scale"), scale)
    qk = b.matmul(p("qk"), qh, kh, transpose_rhs=True)
    scores = b.mul(p("scores"), qk, scale_c)
    probs = b.softmax(p("probs"), scores, -1)
    ctx_h = b.matmul(p("ctx_heads"), probs, vh)
    b.comment("Merge heads: [B, nh, S, hd] -> [B, S, nh, hd] -> [B, S, H].")
    ctx_t = b.transpose(p("ctx_merged"), ctx_h, [0, 2, 1, 3])
    ctx = b.reshape(p("ctx"), ctx_t, (B, S, H))
    attn_out = linear(b, p("attn_out"), ctx, P["wo"], P["bo"])
    b.comment("First residual.")
    h1 = b.add(p("h1"), x, attn_out)
    b.blank()
    b.comment("ln2 and MLP: fc2(gelu(fc1(ln2(h1)))).")
    ln2, ln2_mean, ln2_rstd = b.layer_norm(p("ln2"), h1, P["ln2_w"],
                                           P["ln2_b"], 2)
    fc1 = linear(b, p("fc1"), ln2, P["w1"], P["b1"])
    act = b.unary("gelu", p("act"), fc1)
    fc2 = linear(b, p("fc2"), act, P["w2"], P["b2"])
    b.comment("Second residual: the block output.")
    out = b.add(p("out"), h1, fc2)
    saved = dict(x=x, ln1=ln1, ln1_mean=ln1_mean, ln1_rstd=ln1_rstd, qh=qh,
                 kh=kh, vh=vh, scale_c=scale_c, probs=probs, ctx=ctx, h1=h1,
                 ln2=ln2, ln2_mean=ln2_mean, ln2_rstd=ln2_rstd, fc1=fc1,
                 act=act)
    return out, saved


def block_backward(b, d_out, saved, P, dims, prefix="", input_grad=False):
    """Emits the backward pass of a block given d_out, the gradient of its
    output, and `saved` from block_forward (same P, dims and prefix).

    Returns (grads, d_x): grads maps every stem of block_param_specs to its
    gradient; d_x, the gradient of the block input, is emitted only with
    input_grad (otherwise it is None)."""
    B, S, H, NH, HD = dims.B, dims.S, dims.H, dims.NH, dims.HD
    p = lambda name: prefix + name  # noqa: E731
    s = saved
    fc1 = s["fc1"]

    b.comment("Second residual: out = h1 + fc2, so d_fc2 = d_out and d_out "
              "also flows to h1.")
    b.comment("fc2: d_fc2_w = d_out^T @ act over the B*S rows, d_act = d_out @ w2.")
    d_w2, d_b2, d_act = linear_backward(b, "fc2", d_out, s["act"], P["w2"],
                                        p("d_act"), prefix)
    b.blank()
    b.comment("GELU backward (tanh approximation, as train.gelu and PyTorch's")
    b.comment("gelu(approximate='tanh')): with u = c * (x + a * x^3),")
    b.comment(f"c = sqrt(2 / pi) = {GELU_C!r}, a = {GELU_A}, t = tanh(u),")
    b.comment("  gelu(x)  = 0.5 * x * (1 + t)")
    b.comment("  gelu'(x) = 0.5 * (1 + t) + 0.5 * x * (1 - t^2) * c * (1 + 3a * x^2)")
    b.comment("where x = fc1 (the pre-activation), and d_fc1 = d_act * gelu'(fc1).")
    half = b.constant(p("gelu_half"), 0.5)
    c_one = b.constant(p("gelu_one"), 1.0)
    c_a = b.constant(p("gelu_a"), GELU_A)
    c_c = b.constant(p("gelu_c"), GELU_C)
    c_3a = b.constant(p("gelu_3a"), 3.0 * GELU_A)
    x2 = b.mul(p("gelu_x2"), fc1, fc1)
    x3 = b.mul(p("gelu_x3"), x2, fc1)
    ax3 = b.mul(p("gelu_ax3"), x3, c_a)
    inner = b.add(p("gelu_inner"), fc1, ax3)
    u = b.mul(p("gelu_u"), inner, c_c)
    t = b.unary("tanh", p("gelu_t"), u)
    one_plus_t = b.add(p("gelu_1pt"), t, c_one)
    left = b.mul(p("gelu_left"), one_plus_t, half)
    t2 = b.mul(p("gelu_t2"), t, t)
    sech2 = b.sub(p("gelu_sech2"), c_one, t2)
    x2_3a = b.mul(p("gelu_3ax2"), x2, c_3a)
    du_inner = b.add(p("gelu_dinner"), x2_3a, c_one)
    du = b.mul(p("gelu_du"), du_inner, c_c)
    xs = b.mul(p("gelu_x_sech2"), fc1, sech2)
    xs_du = b.mul(p("gelu_x_sech2_du"), xs, du)
    right = b.mul(p("gelu_right"), xs_du, half)
    gelu_grad = b.add(p("gelu_grad"), left, right)
    d_fc1 = b.mul(p("d_fc1"), d_act, gelu_grad)
    b.blank()
    b.comment("fc1: d_fc1_w = d_fc1^T @ ln2 over the B*S rows, d_ln2 = d_fc1 @ w1.")
    d_w1, d_b1, d_ln2 = linear_backward(b, "fc1", d_fc1, s["ln2"], P["w1"],
                                        p("d_ln2"), prefix)
    b.blank()
    b.comment("ln2 backward, then add the residual path: d_h1 = d_out + d_h1_ln2.")
    d_h1_ln2, d_ln2_w, d_ln2_b = b.layer_norm_backward(
        [p("d_h1_ln2"), p("d_ln2_w"), p("d_ln2_b")], d_ln2, s["h1"],
        s["ln2_mean"], s["ln2_rstd"], P["ln2_w"], 2)
    d_h1 = b.add(p("d_h1"), d_out, d_h1_ln2)
    b.blank()
    b.comment("First residual: h1 = x + attn_out, so d_attn_out = d_h1; output")
    b.comment("projection: d_attn_out_w = d_h1^T @ ctx, d_ctx = d_h1 @ wo.")
    d_wo, d_bo, d_ctx = linear_backward(b, "attn_out", d_h1, s["ctx"],
                                        P["wo"], p("d_ctx"), prefix)
    b.comment("Undo the head merge: [B, S, H] -> [B, S, nh, hd] -> [B, nh, S, hd].")
    d_ctx_split = b.reshape(p("d_ctx_split"), d_ctx, (B, S, NH, HD))
    d_ctx_h = b.transpose(p("d_ctx_heads"), d_ctx_split, [0, 2, 1, 3])
    b.blank()
    b.comment("ctx_heads = probs @ v: d_probs = d_ctx @ v^T, d_v = probs^T @ d_ctx.")
    d_probs = b.matmul(p("d_probs"), d_ctx_h, s["vh"], transpose_rhs=True)
    d_vh = b.matmul(p("d_v_heads"), s["probs"], d_ctx_h, transpose_lhs=True)
    b.comment("Softmax backward, then the 1 / sqrt(hd) scale.")
    d_scores = b.softmax_backward(p("d_scores"), d_probs, s["probs"], -1)
    d_qk = b.mul(p("d_qk"), d_scores, s["scale_c"])
    b.comment("qk = q @ k^T: d_q = d_qk @ k, d_k = d_qk^T @ q.")
    d_qh = b.matmul(p("d_q_heads"), d_qk, s["kh"])
    d_kh = b.matmul(p("d_k_heads"), d_qk, s["qh"], transpose_lhs=True)
    b.blank()
    b.comment("Undo the head split: [B, nh, S, hd] -> [B, S, nh, hd] -> [B, S, H].")
    d_proj = {}
    for nm, dh in (("q", d_qh), ("k", d_kh), ("v", d_vh)):
        merged = b.transpose(p("d_" + nm + "_merged"), dh, [0, 2, 1, 3])
        d_proj[nm] = b.reshape(p("d_" + nm), merged, (B, S, H))
    b.blank()
    b.comment("q, k, v projections; their input gradients sum into d_ln1.")
    d_wq, d_bq, d_ln1_q = linear_backward(b, "q", d_proj["q"], s["ln1"],
                                          P["wq"], p("d_ln1_from_q"), prefix)
    d_wk, d_bk, d_ln1_k = linear_backward(b, "k", d_proj["k"], s["ln1"],
                                          P["wk"], p("d_ln1_from_k"), prefix)
    d_wv, d_bv, d_ln1_v = linear_backward(b, "v", d_proj["v"], s["ln1"],
                                          P["wv"], p("d_ln1_from_v"), prefix)
    d_ln1_qk = b.add(p("d_ln1_qk"), d_ln1_q, d_ln1_k)
    d_ln1 = b.add(p("d_ln1"), d_ln1_qk, d_ln1_v)
    b.blank()
    if input_grad:
        b.comment("ln1 backward; the block input's gradient is the residual "
                  "path d_h1 plus d_x_ln1.")
    else:
        b.comment("ln1 backward. x is an input, so its gradient (d_x_ln1 + d_h1) "
                  "is not needed;")
        b.comment("only the ln1 weight and bias gradients are used.")
    d_x_ln1, d_ln1_w, d_ln1_b = b.layer_norm_backward(
        [p("d_x_ln1"), p("d_ln1_w"), p("d_ln1_b")], d_ln1, s["x"],
        s["ln1_mean"], s["ln1_rstd"], P["ln1_w"], 2)
    d_x = b.add(p("d_x"), d_h1, d_x_ln1) if input_grad else None

    grads = {
        "ln1_w": d_ln1_w, "ln1_b": d_ln1_b,
        "wq": d_wq, "bq": d_bq, "wk": d_wk, "bk": d_bk,
        "wv": d_wv, "bv": d_bv, "wo": d_wo, "bo": d_bo,
        "ln2_w": d_ln2_w, "ln2_b": d_ln2_b,
        "w1": d_w1, "b1": d_b1, "w2": d_w2, "b2": d_b2,
    }
    return grads, d_x


def emit_adamw(b, param_specs, P, state, grads, lr):
    """AdamW update of every (stem, name, shape) in param_specs; returns the
    new (param, exp_avg, exp_avg_sq, step) values per stem."""
    b.blank()
    b.comment("====================================================== AdamW")
    b.comment("torch.optim.AdamW: lr (hyper), betas (0.9, 0.999), eps 1e-8, "
              "weight_decay 0.01.")
    new = {}
    for stem, name, _ in param_specs:
        g = grads[stem]
        assert g.shape == P[stem].shape, (stem, g.shape, P[stem].shape)
        b.comment(name)
        new[stem] = b.adamw(stem, P[stem], g, *state[stem], lr)
    return new


def declare_state(b, param_specs):
    """Declares the params and their AdamW state as arguments.

    Returns (P, state, arg_lines): P maps stems to param values, state maps
    stems to (exp_avg, exp_avg_sq, step), arg_lines are the signature lines
    (all params first, then all optimizer state)."""
    P = {stem: b.arg(stem, shape) for stem, _, shape in param_specs}
    state = {}
    for stem, _, shape in param_specs:
        state[stem] = (b.arg(stem + "_exp_avg", shape),
                       b.arg(stem + "_exp_avg_sq", shape),
                       b.arg(stem + "_step", ()))
    arg_lines = [f"    {P[s].ref}: {P[s].type} {role_attrs('param', n)}"
                 for s, n, _ in param_specs]
    for stem, name, _ in param_specs:
        for value, suffix in zip(state[stem],
                                 ("exp_avg", "exp_avg_sq", "step")):
            arg_lines.append(f"    {value.ref}: {value.type} "
                             f"{role_attrs('opt_state', name + '.' + suffix)}")
    return P, state, arg_lines


def step_results(param_specs, new, loss):
    """The step's results: (value, role, name) for every updated param, then
    every updated optimizer state, then the loss."""
    results = []
    for stem, name, _ in param_specs:
        results.append((new[stem][0], "param", name))
    for stem, name, _ in param_specs:
        for value, suffix in zip(new[stem][1:],
                                 ("exp_avg", "exp_avg_sq", "step")):
            results.append((value, "opt_state", name + "." + suffix))
    results.append((loss, "loss", "loss"))
    return results


def format_step(header, arg_lines, b, results):
    """The whole file: header comment lines, then func.func @train_step."""
    ret_refs = ", ".join(v.ref for v, _, _ in results)
    ret_types = ", ".join(v.type for v, _, _ in results)
    body = b.lines + [f"  return {ret_refs}", f"      : {ret_types}"]
    text = "\n".join(header) + "\n"
    text += "func.func @train_step(\n" + ",\n".join(arg_lines) + ")\n"
    text += "    -> (" + ",\n        ".join(
        f"{v.type} {role_attrs(r, n)}" for v, r, n in results) + ") {\n"
    text += "\n".join(body) + "\n}\n"
    return text


def generate(args, command):
    dims = BlockDims(args.batch, args.seq, args.hidden, args.heads, args.ffn)
    B, S, H, NH, FF, C = (args.batch, args.seq, args.hidden, args.heads,
                          args.ffn, args.classes)
    HD, BS = dims.HD, dims.BS

    b = Builder()

    # -- parameters, in model order: (SSA stem, train.name, shape) ---------
    param_specs = block_param_specs(H, FF) + [
        ("head_w", "head.weight", (C, H)),
        ("head_b", "head.bias", (C,)),
    ]
    P, state, arg_lines = declare_state(b, param_specs)
    x = b.arg("x", (B, S, H))
    labels = b.arg("labels", (B, S), "i32")
    lr = b.arg("lr", ())
    arg_lines.append(f"    {x.ref}: {x.type} {role_attrs('input', 'x')}")
    arg_lines.append(f"    {labels.ref}: {labels.type} "
                     f"{role_attrs('label', 'labels')}")
    arg_lines.append(f"    {lr.ref}: {lr.type} {role_attrs('hyper', 'lr')}")

    # ====================================================================
    # Forward
    # ====================================================================
    b.comment("==================================================== Forward")
    out, saved = block_forward(b, x, P, dims)
    b.blank()
    b.comment(f"Loss: a linear head to {C} classes per token, cross-entropy "
              f"averaged over all B*S = {BS} labels.")
    logits = linear(b, "logits", out, P["head_w"], P["head_b"])
    loss = b.cross_entropy("loss", logits, labels)

    # ====================================================================
    # Backward
    # ====================================================================
    b.blank()
    b.comment("=================================================== Backward")
    b.comment("d loss / d logits = (softmax(logits) - one_hot(labels)) / (B*S).")
    one = b.constant("one", 1.0)
    d_logits = b.cross_entropy_backward("d_logits", one, logits, labels)
    b.comment("Head: d_head_w = d_logits^T @ out over the B*S rows, "
              "d_head_b = sum of d_logits, d_out = d_logits @ head_w.")
    d_head_w, d_head_b, d_out = linear_backward(b, "head", d_logits, out,
                                                P["head_w"], "d_out")
    b.blank()
    grads, _ = block_backward(b, d_out, saved, P, dims)
    grads.update(head_w=d_head_w, head_b=d_head_b)

    # ====================================================================
    # AdamW
    # ====================================================================
    new = emit_adamw(b, param_specs, P, state, grads, lr)
    results = step_results(param_specs, new, loss)
    b.blank()

    n_params = sum(math.prod(s) for _, _, s in param_specs)
    header = [
        "// One training step of a pre-LN transformer block with a token "
        "classification loss.",
        "//",
        f"// GENERATED FILE, do not edit. Generated by:",
        f"//   {command}",
        "//",
        "// Model (PyTorch layout: linear weights are [out, in], used with "
        "transpose_rhs):",
        "//   ln1  = LayerNorm(x)                                  ln1.{weight,bias}",
        "//   q, k, v = Linear(ln1)                                attn.{q,k,v}.{weight,bias}",
        "//   heads: [B, S, H] -> reshape [B, S, nh, hd] -> transpose [B, nh, S, hd]",
        "//   attn = softmax(q @ k^T / sqrt(hd), dim=-1) @ v, heads merged back to [B, S, H]",
        "//   h1   = x + Linear(attn)                              attn.out.{weight,bias}",
        "//   out  = h1 + Linear(gelu(Linear(LayerNorm(h1))))      ln2.*, mlp.fc1.*, mlp.fc2.*",
        "//   loss = cross_entropy(Linear(out), labels)            head.{weight,bias}",
        "//          (mean over all B*S token labels)",
        "// gelu is the tanh approximation (PyTorch gelu(approximate='tanh')); LayerNorm",
        "// epsilon is 1e-5. Followed by the full backward pass and an AdamW update",
        "// (lr a hyper argument, betas (0.9, 0.999), eps 1e-8, weight_decay 0.01) of",
        "// every parameter; each parameter P has opt_state P.exp_avg, P.exp_avg_sq and",
        "// P.step (a tensor<f32> step count, 0 before the first step).",
        "//",
        "// Shapes:",
        f"//   batch B = {B}, seq S = {S}, hidden H = {H}, heads nh = {NH}, "
        f"head dim hd = {HD},",
        f"//   ffn = {FF}, classes = {C}",
        f"//   x: [{B}, {S}, {H}] f32 (input), labels: [{B}, {S}] i32 (label), "
        f"lr: scalar f32 (hyper)",
        f"//   {len(param_specs)} parameter tensors, {n_params} parameters",
        "//",
        "// Run: dist-opt --train-verify --train-summary "
        "examples/transformer_block.mlir",
    ]
    return format_step(header, arg_lines, b, results)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Generate a train-dialect training step (forward, "
                    "backward, AdamW) for one pre-LN transformer block.")
    parser.add_argument("--batch", type=int, default=8, help="batch size B")
    parser.add_argument("--seq", type=int, default=128, help="sequence length S")
    parser.add_argument("--hidden", type=int, default=256, help="hidden size H")
    parser.add_argument("--heads", type=int, default=4,
                        help="number of attention heads (must divide H)")
    parser.add_argument("--ffn", type=int, default=1024, help="MLP inner size")
    parser.add_argument("--classes", type=int, default=16,
                        help="classes of the token-classification head")
    parser.add_argument("--output", "-o", metavar="PATH",
                        help="write here instead of stdout")
    args = parser.parse_args(argv)
    for field in ("batch", "seq", "hidden", "heads", "ffn", "classes"):
        if getattr(args, field) <= 0:
            parser.error(f"--{field} must be positive")
    if args.hidden % args.heads:
        parser.error(f"--hidden ({args.hidden}) must be divisible by "
                     f"--heads ({args.heads})")

    command = ("python3 scripts/gen_transformer_block.py"
               f" --batch {args.batch} --seq {args.seq} --hidden {args.hidden}"
               f" --heads {args.heads} --ffn {args.ffn}"
               f" --classes {args.classes}")
    # The header names the model options only, so that the text does not
    # depend on where it is written (the lit test regenerates it to stdout).
    text = generate(args, command)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
