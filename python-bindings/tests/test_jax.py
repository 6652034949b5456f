# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""distopt.jax: JAX + optax training steps exported to the train dialect
and run by DistOpt equal the jitted JAX step (loss, parameters, optimizer
state) for 3 steps, single-device, mirrored and tensor-parallel."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")
optax = pytest.importorskip("optax")
import jax.numpy as jnp  # noqa: E402

import distopt  # noqa: E402
import distopt.jax as dj  # noqa: E402

from equality import FAST_COMPILE, RTOL, STEPS, close, compare_distributed  # noqa: E402,F401



def jax_steps(loss_fn, tx, params, batch, steps=STEPS):
    """The jitted JAX + optax step: losses, parameters and optax state."""
    @jax.jit
    def step(p, s, b):
        loss, grads = jax.value_and_grad(loss_fn)(p, b)
        updates, s = tx.update(grads, s, p)
        return loss, optax.apply_updates(p, updates), s

    state, losses = tx.init(params), []
    for _ in range(steps):
        loss, params, state = step(params, state, batch)
        losses.append(float(loss))
    return np.array(losses), params, state


def named(tree, prefix=None):
    leaves, _ = jax.tree_util.tree_flatten_with_path(tree)
    return {dj.path_name(p, prefix): np.asarray(v) for p, v in leaves}


def assert_equal_to_jax(step, result, loss_fn, tx, params, batch):
    """The run's losses and state (its results, and the hyper-parameters it
    keeps: step.state's) equal JAX's."""
    losses, new_params, new_state = jax_steps(loss_fn, tx, params, batch)
    state = {**step.state, **result.state}
    assert np.allclose(result.losses, losses, rtol=RTOL, atol=0), \
        (result.losses, losses)
    want = named(new_params)
    want.update(named(new_state, dj.OPT_PREFIX))
    for name, array in want.items():
        assert name in state, f"{name} missing from the run"
        assert close(state[name], array), name


def cross_entropy(logits, labels):
    onehot = jax.nn.one_hot(labels, logits.shape[-1])
    return -jnp.mean(jnp.sum(onehot * jax.nn.log_softmax(logits), -1))


# -- models ---------------------------------------------------------------------

def mlp():
    rng = np.random.default_rng(0)
    params = {"dense1": {"kernel": rng.normal(0, 0.5, (12, 16)).astype("f4"),
                         "bias": np.zeros(16, "f4")},
              "dense2": {"kernel": rng.normal(0, 0.5, (16, 4)).astype("f4"),
                         "bias": np.zeros(4, "f4")}}
    batch = {"x": rng.normal(size=(8, 12)).astype("f4"),
             "y": rng.integers(0, 4, 8).astype("i4")}

    def loss_fn(p, b):
        h = jax.nn.relu(b["x"] @ p["dense1"]["kernel"] + p["dense1"]["bias"])
        return cross_entropy(h @ p["dense2"]["kernel"] + p["dense2"]["bias"],
                             b["y"])
    return loss_fn, params, batch


def cnn():
    """Two convolutions (NHWC, one strided), batch norm over the batch's
    statistics, 2x2 max pooling (stride 1) and average pooling (stride 2), global average pooling and a
    linear head."""
    rng = np.random.default_rng(1)
    params = {"conv1": {"w": rng.normal(0, 0.3, (3, 3, 3, 4)).astype("f4")},
              "bn1": {"scale": np.ones(4, "f4"), "bias": np.zeros(4, "f4")},
              "conv2": {"w": rng.normal(0, 0.3, (3, 3, 4, 6)).astype("f4")},
              "head": {"w": rng.normal(0, 0.3, (6, 4)).astype("f4")}}
    batch = (rng.normal(size=(4, 8, 8, 3)).astype("f4"),
             rng.integers(0, 4, 4).astype("i4"))

    def conv(x, w, stride, padding):
        return jax.lax.conv_general_dilated(
            x, w, (stride, stride), padding,
            dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def loss_fn(p, b):
        x, y = b
        h = conv(x, p["conv1"]["w"], 1, "SAME")
        mean = jnp.mean(h, axis=(0, 1, 2))
        var = jnp.var(h, axis=(0, 1, 2))
        h = (h - mean) * jax.lax.rsqrt(var + 1e-5) * p["bn1"]["scale"] + \
            p["bn1"]["bias"]
        h = jax.lax.reduce_window(jax.nn.relu(h), -jnp.inf, jax.lax.max,
                                  (1, 2, 2, 1), (1, 1, 1, 1), "SAME")
        # Strided: its gradient pads with interior zeros.
        h = jax.lax.reduce_window(h, 0.0, jax.lax.add, (1, 2, 2, 1),
                                  (1, 2, 2, 1), "VALID") / 4
        h = conv(h, p["conv2"]["w"], 2, "VALID")
        return cross_entropy(jnp.mean(h, axis=(1, 2)) @ p["head"]["w"], y)
    return loss_fn, params, batch


def transformer():
    """Token embedding, one pre-norm attention block (2 heads) with a GELU
    feed-forward, mean pooling, a linear head."""
    rng = np.random.default_rng(2)
    d, heads, vocab, seq = 8, 2, 11, 6

    def w(*shape):
        return rng.normal(0, 0.3, shape).astype("f4")
    params = {"embed": w(vocab, d),
              "block": {"ln": {"scale": np.ones(d, "f4"),
                               "bias": np.zeros(d, "f4")},
                        "qkv": w(d, 3 * d), "out": w(d, d),
                        "ff1": w(d, 16), "ff2": w(16, d)},
              "head": w(d, 4)}
    batch = {"tokens": rng.integers(0, vocab, (4, seq)).astype("i4"),
             "labels": rng.integers(0, 4, 4).astype("i4")}

    def layer_norm(x, p):
        mean = jnp.mean(x, -1, keepdims=True)
        var = jnp.mean((x - mean) ** 2, -1, keepdims=True)
        return (x - mean) / jnp.sqrt(var + 1e-5) * p["scale"] + p["bias"]

    def loss_fn(p, b):
        x = p["embed"][b["tokens"]]
        blk = p["block"]
        h = layer_norm(x, blk["ln"])
        q, k, v = jnp.split(h @ blk["qkv"], 3, axis=-1)

        def split_heads(t):
            return t.reshape(t.shape[0], seq, heads, d // heads).transpose(
                0, 2, 1, 3)
        q, k, v = map(split_heads, (q, k, v))
        scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(d // heads)
        att = jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(scores, -1), v)
        x = x + att.transpose(0, 2, 1, 3).reshape(x.shape) @ blk["out"]
        x = x + jax.nn.gelu(x @ blk["ff1"], approximate=False) @ blk["ff2"]
        return cross_entropy(jnp.mean(x, 1) @ p["head"], b["labels"])
    return loss_fn, params, batch


# -- equality with JAX ----------------------------------------------------------

@pytest.mark.parametrize("tx", [
    optax.sgd(0.1, momentum=0.9),
    optax.inject_hyperparams(optax.adam)(learning_rate=0.01),
    optax.adamw(0.01, weight_decay=0.1),
    optax.chain(optax.clip_by_global_norm(1.0), optax.sgd(0.1)),
], ids=["sgd-momentum", "adam-injected", "adamw", "clipped-sgd"])
def test_mlp_equals_jax(tx):
    loss_fn, params, batch = mlp()
    step = dj.export_train_step(loss_fn, params, batch, optimizer=tx)
    result = distopt.run(step.module, step.state, step.batch, steps=STEPS,
                         extra_args=FAST_COMPILE)
    assert_equal_to_jax(step, result, loss_fn, tx, params, batch)


def test_mlp_distributes():
    """The MLP's step (optax's own update, traced) mirrored and
    tensor-parallel over 2 ranks equals the single-device run."""
    loss_fn, params, batch = mlp()
    step = dj.export_train_step(loss_fn, params, batch,
                                optimizer=optax.sgd(0.1, momentum=0.9))
    single = distopt.run(step.module, step.state, step.batch, steps=STEPS,
                         extra_args=FAST_COMPILE)
    compare_distributed(step, single, FAST_COMPILE)


def test_injected_hyper_parameters_and_loading_back():
    loss_fn, params, batch = mlp()
    tx = optax.inject_hyperparams(optax.sgd)(learning_rate=0.05, momentum=0.9)
    step = dj.export_train_step(loss_fn, params, batch, optimizer=tx)
    assert step.param_names == ["dense1.bias", "dense1.kernel",
                                "dense2.bias", "dense2.kernel"]
    assert "opt.inner_state.0.trace.dense1.kernel" in step.state
    # The injected learning rate is a hyper-parameter: an argument the
    # step does not return.
    assert 'train.role = #train.role<hyper>, train.name = ' \
        '"opt.hyperparams.learning_rate"' in step.mlir
    assert set(step.batch) == {"x", "y"}
    assert '#train.role<label>, train.name = "y"' in step.mlir
    result = distopt.run(step.module, step.state, step.batch, steps=STEPS,
                         extra_args=FAST_COMPILE)
    assert_equal_to_jax(step, result, loss_fn, tx, params, batch)
    # Results load back into the pytrees and continue as JAX would.
    new_params = dj.params_from_state(result.state, params)
    new_opt = dj.opt_state_from_state({**step.state, **result.state},
                                      tx.init(params))
    _, want_params, _ = jax_steps(loss_fn, tx, params, batch)
    for name, array in named(new_params).items():
        assert close(array, named(want_params)[name]), name
    assert int(new_opt.count) == STEPS


@pytest.mark.parametrize("short, tx", [
    (("sgd", {"lr": 0.05, "momentum": 0.9}), optax.sgd(0.05, momentum=0.9)),
    (("adam", {"learning_rate": 0.01}), optax.adam(0.01)),
    (("adamw", {"lr": 0.01, "weight_decay": 0.1}),
     optax.adamw(0.01, weight_decay=0.1)),
], ids=["sgd", "adam", "adamw"])
def test_short_form_is_train_optimizer_ops(short, tx):
    """The short form emits train.sgd/adam/adamw (which ZeRO shards),
    equal to optax's own update up to rounding."""
    loss_fn, params, batch = mlp()
    step = dj.export_train_step(loss_fn, params, batch, optimizer=short)
    assert f'"train.{short[0]}"' in step.mlir
    suffixes = (["momentum_buffer"] if short[0] == "sgd" else
                ["exp_avg", "exp_avg_sq", "step"])
    assert sorted(step.state) == sorted(
        ["lr"] + [f"{p}{s}" for p in step.param_names
                  for s in [""] + [f".{x}" for x in suffixes]])
    assert 'train.role = #train.role<hyper>, train.name = "lr"' in step.mlir
    result = distopt.run(step.module, step.state, step.batch, steps=STEPS,
                         extra_args=FAST_COMPILE)
    losses, new_params, _ = jax_steps(loss_fn, tx, params, batch)
    assert np.allclose(result.losses, losses, rtol=RTOL, atol=0)
    for name, array in named(new_params).items():
        assert close(result.state[name], array), name
    # ZeRO-3 shards the parameters the optimizer ops update and gathers
    # them where the step reads them (a traced optax update it leaves
    # replicated: no gathers).
    zero = distopt.ZeroStrategy(3, 2).distribute(step.module)
    assert "all_gather" in str(zero)
    traced = dj.export_train_step(loss_fn, params, batch, optimizer=tx)
    assert "all_gather" not in str(
        distopt.ZeroStrategy(3, 2).distribute(traced.module))


def test_cnn_equals_jax():
    loss_fn, params, batch = cnn()
    tx = optax.sgd(0.1, momentum=0.9)
    step = dj.export_train_step(loss_fn, params, batch, optimizer=tx)
    for op in ("conv2d_backward_input", "max_pool2d_backward", "avg_pool2d"):
        assert f'"train.{op}"' in step.mlir, op
    result = distopt.run(step.module, step.state, step.batch, steps=STEPS,
                         extra_args=FAST_COMPILE)
    assert_equal_to_jax(step, result, loss_fn, tx, params, batch)
    assert set(step.batch) == {"0", "1"}


def test_transformer_equals_jax_and_distributes():
    loss_fn, params, batch = transformer()
    tx = optax.adam(0.01)
    step = dj.export_train_step(loss_fn, params, batch, optimizer=tx)
    single = distopt.run(step.module, step.state, step.batch, steps=STEPS,
                         extra_args=FAST_COMPILE)
    assert_equal_to_jax(step, single, loss_fn, tx, params, batch)
    compare_distributed(step, single, FAST_COMPILE)


# -- errors ---------------------------------------------------------------------

def test_unsupported_primitive_names_it_and_the_line():
    def loss_fn(p, b):
        return jnp.mean(jnp.cumsum(b["x"] @ p["w"], axis=1))   # THE LINE
    params = {"w": np.ones((3, 2), "f4")}
    batch = {"x": np.ones((4, 3), "f4"), "y": np.zeros(4, "i4")}
    with pytest.raises(dj.UnsupportedOpError) as info:
        dj.export_train_step(loss_fn, params, batch)
    error = info.value
    assert error.op.startswith("cum")
    assert error.where and "test_jax.py" in error.where, str(error)
    assert f"JAX primitive '{error.op}'" in str(error)
    assert isinstance(error, distopt.DistOptError)


def test_bad_arguments():
    loss_fn, params, batch = mlp()
    with pytest.raises(TypeError, match="loss_fn must be a function"):
        dj.export_train_step("loss", params, batch)
    with pytest.raises(TypeError, match="optax GradientTransformation"):
        dj.export_train_step(loss_fn, params, batch, optimizer=object())
    with pytest.raises(ValueError, match="unknown optimizer 'lamb'"):
        dj.export_train_step(loss_fn, params, batch, optimizer=("lamb", {}))
    with pytest.raises(TypeError, match=r"optax.sgd: unknown option\(s\) "
                       r"\['betas'\]"):
        dj.export_train_step(loss_fn, params, batch,
                             optimizer=("sgd", {"lr": 0.1, "betas": 1}))
    with pytest.raises(TypeError, match="learning_rate .or lr. must be a "
                       "number"):
        dj.export_train_step(loss_fn, params, batch, optimizer=("adam", {}))
    with pytest.raises(ValueError, match="eps_root"):
        dj.export_train_step(loss_fn, params, batch,
                             optimizer=("adam", {"lr": 0.1, "eps_root": 1e-8}))
    with pytest.raises(TypeError, match="dense1.kernel: not an array"):
        bad = {**params, "dense1": {**params["dense1"], "kernel": object()}}
        dj.export_train_step(loss_fn, bad, batch)
    with pytest.raises(TypeError, match="parameter dense1.kernel is int32, "
                       "not a float array"):
        bad = {**params, "dense1": {**params["dense1"],
                                    "kernel": np.ones((12, 16), "i4")}}
        dj.export_train_step(loss_fn, bad, batch)
    with pytest.raises(ValueError, match=r"labels \['z'\] are not batch"):
        dj.export_train_step(loss_fn, params, batch, labels=["z"])
    with pytest.raises(distopt.DistOptError, match="loss must be a float "
                       "scalar"):
        dj.export_train_step(lambda p, b: b["x"] @ p["dense1"]["kernel"],
                             params, batch)
    with pytest.raises(KeyError, match="dense1.bias is not in the state"):
        dj.params_from_state({}, params)
