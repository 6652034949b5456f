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
                               History, ProgbarLogger)

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
