# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Distribution strategies shaped like tf.distribute's: each names the
dist-opt pass (and options) that rewrites a single-device step, and
`distribute(module)` returns the distributed module (the input is left as
it was). Each argument's type and range is checked here (TypeError or
ValueError naming it: a value is never pasted into the pass pipeline
unchecked); what depends on the step (a count that must divide the batch)
is checked by the passes, and a bad one raises DistOptError with the pass's
message."""

import math
import numbers

# The largest count (devices, stages, microbatches, shards) a strategy
# accepts: far beyond any cluster this runs on, small enough that nothing
# the passes make per device or per microbatch grows without bound.
MAX_COUNT = 1 << 16

SCHEDULES = ("gpipe", "1f1b", "interleaved", "zb-h1")


def _count(name, value, minimum=1, maximum=MAX_COUNT):
    """`value` as an int in [minimum, maximum] (not a bool, not a str)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name} must be an int, got {type(value).__name__} {value!r}")
    if not minimum <= value <= maximum:
        raise ValueError(
            f"{name} must be between {minimum} and {maximum}, got {value}")
    return int(value)


def _optional_count(name, value, minimum=1, maximum=MAX_COUNT):
    return None if value is None else _count(name, value, minimum, maximum)


def _flag(name, value):
    if not isinstance(value, bool):
        raise TypeError(
            f"{name} must be a bool, got {type(value).__name__} {value!r}")
    return value


def _choice(name, value, choices):
    if not isinstance(value, str):
        raise TypeError(
            f"{name} must be a str, got {type(value).__name__} {value!r}")
    if value not in choices:
        raise ValueError(
            f"{name} must be one of {', '.join(map(repr, choices))}, "
            f"got {value!r}")
    return value


def _megabytes(name, value):
    """A positive, finite size in MiB (int or float, not a bool)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must be a number, got {type(value).__name__} {value!r}")
    if not (math.isfinite(value) and 0 < value <= 1 << 20):
        raise ValueError(
            f"{name} must be above 0 and at most {1 << 20} MiB, got {value}")
    return float(value)


def _processes(name, *counts):
    """The product of `counts`, at most MAX_COUNT."""
    total = math.prod(counts)
    if total > MAX_COUNT:
        raise ValueError(
            f"{name} gives {total} processes, more than {MAX_COUNT}")
    return total


class Strategy:
    """A strategy: `pipeline` is the pass pipeline it runs; `num_processes`
    how many ranks the distributed step runs on (mpirun -np)."""

    def __init__(self, pipeline, num_processes):
        self.pipeline = pipeline
        self.num_processes = num_processes

    def distribute(self, module):
        """The distributed module (a new one)."""
        return module.clone().run_pipeline(self.pipeline)

    def __repr__(self):
        return f"{type(self).__name__}({self.pipeline!r})"


def _options(**options):
    parts = []
    for key, value in options.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        parts.append(f"{key.replace('_', '-')}={value}")
    return " ".join(parts)


class MirroredStrategy(Strategy):
    """Synchronous data parallelism over `num_replicas` devices of one host
    (tf.distribute.MirroredStrategy; PyTorch DDP)."""

    def __init__(self, num_replicas, bucket_mb=None):
        num_replicas = _count("num_replicas", num_replicas)
        if bucket_mb is not None:
            bucket_mb = _megabytes("bucket_mb", bucket_mb)
        super().__init__(
            f"dist-mirrored{{{_options(replicas=num_replicas, bucket_mb=bucket_mb)}}}",
            num_replicas)


class MultiWorkerMirroredStrategy(Strategy):
    """Data parallelism over `hosts` x `devices_per_host` with hierarchical
    all-reduces (tf.distribute.MultiWorkerMirroredStrategy)."""

    def __init__(self, hosts, devices_per_host):
        hosts = _count("hosts", hosts)
        devices_per_host = _count("devices_per_host", devices_per_host)
        _processes("hosts * devices_per_host", hosts, devices_per_host)
        super().__init__(
            f"dist-multi-worker-mirrored{{{_options(hosts=hosts, devices=devices_per_host)}}}",
            hosts * devices_per_host)


class TensorParallelStrategy(Strategy):
    """Megatron-style tensor parallelism over `size` devices, optionally
    with sequence parallelism."""

    def __init__(self, size, sequence_parallel=False):
        size = _count("size", size)
        sequence_parallel = _flag("sequence_parallel", sequence_parallel)
        super().__init__(
            f"dist-tensor-parallel{{{_options(size=size, sequence_parallel=sequence_parallel)}}}",
            size)


class ZeroStrategy(Strategy):
    """ZeRO stage 1, 2 or 3 (DeepSpeed; FSDP for stage 3) over
    `num_replicas` data-parallel devices."""

    def __init__(self, stage, num_replicas):
        stage = _count("stage", stage, 1, 3)
        num_replicas = _count("num_replicas", num_replicas)
        super().__init__(
            f"dist-zero{{{_options(stage=stage, replicas=num_replicas)}}}",
            num_replicas)


class PipelineStrategy(Strategy):
    """Pipeline parallelism: `stages` stages, `microbatches` microbatches,
    schedule gpipe, 1f1b, interleaved (with `virtual_stages`) or zb-h1."""

    def __init__(self, stages, microbatches, schedule="1f1b",
                 virtual_stages=None):
        stages = _count("stages", stages)
        microbatches = _count("microbatches", microbatches)
        schedule = _choice("schedule", schedule, SCHEDULES)
        virtual_stages = _optional_count("virtual_stages", virtual_stages)
        super().__init__(
            f"dist-pipeline{{{_options(stages=stages, microbatches=microbatches, schedule=schedule, virtual_stages=virtual_stages)}}}",
            stages)


class ParameterServerStrategy(Strategy):
    """tf.distribute.ParameterServerStrategy: `num_ps` servers holding the
    variables (split by `partitioner`: "min-size" or "fixed"), `num_workers`
    workers; `mode` "sync" or "async"."""

    def __init__(self, num_ps, num_workers, partitioner="min-size",
                 mode="sync", shards=None, min_shard_bytes=None):
        num_ps = _count("num_ps", num_ps)
        num_workers = _count("num_workers", num_workers)
        _processes("num_ps + num_workers", num_ps + num_workers)
        partitioner = _choice("partitioner", partitioner, ("min-size", "fixed"))
        mode = _choice("mode", mode, ("sync", "async"))
        shards = _optional_count("shards", shards)
        min_shard_bytes = _optional_count("min_shard_bytes", min_shard_bytes,
                                          1, 1 << 62)
        super().__init__(
            "dist-parameter-server{" + _options(
                ps=num_ps, workers=num_workers, partitioner=partitioner,
                mode=mode, shards=shards, min_shard_bytes=min_shard_bytes) + "}",
            num_ps + num_workers)


class HybridStrategy(Strategy):
    """Data x tensor (x pipeline) parallelism on one mesh: `dp` data
    replicas, `tp` tensor-parallel devices, `pp` pipeline stages, ZeRO
    stage `zero`, `hosts` for hierarchical data parallelism."""

    def __init__(self, dp=1, tp=1, pp=1, zero=0, hosts=None,
                 microbatches=None, schedule=None):
        dp, tp, pp = (_count(name, value)
                      for name, value in (("dp", dp), ("tp", tp), ("pp", pp)))
        zero = _count("zero", zero, 0, 3)
        hosts = _optional_count("hosts", hosts)
        microbatches = _optional_count("microbatches", microbatches)
        if schedule is not None:
            schedule = _choice("schedule", schedule, SCHEDULES)
        _processes("hosts * dp * tp * pp", hosts or 1, dp, tp, pp)
        super().__init__(
            "dist-hybrid{" + _options(
                hosts=hosts, dp=dp, tp=tp, pp=pp, zero=zero,
                microbatches=microbatches, schedule=schedule) + "}",
            (hosts or 1) * dp * tp * pp)
