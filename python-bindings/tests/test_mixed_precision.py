# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Mixed precision from the front ends: a PyTorch step exported under
torch.autocast (with a GradScaler) and a Keras model under a mixed policy
(with a LossScaleOptimizer) export to the float32 step with the
train-mixed-precision pass run on it, and train as the framework's own
mixed step does: loss and float32 master weights within 16-bit tolerance
over 3 steps, the dynamic loss scale and its growth tracker exactly, a
step with a non-finite gradient skipped as GradScaler skips it."""

import copy
import importlib.util
import warnings

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import distopt
import distopt.torch as dt
from equality import close, normwise

# How far the 16-bit steps may be from PyTorch's own: the products round
# to 8 (bfloat16) or 11 (float16) significant bits in both, but not in the
# same places (PyTorch's CPU autocast keeps log-softmax and layer norms in
# 16 bits, the pass in float32).
LOSS_RTOL = {torch.bfloat16: 3e-2, torch.float16: 5e-3}
STATE_RTOL = {torch.bfloat16: 3e-2, torch.float16: 5e-3}
COMPUTE = {torch.bfloat16: "bf16", torch.float16: "f16"}


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32),
                         nn.Tanh(), nn.Linear(32, 10))


class Block(nn.Module):
    """A transformer encoder block (attention, layer norms, GELU feed-
    forward) with a mean-pooled classification head."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        # No biases: attention's key bias gets a gradient that is zero in
        # exact arithmetic, which Adam turns into a full step of rounding
        # noise in any implementation (test_torch.py's GPT has none either).
        self.block = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0,
                                                batch_first=True, bias=False)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        return self.head(self.block(x).mean(1))


class CNN(nn.Module):
    """Convolutions (strided, padded), a batch norm whose running
    statistics are state, max pooling and a linear head."""
    input_shape = (3, 16, 16)

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.c1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.c2 = nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.head = nn.Linear(8, 10)

    def forward(self, x):
        h = F.max_pool2d(torch.relu(self.bn(self.c1(x))), 2)
        return self.head(torch.relu(self.c2(h)).mean((2, 3)))


Block.input_shape = (6, 16)


def batch_for(model, seed=1, size=8):
    g = torch.Generator().manual_seed(seed)
    shape = getattr(model, "input_shape", (16,))
    return torch.randn(size, *shape, generator=g), \
        torch.randint(0, 10, (size,), generator=g)


def sgd(model):
    return torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


def adam(model):
    return torch.optim.Adam(model.parameters(), lr=1e-3)


def snapshot(model, optimizer):
    """The model's parameters, batch-norm statistics and the optimizer's
    state by DistOpt's names."""
    state = {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
    state.update({n: b.detach().numpy().copy()
                  for n, b in model.named_buffers() if "running" in n})
    for name, p in model.named_parameters():
        for key, value in optimizer.state[p].items():
            state[f"{name}.{key}"] = np.asarray(value.detach().numpy(),
                                                np.float32).copy()
    return state


def torch_amp_step(model, optimizer, scaler, dtype, x, y):
    """PyTorch's own mixed step: forward and loss under CPU autocast,
    scaled backward, the scaler's step and update. Returns the loss."""
    optimizer.zero_grad()
    with torch.autocast(device_type="cpu", dtype=dtype,
                        enabled=dtype is not None):
        loss = F.cross_entropy(model(x), y)
    if scaler is None:
        loss.backward()
        optimizer.step()
    else:
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    return float(loss)


def scaler_of(scaler):
    state = scaler.state_dict()
    return float(state["scale"]), int(state["_growth_tracker"])


def export_mixed(model, optimizer, dtype, scaler, x, y):
    with torch.autocast(device_type="cpu", dtype=dtype), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dt.export_train_step(model, x, y, optimizer=optimizer,
                                    scaler=scaler)


def run_one(step, state, x, y):
    """One DistOpt step from `state` on the batch (x, y): (loss, state)."""
    batch = dict(zip(step.batch, (x.numpy(), y.numpy())))
    result = distopt.run(step.module, state, batch, steps=1)
    return float(np.asarray(result.losses).reshape(-1)[0]), \
        {**state, **result.state}


def assert_state_close(ours, want, rtol, what, exact=None):
    """Every array of `want` (PyTorch's mixed step) within `rtol` of its
    largest magnitude in `ours`; with `exact` (PyTorch's float32 run from
    the same start), within twice PyTorch's own mixed-precision error when
    that is larger, and `ours` as close to the float32 run as that bound:
    PyTorch's CPU autocast keeps softmax and layer norms in 16 bits, so its
    gradients of a transformer block are 4-9% from float32 (float16,
    measured) where the step's are 0.05%."""
    for name, value in want.items():
        assert name in ours, f"{what}: {name} missing"
        tolerance = rtol if exact is None else \
            max(rtol, 2 * normwise(value, exact[name]))
        assert close(ours[name], value, tolerance), \
            f"{what}: {name} differs by {normwise(ours[name], value):.3g} " \
            f"(tolerance {tolerance:.3g})"
        if exact is not None:
            assert close(ours[name], exact[name], tolerance), \
                f"{what}: {name} differs from float32 by " \
                f"{normwise(ours[name], exact[name]):.3g} " \
                f"(tolerance {tolerance:.3g})"


# -- the export ---------------------------------------------------------------

@pytest.mark.parametrize("dtype,scaled", [(torch.bfloat16, False),
                                          (torch.float16, True)])
def test_autocast_export_is_float32_export_plus_pass(dtype, scaled):
    """Under autocast (and with a GradScaler) the export is the float32
    export with the pass run on it, text for text; the scaler's state is
    the step's loss scale."""
    model = mlp()
    x, y = batch_for(model)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0,
                                  growth_interval=3) if scaled else None
    mixed = export_mixed(model, ("sgd", {"lr": 0.1, "momentum": 0.9}), dtype,
                         scaler, x, y)
    plain = dt.export_train_step(model, x, y, optimizer=(
        "sgd", {"lr": 0.1, "momentum": 0.9}))
    options = f"compute={COMPUTE[dtype]} loss-scale=" + (
        "dynamic init-scale=1024 growth-factor=2 backoff-factor=0.5 "
        "growth-interval=3" if scaled else "none")
    assert mixed.mixed_precision == options
    assert plain.mixed_precision is None
    want = plain.module.clone().run_pipeline(
        f"train-mixed-precision{{{options}}}")
    assert str(mixed.module) == str(want)
    assert "train.mixed_precision" in str(mixed.module)
    # The 16-bit products are in the step, the parameters stay float32.
    assert COMPUTE[dtype] in str(mixed.module).split("{", 1)[1]
    assert all(mixed.state[n].dtype == np.float32 for n in mixed.param_names)
    if scaled:
        assert mixed.state["loss_scale"] == np.float32(1024.0)
        assert mixed.state["loss_scale.growth_tracker"] == 0
        # A state made for the step starts from the scaler's scale too.
        fresh, _ = distopt.init(mixed.module, seed=0)
        assert fresh["loss_scale"] == np.float32(1024.0)
        assert fresh["loss_scale.growth_tracker"] == 0
    else:
        assert "loss_scale" not in mixed.state


def test_refusals():
    model = mlp()
    x, y = batch_for(model)
    with pytest.raises(ValueError, match="GradScaler without torch.autocast"):
        dt.export_train_step(model, x, y,
                             scaler=torch.amp.GradScaler("cpu"))
    with pytest.raises(TypeError, match="torch.amp.GradScaler"):
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            dt.export_train_step(model, x, y, scaler=object())
    with pytest.warns(RuntimeWarning, match="float16 autocast without a "
                                            "GradScaler"):
        with torch.autocast(device_type="cpu", dtype=torch.float16):
            step = dt.export_train_step(model, x, y)
    assert step.mixed_precision == "compute=f16 loss-scale=none"
    half = mlp().to(torch.bfloat16)
    with pytest.raises(ValueError, match="needs float32 parameters \\(the "
                                         "master weights the optimizer "
                                         "updates\\); 0.weight is "
                                         "torch.bfloat16"):
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            dt.export_train_step(half, x.to(torch.bfloat16), y)
    # A disabled scaler is no scaling, as in PyTorch.
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        step = dt.export_train_step(
            model, x, y, scaler=torch.amp.GradScaler("cpu", enabled=False))
    assert step.mixed_precision == "compute=bf16 loss-scale=none"


# -- against PyTorch's own mixed steps ----------------------------------------

@pytest.mark.parametrize("make_model", [mlp, Block], ids=["mlp", "block"])
@pytest.mark.parametrize("make_optimizer", [sgd, adam], ids=["sgd", "adam"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16],
                         ids=["bf16", "f16"])
def test_steps_equal_pytorch_autocast(make_model, make_optimizer, dtype):
    """3 steps of the exported step equal PyTorch's autocast (+ GradScaler
    for float16) steps: loss and master weights and optimizer state within
    16-bit tolerance, the loss scale and its tracker exactly."""
    compare_with_pytorch(make_model(), make_optimizer, dtype)


def compare_with_pytorch(model, make_optimizer, dtype, steps=3):
    """`steps` steps of the step exported under autocast (with a
    GradScaler for float16) against PyTorch's: losses, state, scale."""
    reference = copy.deepcopy(model)
    x, y = batch_for(model)
    scaled = dtype == torch.float16

    def scaler():
        return torch.amp.GradScaler("cpu", init_scale=256.0,
                                    growth_interval=2) if scaled else None
    # PyTorch's float32 run alongside: the error of its own mixed steps.
    exact = copy.deepcopy(model)
    exact_optimizer = make_optimizer(exact)
    step = export_mixed(model, make_optimizer(model), dtype, scaler(), x, y)
    optimizer, torch_scaler = make_optimizer(reference), scaler()
    state = dict(step.state)
    for k in range(steps):
        exact_loss = torch_amp_step(exact, exact_optimizer, None, None, x, y)
        loss, state = run_one(step, state, x, y)
        want = torch_amp_step(reference, optimizer, torch_scaler, dtype, x, y)
        assert abs(loss - want) <= max(LOSS_RTOL[dtype] * abs(want),
                                       2 * abs(want - exact_loss)), \
            (k, loss, want, exact_loss)
        assert_state_close(state, snapshot(reference, optimizer),
                           STATE_RTOL[dtype], f"step {k + 1}",
                           snapshot(exact, exact_optimizer))
        if scaled:
            assert (float(state["loss_scale"]),
                    int(state["loss_scale.growth_tracker"])) == \
                scaler_of(torch_scaler), k


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16],
                         ids=["bf16", "f16"])
def test_cnn_steps_equal_pytorch_autocast(dtype):
    """Convolutions, a batch norm (running statistics included), max
    pooling, with SGD and momentum. (Adam's first steps turn gradients near
    zero into full steps of either sign, which a batch-norm CNN over 8
    images amplifies past any 16-bit bound, PyTorch's own included.)"""
    compare_with_pytorch(CNN(), sgd, dtype)


def test_non_finite_gradient_skips_the_step_as_gradscaler():
    """A batch with an inf input makes every gradient non-finite: the step
    leaves the parameters and the optimizer state bitwise as they were,
    halves the scale and zeroes the tracker, as GradScaler does; the
    following steps go on as PyTorch's."""
    model = mlp()
    reference = copy.deepcopy(model)
    x, y = batch_for(model)
    bad = x.clone()
    bad[0, 0] = float("inf")
    dtype = torch.float16
    step = export_mixed(model, adam(model), dtype,
                        torch.amp.GradScaler("cpu", init_scale=512.0,
                                             growth_interval=2), x, y)
    optimizer = adam(reference)
    scaler = torch.amp.GradScaler("cpu", init_scale=512.0, growth_interval=2)
    state = dict(step.state)
    for k, inputs in enumerate((x, bad, x, x)):
        before = dict(state)
        # (A non-finite loss on a step the loss scaling skipped does not
        # stop the runner.)
        loss, state = run_one(step, state, inputs, y)
        want = torch_amp_step(reference, optimizer, scaler, dtype, inputs, y)
        assert (float(state["loss_scale"]),
                int(state["loss_scale.growth_tracker"])) == scaler_of(scaler)
        if inputs is bad:
            assert not np.isfinite(loss) and not np.isfinite(want)
            for name, value in before.items():
                if name.startswith("loss_scale"):
                    continue
                assert np.array_equal(state[name], value), \
                    f"the skipped step changed {name}"
            assert float(state["loss_scale"]) == float(
                before["loss_scale"]) / 2
            assert int(state["loss_scale.growth_tracker"]) == 0
        else:
            assert abs(loss - want) <= LOSS_RTOL[dtype] * abs(want), \
                (k, loss, want)
        assert_state_close(state, snapshot(reference, optimizer),
                           STATE_RTOL[dtype], f"step {k + 1}")
    # Adam's step counter did not count the skipped step.
    assert float(state["0.weight.step"]) == 3


def test_scale_grows_after_growth_interval_clean_steps():
    """growth_interval=2: the scale doubles every second clean step, the
    tracker counts 1, 0, 1, 0, exactly as GradScaler's."""
    model = mlp()
    reference = copy.deepcopy(model)
    x, y = batch_for(model)
    dtype = torch.float16
    step = export_mixed(model, sgd(model), dtype,
                        torch.amp.GradScaler("cpu", init_scale=64.0,
                                             growth_interval=2), x, y)
    optimizer = sgd(reference)
    scaler = torch.amp.GradScaler("cpu", init_scale=64.0, growth_interval=2)
    state, seen = dict(step.state), []
    for _ in range(4):
        _, state = run_one(step, state, x, y)
        torch_amp_step(reference, optimizer, scaler, dtype, x, y)
        seen.append((float(state["loss_scale"]),
                     int(state["loss_scale.growth_tracker"])))
        assert seen[-1] == scaler_of(scaler)
    assert seen == [(64.0, 1), (128.0, 0), (128.0, 1), (256.0, 0)]


def test_load_into_sets_the_scaler():
    model = mlp()
    x, y = batch_for(model)
    optimizer = sgd(model)
    scaler = torch.amp.GradScaler("cpu", init_scale=64.0, growth_interval=2)
    step = export_mixed(model, optimizer, torch.float16, scaler, x, y)
    result = distopt.run(step.module, step.state, step.batch, steps=3)
    dt.load_into(model, {**step.state, **result.state}, optimizer, scaler)
    assert scaler_of(scaler) == (128.0, 1)
    np.testing.assert_array_equal(model[0].weight.detach().numpy(),
                                  result.state["0.weight"])


def test_fit_under_autocast_equals_pytorch():
    """distopt.torch.fit inside autocast with a scaler trains as PyTorch's
    autocast + GradScaler loop over the same batches, and leaves the
    trained scale in the scaler."""
    model = mlp()
    reference = copy.deepcopy(model)
    g = torch.Generator().manual_seed(3)
    xs, ys = torch.randn(32, 16, generator=g), \
        torch.randint(0, 10, (32,), generator=g)
    dtype = torch.float16
    scaler = torch.amp.GradScaler("cpu", init_scale=128.0, growth_interval=2)
    optimizer = sgd(model)
    with torch.autocast(device_type="cpu", dtype=dtype):
        history = dt.fit(model, "cross_entropy", optimizer,
                         (xs.numpy(), ys.numpy()), epochs=1, batch_size=8,
                         shuffle=False, verbose=0, scaler=scaler)
    assert "train.mixed_precision" in str(history.model.module)
    torch_optimizer = sgd(reference)
    torch_scaler = torch.amp.GradScaler("cpu", init_scale=128.0,
                                        growth_interval=2)
    losses = [torch_amp_step(reference, torch_optimizer, torch_scaler, dtype,
                             xs[i:i + 8], ys[i:i + 8])
              for i in range(0, 32, 8)]
    assert abs(history.history["loss"][0] - np.mean(losses)) <= \
        LOSS_RTOL[dtype] * abs(np.mean(losses))
    assert scaler_of(scaler) == scaler_of(torch_scaler)
    assert_state_close(snapshot(model, optimizer),
                       snapshot(reference, torch_optimizer),
                       STATE_RTOL[dtype], "fit")


def test_fit_mirrored_under_autocast_loads_the_scale_back():
    """The same fit under MirroredStrategy(2) (mpirun): the loss scale is
    state like any other, gathered and loaded back into the scaler."""
    model = mlp()
    g = torch.Generator().manual_seed(3)
    xs, ys = torch.randn(32, 16, generator=g), \
        torch.randint(0, 10, (32,), generator=g)
    scaler = torch.amp.GradScaler("cpu", init_scale=128.0, growth_interval=2)
    with torch.autocast(device_type="cpu", dtype=torch.float16):
        history = dt.fit(model, "cross_entropy", sgd(model),
                         (xs.numpy(), ys.numpy()), epochs=1, batch_size=8,
                         shuffle=False, verbose=0, scaler=scaler,
                         strategy=distopt.MirroredStrategy(2))
    assert "train.mixed_precision" in str(history.model.module)
    # Four clean steps, growth_interval=2: two doublings.
    assert scaler_of(scaler) == (512.0, 0)
    assert np.isfinite(history.history["loss"][0])


# -- Keras --------------------------------------------------------------------

keras_missing = importlib.util.find_spec("keras") is None or \
    importlib.util.find_spec("jax") is None
needs_keras = pytest.mark.skipif(keras_missing, reason="keras / jax are not "
                                 "installed (python-bindings/requirements-"
                                 "frontends.txt)")


@pytest.fixture
def keras_policy():
    """Sets the global dtype policy for building a model; restored after."""
    import distopt.keras  # noqa: F401  (sets KERAS_BACKEND=jax)
    import keras
    saved = keras.config.dtype_policy()
    yield keras.config.set_dtype_policy
    keras.config.set_dtype_policy(saved)


def keras_mlp(policy, set_policy):
    import keras
    set_policy(policy)
    keras.utils.set_random_seed(0)
    model = keras.Sequential([
        keras.Input((12,)),
        keras.layers.Dense(16, activation="relu", name="dense1"),
        keras.layers.LayerNormalization(name="norm"),
        keras.layers.Dense(4, name="dense2")], name="mlp")
    set_policy("float32")
    return model


def keras_compile(model, auto_scale_loss=True):
    import keras
    model.compile(
        optimizer=keras.optimizers.SGD(learning_rate=0.1, momentum=0.9,
                                       name="sgd"),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        auto_scale_loss=auto_scale_loss)
    return model


def keras_batch():
    rng = np.random.default_rng(5)
    return rng.normal(size=(8, 12)).astype(np.float32), \
        rng.integers(0, 4, size=8).astype(np.int32)


@needs_keras
def test_keras_mixed_bfloat16_is_float32_export_plus_pass(keras_policy):
    import distopt.keras as dk
    x, y = keras_batch()
    mixed_model = keras_compile(keras_mlp("mixed_bfloat16", keras_policy))
    plain_model = keras_compile(keras_mlp("float32", keras_policy))
    plain_model.set_weights(mixed_model.get_weights())
    # The Keras optimizer's update, traced as elementwise ops, reads the
    # gradients other than linearly: the pass keeps it in float32, so the
    # export has no variable to warn about.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mixed = dk.export_train_step(mixed_model, x, y)
    assert not [w for w in caught if "rounded to" in str(w.message)]
    plain = dk.export_train_step(plain_model, x, y)
    assert mixed.mixed_precision == "compute=bf16 loss-scale=none"
    want = plain.module.clone().run_pipeline(
        "train-mixed-precision{compute=bf16 loss-scale=none}")
    assert str(mixed.module) == str(want)
    # The model computes as before the export.
    assert [layer.dtype_policy.name for layer in mixed_model.layers] == \
        ["mixed_bfloat16"] * 3


@needs_keras
@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_keras_mixed_steps_close_to_keras(keras_policy, policy):
    """3 steps equal Keras's own train_on_batch under the policy (float16
    compiled with auto_scale_loss=False: no LossScaleOptimizer): loss and
    weights within 16-bit tolerance."""
    import distopt.keras as dk
    x, y = keras_batch()
    model = keras_compile(keras_mlp(policy, keras_policy), False)
    reference = keras_compile(keras_mlp(policy, keras_policy), False)
    reference.set_weights(model.get_weights())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        step = dk.export_train_step(model, x, y)
    assert step.mixed_precision == \
        f"compute={'bf16' if 'bfloat16' in policy else 'f16'} loss-scale=none"
    result = distopt.run(step.module, step.state, step.batch, steps=3)
    losses = [float(reference.train_on_batch(x, y)) for _ in range(3)]
    dtype = torch.bfloat16 if "bfloat16" in policy else torch.float16
    np.testing.assert_allclose(np.asarray(result.losses, np.float64), losses,
                               rtol=LOSS_RTOL[dtype])
    for v in reference.trainable_variables:
        assert close(result.state[v.path], np.asarray(v.value),
                     STATE_RTOL[dtype]), \
            f"{v.path} differs by " \
            f"{normwise(result.state[v.path], np.asarray(v.value)):.3g}"


@needs_keras
def test_keras_loss_scale_optimizer_scales_dynamically(keras_policy):
    """mixed_float16 with the LossScaleOptimizer compile wraps: dynamic
    loss scaling from its initial scale and growth steps, which the pass
    applies to the Keras optimizer's elementwise update (it reads the
    gradients other than linearly); 3 steps within float16 tolerance of
    the float32 step, the tracker counting them."""
    import distopt.keras as dk
    import keras
    x, y = keras_batch()
    model = keras_compile(keras_mlp("mixed_float16", keras_policy))
    plain = keras_compile(keras_mlp("float32", keras_policy))
    plain.set_weights(model.get_weights())
    assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    step = dk.export_train_step(model, x, y)
    scale = float(np.asarray(model.optimizer.dynamic_scale.value))
    growth = int(model.optimizer.dynamic_growth_steps)
    assert step.mixed_precision == (
        f"compute=f16 loss-scale=dynamic init-scale={scale:g} growth-factor=2 "
        f"backoff-factor=0.5 growth-interval={growth}")
    assert float(step.state["loss_scale"]) == scale
    ours = distopt.run(step.module, step.state, step.batch, steps=3)
    exact_step = dk.export_train_step(plain, x, y)
    exact = distopt.run(exact_step.module, exact_step.state, exact_step.batch,
                        steps=3)
    np.testing.assert_allclose(ours.losses, exact.losses,
                               rtol=LOSS_RTOL[torch.float16])
    assert float(ours.state["loss_scale"]) == scale
    assert int(ours.state["loss_scale.growth_tracker"]) == 3
    # The model and its optimizer are as they were.
    assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    assert [layer.dtype_policy.name for layer in model.layers] == \
        ["mixed_float16"] * 3
    # A state's loss scale goes to the LossScaleOptimizer's own variables.
    state = {v.path: np.asarray(v.value) for v in model.weights}
    dk.load_into(model, {**state, "loss_scale": np.float32(1024.0),
                         "loss_scale.growth_tracker": np.float32(3.0)})
    assert float(np.asarray(model.optimizer.dynamic_scale.value)) == 1024.0
    assert int(np.asarray(model.optimizer.step_counter.value)) == 3


@needs_keras
def test_keras_refusals(keras_policy):
    import distopt.keras as dk
    import keras
    x, y = keras_batch()
    model = keras_mlp("float32", keras_policy)
    model.compile(optimizer=keras.optimizers.LossScaleOptimizer(
        keras.optimizers.SGD(0.1)), loss="sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match="LossScaleOptimizer with model "
                                         "'mlp' under the 'float32' policy"):
        dk.export_train_step(model, x, y)
    model = keras_mlp("mixed_bfloat16", keras_policy)
    model.get_layer("dense2").dtype_policy = "float32"
    keras_compile(model)
    with pytest.raises(ValueError, match="layer 'dense2' \\(Dense\\) has the "
                                         "'float32' policy"):
        dk.export_train_step(model, x, y)


@needs_keras
def test_keras_fit_under_mixed_policy(keras_policy):
    """distopt.keras.fit of a mixed_bfloat16 model trains the mixed step
    as Keras's own steps on the same batches train it."""
    import distopt.keras as dk
    rng = np.random.default_rng(2)
    xs = rng.normal(size=(32, 12)).astype(np.float32)
    ys = rng.integers(0, 4, size=32).astype(np.int32)
    model = keras_compile(keras_mlp("mixed_bfloat16", keras_policy))
    reference = keras_compile(keras_mlp("mixed_bfloat16", keras_policy))
    reference.set_weights(model.get_weights())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        history = dk.fit(model, xs, ys, epochs=1, batch_size=8,
                         shuffle=False, verbose=0)
    assert "train.mixed_precision" in str(history.model.module)
    losses = [float(reference.train_on_batch(xs[i:i + 8], ys[i:i + 8]))
              for i in range(0, 32, 8)]
    assert abs(history.history["loss"][0] - np.mean(losses)) <= \
        LOSS_RTOL[torch.bfloat16] * abs(np.mean(losses))
    assert int(np.asarray(model.optimizer.iterations.value)) == 4
    for v, want in zip(model.trainable_variables,
                       reference.trainable_variables):
        assert close(np.asarray(v.value), np.asarray(want.value),
                     STATE_RTOL[torch.bfloat16]), v.path


# -- float32 master weights --------------------------------------------------

def small_update_error(framework, keras_policy=None):
    """One bfloat16 step with a learning rate so small that every update
    is below the parameters' bfloat16 resolution (and far above their
    float32 one): the largest normwise difference between the step's
    updates (new - old) and the framework's own mixed step's."""
    if framework == "torch":
        model = mlp()
        reference = copy.deepcopy(model)
        x, y = batch_for(model)

        def plain_sgd(m):
            return torch.optim.SGD(m.parameters(), lr=1e-4)
        step = export_mixed(model, plain_sgd(model), torch.bfloat16, None,
                            x, y)
        _, state = run_one(step, dict(step.state), x, y)
        torch_amp_step(reference, plain_sgd(reference), None, torch.bfloat16,
                       x, y)
        want = {n: p.detach().numpy() for n, p in reference.named_parameters()}
    else:
        import distopt.keras as dk
        import keras

        def build():
            model = keras_mlp("mixed_bfloat16", keras_policy)
            model.compile(optimizer=keras.optimizers.SGD(learning_rate=1e-4,
                                                         name="sgd"),
                          loss=keras.losses.SparseCategoricalCrossentropy(
                              from_logits=True))
            return model
        x, y = keras_batch()
        model, reference = build(), build()
        reference.set_weights(model.get_weights())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            step = dk.export_train_step(model, x, y)
        state = distopt.run(step.module, step.state, step.batch,
                            steps=1).state
        reference.train_on_batch(x, y)
        want = {v.path: np.asarray(v.value)
                for v in reference.trainable_variables}
    return max(normwise(state[n] - step.state[n], value - step.state[n])
               for n, value in want.items())


def test_master_weights_keep_small_updates():
    """PyTorch: the train.sgd update runs on the float32 master weights,
    so updates below bfloat16's resolution land as PyTorch's do (within
    the gradients' bfloat16 rounding)."""
    assert small_update_error("torch") < 0.05


@needs_keras
def test_keras_master_weights_keep_small_updates(keras_policy):
    """Keras: the optimizer's elementwise update reads the gradients other
    than linearly, so the pass keeps it on the float32 master weights."""
    assert small_update_error("keras", keras_policy) < 0.05


# -- JAX ---------------------------------------------------------------------

@pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                    reason="jax is not installed")
def test_jax_step_takes_dynamic_loss_scaling():
    """A JAX step's backward seed is marked train.loss_seed (JAX folds a
    literal 1.0 into the products it scales), so with the short-form
    optimizer (train.sgd ops) the pass's dynamic loss scaling applies:
    3 steps within bfloat16 tolerance of the float32 step, the tracker
    counting them."""
    import jax
    import jax.numpy as jnp
    import distopt.jax as dj

    def loss_fn(params, batch):
        logits = jnp.tanh(batch["x"] @ params["w1"]) @ params["w2"]
        labels = jax.nn.one_hot(batch["y"], 4)
        return -jnp.mean(jnp.sum(labels * jax.nn.log_softmax(logits), -1))
    rng = np.random.default_rng(0)
    params = {"w1": rng.normal(size=(8, 16)).astype(np.float32) * 0.3,
              "w2": rng.normal(size=(16, 4)).astype(np.float32) * 0.3}
    batch = {"x": rng.normal(size=(4, 8)).astype(np.float32),
             "y": np.array([0, 1, 2, 3], np.int32)}
    step = dj.export_train_step(loss_fn, params, batch, optimizer=(
        "sgd", {"lr": 0.1, "momentum": 0.9}))
    assert str(step.module).count("train.loss_seed") == 1
    mixed = step.module.clone().run_pipeline(
        "train-mixed-precision{compute=bf16 loss-scale=dynamic "
        "init-scale=1024 growth-interval=100}")
    state = {**step.state, "loss_scale": np.float32(1024.0),
             "loss_scale.growth_tracker": np.float32(0.0)}
    exact = distopt.run(step.module, step.state, step.batch, steps=3)
    ours = distopt.run(mixed, state, step.batch, steps=3)
    np.testing.assert_allclose(ours.losses, exact.losses,
                               rtol=LOSS_RTOL[torch.bfloat16])
    assert float(ours.state["loss_scale"]) == 1024.0
    assert int(ours.state["loss_scale.growth_tracker"]) == 3
