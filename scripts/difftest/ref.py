# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""A NumPy (float64) interpreter of the train ops the generator emits.

The generator records every op it prints (gen.Op: kind, operands, results,
attributes as Python values); `run(step, arrays)` evaluates that list in
order, in float64, from the step's arguments, and returns every value by
name. It is the reference of `run.py --self-check`:

* a gradient check of the generator: the loss as a function of each
  parameter, differentiated by central differences, must equal the gradient
  the generated backward ops compute (so every layer's hand-written backward
  is right, independently of the compiler);
* the single-device dist-run result must equal this interpreter's (so the
  emitted text means what the generator meant).

The implementations follow the op definitions in
include/distopt/Dialect/Train/IR/TrainOps.td, written independently of the
compiler (convolutions and pooling by explicit loops over window taps).
"""

import math

import numpy as np

MASK = 0xFFFFFFFF
M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85


def philox4x32_10(counter_lo, counter_hi, key):
    """Vectorized philox4x32-10 (first output word): counters are uint64
    arrays holding 32-bit words, key a Python int (64 bits)."""
    c = [counter_lo.astype(np.uint64), counter_hi.astype(np.uint64),
         np.zeros_like(counter_lo, np.uint64), np.zeros_like(counter_lo, np.uint64)]
    k = [key & MASK, (key >> 32) & MASK]
    m0, m1 = np.uint64(M0), np.uint64(M1)
    mask = np.uint64(MASK)
    for rnd in range(10):
        if rnd:
            k = [(k[0] + W0) & MASK, (k[1] + W1) & MASK]
        p0 = m0 * c[0]
        p1 = m1 * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ np.uint64(k[0]), p1 & mask,
             (p0 >> np.uint64(32)) ^ c[3] ^ np.uint64(k[1]), p0 & mask]
    return c[0]


def _selftest_philox():
    z = np.zeros(1, np.uint64)
    # Random123's known answer for a zero counter and key.
    assert int(philox4x32_10(z, z, 0)[0]) == 0x6627E8D5


def dropout_mask(shape, seed, rate):
    n = int(np.prod(shape)) if shape else 1
    idx = np.arange(n, dtype=np.uint64)
    seed &= (1 << 64) - 1
    r = philox4x32_10(idx & np.uint64(MASK), idx >> np.uint64(32), seed)
    return (r.astype(np.float64) >= rate * 2.0**32).reshape(shape)


def _gelu(x):
    return x * 0.5 * (1 + np.tanh(0.79788456 * (x + 0.044715 * x**3)))


def _matmul(a, b, tl, tr):
    if tl:
        a = np.swapaxes(a, -1, -2)
    if tr:
        b = np.swapaxes(b, -1, -2)
    return np.matmul(a, b)


def _reduce(x, kind, dims, keepdims):
    dims = tuple(dims)
    if not dims:
        return x.copy()
    f = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}[kind]
    return f(x, axis=dims, keepdims=keepdims)


def _log_softmax(x, dim):
    m = x.max(axis=dim, keepdims=True)
    s = x - m
    return s - np.log(np.exp(s).sum(axis=dim, keepdims=True))


def _softmax(x, dim):
    return np.exp(_log_softmax(x, dim))


def _ce(logits, labels):
    ls = _log_softmax(logits, -1)
    picked = np.take_along_axis(ls, labels[..., None].astype(np.int64), -1)
    return -picked.mean()


def _ce_backward(g, logits, labels):
    p = _softmax(logits, -1)
    onehot = np.zeros_like(p)
    np.put_along_axis(onehot, labels[..., None].astype(np.int64), 1.0, -1)
    return g * (p - onehot) / labels.size


def _layer_norm(x, w, b, axis, eps):
    dims = tuple(range(axis, x.ndim))
    mean = x.mean(axis=dims)
    var = x.var(axis=dims)
    rstd = 1 / np.sqrt(var + eps)
    ex = (slice(None),) * axis + (None,) * (x.ndim - axis)
    y = (x - mean[ex]) * rstd[ex] * w + b
    return y, mean, rstd


def _layer_norm_backward(dy, x, mean, rstd, w, axis):
    dims = tuple(range(axis, x.ndim))
    lead = tuple(range(axis))
    ex = (slice(None),) * axis + (None,) * (x.ndim - axis)
    xhat = (x - mean[ex]) * rstd[ex]
    dxhat = dy * w
    dw = (dy * xhat).sum(axis=lead) if lead else dy * xhat
    db = dy.sum(axis=lead) if lead else dy.copy()
    m1 = dxhat.mean(axis=dims, keepdims=True)
    m2 = (dxhat * xhat).mean(axis=dims, keepdims=True)
    dx = rstd[ex] * (dxhat - m1 - xhat * m2)
    return dx, dw, db


def _bn_dims(x):
    return (0,) + tuple(range(2, x.ndim))


def _bn_shape(x):
    return (1, x.shape[1]) + (1,) * (x.ndim - 2)


def _batch_norm(x, w, b, eps):
    dims = _bn_dims(x)
    mean, var = x.mean(axis=dims), x.var(axis=dims)
    sh = _bn_shape(x)
    y = (x - mean.reshape(sh)) / np.sqrt(var.reshape(sh) + eps) * w.reshape(sh) + b.reshape(sh)
    return y, mean, var


def _batch_norm_backward(dy, x, mean, var, w, eps):
    dims = _bn_dims(x)
    sh = _bn_shape(x)
    n = x.size // x.shape[1]
    rstd = 1 / np.sqrt(var.reshape(sh) + eps)
    xc = x - mean.reshape(sh)
    xhat = xc * rstd
    dxhat = dy * w.reshape(sh)
    dvar = (dxhat * xc * -0.5 * rstd**3).sum(axis=dims, keepdims=True)
    dmean = (-dxhat * rstd).sum(axis=dims, keepdims=True) + dvar * (-2 * xc).mean(axis=dims, keepdims=True)
    dx = dxhat * rstd + dvar * 2 * xc / n + dmean / n
    return dx, (dy * xhat).sum(axis=dims), dy.sum(axis=dims)


def _conv_geometry(h, w, kh, kw, strides, padding, dilations):
    sh, sw = strides
    pt, pb, pl, pr = padding
    dh, dw = dilations
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (w + pl + pr - dw * (kw - 1) - 1) // sw + 1
    return oh, ow


def _taps(kh, kw, oh, ow, strides, dilations):
    sh, sw = strides
    dh, dw = dilations
    for i in range(kh):
        for j in range(kw):
            rows = slice(i * dh, i * dh + (oh - 1) * sh + 1, sh)
            cols = slice(j * dw, j * dw + (ow - 1) * sw + 1, sw)
            yield i, j, rows, cols


def _conv2d(x, w, strides, padding, dilations, groups):
    n, c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    oh, ow = _conv_geometry(h, wd, kh, kw, strides, padding, dilations)
    pt, pb, pl, pr = padding
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    fg = f // groups
    out = np.zeros((n, f, oh, ow))
    for i, j, rows, cols in _taps(kh, kw, oh, ow, strides, dilations):
        patch = xp[:, :, rows, cols]  # n, c, oh, ow
        for g in range(groups):
            out[:, g * fg:(g + 1) * fg] += np.einsum(
                "nchw,fc->nfhw", patch[:, g * cg:(g + 1) * cg], w[g * fg:(g + 1) * fg, :, i, j])
    return out


def _conv2d_backward_input(dy, w, input_size, strides, padding, dilations, groups):
    n, f, oh, ow = dy.shape
    _, cg, kh, kw = w.shape
    c = cg * groups
    h, wd = input_size
    pt, pb, pl, pr = padding
    dxp = np.zeros((n, c, h + pt + pb, wd + pl + pr))
    fg = f // groups
    for i, j, rows, cols in _taps(kh, kw, oh, ow, strides, dilations):
        for g in range(groups):
            dxp[:, g * cg:(g + 1) * cg, rows, cols] += np.einsum(
                "nfhw,fc->nchw", dy[:, g * fg:(g + 1) * fg], w[g * fg:(g + 1) * fg, :, i, j])
    return dxp[:, :, pt:pt + h, pl:pl + wd]


def _conv2d_backward_filter(x, dy, kernel_size, strides, padding, dilations, groups):
    n, c, h, wd = x.shape
    _, f, oh, ow = dy.shape
    kh, kw = kernel_size
    cg = c // groups
    fg = f // groups
    pt, pb, pl, pr = padding
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    dw = np.zeros((f, cg, kh, kw))
    for i, j, rows, cols in _taps(kh, kw, oh, ow, strides, dilations):
        patch = xp[:, :, rows, cols]
        for g in range(groups):
            dw[g * fg:(g + 1) * fg, :, i, j] = np.einsum(
                "nfhw,nchw->fc", dy[:, g * fg:(g + 1) * fg], patch[:, g * cg:(g + 1) * cg])
    return dw


def _pool_windows(x, kernel, strides, padding, fill):
    kh, kw = kernel
    sh, sw = strides
    pt, pb, pl, pr = padding
    n, c, h, w = x.shape
    oh = (h + pt + pb - kh) // sh + 1
    ow = (w + pl + pr - kw) // sw + 1
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=fill)
    return xp, oh, ow


def _max_pool(x, kernel, strides, padding):
    xp, oh, ow = _pool_windows(x, kernel, strides, padding, -np.inf)
    out = np.full(x.shape[:2] + (oh, ow), -np.inf)
    for i, j, rows, cols in _taps(kernel[0], kernel[1], oh, ow, strides, (1, 1)):
        out = np.maximum(out, xp[:, :, rows, cols])
    return out


def _max_pool_backward(dy, x, kernel, strides, padding):
    xp, oh, ow = _pool_windows(x, kernel, strides, padding, -np.inf)
    best = np.full(dy.shape, -np.inf)
    arg = np.zeros(dy.shape + (2,), np.int64)
    for i, j, rows, cols in _taps(kernel[0], kernel[1], oh, ow, strides, (1, 1)):
        v = xp[:, :, rows, cols]
        better = v > best  # strict: the first maximum wins on ties
        best = np.where(better, v, best)
        arg[..., 0] = np.where(better, i, arg[..., 0])
        arg[..., 1] = np.where(better, j, arg[..., 1])
    dxp = np.zeros(xp.shape)
    n, c = dy.shape[:2]
    for a in range(n):
        for b in range(c):
            for p in range(oh):
                for q in range(ow):
                    i, j = arg[a, b, p, q]
                    dxp[a, b, p * strides[0] + i, q * strides[1] + j] += dy[a, b, p, q]
    pt, pb, pl, pr = padding
    return dxp[:, :, pt:pt + x.shape[2], pl:pl + x.shape[3]]


def _avg_divisor(x, kernel, strides, padding, include_pad):
    ones = np.ones((1, 1) + x.shape[2:])
    xp, oh, ow = _pool_windows(ones, kernel, strides, padding, 1.0 if include_pad else 0.0)
    cnt = np.zeros((1, 1, oh, ow))
    for i, j, rows, cols in _taps(kernel[0], kernel[1], oh, ow, strides, (1, 1)):
        cnt += xp[:, :, rows, cols]
    return cnt


def _avg_pool(x, kernel, strides, padding, include_pad):
    xp, oh, ow = _pool_windows(x, kernel, strides, padding, 0.0)
    out = np.zeros(x.shape[:2] + (oh, ow))
    for i, j, rows, cols in _taps(kernel[0], kernel[1], oh, ow, strides, (1, 1)):
        out += xp[:, :, rows, cols]
    return out / _avg_divisor(x, kernel, strides, padding, include_pad)


def _avg_pool_backward(dy, x, kernel, strides, padding, include_pad):
    xp, oh, ow = _pool_windows(x, kernel, strides, padding, 0.0)
    g = dy / _avg_divisor(x, kernel, strides, padding, include_pad)
    dxp = np.zeros(xp.shape)
    for i, j, rows, cols in _taps(kernel[0], kernel[1], oh, ow, strides, (1, 1)):
        dxp[:, :, rows, cols] += g
    pt, pb, pl, pr = padding
    return dxp[:, :, pt:pt + x.shape[2], pl:pl + x.shape[3]]


def _broadcast(x, dims, shape):
    sh = [1] * len(shape)
    for i, d in enumerate(dims):
        sh[d] = x.shape[i]
    return np.broadcast_to(x.reshape(sh), shape).copy()


def _scatter_add(init, idx, upd):
    out = init.copy()
    np.add.at(out, idx.astype(np.int64), upd)
    return out


def _sgd(p, g, lr, buf, a):
    g = g + a.get("weight_decay", 0.0) * p
    mom = a.get("momentum", 0.0)
    if mom > 0:
        buf = mom * buf + g
        g = g + mom * buf if a.get("nesterov") else buf
        return [p - lr * g, buf]
    return [p - lr * g]


def _adam(p, g, m, v, step, lr, a, decoupled):
    b1, b2 = a.get("beta1", 0.9), a.get("beta2", 0.999)
    eps = a.get("epsilon", 1e-8)
    wd = a.get("weight_decay", 0.01 if decoupled else 0.0)
    t = float(step) + 1
    if decoupled:
        p = p * (1 - lr * wd)
    else:
        g = g + wd * p
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    p = p - lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
    return [p, m, v, step + 1]


def evaluate(op, xs):
    """The results (a list of arrays) of gen.Op `op` on operand arrays `xs`."""
    k, a = op.kind, op.attrs
    if k == "constant":
        return [np.full(op.results[0].shape, a["value"], dtype=np.float64)]
    if k in ("add", "sub", "mul", "div", "max", "min"):
        f = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
             "div": np.divide, "max": np.maximum, "min": np.minimum}[k]
        return [f(xs[0], xs[1])]
    if k in ("neg", "exp", "tanh", "relu", "gelu", "sigmoid", "abs", "log", "sqrt", "rsqrt",
             "erf", "log1p", "expm1"):
        x = xs[0]
        f = {"neg": np.negative, "exp": np.exp, "tanh": np.tanh,
             "erf": np.vectorize(math.erf, otypes=[np.float64]), "log1p": np.log1p,
             "expm1": np.expm1,
             "relu": lambda v: np.maximum(v, 0), "gelu": _gelu,
             "sigmoid": lambda v: 1 / (1 + np.exp(-v)), "abs": np.abs,
             "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda v: 1 / np.sqrt(v)}[k]
        return [f(x)]
    if k == "compare":
        f = {"gt": np.greater, "ge": np.greater_equal, "lt": np.less,
             "le": np.less_equal, "eq": np.equal, "ne": np.not_equal}[a["direction"]]
        return [f(xs[0], xs[1])]
    if k == "select":
        return [np.where(xs[0], xs[1], xs[2])]
    if k == "matmul":
        return [_matmul(xs[0], xs[1], a.get("transpose_lhs"), a.get("transpose_rhs"))]
    if k == "reduce":
        return [_reduce(xs[0], a["kind"], a["dims"], a.get("keepdims", False))]
    if k == "softmax":
        return [_softmax(xs[0], a["dim"])]
    if k == "log_softmax":
        return [_log_softmax(xs[0], a["dim"])]
    if k == "softmax_backward":
        g, y = xs
        return [y * (g - (g * y).sum(axis=a["dim"], keepdims=True))]
    if k == "log_softmax_backward":
        g, y = xs
        return [g - np.exp(y) * g.sum(axis=a["dim"], keepdims=True)]
    if k == "slice":
        st = a.get("strides") or (1,) * xs[0].ndim
        return [xs[0][tuple(slice(s, l, t) for s, l, t in zip(a["start"], a["limit"], st))]]
    if k == "concat":
        return [np.concatenate(xs, axis=a["dim"])]
    if k == "cross_entropy":
        return [np.array(_ce(xs[0], xs[1]))]
    if k == "cross_entropy_backward":
        return [_ce_backward(xs[0], xs[1], xs[2])]
    if k == "layer_norm":
        return list(_layer_norm(xs[0], xs[1], xs[2], a["axis"], a.get("epsilon", 1e-5)))
    if k == "layer_norm_backward":
        return list(_layer_norm_backward(*xs, a["axis"]))
    if k == "batch_norm":
        return list(_batch_norm(xs[0], xs[1], xs[2], a.get("epsilon", 1e-5)))
    if k == "batch_norm_backward":
        return list(_batch_norm_backward(*xs, a.get("epsilon", 1e-5)))
    if k == "reshape":
        return [xs[0].reshape(op.results[0].shape)]
    if k == "transpose":
        return [np.transpose(xs[0], a["permutation"])]
    if k == "broadcast":
        return [_broadcast(xs[0], a["dims"], op.results[0].shape)]
    if k == "gather":
        return [xs[0][xs[1].astype(np.int64)]]
    if k == "scatter_add":
        return [_scatter_add(*xs)]
    if k == "dropout":
        x, seed = xs
        keep = dropout_mask(x.shape, int(seed), a["rate"])
        return [np.where(keep, x / (1 - a["rate"]), 0.0)]
    conv = (a.get("strides", (1, 1)), a.get("padding", (0, 0, 0, 0)),
            a.get("dilations", (1, 1)), a.get("groups", 1))
    if k == "conv2d":
        return [_conv2d(xs[0], xs[1], *conv)]
    if k == "conv2d_backward_input":
        return [_conv2d_backward_input(xs[0], xs[1], a["input_size"], *conv)]
    if k == "conv2d_backward_filter":
        return [_conv2d_backward_filter(xs[0], xs[1], a["kernel_size"], *conv)]
    pool = (a.get("kernel_size"), a.get("strides"), a.get("padding", (0, 0, 0, 0)))
    if k == "max_pool2d":
        return [_max_pool(xs[0], *pool)]
    if k == "max_pool2d_backward":
        return [_max_pool_backward(xs[0], xs[1], *pool)]
    if k == "avg_pool2d":
        return [_avg_pool(xs[0], *pool, a.get("count_include_pad", True))]
    if k == "avg_pool2d_backward":
        return [_avg_pool_backward(xs[0], xs[1], *pool, a.get("count_include_pad", True))]
    if k == "sgd":
        return _sgd(xs[0], xs[1], xs[2], xs[3] if len(xs) > 3 else None, a)
    if k in ("adam", "adamw"):
        return _adam(*xs, a, k == "adamw")
    raise NotImplementedError(f"ref: no implementation of train.{k}")


def _as(dtype, x):
    x = np.asarray(x)
    if dtype == "i1":
        return x.astype(bool)
    if dtype.startswith("i"):
        return np.rint(x).astype(np.int64) if x.dtype.kind == "f" else x.astype(np.int64)
    return x.astype(np.float64)


def run(step, arrays):
    """Evaluates gen.Step `step` on `arrays` (argument name -> array):
    returns {ssa name: array} for every argument and op result."""
    env = {}
    for arg in step.args:
        if arg.name not in arrays:
            raise KeyError(f"no array for argument '{arg.name}'")
        env[arg.value.name] = _as(arg.value.dtype, arrays[arg.name])
    for op in step.ops:
        outs = evaluate(op, [env[v.name] for v in op.operands])
        assert len(outs) == len(op.results), op.kind
        for v, x in zip(op.results, outs):
            x = _as(v.dtype, x)
            if tuple(x.shape) != tuple(v.shape):
                raise AssertionError(f"ref: train.{op.kind} gave shape {x.shape} for %{v.name} "
                                     f"of shape {v.shape}")
            env[v.name] = x
    return env


def outputs(step, env):
    """{result name: array} of the step's returned values."""
    return {r.name: env[r.value.name] for r in step.results}


_selftest_philox()
