# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""One example's training step in TensorFlow, timed (bench/step_time.py).

    tf_step.py MODEL STATE.npz DATA.npz STEPS THREADS WORLD RANK PORT JIT

The same computation as test/Integration/Inputs/torch_reference.py (and
examples/MODEL.mlir): the parameters and optimizer state from STATE (PyTorch
layouts: linear weights are [out, in]), the batch from DATA, the optimizer
written out with PyTorch's update rules (SGD with momentum 0.9; AdamW with
betas 0.9/0.999, eps 1e-8, weight decay 0.01), so the first loss is the
same number. JIT=1 compiles with XLA (`tf.function(jit_compile=True)`): on
one process the whole step is one XLA computation; on WORLD=2 processes
(MultiWorkerMirroredStrategy over localhost:PORT.., ring all-reduce)
the forward + backward and the update are two XLA computations with the
gradients' all-reduce between them. THREADS sets TensorFlow's intra- and
inter-op pools. Rank 0 prints one JSON line: the step times in ms and the
first loss (averaged over the ranks).
"""

import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

STATE_SUFFIXES = (".momentum_buffer", ".exp_avg", ".exp_avg_sq", ".step")


def linear(p, v, name):
    w, b = p[name + ".weight"], p[name + ".bias"]
    shape = tf.shape(v)
    flat = tf.reshape(v, [-1, w.shape[1]])
    out = tf.matmul(flat, w, transpose_b=True) + b
    return tf.reshape(out, tf.concat([shape[:-1], [w.shape[0]]], 0))


def forward(model, p, x, y):
    if model.startswith("mlp"):
        logits = linear(p, tf.nn.relu(linear(p, x, "fc1")), "fc2")
        return tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
    b, s, h = x.shape
    heads = 4

    def norm(v, name):
        mean, var = tf.nn.moments(v, axes=[-1], keepdims=True)
        return ((v - mean) * tf.math.rsqrt(var + 1e-5) * p[name + ".weight"] +
                p[name + ".bias"])

    def split(v):
        return tf.transpose(tf.reshape(v, [b, s, heads, h // heads]),
                            [0, 2, 1, 3])

    ln1 = norm(x, "ln1")
    q, k, v = (split(linear(p, ln1, "attn." + n)) for n in "qkv")
    scores = tf.matmul(q, k, transpose_b=True) / (h // heads) ** 0.5
    ctx = tf.matmul(tf.nn.softmax(scores, axis=-1), v)
    ctx = tf.reshape(tf.transpose(ctx, [0, 2, 1, 3]), [b, s, h])
    h1 = x + linear(p, ctx, "attn.out")
    act = tf.nn.gelu(linear(p, norm(h1, "ln2"), "mlp.fc1"), approximate=True)
    logits = linear(p, h1 + linear(p, act, "mlp.fc2"), "head")
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        tf.reshape(y, [-1]), tf.reshape(logits, [b * s, -1])))


def update(model, params, slots, grads, lr):
    """PyTorch's SGD (momentum 0.9) or AdamW, in place."""
    for name, param in params.items():
        g = grads[name]
        if model == "mlp":
            buf = slots[name + ".momentum_buffer"]
            buf.assign(0.9 * buf + g)
            param.assign_sub(lr * buf)
            continue
        m, v = slots[name + ".exp_avg"], slots[name + ".exp_avg_sq"]
        t = slots[name + ".step"]
        t.assign_add(tf.ones_like(t))
        param.assign(param * (1.0 - lr * 0.01))
        m.assign(0.9 * m + 0.1 * g)
        v.assign(0.999 * v + 0.001 * g * g)
        bc1 = 1.0 - tf.pow(0.9, t)
        bc2 = 1.0 - tf.pow(0.999, t)
        denom = tf.sqrt(v) / tf.sqrt(bc2) + 1e-8
        param.assign_sub(lr / bc1 * m / denom)


def main():
    model, state_path, data_path = sys.argv[1:4]
    steps, threads, world, rank, port, jit = map(int, sys.argv[4:10])
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    if world > 1:
        os.environ["TF_CONFIG"] = json.dumps({
            "cluster": {"worker": [f"localhost:{port + r}"
                                   for r in range(world)]},
            "task": {"type": "worker", "index": rank}})
        strategy = tf.distribute.MultiWorkerMirroredStrategy(
            communication_options=tf.distribute.experimental.
            CommunicationOptions(implementation=tf.distribute.experimental.
                                 CommunicationImplementation.RING))
    else:
        strategy = tf.distribute.get_strategy()
    state, data = np.load(state_path), np.load(data_path)
    names = [n for n in state.files
             if n != "lr" and not n.endswith(STATE_SUFFIXES)]
    y_name = "y" if model.startswith("mlp") else "labels"
    batch = data["x"].shape[0] // world
    x = tf.constant(data["x"][rank * batch:(rank + 1) * batch])
    y = tf.constant(data[y_name][rank * batch:(rank + 1) * batch]
                    .astype(np.int32))
    lr = tf.constant(float(state["lr"]), tf.float32)
    with strategy.scope():
        params = {n: tf.Variable(state[n], name=n.replace(".", "_"))
                  for n in names}
        slots = {n: tf.Variable(state[n].astype(np.float32),
                                name=n.replace(".", "_"))
                 for n in state.files
                 if n != "lr" and n.endswith(STATE_SUFFIXES)}

    def loss_and_grads(x, y):
        with tf.GradientTape() as tape:
            loss = forward(model, params, x, y)
        grads = tape.gradient(loss, params)
        return loss, grads

    def apply(grads):
        update(model, params, slots, grads, lr)

    if world == 1:
        @tf.function(jit_compile=bool(jit))
        def step(x, y):
            loss, grads = loss_and_grads(x, y)
            apply(grads)
            return loss
    else:
        compute = tf.function(loss_and_grads, jit_compile=bool(jit))
        apply_fn = tf.function(apply, jit_compile=bool(jit))

        def replica(x, y):
            loss, grads = compute(x, y)
            ctx = tf.distribute.get_replica_context()
            names_in_order = list(grads)
            summed = ctx.all_reduce(tf.distribute.ReduceOp.MEAN,
                                    [grads[n] for n in names_in_order])
            apply_fn(dict(zip(names_in_order, summed)))
            return ctx.all_reduce(tf.distribute.ReduceOp.MEAN, loss)

        @tf.function
        def step(x, y):
            return strategy.run(replica, args=(x, y))

    times, first = [], None
    for _ in range(steps):
        start = time.perf_counter()
        loss = float(step(x, y))
        times.append((time.perf_counter() - start) * 1e3)
        if first is None:
            first = loss
    if rank == 0:
        print(json.dumps({"times": times, "first_loss": first}))


if __name__ == "__main__":
    main()
