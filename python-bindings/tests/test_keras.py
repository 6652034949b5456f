# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""distopt.keras: Keras 3 training steps (JAX backend) exported to the
train dialect and run by DistOpt equal `model.train_on_batch` (loss,
weights, batch-norm statistics, optimizer variables) for 3 steps,
single-device, mirrored and tensor-parallel; results load back into the
model."""

import importlib.util
import os

import numpy as np
import pytest

if importlib.util.find_spec("jax") is None or \
        importlib.util.find_spec("keras") is None:
    pytest.skip("jax and keras are not installed (python-bindings/"
                "requirements-frontends.txt)", allow_module_level=True)

import distopt  # noqa: E402
import distopt.keras as dk  # noqa: E402  (sets KERAS_BACKEND=jax)
import keras  # noqa: E402

L = keras.layers
from equality import FAST_COMPILE, RTOL, STEPS, close, compare_distributed  # noqa: E402,F401



def mlp():
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((12,)),
                             L.Dense(16, activation="relu", name="dense1"),
                             L.Dense(4, name="dense2")], name="mlp")


def cnn():
    keras.utils.set_random_seed(0)
    return keras.Sequential([
        keras.Input((8, 8, 3)),
        L.Conv2D(4, 3, padding="same", use_bias=False, name="conv1"),
        L.BatchNormalization(name="bn1"), L.ReLU(name="relu1"),
        L.MaxPooling2D(2, name="pool1"),
        L.Conv2D(6, 3, strides=2, padding="same", name="conv2"),
        L.GlobalAveragePooling2D(name="pool"), L.Dense(4, name="head")],
        name="cnn")


def transformer():
    keras.utils.set_random_seed(0)
    tokens = keras.Input((6,), dtype="int32")
    h = L.Embedding(12, 8, name="embed")(tokens)
    a = L.MultiHeadAttention(2, 4, name="attention")(h, h)
    h = L.LayerNormalization(name="ln1")(h + a)
    f = L.Dense(16, activation="gelu", name="ff1")(h)
    h = L.LayerNormalization(name="ln2")(h + L.Dense(8, name="ff2")(f))
    out = L.Dense(4, name="head")(L.GlobalAveragePooling1D(name="pool")(h))
    return keras.Model(tokens, out, name="transformer")


def batch(kind):
    rng = np.random.default_rng(0)
    x = {"mlp": lambda: rng.normal(size=(8, 12)).astype("f4"),
         "cnn": lambda: rng.normal(size=(4, 8, 8, 3)).astype("f4"),
         "transformer": lambda: rng.integers(0, 12, (4, 6)).astype("i4")}[kind]()
    return x, rng.integers(0, 4, len(x)).astype("i4")


LOSS = "sparse_categorical_crossentropy"


def logits_loss():
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def keras_steps(model, x, y):
    return np.array([float(model.train_on_batch(x, y)) for _ in range(STEPS)])


def optimizer_paths(optimizer):
    """Optimizer variables by their path without the optimizer's own
    (unique) name: the reference model's optimizer is another instance."""
    return {v.path.split("/", 1)[1]: v for v in optimizer.variables}


def assert_equal_to_keras(step, result, reference, x, y):
    losses = keras_steps(reference, x, y)
    assert np.allclose(result.losses, losses, rtol=RTOL, atol=0), \
        (result.losses, losses)
    state = {**step.state, **result.state}
    for v in reference.variables:
        if str(v.dtype).startswith("uint"):     # a random layer's seed
            continue
        assert v.path in state, f"{v.path} missing from the run"
        assert close(state[v.path], v.value), v.path
    ours = {name.split("/", 1)[1]: array for name, array in state.items()
            if name.split("/", 1)[0] == reference.optimizer.name
            or name.split("/", 1)[0] == step.optimizer_name}
    for name, v in optimizer_paths(reference.optimizer).items():
        assert name in ours, f"optimizer variable {name} missing"
        assert close(ours[name], v.value), name


def export(model_fn, kind, make_optimizer, loss=LOSS):
    model, reference = model_fn(), model_fn()
    x, y = batch(kind)
    step = dk.export_train_step(model, x, y, loss=loss,
                                optimizer=make_optimizer())
    step.optimizer_name = model.optimizer.name
    reference.compile(loss=loss, optimizer=make_optimizer())
    return model, reference, step, x, y


@pytest.mark.parametrize("make_optimizer", [
    lambda: keras.optimizers.SGD(learning_rate=0.1, momentum=0.9),
    lambda: keras.optimizers.SGD(learning_rate=0.1, momentum=0.9,
                                 nesterov=True),
    lambda: keras.optimizers.Adam(learning_rate=0.01),
    lambda: keras.optimizers.AdamW(learning_rate=0.01, weight_decay=0.1),
], ids=["sgd-momentum", "sgd-nesterov", "adam", "adamw"])
def test_mlp_equals_train_on_batch(make_optimizer):
    model, reference, step, x, y = export(mlp, "mlp", make_optimizer,
                                          loss=logits_loss())
    result = distopt.run(step.module, step.state, step.batch, steps=STEPS,
                         extra_args=FAST_COMPILE)
    assert_equal_to_keras(step, result, reference, x, y)


def test_cnn_with_batch_norm_equals_train_on_batch_and_is_mirrored():
    model, reference, step, x, y = export(
        cnn, "cnn", lambda: keras.optimizers.SGD(learning_rate=0.1,
                                                 momentum=0.9),
        loss=logits_loss())
    # Batch-norm statistics are carried state, named by their Keras path.
    assert '#train.role<opt_state>, train.name = "cnn/bn1/moving_mean"' \
        in step.mlir
    single = distopt.run(step.module, step.state, step.batch, steps=STEPS,
                         extra_args=FAST_COMPILE)
    assert_equal_to_keras(step, single, reference, x, y)
    compare_distributed(step, single, FAST_COMPILE,
                        [distopt.MirroredStrategy(2)])


def test_transformer_equals_train_on_batch_and_distributes():
    """SGD, not Adam: the key projection's bias has a zero gradient in exact
    arithmetic (softmax ignores a shift shared by every key), and Adam
    scales its rounding noise (1e-10) up to steps of the learning rate's
    size, differently in every implementation."""
    model, reference, step, x, y = export(
        transformer, "transformer",
        lambda: keras.optimizers.SGD(learning_rate=0.1, momentum=0.9),
        loss=logits_loss())
    single = distopt.run(step.module, step.state, step.batch, steps=STEPS,
                         extra_args=FAST_COMPILE)
    assert_equal_to_keras(step, single, reference, x, y)
    compare_distributed(step, single, FAST_COMPILE)


def test_causal_conv1d_and_unrolled_lstm_equal_train_on_batch():
    """Regressions: a causal Conv1D pads inside jnp.pad's jit (the padding
    value is a constant passed into the call); the LSTM cell's seed for a
    recurrent dropout it does not use (uint32) stays out of the step;
    the unrolled sequence is stacked (lax's `stack`)."""
    def model_fn():
        keras.utils.set_random_seed(0)
        return keras.Sequential([keras.Input((6, 3)),
                                 L.Conv1D(4, 3, padding="causal", name="conv"),
                                 L.LSTM(5, unroll=True, name="lstm"),
                                 L.Dense(4, name="head")], name="seq")
    model, reference = model_fn(), model_fn()
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 6, 3)).astype("f4")
    y = rng.integers(0, 4, 4).astype("i4")
    make = lambda: keras.optimizers.SGD(learning_rate=0.1, momentum=0.9)  # noqa: E731
    step = dk.export_train_step(model, x, y, loss=logits_loss(),
                                optimizer=make())
    step.optimizer_name = model.optimizer.name
    assert not any("seed" in name for name in step.state)
    reference.compile(loss=logits_loss(), optimizer=make())
    result = distopt.run(step.module, step.state, step.batch, steps=STEPS,
                         extra_args=FAST_COMPILE)
    assert_equal_to_keras(step, result, reference, x, y)
    dk.load_into(model, {**step.state, **result.state})


def test_depthwise_and_separable_convolutions_equal_train_on_batch():
    """Regression: the filter gradient of a grouped (depthwise) convolution
    is JAX's batch_group_count form: conv2d_backward_filter with groups."""
    def model_fn():
        keras.utils.set_random_seed(0)
        return keras.Sequential([
            keras.Input((8, 8, 3)),
            L.DepthwiseConv2D(3, depth_multiplier=2, name="depthwise"),
            L.SeparableConv2D(4, 3, name="separable"),
            L.GlobalAveragePooling2D(name="pool"), L.Dense(4, name="head")],
            name="mobile")
    model, reference = model_fn(), model_fn()
    x, y = batch("cnn")
    make = lambda: keras.optimizers.SGD(learning_rate=0.1, momentum=0.9)  # noqa: E731
    step = dk.export_train_step(model, x, y, loss=logits_loss(),
                                optimizer=make())
    step.optimizer_name = model.optimizer.name
    assert '"train.conv2d_backward_filter"' in step.mlir
    reference.compile(loss=logits_loss(), optimizer=make())
    result = distopt.run(step.module, step.state, step.batch, steps=STEPS,
                         extra_args=FAST_COMPILE)
    assert_equal_to_keras(step, result, reference, x, y)


def test_loss_by_name_save_and_load_into(tmp_path):
    """A softmax model with the loss by name; the saved step's files; the
    trained state back into the model: it predicts what the reference
    model trained by Keras predicts, and its optimizer continues."""
    def model_fn():
        keras.utils.set_random_seed(0)
        return keras.Sequential([keras.Input((12,)),
                                 L.Dense(16, activation="tanh", name="d1"),
                                 L.Dense(4, activation="softmax", name="d2")],
                                name="softmax_mlp")
    model, reference, step, x, y = export(
        model_fn, "mlp", lambda: keras.optimizers.SGD(learning_rate=0.1,
                                                      momentum=0.9))
    paths = step.save(str(tmp_path / "step"))
    assert [os.path.basename(p) for p in paths] == \
        ["step.mlir", "state.npz", "batch.npz"]
    with np.load(paths[1]) as saved:
        assert "softmax_mlp/d1/kernel" in saved.files
    result = distopt.run(step.module, step.state, step.batch, steps=STEPS,
                         extra_args=FAST_COMPILE)
    assert_equal_to_keras(step, result, reference, x, y)
    before = model.predict(x, verbose=0)
    assigned = dk.load_into(model, {**step.state, **result.state})
    assert "softmax_mlp/d1/kernel" in assigned
    assert any(p.endswith("/iteration") for p in assigned)
    assert int(model.optimizer.iterations.value) == STEPS
    after = model.predict(x, verbose=0)
    want = reference.predict(x, verbose=0)
    assert not np.allclose(before, want)
    assert np.allclose(after, want, rtol=1e-4, atol=1e-6)
    # It continues as the reference does.
    assert np.isclose(float(model.train_on_batch(x, y)),
                      float(reference.train_on_batch(x, y)), rtol=1e-4)
    with pytest.raises(ValueError, match="softmax_mlp/d1/kernel: shape"):
        dk.load_into(model, {**step.state, "softmax_mlp/d1/kernel":
                             np.zeros((2, 2), "f4")})
    with pytest.raises(KeyError, match="softmax_mlp/d1/bias is not in the "
                       "state"):
        partial = {**step.state, **result.state}
        del partial["softmax_mlp/d1/bias"]
        dk.load_into(model, partial)


def test_unsupported_layer_is_named():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((12,)),
                              L.Dense(16, name="dense1"),
                              L.Dropout(0.5, name="my_dropout"),
                              L.Dense(4, name="dense2")])
    x, y = batch("mlp")
    with pytest.raises(dk.UnsupportedOpError) as info:
        dk.export_train_step(model, x, y, loss=logits_loss(),
                             optimizer=keras.optimizers.SGD(0.1))
    assert "my_dropout" in str(info.value), str(info.value)
    assert info.value.scope and "my_dropout" in info.value.scope
    # A primitive without a mapping: the error names the layer's scope.
    keras.utils.set_random_seed(0)
    model = keras.Sequential([
        keras.Input((12,)), L.Dense(16, name="dense1"),
        L.Lambda(lambda t: keras.ops.cumsum(t, axis=-1), name="my_cumsum"),
        L.Dense(4, name="head")])
    with pytest.raises(dk.UnsupportedOpError) as info:
        dk.export_train_step(model, x, y, loss=logits_loss(),
                             optimizer=keras.optimizers.SGD(0.1))
    assert "my_cumsum" in info.value.scope, str(info.value)
    assert f"JAX primitive '{info.value.op}'" in str(info.value)


def test_bad_arguments():
    x, y = batch("mlp")
    with pytest.raises(TypeError, match="model must be a keras.Model"):
        dk.export_train_step(lambda v: v, x, y, loss=LOSS,
                             optimizer=keras.optimizers.SGD(0.1))
    with pytest.raises(TypeError, match="keras.optimizers.Optimizer"):
        dk.export_train_step(mlp(), x, y, loss=LOSS, optimizer="sgd-ish")
    with pytest.raises(ValueError, match="give both loss and optimizer"):
        dk.export_train_step(mlp(), x, y, loss=LOSS)
    with pytest.raises(ValueError, match="not compiled"):
        dk.export_train_step(mlp(), x, y)
    with pytest.raises(TypeError, match="x must be arrays"):
        dk.export_train_step(mlp(), object(), y, loss=LOSS,
                             optimizer=keras.optimizers.SGD(0.1))
