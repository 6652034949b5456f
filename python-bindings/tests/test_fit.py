# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""distopt.fit / distopt.torch.fit: the callbacks driven by the runner's
events, the control channel, errors, the model and optimizer loaded back
(equal to PyTorch's own training), BackupAndRestore after a killed rank,
Ctrl-C, and the in-process run."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import distopt
from distopt import training
from distopt.callbacks import (BackupAndRestore, Callback, CallbackList,
                               History, ProgbarLogger, TensorBoard)
from tensorboard.backend.event_processing.event_accumulator import \
    EventAccumulator

torch = pytest.importorskip("torch")
import distopt.torch  # noqa: E402


# -- the event driver, on recorded events ------------------------------------------

RECORDED = [
    {"event": "start", "world_size": 2, "first_step": 0, "steps": 4,
     "steps_per_epoch": 2, "epochs": 2, "batch": 8, "samples": 17,
     "resumed_from": None},
    {"event": "step", "step": 1, "epoch": 0, "loss": 2.0, "step_ms": 10.0,
     "comm_ms": 1.0, "collective_bytes": 100, "sent_bytes": 50,
     "peak_rss_mb": 80.0, "lr": 0.1},
    {"event": "step", "step": 2, "epoch": 0, "loss": 1.0, "step_ms": 30.0,
     "comm_ms": 1.0, "collective_bytes": 100, "sent_bytes": 50,
     "peak_rss_mb": 80.0, "lr": 0.1},
    {"event": "eval", "step": 2, "epoch": 0, "loss": 1.25, "accuracy": 0.5,
     "samples": 8},
    {"event": "checkpoint", "step": 2, "dir": "/ck/ckpt-00000002"},
    {"event": "epoch_end", "epoch": 0, "step": 2},
    {"event": "step", "step": 3, "epoch": 1, "loss": 0.5, "step_ms": 20.0,
     "comm_ms": 1.0, "collective_bytes": 100, "sent_bytes": 50,
     "peak_rss_mb": 80.0, "lr": None},
    {"event": "step", "step": 4, "epoch": 1, "loss": 0.25, "step_ms": 20.0,
     "comm_ms": 1.0, "collective_bytes": 100, "sent_bytes": 50,
     "peak_rss_mb": 80.0, "lr": None},
    {"event": "eval", "step": 4, "epoch": 1, "loss": 0.75, "accuracy": None,
     "samples": 8},
    {"event": "epoch_end", "epoch": 1, "step": 4},
    {"event": "end", "step": 4, "stopped_early": False},
]


class Recorder(Callback):
    def __init__(self, stop_after=None):
        super().__init__()
        self.calls, self.stop_after = [], stop_after

    def on_train_begin(self, logs=None):
        self.calls.append(("train_begin", dict(self.params)))

    def on_epoch_begin(self, epoch, logs=None):
        self.calls.append(("epoch_begin", epoch))

    def on_train_batch_end(self, batch, logs=None):
        self.calls.append(("batch_end", batch, logs["loss"]))

    def on_test_end(self, logs=None):
        self.calls.append(("test_end", logs))

    def on_epoch_end(self, epoch, logs=None):
        self.calls.append(("epoch_end", epoch, logs))
        if self.stop_after is not None and epoch >= self.stop_after:
            self.model.stop_training = True


def _driver(*callbacks):
    history = History()
    model = training.FitModel(None, None, "/ck")
    driver = training._EventDriver(
        CallbackList([history, *callbacks], model=model), model, 8)
    return driver, history, model


def test_driver_on_recorded_events():
    recorder = Recorder()
    driver, history, model = _driver(recorder)
    decisions = [driver.event(e) for e in RECORDED]
    assert decisions[5] is True and decisions[9] is True
    assert [d for i, d in enumerate(decisions) if i not in (5, 9)] == \
        [None] * 9
    assert history.epoch == [0, 1]
    assert history.history["loss"] == [1.5, 0.375]
    assert history.history["val_loss"] == [1.25, 0.75]
    # An evaluation without an accuracy (not a cross-entropy) adds none.
    assert history.history["val_accuracy"] == [0.5]
    assert history.history["step_ms"] == [20.0, 20.0]
    assert history.history["samples_per_s"] == [400.0, 400.0]
    assert history.history["comm_bytes"] == [100.0, 100.0]
    assert history.history["lr"] == [0.1]      # epoch 2 reported none
    assert model.checkpoint == "/ck/ckpt-00000002"
    assert recorder.calls[0] == ("train_begin", {
        "epochs": 2, "steps": 2, "batch_size": 8, "samples": 17,
        "world_size": 2, "initial_epoch": 0})
    assert [c[:2] for c in recorder.calls[1:5]] == [
        ("epoch_begin", 0), ("batch_end", 0), ("batch_end", 1),
        ("test_end", {"loss": 1.25, "accuracy": 0.5})]
    assert ("batch_end", 1, 0.25) in recorder.calls
    assert driver.needs_decision(0) and not driver.needs_decision(1)
    assert driver.ended and not driver.stopped_early


def test_driver_stop_training_and_resume():
    recorder = Recorder(stop_after=0)
    driver, history, _ = _driver(recorder)
    assert [driver.event(e) for e in RECORDED[:6]][-1] is False
    # A run resumed after its first epoch: the second epoch only.
    driver, history, _ = _driver()
    start = dict(RECORDED[0], first_step=2, resumed_from=2)
    for event in [start] + RECORDED[6:]:
        driver.event(event)
    assert driver.params["initial_epoch"] == 1 and driver.resumed_from == 2
    assert history.epoch == [1] and history.history["loss"] == [0.375]


def test_event_reader_reads_growing_file(tmp_path):
    path = tmp_path / "events.jsonl"
    reader = training._EventReader(str(path))
    assert reader.events() == []             # not created yet
    with open(path, "wb") as f:
        f.write(b'{"event": "start"}\n{"event": "st')
        f.flush()
        assert reader.events() == [{"event": "start"}]
        f.write(b'ep", "step": 1}\n')
        f.flush()
        assert reader.events() == [{"event": "step", "step": 1}]
        f.write(b"not json\n")
        f.flush()
        with pytest.raises(distopt.DistOptError, match="malformed event line"):
            reader.events()
    reader.close()


def test_progress_bar_and_lines(capsys):
    for verbose in (1, 2):
        driver, _, _ = _driver(ProgbarLogger(verbose))
        for event in RECORDED:
            driver.event(event)
        err = capsys.readouterr().err
        if verbose == 1:
            assert "Epoch 1/2" in err and "Epoch 2/2" in err and "2/2 [" in err
            assert "loss: 1.5 - step_ms: 20 - samples_per_s: 400" in err
        else:
            assert err.count("\n") == 2 and "val_loss: 1.25" in err


# -- the process and its control channel, with a stand-in for dist-run -------------

FAKE_RUNNER = textwrap.dedent("""
    import json, sys
    events, control, fail = sys.argv[1], sys.argv[2], sys.argv[3]
    def emit(e):
        with open(events, "a") as f:
            f.write(json.dumps(e) + "\\n")
    emit({"event": "start", "epochs": 3, "steps_per_epoch": 1,
          "first_step": 0, "world_size": 1, "batch": 4, "samples": 4})
    decisions = []
    for epoch in range(3):
        emit({"event": "step", "step": epoch + 1, "epoch": epoch,
              "loss": 1.0 / (epoch + 1), "step_ms": 1.0})
        if fail == "error" and epoch == 1:
            emit({"event": "error", "rank": 1,
                  "message": "the collective timed out"})
            sys.exit(1)
        emit({"event": "epoch_end", "epoch": epoch, "step": epoch + 1})
        if epoch < 2:
            with open(control) as c:
                line = c.readline().strip()
            decisions.append(line)
            if line == "stop":
                break
    emit({"event": "end", "step": epoch + 1,
          "stopped_early": decisions[-1:] == ["stop"]})
    print(" ".join(decisions))
    sys.exit(3 if fail == "status" else 0)
""")


def _fake_run(tmp_path, fail, *callbacks):
    script = tmp_path / "runner.py"
    script.write_text(FAKE_RUNNER)
    work = tmp_path / "work"
    work.mkdir()
    events, control = str(work / "events.jsonl"), str(work / "control")
    driver, history, _ = _driver(*callbacks)
    out = training.run_subprocess(
        [sys.executable, str(script), events, control, fail], events, driver,
        control_path=control, work=str(work))
    return out, history, driver


def test_control_channel(tmp_path):
    out, history, driver = _fake_run(tmp_path, "")
    assert out.split() == ["continue", "continue"]
    assert history.history["loss"] == [1.0, 0.5, 1.0 / 3]
    (tmp_path / "stop").mkdir()
    out, history, driver = _fake_run(tmp_path / "stop", "",
                                     Recorder(stop_after=1))
    assert out.split() == ["continue", "stop"]
    assert history.epoch == [0, 1] and driver.stopped_early


def test_errors_carry_the_runners_message(tmp_path):
    with pytest.raises(distopt.DistOptError) as error:
        _fake_run(tmp_path, "error")
    assert str(error.value).startswith(
        "rank 1: the collective timed out (python")
    assert "exited with status 1" in str(error.value)
    (tmp_path / "b").mkdir()
    with pytest.raises(distopt.DistOptError, match="exited with status 3"):
        _fake_run(tmp_path / "b", "status")


# -- real runs -----------------------------------------------------------------------

def _mlp(seed=0):
    torch.manual_seed(seed)
    # (No bias before the batch norm: its gradient is only rounding noise,
    # which Adam's normalized step would amplify.)
    return torch.nn.Sequential(torch.nn.Linear(8, 16, bias=False),
                               torch.nn.BatchNorm1d(16),
                               torch.nn.ReLU(), torch.nn.Linear(16, 3))


def _data(samples=40, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(samples, 8)).astype(np.float32),
            rng.integers(0, 3, samples))


def _pytorch_epochs(model, optimizer, x, y, epochs, batch):
    """PyTorch's own training over the batches in order: each epoch's mean
    loss."""
    means = []
    for _ in range(epochs):
        losses = []
        for i in range(len(x) // batch):
            xb = torch.from_numpy(x[i * batch:(i + 1) * batch])
            yb = torch.from_numpy(y[i * batch:(i + 1) * batch])
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        means.append(np.mean(losses))
    return means


def _assert_same_training(model, optimizer, reference, ref_optimizer, rtol):
    for (name, a), b in zip(model.state_dict().items(),
                            reference.state_dict().values()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=rtol,
                                   atol=1e-6, err_msg=name)
    for p, q in zip(model.parameters(), reference.parameters()):
        mine, theirs = optimizer.state[p], ref_optimizer.state[q]
        assert set(mine) == set(theirs)
        for key in theirs:
            np.testing.assert_allclose(np.asarray(mine[key]),
                                       np.asarray(theirs[key]), rtol=rtol,
                                       atol=1e-6, err_msg=key)


@pytest.mark.parametrize("make_optimizer", [
    lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
    lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1)],
    ids=["sgd-momentum", "adamw"])
def test_torch_fit_equals_pytorch(make_optimizer):
    """The model, its batch-norm statistics and the optimizer state after
    fit equal PyTorch's own training over the same batches, and training
    goes on in PyTorch from there as it would have."""
    x, y = _data()
    model, reference = _mlp(), _mlp()
    optimizer = make_optimizer(model.parameters())
    ref_optimizer = make_optimizer(reference.parameters())
    history = distopt.torch.fit(
        model, "cross_entropy", optimizer, (x, y), epochs=2, batch_size=8,
        shuffle=False, verbose=0, validation_data=(x[:16], y[:16]))
    means = _pytorch_epochs(reference, ref_optimizer, x, y, 2, 8)
    np.testing.assert_allclose(history.history["loss"], means, rtol=1e-5)
    assert len(history.history["val_loss"]) == 2
    assert all(0 <= a <= 1 for a in history.history["val_accuracy"])
    _assert_same_training(model, optimizer, reference, ref_optimizer, 1e-5)
    # One more epoch in PyTorch, from where each stands.
    model.train()
    _pytorch_epochs(model, optimizer, x, y, 1, 8)
    _pytorch_epochs(reference, ref_optimizer, x, y, 1, 8)
    _assert_same_training(model, optimizer, reference, ref_optimizer, 1e-5)


class StopAfter(Callback):
    def __init__(self, epoch):
        super().__init__()
        self.epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        if epoch >= self.epoch:
            self.model.stop_training = True


def test_fit_data_forms_and_stop_training(tmp_path):
    """A dataset directory with x.npy / y.npy, a torch Dataset, and a
    callback stopping the run (dist-run --control): the same training."""
    x, y = _data()
    directory = tmp_path / "data"
    distopt.datasets.write_dataset(str(directory), {"x": x, "y": y})
    runs = []
    for data in (str(directory),
                 torch.utils.data.TensorDataset(torch.from_numpy(x),
                                                torch.from_numpy(y))):
        model = _mlp()
        history = distopt.torch.fit(
            model, torch.nn.CrossEntropyLoss(), ("sgd", {"lr": 0.05}), data,
            epochs=4, batch_size=8, seed=3, verbose=0,
            callbacks=[StopAfter(1)])
        assert history.epoch == [0, 1] and history.stopped_early
        runs.append((history.history["loss"],
                     [p.detach().numpy().copy() for p in model.parameters()]))
    np.testing.assert_allclose(runs[0][0], runs[1][0], rtol=1e-6)
    for a, b in zip(runs[0][1], runs[1][1]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    with pytest.raises(ValueError, match="lacks"):
        distopt.torch.fit(_mlp(), "cross_entropy", ("sgd", {"lr": 0.1}),
                          str(tmp_path), epochs=1, batch_size=8, verbose=0)


def test_single_process_fit_starts_no_dist_run(monkeypatch):
    if not hasattr(distopt._distopt, "run"):
        pytest.skip("the extension has no in-process runner (_distopt.run)")

    def refuse(*args, **kwargs):
        raise AssertionError(f"a process was started: {args[0]}")
    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(subprocess, "run", refuse)
    x, y = _data()
    model = _mlp()
    history = distopt.torch.fit(model, "cross_entropy", ("sgd", {"lr": 0.1}),
                                (x, y), epochs=2, batch_size=8, verbose=0)
    assert len(history.history["loss"]) == 2


def _leftovers(root):
    """Partial files (a writer's temporaries) anywhere under `root`."""
    return [os.path.join(d, n) for d, dirs, files in os.walk(root)
            for n in dirs + files if ".partial" in n]


def test_resnet18_mirrored_backup_and_restore(tmp_path, capfd):
    """The issue's test: a torchvision ResNet-18 trained with
    MirroredStrategy(2) under the progress bar; the same run with rank 1
    killed in its second epoch raises DistOptError, and the same call with
    BackupAndRestore then resumes and ends equal to the uninterrupted run."""
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    initial = torchvision.models.resnet18(num_classes=10).state_dict()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3, 32, 32)).astype(np.float32)
    y = rng.integers(0, 10, 64)

    def call(backup=None, extra=(), verbose=0, callbacks=()):
        model = torchvision.models.resnet18(num_classes=10)
        model.load_state_dict(initial)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        history = distopt.torch.fit(
            model, "cross_entropy", optimizer, (x, y),
            strategy=distopt.MirroredStrategy(2), epochs=2, batch_size=16,
            verbose=verbose, opt_level=0, _extra_args=extra,
            callbacks=([BackupAndRestore(backup)] if backup else []) +
            list(callbacks))
        return history, model, optimizer

    logs = tmp_path / "logs"
    whole, model, optimizer = call(
        verbose=1, callbacks=[TensorBoard(logs, update_freq="batch")])
    bar = capfd.readouterr().err
    assert "Epoch 1/2" in bar and "Epoch 2/2" in bar and "4/4" in bar
    assert "samples_per_s" in bar
    assert len(whole.history["loss"]) == 2
    assert whole.history["loss"][1] < whole.history["loss"][0]
    # The events, as TensorBoard's own reader loads them: a point per epoch
    # and per step, the step time and the communication bytes too.
    events = EventAccumulator(os.fspath(logs / "train"))
    events.Reload()
    tags = events.Tags()["scalars"]
    assert {"epoch_loss", "batch_loss", "epoch_step_ms", "epoch_comm_bytes",
            "epoch_learning_rate"} <= set(tags), tags
    # The bytes each step hands to collectives (the ranks' step events).
    comm = [e.value for e in events.Scalars("epoch_comm_bytes")]
    assert comm == pytest.approx(whole.history["comm_bytes"]) and \
        all(c > 0 for c in comm), comm
    assert [e.value for e in events.Scalars("epoch_learning_rate")] == \
        pytest.approx([0.01, 0.01])
    epoch_loss = [e.value for e in events.Scalars("epoch_loss")]
    assert epoch_loss == pytest.approx(whole.history["loss"], rel=1e-6)
    assert len(events.Scalars("batch_loss")) == 8

    backup = str(tmp_path / "backup")
    with pytest.raises(distopt.DistOptError) as failure:
        call(backup, extra=["--test-raise=1:KILL:step6"])
    assert "signal" in str(failure.value) or "status" in str(failure.value)
    assert os.listdir(backup) == ["ckpt-00000004"]   # the first epoch's
    assert _leftovers(tmp_path) == []

    resumed, model2, optimizer2 = call(backup)
    assert resumed.resumed_from == 4 and resumed.epoch == [1]
    assert resumed.history["loss"] == whole.history["loss"][1:]
    assert not os.path.exists(backup)               # deleted at the end
    for (name, a), b in zip(model.state_dict().items(),
                            model2.state_dict().values()):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6,
                                   atol=1e-7, err_msg=name)
    for p, q in zip(model.parameters(), model2.parameters()):
        np.testing.assert_allclose(
            optimizer2.state[q]["momentum_buffer"].numpy(),
            optimizer.state[p]["momentum_buffer"].numpy(), rtol=1e-6,
            atol=1e-7)


INTERRUPTED = textwrap.dedent("""
    import sys, time
    import numpy as np, torch, distopt, distopt.torch
    from distopt.callbacks import BackupAndRestore, Callback
    sys.path.insert(0, {tests!r})
    from test_fit import _mlp, _data

    class Slow(Callback):      # a run long enough to interrupt
        def on_epoch_end(self, epoch, logs=None):
            time.sleep(0.5)

    x, y = _data()
    distopt.torch.fit(_mlp(), "cross_entropy", ("sgd", {{"lr": 0.1}}),
                      (x, y), strategy={strategy},
                      epochs=30, batch_size=8, verbose=0,
                      callbacks=[BackupAndRestore({backup!r}), Slow()])
    print("finished")
""")


@pytest.mark.parametrize("ranks", [2, 1], ids=["mpirun-2", "one-process"])
def test_ctrl_c_stops_every_rank_and_keeps_the_checkpoint(tmp_path, ranks):
    """Ctrl-C in fit's process: every rank (or the in-process runner)
    stops, no partial file stays, the complete checkpoint does, and the
    same call resumes from it."""
    strategy = distopt.MirroredStrategy(2) if ranks == 2 else None
    backup = str(tmp_path / "backup")
    work = tmp_path / "tmp"
    work.mkdir()
    env = dict(os.environ, TMPDIR=str(work))
    child = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED.format(
            tests=os.path.dirname(os.path.abspath(__file__)), backup=backup,
            strategy="distopt.MirroredStrategy(2)" if ranks == 2 else None)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (os.path.isdir(backup) and any(
                n.startswith("ckpt-") for n in os.listdir(backup))):
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "no checkpoint in 120 s"
            time.sleep(0.05)
        child.send_signal(signal.SIGINT)
        stopped = time.monotonic()
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert time.monotonic() - stopped < 30
    assert "finished" not in out
    assert child.returncode in (-signal.SIGINT, 130, 1), err
    assert "KeyboardInterrupt" in err or child.returncode != 1
    # No rank is left, nor any partial file; the checkpoint is complete.
    mine = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if str(work).encode() in f.read():
                    mine.append(pid)
        except OSError:
            pass
    assert mine == []
    assert _leftovers(tmp_path) == []
    checkpoints = sorted(n for n in os.listdir(backup) if n.startswith("ckpt-"))
    assert checkpoints and all(
        os.path.isfile(os.path.join(backup, n, "index.json"))
        for n in checkpoints)
    # The same call resumes from it and runs the remaining epochs.
    x, y = _data()
    history = distopt.torch.fit(
        _mlp(), "cross_entropy", ("sgd", {"lr": 0.1}), (x, y),
        strategy=strategy, epochs=30, batch_size=8,
        verbose=0, callbacks=[BackupAndRestore(backup)])
    assert history.resumed_from is not None and history.resumed_from >= 5
    assert history.epoch[0] == history.resumed_from // 5
    assert history.epoch[-1] == 29


def test_fit_of_a_dialect_step_equals_run(examples, tmp_path):
    """distopt.fit of a train-dialect step (a Module and its state) trains
    as distopt.run over the same dataset, epochs and shuffle."""
    step = distopt.Module.load(os.path.join(examples, "digits_mlp.mlir"))
    state, _ = distopt.init(step, seed=1)
    rng = np.random.default_rng(0)
    x = rng.random((160, 64), dtype=np.float32)
    y = rng.integers(0, 10, 160)
    history = distopt.fit(step, (x, y), initial_state=state, epochs=2,
                          seed=5, verbose=0)
    assert len(history.history["loss"]) == 2
    directory = str(tmp_path / "data")
    distopt.datasets.write_dataset(directory, {"x": x, "y": y})
    run = distopt.run(step, state, dataset=directory, epochs=2, seed=5)
    np.testing.assert_allclose(history.model.losses, run.losses, rtol=1e-6)
    np.testing.assert_allclose(history.history["loss"],
                               run.losses.reshape(2, -1).mean(axis=1),
                               rtol=1e-6)
    for name, value in run.state.items():
        np.testing.assert_allclose(history.model.state[name], value,
                                   rtol=1e-6, err_msg=name)
    with pytest.raises(ValueError, match="batch_size=32 but the step's "
                       "global batch is 64"):
        distopt.fit(step, (x, y), initial_state=state, batch_size=32)


def test_backup_every_few_steps_resumes_inside_an_epoch(tmp_path):
    """BackupAndRestore(save_freq=3) with 5 steps per epoch: resumed from
    step 6, the second epoch's mean loss counts its first step (from the
    checkpoint) and the run ends as the uninterrupted one."""
    x, y = _data()

    def call(backup, extra=()):
        model = _mlp()
        history = distopt.torch.fit(
            model, "cross_entropy", ("sgd", {"lr": 0.1}), (x, y),
            strategy=distopt.MirroredStrategy(2), epochs=2, batch_size=8,
            verbose=0, _extra_args=extra,
            callbacks=[BackupAndRestore(backup, save_freq=3)])
        return history, model

    whole, model = call(str(tmp_path / "whole"))
    backup = str(tmp_path / "backup")
    with pytest.raises(distopt.DistOptError, match="rank 1: ended by SIGTERM"):
        call(backup, ["--test-raise=1:TERM:step8"])
    assert os.listdir(backup) == ["ckpt-00000003", "ckpt-00000006"]
    resumed, model2 = call(backup)
    assert resumed.resumed_from == 6 and resumed.epoch == [1]
    np.testing.assert_allclose(resumed.history["loss"],
                               whole.history["loss"][1:], rtol=1e-6)
    for a, b in zip(model.parameters(), model2.parameters()):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(),
                                   rtol=1e-6, atol=1e-7)


def test_run_streams_its_events(examples):
    """distopt.run / launch call on_event live, one "step" event per step,
    and take the evaluations from the "eval" events."""
    step = distopt.Module.load(os.path.join(examples, "mlp.mlir"))
    state, batch = distopt.init(step, seed=3)
    seen = []
    result = distopt.run(step, state, batch, steps=3,
                         on_event=lambda e: seen.append(e))
    steps = [e for e in seen if e["event"] == "step"]
    assert [e["step"] for e in steps] == [1, 2, 3]
    np.testing.assert_allclose([e["loss"] for e in steps], result.losses,
                               rtol=1e-6)
    assert seen[0]["event"] == "start" and seen[-1]["event"] == "end"


def test_in_process_branch_with_a_stand_in(monkeypatch):
    """The single-process branch calls _distopt.run (spec: module text,
    state, no data, dist-run's options by name, on_event) and starts no
    process; on_event answers each epoch end (False: stop). A stand-in
    for the extension's runner records the call."""
    calls = []

    def stand_in(module_text, state, data, options, on_event):
        calls.append((module_text, dict(state), data, dict(options)))
        on_event({"event": "start", "world_size": 1, "first_step": 0,
                  "steps": 15, "steps_per_epoch": 5, "epochs": 3,
                  "batch": 8, "samples": 40, "resumed_from": None})
        answers = []
        for epoch in range(3):
            for i in range(5):
                on_event({"event": "step", "step": epoch * 5 + i + 1,
                          "epoch": epoch, "loss": float(epoch),
                          "step_ms": 1.0, "lr": 0.1})
            answers.append(on_event({"event": "epoch_end", "epoch": epoch,
                                     "step": epoch * 5 + 5}))
            if answers[-1] is False:
                break
        on_event({"event": "end", "step": 10, "stopped_early": True})
        calls.append(answers)
        trained = {k: np.asarray(v) + 1 for k, v in state.items()}
        return {"state": trained, "loss": np.zeros(10, np.float32),
                "evaluations": [], "resumed_from": None}

    def refuse(*args, **kwargs):
        raise AssertionError(f"a process was started: {args[0]}")
    monkeypatch.setattr(distopt._distopt, "run", stand_in, raising=False)
    monkeypatch.setattr(subprocess, "Popen", refuse)
    x, y = _data()
    model = _mlp()
    before = model[0].weight.detach().numpy().copy()
    history = distopt.torch.fit(model, "cross_entropy", ("sgd", {"lr": 0.1}),
                                (x, y), epochs=3, batch_size=8, verbose=0,
                                seed=4, callbacks=[StopAfter(1)])
    text, state, data, options = calls[0]
    assert "func.func @train_step" in text and data is None
    assert "0.weight" in state and "labels" not in state
    assert options["epochs"] == 3 and options["seed"] == 4
    assert options["shuffle"] is True and options["checkpoint-every"] == 5
    assert os.path.basename(options["dataset"]) == "train"
    assert "eval-dataset" not in options and "resume" not in options
    assert calls[1] == [True, False]
    assert history.history["loss"] == [0.0, 1.0]
    np.testing.assert_allclose(model[0].weight.detach().numpy(), before + 1)
