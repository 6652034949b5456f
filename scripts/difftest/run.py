#!/usr/bin/env python3
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Differential tester: random training steps under every strategy.

    python3 scripts/difftest/run.py --build build --seeds 0-9 [--strategies mirrored*,zero2] \
        [--keep DIR] [-j N] [--time-limit HOURS]
    python3 scripts/difftest/run.py --self-check --seeds 0-19      # the generator checked against NumPy
    python3 scripts/difftest/run.py --list-strategies
    python3 scripts/difftest/run.py --compare SINGLE.npz OTHER.npz   # what a failure compares

For every seed: gen.py writes a training step (step.mlir), `dist-opt
--train-verify` checks it, `dist-run --init-state/--init-data --seed=N`
writes its state and batch (then filled in here: token ids in range,
optimizer state and vectors made non-zero), and the single-device step runs
2 steps. Then, for every strategy configuration: `dist-opt STEP <flags> -o
OUT`. A failure with an error diagnostic is an acceptable "refused" (the
strategy says it cannot apply); a crash, an assertion, a stack dump or an
exit without a diagnostic is a FAIL. Otherwise `dist-opt OUT --train-verify`
must pass, `mpirun -np K dist-run OUT ... --steps=2` (compiled as parts of
4 or 16 ops for two seeds in three: dist-split-functions; for odd seeds with
every loop nest's parallel outermost loop on 2 threads: dist-parallel-loops,
--parallel-min-iterations=1) must succeed and every
loss and final state array must equal the single-device run (numpy.allclose,
rtol 1e-5, atol 1e-6; parameters updated by Adam/AdamW to atol 1e-5; each
absolute tolerance at least 8 times the array's rounding noise, i.e. the
single-device run's distance from ref.py's float64 run of the same steps).

One line per (seed, strategy): ok / refused: <first diagnostic> / FAIL:
<why>; for each failure, the generated step and the commands that reproduce
it. The exit status is 1 when anything failed.
"""

import argparse
import concurrent.futures
import fnmatch
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import gen  # noqa: E402

# name, dist-opt flags, number of processes
STRATEGIES = [
    ("mirrored2", ["--dist-mirrored=replicas=2"], 2),
    ("mirrored4", ["--dist-mirrored=replicas=4"], 4),
    ("mirrored2-bucket", ["--dist-mirrored=replicas=2 bucket-mb=0.0001"], 2),
    ("mirrored2-overlap", ["--dist-mirrored=replicas=2", "--dist-overlap-collectives"], 2),
    ("multiworker", ["--dist-multi-worker-mirrored=hosts=2 devices=2"], 4),
    ("multiworker-bucket-overlap",
     ["--dist-multi-worker-mirrored=hosts=2 devices=2 bucket-mb=0.0001", "--dist-overlap-collectives"], 4),
    ("zero1", ["--dist-zero=stage=1 replicas=2"], 2),
    ("zero2", ["--dist-zero=stage=2 replicas=2"], 2),
    ("zero3", ["--dist-zero=stage=3 replicas=2"], 2),
    ("zero1-bucket-overlap", ["--dist-zero=stage=1 replicas=2 bucket-mb=0.0001", "--dist-overlap-collectives"], 2),
    ("zero2-bucket", ["--dist-zero=stage=2 replicas=2 bucket-mb=0.0001"], 2),
    ("zero3-r4-overlap", ["--dist-zero=stage=3 replicas=4", "--dist-overlap-collectives"], 4),
    ("tp2", ["--dist-tensor-parallel=size=2"], 2),
    ("tp2-sp", ["--dist-tensor-parallel=size=2 sequence-parallel=true"], 2),
    ("tp2-bucket-overlap", ["--dist-tensor-parallel=size=2 bucket-mb=0.0001", "--dist-overlap-collectives"], 2),
    ("tp2-sp-overlap", ["--dist-tensor-parallel=size=2 sequence-parallel=true", "--dist-overlap-collectives"], 2),
    ("hybrid", ["--dist-hybrid=dp=2 tp=2"], 4),
    ("hybrid-zero1", ["--dist-hybrid=dp=2 tp=2 zero=1"], 4),
    ("hybrid-zero2", ["--dist-hybrid=dp=2 tp=2 zero=2"], 4),
    ("hybrid-zero3", ["--dist-hybrid=dp=2 tp=2 zero=3"], 4),
    ("hybrid-hosts", ["--dist-hybrid=hosts=2 dp=1 tp=2"], 4),
    ("hybrid-hosts-zero1", ["--dist-hybrid=hosts=2 dp=1 tp=2 zero=1"], 4),
    ("hybrid-hosts-dp2-tp1", ["--dist-hybrid=hosts=2 dp=2 tp=1"], 4),
    ("hybrid-dp2-tp1-zero1", ["--dist-hybrid=dp=2 tp=1 zero=1"], 2),
    ("hybrid-zero2-bucket-overlap",
     ["--dist-hybrid=dp=2 tp=2 zero=2 bucket-mb=0.0001", "--dist-overlap-collectives"], 4),
    ("hybrid-zero3-overlap", ["--dist-hybrid=dp=2 tp=2 zero=3", "--dist-overlap-collectives"], 4),
    ("pipe2-gpipe-m1", ["--dist-pipeline=stages=2 microbatches=1 schedule=gpipe"], 2),
    ("pipe2-1f1b", ["--dist-pipeline=stages=2 microbatches=2 schedule=1f1b"], 2),
    ("pipe2-zb-h1", ["--dist-pipeline=stages=2 microbatches=4 schedule=zb-h1"], 2),
    ("pipe2-interleaved", ["--dist-pipeline=stages=2 microbatches=2 schedule=interleaved virtual-stages=2"], 2),
    ("pipe4-1f1b", ["--dist-pipeline=stages=4 microbatches=4 schedule=1f1b"], 4),
    ("pipe2-dp2", ["--dist-hybrid=pp=2 dp=2 microbatches=2"], 4),
    ("pipe2-tp2-zb-h1", ["--dist-hybrid=pp=2 tp=2 microbatches=2 schedule=zb-h1"], 4),
    ("pipe2-dp2-zero1", ["--dist-hybrid=pp=2 dp=2 zero=1 microbatches=2 schedule=gpipe"], 4),
    ("pipe2-dp2-zero3", ["--dist-hybrid=pp=2 dp=2 zero=3 microbatches=2"], 4),
    ("ps1-w2", ["--dist-parameter-server=ps=1 workers=2"], 3),
    ("ps2-w2-fixed", ["--dist-parameter-server=ps=2 workers=2 partitioner=fixed"], 4),
    # Asynchronous with one worker is the sync step.
    ("ps2-w1-async", ["--dist-parameter-server=ps=2 workers=1 partitioner=fixed mode=async"], 3),
    # Activation recomputation before a strategy (bitwise the same step).
    ("remat-full-mirrored2", ["--train-remat=policy=full", "--dist-mirrored=replicas=2"], 2),
    ("remat-selective-tp2", ["--train-remat=policy=selective", "--dist-tensor-parallel=size=2"], 2),
    # Per layer (the generator's numbered modules, layers.N).
    ("remat-layer-mirrored2", ["--train-remat=policy=full checkpoints=layer", "--dist-mirrored=replicas=2"], 2),
    ("remat-layer1-pipe2", ["--train-remat=policy=selective layers=1", "--dist-pipeline=stages=2 microbatches=2"], 2),
    # The planner's choice for this machine (2 ranks), whichever it is.
    ("auto-cpu", ["--dist-auto=cluster=cpu"], 2),
]

CRASH_MARKS = ("Stack dump", "PLEASE submit a bug report", "Assertion", "assertion", "LLVM ERROR",
               "UNREACHABLE", "Segmentation fault", "terminate called", "Aborted", "core dumped",
               "stack trace", "Traceback")

SETUP = ("generator", "init", "single")  # outcomes of a seed's set-up, not of a strategy

# Diagnostics that an op verifier or the step contract gives on the
# strategy's own output: the strategy built an invalid program and the
# verifier caught it. Still "refused" (an error, not a wrong result), but
# marked, counted, and a FAIL with --strict-refusals.
INVALID_IR_MARKS = ("failed to infer returned types", "must divide", "need 0 <=", "but argument #",
                    "comes back as", "failed to verify", "does not match", "' op requires",
                    "' op expected", "' op operand", "' op result")

DIST_OPT_TIMEOUT = 120
DIST_RUN_TIMEOUT = 300


# ----------------------------------------------------------------------------
# Processes


def wait_for(paths, seconds=600):
    """The binaries are rebuilt from time to time: wait for them to be back."""
    deadline = time.time() + seconds
    while not all(os.access(p, os.X_OK) for p in paths):
        if time.time() > deadline:
            sys.exit("difftest: missing " + ", ".join(p for p in paths if not os.access(p, os.X_OK)))
        time.sleep(2)


BINARIES = []


def run_cmd(cmd, timeout, env=None):
    """Runs cmd (a list) in its own process group, with `env` added to the
    environment; returns (rc, stdout, stderr, timed_out). A timeout kills
    the whole group."""
    wait_for(BINARIES)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True,
                         env=dict(os.environ, **env) if env else None)
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err, False
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = p.communicate()
        return p.returncode, out, err, True


def shell_line(cmd):
    return " ".join(shlex.quote(c) for c in cmd)


def first_error(text):
    """The first error diagnostic (and the last one, when there are more)."""
    errors = [line[line.find("error:"):].strip() for line in text.splitlines() if "error:" in line]
    if errors:
        return errors[0] + (f" [... {errors[-1]}]" if len(errors) > 1 else "")
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return "(no output)"


def crash_summary(rc, text):
    """How dist-opt died: the signal and the innermost frames of the
    project's code in the stack dump."""
    import re
    how = f"exit {rc}"
    if rc < 0 or rc >= 128:
        num = -rc if rc < 0 else rc - 128
        try:
            how = f"killed by {signal.Signals(num).name}"
        except ValueError:
            how = f"killed by signal {num}"
    frames = []
    for line in text.splitlines():
        m = re.match(r"\s*#\d+ 0x[0-9a-f]+ (.+?)(?: \(/[^)]*\))?(?: [\w./-]+:\d+(?::\d+)?)?$", line)
        if not m:
            continue
        fn = m.group(1)
        if any(k in fn for k in ("llvm::sys::", "libc.so", "(/") ) or fn.startswith("0x"):
            continue
        frames.append(re.sub(r"\(.*", "", fn) if "(" in fn and not fn.startswith("(") else fn)
        if len(frames) == 3:
            break
    for mark in ("Assertion", "LLVM ERROR", "UNREACHABLE", "terminate called"):
        for line in text.splitlines():
            if mark in line:
                return f"{how}: {line.strip()}"
    return how + (" in " + " <- ".join(frames) if frames else "")


def is_crash(rc, text):
    return rc < 0 or rc >= 128 or any(m in text for m in CRASH_MARKS)


# ----------------------------------------------------------------------------
# State and data


def fill_arrays(step, state_path, data_path, seed):
    """Makes dist-run's deterministic state and batch exercise more: token
    ids in their range, dropout seeds, non-zero vectors and optimizer state
    (a mis-sharded momentum buffer shows only when it is not zero)."""
    import numpy as np
    rng = np.random.default_rng(seed * 1000003 + 7)
    state = dict(np.load(state_path))
    data = dict(np.load(data_path))
    meta = step.meta
    for name, vocab in meta["int_inputs"].items():
        data[name] = rng.integers(0, vocab, data[name].shape).astype(data[name].dtype)
    for name in meta["seed_hypers"]:
        state[name] = np.array(rng.integers(1, 2**40), dtype=state[name].dtype)
    for name, init in meta["param_init"].items():
        a = state[name]
        if init in ("one", "norm_scale"):
            state[name] = (1 + 0.2 * rng.standard_normal(a.shape)).astype(a.dtype)
        elif init == "small":
            state[name] = (0.2 * rng.standard_normal(a.shape)).astype(a.dtype)
    opt = meta["optimizer"]
    for b in step.args:
        if b.role == "opt_state":
            a = state[b.name]
            if b.name.endswith(".step"):
                state[b.name] = np.array(rng.integers(0, 6), dtype=a.dtype)
            elif b.name.endswith(".exp_avg_sq"):
                state[b.name] = rng.uniform(0, 2e-3, a.shape).astype(a.dtype)
            else:
                state[b.name] = (0.01 * rng.standard_normal(a.shape)).astype(a.dtype)
        elif b.role == "hyper" and b.name == "lr":
            state[b.name] = np.array(0.1 if opt["kind"] == "sgd" else 0.01, dtype=state[b.name].dtype)
    np.savez(state_path, **state)
    np.savez(data_path, **data)


# ----------------------------------------------------------------------------
# Comparison


def compare(single_path, other_path, adam_params, rtol, atol, adam_atol, noise=None, noise_factor=8.0):
    """None when every array of single equals other's, else a message.

    `noise` (name -> how far the single-device run is from the float64
    NumPy run of the same step, see reference_noise) widens the absolute
    tolerance of an array to noise_factor times that: a gradient that is a
    small difference of large terms (a batch norm's, say) carries rounding
    errors of the large terms, which any other summation order changes."""
    import numpy as np
    single, other = np.load(single_path), np.load(other_path)
    noise = noise or {}
    bad = []
    for name in single.files:
        if name not in other.files:
            bad.append(f"'{name}' missing")
            continue
        a, b = single[name], other[name]
        if a.shape != b.shape:
            bad.append(f"'{name}' has shape {b.shape}, expected {a.shape}")
            continue
        tol = max(adam_atol if name in adam_params else atol, noise_factor * noise.get(name, 0.0))
        if not np.allclose(b, a, rtol=rtol, atol=tol):
            d = np.abs(a.astype(np.float64) - b.astype(np.float64))
            i = np.unravel_index(np.nanargmax(d), d.shape) if d.size and not np.all(np.isnan(d)) else ()
            where = f" at {list(map(int, i))}" if d.ndim else ""
            bad.append(f"'{name}' differs (max abs {np.nanmax(d):.3g}{where}: "
                       f"{a[i] if d.ndim else a} vs {b[i] if d.ndim else b}; tolerance {tol:.2g} + {rtol:.2g} rel)")
    extra = sorted(set(other.files) - set(single.files))
    if extra:
        bad.append("unexpected arrays " + ", ".join(extra))
    if not bad:
        return None
    return "; ".join(bad[:4]) + (f"; ... ({len(bad)} arrays)" if len(bad) > 4 else "")


def reference_noise(step, state_path, data_path, single_path, steps=2):
    """Runs `step` `steps` times in float64 with ref.py from the same state
    and batch; returns ({array name: max |single - float64|}, problems):
    the rounding noise of the single-device run, and the arrays where it is
    far from NumPy (a lowering bug, or a generator bug)."""
    import numpy as np
    import ref
    st, dt, single = np.load(state_path), np.load(data_path), np.load(single_path)
    arrs = {**{k: st[k] for k in st.files}, **{k: dt[k] for k in dt.files}}
    losses = []
    for _ in range(steps):
        out = ref.outputs(step, ref.run(step, arrs))
        for r in step.results:
            if r.role in ("param", "opt_state"):
                arrs[r.name] = out[r.name]
            elif r.role == "loss":
                losses.append(float(out[r.name]))
    expected = {r.name: arrs[r.name] for r in step.results if r.role in ("param", "opt_state")}
    expected["loss"] = np.array(losses)
    noise, problems = {}, []
    for name in single.files:
        if name not in expected:
            continue
        a, e = single[name].astype(np.float64), np.asarray(expected[name], np.float64)
        d = np.abs(a - e)
        noise[name] = float(d.max()) if d.size else 0.0
        if not np.allclose(a, e, rtol=1e-3, atol=1e-4):
            problems.append(f"'{name}' (max abs {noise[name]:.3g})")
    return noise, problems


# ----------------------------------------------------------------------------
# One seed


class Tools:
    def __init__(self, args):
        bindir = os.path.join(os.path.abspath(args.build), "bin")
        self.dist_opt = args.dist_opt or os.path.join(bindir, "dist-opt")
        self.dist_run = args.dist_run or os.path.join(bindir, "dist-run")
        # A bare name is looked up on PATH.
        if os.sep not in self.dist_opt:
            self.dist_opt = shutil.which(self.dist_opt) or self.dist_opt
        if os.sep not in self.dist_run:
            self.dist_run = shutil.which(self.dist_run) or self.dist_run
        self.mpirun = shlex.split(args.mpirun)

    def wait_for_binaries(self):
        BINARIES[:] = [self.dist_opt, self.dist_run]
        wait_for(BINARIES)


class Outcome:
    def __init__(self, seed, name, status, detail="", cmds=None):
        self.seed, self.name, self.status, self.detail = seed, name, status, detail
        self.cmds = cmds or []

    def line(self):
        d = f": {self.detail}" if self.detail else ""
        return f"seed {self.seed:<5} {self.name:<28} {self.status}{d}"


def run_seed(seed, strategies, tools, workdir, opts, emit):
    """Runs one seed through every strategy; returns (outcomes, step text,
    description, the commands that set the seed up)."""
    os.makedirs(workdir, exist_ok=True)
    step = gen.generate(seed)
    text = step.text()
    path = os.path.join(workdir, "step.mlir")
    with open(path, "w") as f:
        f.write(text)
    with open(os.path.join(workdir, "meta.json"), "w") as f:
        json.dump({"seed": seed, "layers": step.layers, "adam_params": step.meta["adam_params"]}, f, indent=1)
    state, data = os.path.join(workdir, "state.npz"), os.path.join(workdir, "data.npz")
    single = os.path.join(workdir, "single.npz")
    outcomes = []
    gen_cmd = [sys.executable, os.path.join(HERE, "gen.py"), str(seed)]
    verify = [tools.dist_opt, path, "--train-verify", "-o", os.path.join(workdir, "verified.mlir")]
    # --mixed-precision: the step made mixed first; every run, the
    # single-device one included, runs the mixed step.
    mixed = None
    f32_path = path
    if opts.mixed_precision:
        mixed = [tools.dist_opt, path, f"--train-mixed-precision={opts.mixed_precision}", "-o",
                 os.path.join(workdir, "mixed.mlir")]
        path = os.path.join(workdir, "mixed.mlir")
    init = [tools.dist_run, path, f"--init-state={state}", f"--init-data={data}", f"--seed={seed}"]
    fill = [sys.executable, os.path.join(HERE, "run.py"), "--fill", str(seed), state, data]
    base = [tools.dist_run, path, f"--state={state}", f"--data={data}", "--steps=2", f"--out={single}"]
    setup_cmds = [shell_line(gen_cmd) + " > " + shlex.quote(path), shell_line(init), shell_line(fill),
                  shell_line(base)]

    def setup_fail(name, detail, cmd):
        o = Outcome(seed, name, "FAIL", detail, [shell_line(cmd)])
        emit(o)
        return [o], text, step.describe(), setup_cmds[:1]

    rc, out, err, to = run_cmd(verify, DIST_OPT_TIMEOUT)
    if rc != 0:
        return setup_fail("generator", "the generated step does not pass --train-verify: "
                          + first_error(err), verify)
    if mixed:
        setup_cmds.insert(1, shell_line(mixed))
        rc, out, err, to = run_cmd(mixed, DIST_OPT_TIMEOUT)
        if rc != 0 and (to or is_crash(rc, err) or "error:" not in err or opts.strict_refusals):
            return setup_fail("mixed", "--train-mixed-precision failed: " + first_error(err + out), mixed)
        if rc != 0:
            o = Outcome(seed, "mixed", "refused", first_error(err))
            emit(o)
            return [o], text, step.describe(), setup_cmds[:1]
    rc, out, err, to = run_cmd(init, DIST_OPT_TIMEOUT)
    if rc != 0:
        return setup_fail("init", "dist-run --init-state failed: " + first_error(err), init)
    fill_arrays(step, state, data, seed)
    rc, out, err, to = run_cmd(base, DIST_RUN_TIMEOUT)
    if rc != 0 or to:
        return setup_fail("single", ("timed out" if to else f"exit {rc}: ") + first_error(err + out), base)
    adam = set(step.meta["adam_params"])
    # The single-device run against NumPy: how much rounding noise each
    # array carries (the tolerance of the comparisons), and a check of
    # the single-device lowering.
    noise = None
    try:
        if mixed:  # 16-bit rounding: the given tolerances, no NumPy check
            raise NotImplementedError("a mixed-precision step")
        noise, problems = reference_noise(step, state, data, single)
        with open(os.path.join(workdir, "noise.json"), "w") as f:
            json.dump(noise, f, indent=1)
        if problems:
            o = Outcome(seed, "single-vs-numpy", "FAIL", "the single-device run differs from NumPy's "
                        "float64 run of the step (rtol 1e-3, atol 1e-4): " + ", ".join(problems[:4]),
                        [shell_line([sys.executable, os.path.join(HERE, "run.py"), "--self-check",
                                     "--seeds", str(seed)])])
            emit(o)
            outcomes.append(o)
    except Exception as e:  # an op ref.py does not know: plain tolerances
        print(f"difftest: seed {seed}: no NumPy reference ({type(e).__name__}: {e})", flush=True)
    for name, flags, np_ in strategies:
        # --mixed-after: the strategy on the float32 step, then the pass.
        source, after = path, []
        if mixed and opts.mixed_after:
            source, after = f32_path, [f"--train-mixed-precision={opts.mixed_precision}"]
        # (Right after the strategy: before a later pass as the overlap.)
        o = run_strategy(seed, name, flags[:1] + after + flags[1:], np_, tools, source, workdir, state,
                         data, single, adam, opts, noise)
        emit(o)
        outcomes.append(o)
    return outcomes, text, step.describe(), setup_cmds


def split_ops(seed):
    """dist-run --ops-per-function of the distributed runs: cut into parts
    of 4 or 16 ops for two seeds in three (the single-device reference, and
    generated steps at the default 1000, stay one function)."""
    return (1000, 16, 4)[seed % 3]


def parallel_flags(seed):
    """dist-run's threads of the distributed runs: for odd seeds every loop
    nest with a parallel outermost loop runs it on 2 threads (the generated
    steps are far below the default 32768 iterations) against the serial
    single-device reference."""
    if seed % 2:
        return ["--parallel-min-iterations=1", "--num-threads=2"]
    return []


def run_strategy(seed, name, flags, nproc, tools, path, workdir, state, data, single, adam, opts, noise):
    out_mlir = os.path.join(workdir, f"{name}.mlir")
    out_npz = os.path.join(workdir, f"{name}.npz")
    opt = [tools.dist_opt, path] + flags + ["-o", out_mlir]
    verify = [tools.dist_opt, out_mlir, "--train-verify", "-o", os.path.join(workdir, f"{name}.verified.mlir")]
    runc = tools.mpirun + ["-np", str(nproc), tools.dist_run, out_mlir, f"--state={state}",
                           f"--data={data}", "--steps=2", f"--out={out_npz}",
                           f"--ops-per-function={split_ops(seed)}"] + parallel_flags(seed)
    cmp = [sys.executable, os.path.join(HERE, "run.py"), "--compare", single, out_npz]
    if adam:
        cmp += ["--adam-params", ",".join(sorted(adam))]
    cmds = [shell_line(c) for c in (opt, verify, runc, cmp)]
    rc, out, err, to = run_cmd(opt, DIST_OPT_TIMEOUT)
    if to:
        return Outcome(seed, name, "FAIL", "dist-opt timed out", cmds)
    if rc != 0:
        if is_crash(rc, err):
            return Outcome(seed, name, "FAIL", f"dist-opt crashed ({crash_summary(rc, err)})", cmds)
        if "error:" not in err:
            return Outcome(seed, name, "FAIL", f"dist-opt exit {rc} without a diagnostic: "
                           f"{first_error(err + out)}", cmds)
        diag = first_error(err)
        if any(m in err for m in INVALID_IR_MARKS):
            return Outcome(seed, name, "FAIL" if opts.strict_refusals else "refused",
                           "[invalid IR from the strategy?] " + diag, cmds)
        return Outcome(seed, name, "refused", diag)
    if "error:" in err:
        return Outcome(seed, name, "FAIL", f"dist-opt reported an error but exited 0: {first_error(err)}",
                       cmds)
    rc, out, err, to = run_cmd(verify, DIST_OPT_TIMEOUT)
    if rc != 0 or to:
        return Outcome(seed, name, "FAIL", "the strategy's output fails --train-verify: " + first_error(err),
                       cmds)
    if os.path.exists(out_npz):
        os.remove(out_npz)
    rc, out, err, to = run_cmd(runc, DIST_RUN_TIMEOUT)
    if to:
        return Outcome(seed, name, "FAIL", f"mpirun dist-run timed out after {DIST_RUN_TIMEOUT} s (hang?)",
                       cmds)
    if rc != 0:
        return Outcome(seed, name, "FAIL", f"dist-run failed on a program dist-opt accepted (exit {rc}): "
                       + first_error(err + out), cmds)
    if not os.path.exists(out_npz):
        return Outcome(seed, name, "FAIL", "dist-run wrote no output", cmds)
    why = compare(single, out_npz, adam, opts.rtol, opts.atol, opts.adam_atol, noise, opts.noise_factor)
    if why:
        return Outcome(seed, name, "FAIL", "wrong result: " + why, cmds)
    return Outcome(seed, name, "ok")


# ----------------------------------------------------------------------------
# Self-check: the generator against NumPy


def self_check(seed, tools, workdir, opts):
    """Gradient check of the generated backward ops (central differences in
    float64 through ref.py) and the single-device dist-run step against
    ref.py. Returns a list of problems."""
    import numpy as np
    import ref
    step = gen.generate(seed)
    problems = []
    rng = np.random.default_rng(seed)
    # Random float64 arguments (ids in range, positive exp_avg_sq).
    arrays = {}
    for b in step.args:
        v = b.value
        if v.dtype.startswith("i"):
            if b.name in step.meta["int_inputs"]:
                arrays[b.name] = rng.integers(0, step.meta["int_inputs"][b.name], v.shape)
            elif b.role == "label":
                arrays[b.name] = rng.integers(0, 2, v.shape)  # fixed below
            else:
                arrays[b.name] = np.array(rng.integers(1, 1000), dtype=np.int64).reshape(v.shape)
        elif b.name.endswith("exp_avg_sq"):
            arrays[b.name] = np.asarray(rng.uniform(0, 1e-3, v.shape))
        elif b.name.endswith(".step"):
            arrays[b.name] = np.asarray(float(rng.integers(0, 6)))
        else:
            arrays[b.name] = np.asarray(rng.standard_normal(v.shape) * 0.5)
    # Labels in range: the class dim of the cross-entropy that reads them.
    for op in step.ops:
        if op.kind == "cross_entropy":
            lab = op.operands[1]
            name = next(b.name for b in step.args if b.value is lab)
            arrays[name] = rng.integers(0, op.operands[0].shape[-1], lab.shape)
    # The ops the loss depends on.
    need, cone = {step.loss.name}, []
    for i in reversed(range(len(step.ops))):
        op = step.ops[i]
        if any(r.name in need for r in op.results):
            cone.append(i)
            need.update(o.name for o in op.operands)
    fwd = gen.Step(seed, step.args, step.results, [step.ops[i] for i in sorted(cone)], {}, [])

    def loss_of(arrs):
        return float(ref.run(fwd, arrs)[step.loss.name])

    env = ref.run(step, arrays)
    checked = 0
    for pname, gval in step.param_grads.items():
        an = env[gval.name]
        p = arrays[pname]
        flat = list(range(p.size))
        rng.shuffle(flat)
        for k in flat[:opts.fd_points]:
            idx = np.unravel_index(k, p.shape) if p.shape else ()
            a = float(an[idx])
            checked += 1
            # A kink (relu, max) within eps of the point spoils one step
            # size: the gradient must match at one of them.
            for eps in (1e-5, 1e-7, 1e-3):
                plus, minus = dict(arrays), dict(arrays)
                pp, pm = p.astype(np.float64).copy(), p.astype(np.float64).copy()
                pp[idx] += eps
                pm[idx] -= eps
                plus[pname], minus[pname] = pp, pm
                fd = (loss_of(plus) - loss_of(minus)) / (2 * eps)
                if abs(fd - a) <= 1e-6 + 1e-4 * max(abs(fd), abs(a)):
                    break
            else:
                problems.append(f"gradient of '{pname}'{list(map(int, idx)) if p.shape else ''}: "
                                f"backward ops give {a:.9g}, central differences {fd:.9g}")
    # dist-run single-device, 1 step (2 mapped), against the interpreter.
    path = os.path.join(workdir, "step.mlir")
    with open(path, "w") as f:
        f.write(step.text())
    state, data, out = (os.path.join(workdir, n) for n in ("state.npz", "data.npz", "single1.npz"))
    for cmd in ([tools.dist_run, path, f"--init-state={state}", f"--init-data={data}", f"--seed={seed}"],):
        rc, o, e, _ = run_cmd(cmd, DIST_RUN_TIMEOUT)
        if rc:
            return problems + [f"{shell_line(cmd)} failed: {first_error(e)}"], checked
    fill_arrays(step, state, data, seed)
    # (Mapped: two steps, so the runner's captured step is replayed once.)
    steps = 2 if opts.gpu_mapped else 1
    cmd = [tools.dist_run, path, f"--state={state}", f"--data={data}", f"--steps={steps}", f"--out={out}"]
    if opts.gpu_mapped:
        # (Cut into parts as the distributed runs are: the parts' outputs
        # are the step's buffers passed in, their workspaces one.)
        cmd += ["--gpu-mapped", f"--ops-per-function={split_ops(seed)}"]
    if opts.device != "cpu":
        cmd.append(f"--device={opts.device}")
    rc, o, e, _ = run_cmd(cmd, DIST_RUN_TIMEOUT)
    if rc:
        return problems + [f"{shell_line(cmd)} failed: {first_error(e + o)}"], checked
    if opts.fake_cuda:
        problems += fake_cuda_check(path, state, data, seed, tools, workdir, opts)
    st, dt, got = np.load(state), np.load(data), np.load(out)
    arrs = {**{k: st[k] for k in st.files}, **{k: dt[k] for k in dt.files}}
    losses = []
    for _ in range(steps):
        expected = ref.outputs(step, ref.run(step, arrs))
        for r in step.results:
            if r.role in ("param", "opt_state"):
                arrs[r.name] = expected[r.name]
            elif r.role == "loss":
                losses.append(float(expected[r.name]))
    for r in step.results:
        if r.role == "metric":
            continue
        key = "loss" if r.role == "loss" else r.name
        e_, g_ = np.asarray(expected[r.name], np.float64), got[key].astype(np.float64)
        if r.role == "loss":
            e_, g_ = np.array(losses), g_.reshape(-1)[:steps]
        tol = 1e-4 if r.name in step.meta["adam_params"] else 2e-5
        if not np.allclose(g_, e_, rtol=1e-4, atol=tol):
            problems.append(f"single-device '{r.name}' differs from NumPy "
                            f"(max abs {np.max(np.abs(g_ - e_)):.3g})")
    return problems, checked


def fake_cuda_check(path, state, data, seed, tools, workdir, opts):
    """The step on --device=cuda over the fake CUDA driver in
    opts.fake_cuda (test/lib/FakeCuda): 3 steps, captured at the second and
    replayed at the third, every copy, product and capture checked against
    CUDA's rules. Kernels do not run there: nothing is compared but the
    violations."""
    report = os.path.join(workdir, "fake_cuda.json")
    cmd = [tools.dist_run, path, f"--state={state}", f"--data={data}", "--steps=3",
           "--device=cuda", f"--ops-per-function={split_ops(seed)}"]
    env = {"LD_LIBRARY_PATH": opts.fake_cuda, "DISTOPT_FAKE_CUDA_REPORT": report}
    rc, o, e, _ = run_cmd(cmd, DIST_RUN_TIMEOUT, env)
    line = "LD_LIBRARY_PATH=" + shlex.quote(opts.fake_cuda) + " " + shell_line(cmd)
    if rc:
        return [f"{line} failed on the fake CUDA driver: {first_error(e + o)}"]
    try:
        with open(report) as f:
            loaded = json.load(f)
        violations, launches = loaded["violations"], loaded["graph_launches"]
    except (OSError, ValueError, KeyError) as error:
        return [f"{line}: no fake CUDA report ({error})"]
    problems = [f"{line}: fake CUDA violation: {v}" for v in violations[:3]]
    if not launches:
        # (dist-run says why it ran the step launch by launch.)
        why = next((l for l in (e + o).splitlines() if "captured graph" in l),
                   "no graph launched")
        problems.append(f"{line}: the step was not replayed from a CUDA graph: {why}")
    return problems


# ----------------------------------------------------------------------------


def parse_seeds(text):
    """A range object or list: "3", "0-99", "1,4,7-9"."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if len(parts) == 1 and "-" in parts[0]:
        a, b = parts[0].split("-", 1)
        return range(int(a), int(b) + 1)
    seeds = []
    for part in parts:
        if "-" in part:
            a, b = part.split("-", 1)
            seeds.extend(range(int(a), int(b) + 1))
        else:
            seeds.append(int(part))
    return seeds


def select_strategies(patterns):
    if not patterns:
        return list(STRATEGIES)
    pats = [p.strip() for p in patterns.split(",") if p.strip()]
    for p in pats:
        if not any(fnmatch.fnmatchcase(s[0], p) for s in STRATEGIES):
            sys.exit(f"difftest: no strategy matches {p!r} (see --list-strategies)")
    return [s for s in STRATEGIES if any(fnmatch.fnmatchcase(s[0], p) for p in pats)]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"),
                    help="build directory holding bin/dist-opt and bin/dist-run (default: the checkout's build)")
    ap.add_argument("--dist-opt", help="dist-opt binary (default: BUILD/bin/dist-opt)")
    ap.add_argument("--dist-run", help="dist-run binary (default: BUILD/bin/dist-run)")
    ap.add_argument("--mpirun", default="mpirun", help="MPI launcher (default: mpirun)")
    ap.add_argument("--seeds", default="0-9", help="seeds: 3 / 0-99 / 1,4,7-9 (default 0-9)")
    ap.add_argument("--strategies", help="comma-separated names or globs (default: all; see --list-strategies)")
    ap.add_argument("--spread", type=int, default=1, metavar="K",
                    help="run each strategy on every K-th seed only: the i-th seed of --seeds runs the "
                    "strategies whose position j in the list has (j - i) %% K == 0 (CI's time box; "
                    "default 1: every strategy on every seed)")
    ap.add_argument("--list-strategies", action="store_true")
    ap.add_argument("--keep", metavar="DIR", help="keep every seed's files in DIR/seed<N>")
    ap.add_argument("--workdir", metavar="DIR", help="work in DIR/seed<N> and keep only the failing seeds' "
                    "files there (default: a temporary directory, kept when something fails)")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="seeds run in parallel (default 1)")
    ap.add_argument("--time-limit", type=float, help="stop starting seeds after this many hours")
    ap.add_argument("--stop-on-fail", action="store_true", help="stop after the first failing seed")
    ap.add_argument("--no-print-step", action="store_true", help="do not print failing steps' text")
    ap.add_argument("--strict-refusals", action="store_true",
                    help="a refusal whose diagnostic is an op verifier's or the step contract's on the "
                    "strategy's output (marked [invalid IR from the strategy?]) is a FAIL")
    ap.add_argument("--mixed-precision", metavar="OPTIONS",
                    help="make every step mixed first (--train-mixed-precision=OPTIONS, e.g. "
                         "'compute=f16 loss-scale=dynamic'); compare with the mixed single-device run "
                         "(give --rtol/--atol for 16-bit rounding)")
    ap.add_argument("--mixed-after", action="store_true",
                    help="with --mixed-precision: run the pass after each strategy, on the float32 "
                         "step it distributed (compared with the mixed single-device run as before)")
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--atol", type=float, default=1e-6)
    ap.add_argument("--adam-atol", type=float, default=1e-5,
                    help="absolute tolerance of parameters updated by adam/adamw (default 1e-5: Adam "
                    "divides by the gradient's magnitude, see test/Integration/transformer_block.test; "
                    "the random initial exp_avg_sq keeps that from amplifying rounding here)")
    ap.add_argument("--noise-factor", type=float, default=8.0,
                    help="an array may also differ by this many times the single-device run's distance "
                    "from NumPy's float64 run (its rounding noise; default 8)")
    ap.add_argument("--self-check", action="store_true",
                    help="check the generator: gradient check against NumPy and single-device dist-run "
                    "against the NumPy interpreter, for --seeds")
    ap.add_argument("--gpu-mapped", action="store_true",
                    help="with --self-check: run the single-device step with dist-run --gpu-mapped "
                         "(dist-lower-cuda's GPU-mapped loop nests, run on the CPU), cut into parts "
                         "of 4 or 16 ops for two seeds in three")
    ap.add_argument("--fake-cuda", metavar="DIR",
                    help="with --self-check: also run the step with --device=cuda on the fake "
                         "CUDA driver in DIR (BUILD/test/fake-cuda; docs/guides/fake-cuda.md), "
                         "a failure or a violation of CUDA's rules a problem")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                    help="with --self-check: the device dist-run runs the single-device step on")
    ap.add_argument("--fd-points", type=int, default=6, help="elements per parameter in the gradient check")
    ap.add_argument("--compare", nargs=2, metavar=("SINGLE", "OTHER"), help="compare two dist-run outputs")
    ap.add_argument("--adam-params", default="", help="with --compare: parameters with --adam-atol")
    ap.add_argument("--fill", nargs=3, metavar=("SEED", "STATE", "DATA"), help=argparse.SUPPRESS)
    opts = ap.parse_args(argv)
    if opts.mixed_after and not opts.mixed_precision:
        ap.error("--mixed-after needs --mixed-precision")

    if opts.list_strategies:
        for name, flags, n in STRATEGIES:
            print(f"{name:<28} -np {n}  {shell_line(flags)}")
        return 0
    if opts.fill:
        seed, state, data = opts.fill
        fill_arrays(gen.generate(int(seed)), state, data, int(seed))
        return 0
    if opts.compare:
        adam = set(p for p in opts.adam_params.split(",") if p)
        noise_path = os.path.join(os.path.dirname(os.path.abspath(opts.compare[0])), "noise.json")
        noise = json.load(open(noise_path)) if os.path.exists(noise_path) else None
        why = compare(opts.compare[0], opts.compare[1], adam, opts.rtol, opts.atol, opts.adam_atol, noise,
                      opts.noise_factor)
        print(why or "ok: equal to the single-device run")
        return 1 if why else 0

    seeds = parse_seeds(opts.seeds)
    tools = Tools(opts)
    tools.wait_for_binaries()

    root = opts.keep or opts.workdir or tempfile.mkdtemp(prefix="difftest-")
    os.makedirs(root, exist_ok=True)

    if opts.self_check:
        failed = 0
        for seed in seeds:
            wd = os.path.join(root, f"seed{seed}")
            os.makedirs(wd, exist_ok=True)
            problems, checked = self_check(seed, tools, wd, opts)
            step = gen.generate(seed)
            status = "ok" if not problems else "FAIL"
            print(f"seed {seed:<5} self-check {status}: {checked} gradient elements, "
                  f"{step.describe()}", flush=True)
            for p in problems:
                print(f"    {p}")
            if problems:
                failed += 1
                print(f"    step: {os.path.join(wd, 'step.mlir')}")
            elif not opts.keep:
                shutil.rmtree(wd, ignore_errors=True)
        if not opts.keep and not opts.workdir and not failed:
            shutil.rmtree(root, ignore_errors=True)
        print(f"self-check: {len(seeds) - failed} of {len(seeds)} seeds ok")
        return 1 if failed else 0

    strategies = select_strategies(opts.strategies)
    if opts.spread < 1:
        ap.error("--spread must be at least 1")
    position = {seed: i for i, seed in enumerate(seeds)}

    def strategies_of(seed):
        """The strategies --spread gives `seed`."""
        return [s for j, s in enumerate(strategies) if (j - position[seed]) % opts.spread == 0]

    lock = threading.Lock()
    start = time.time()

    def emit(o):
        with lock:
            print(o.line(), flush=True)

    def emit_text(text):
        with lock:
            print(text, flush=True)

    def rerun(seed, wd, names):
        cmd = [sys.executable, os.path.abspath(__file__), "--dist-opt", tools.dist_opt, "--dist-run",
               tools.dist_run, "--mpirun", shell_line(tools.mpirun), "--seeds", str(seed), "--keep", wd]
        if names:
            cmd += ["--strategies", ",".join(names)]
        if opts.mixed_precision:
            cmd += ["--mixed-precision", opts.mixed_precision, "--rtol", str(opts.rtol), "--atol",
                    str(opts.atol), "--adam-atol", str(opts.adam_atol)]
            if opts.mixed_after:
                cmd += ["--mixed-after"]
        return shell_line(cmd)

    def report(seed, bad, text, desc, wd, setup):
        """A failing seed: the step and how to reproduce each failure."""
        lines = ["", f"=== seed {seed} FAILED ({len(bad)} configuration(s)): {desc}",
                 f"    step: {os.path.join(wd, 'step.mlir')}",
                 "    rerun: " + rerun(seed, wd, [o.name for o in bad if o.name not in SETUP]),
                 "--- set-up (generate, init, fill, single-device run):"]
        lines.extend(f"    {c}" for c in setup)
        for o in bad:
            lines.append(f"--- {o.name}: {o.detail}")
            lines.extend(f"    {c}" for c in o.cmds)
        if not opts.no_print_step:
            lines.append(f"--- the step (seed {seed}):")
            lines.append(text.rstrip("\n"))
        lines.append("")
        with lock:
            print("\n".join(lines), flush=True)

    counts = {"ok": 0, "refused": 0, "FAIL": 0}
    failures, suspicious = [], []
    stop = threading.Event()

    def job(seed):
        if stop.is_set() or (opts.time_limit and time.time() - start > opts.time_limit * 3600):
            return False
        wd = os.path.join(root, f"seed{seed}")
        t0 = time.time()
        outcomes, text, desc, setup = run_seed(seed, strategies_of(seed), tools, wd, opts, emit)
        bad = [o for o in outcomes if o.status == "FAIL"]
        n = {k: sum(o.status == k for o in outcomes) for k in ("ok", "refused", "FAIL")}
        emit_text(f"seed {seed:<5} done in {time.time() - t0:.0f} s: {n['ok']} ok, {n['refused']} refused, "
                  f"{n['FAIL']} FAIL")
        with lock:
            for o in outcomes:
                counts[o.status] += 1
            failures.extend(bad)
            suspicious.extend(o for o in outcomes if o.status == "refused" and o.detail.startswith("[invalid"))
        if bad:
            report(seed, bad, text, desc, wd, setup)
            if opts.stop_on_fail:
                stop.set()
        elif not opts.keep:
            shutil.rmtree(wd, ignore_errors=True)
        return True

    ran = 0
    jobs = max(1, opts.jobs)
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        pending = set()
        for seed in seeds:
            if stop.is_set():
                break
            pending.add(ex.submit(job, seed))
            if len(pending) >= 2 * jobs:
                done, pending = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
                ran += sum(f.result() for f in done)
        ran += sum(f.result() for f in pending)

    elapsed = time.time() - start
    print()
    if failures:
        print("difftest: failures (details above):")
        for o in failures:
            print("  " + o.line())
    if suspicious:
        print("difftest: refusals whose diagnostic looks like invalid IR from the strategy (a FAIL with "
              "--strict-refusals):")
        for o in suspicious:
            print("  " + o.line())
    print(f"difftest: {ran} seed(s), {counts['ok']} ok, {counts['refused']} refused, {counts['FAIL']} FAIL "
          f"({elapsed:.0f} s){'' if ran == len(seeds) else f', {len(seeds) - ran} seed(s) not run'}")
    if not opts.keep and not opts.workdir and not failures:
        shutil.rmtree(root, ignore_errors=True)
    elif failures:
        print(f"difftest: the failing seeds' files are in {root}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
