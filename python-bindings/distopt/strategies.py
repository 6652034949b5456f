"""Distribution strategies shaped like tf.distribute's: each names the
dist-opt pass (and options) that rewrites a single-device step, and
`distribute(module)` returns the distributed module (the input is left as
it was). Options are checked by the passes; a bad one raises DistOptError
with the pass's message."""


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
        super().__init__(
            f"dist-mirrored{{{_options(replicas=num_replicas, bucket_mb=bucket_mb)}}}",
            num_replicas)


class MultiWorkerMirroredStrategy(Strategy):
    """Data parallelism over `hosts` x `devices_per_host` with hierarchical
    all-reduces (tf.distribute.MultiWorkerMirroredStrategy)."""

    def __init__(self, hosts, devices_per_host):
        super().__init__(
            f"dist-multi-worker-mirrored{{{_options(hosts=hosts, devices=devices_per_host)}}}",
            hosts * devices_per_host)


class TensorParallelStrategy(Strategy):
    """Megatron-style tensor parallelism over `size` devices, optionally
    with sequence parallelism."""

    def __init__(self, size, sequence_parallel=False):
        super().__init__(
            f"dist-tensor-parallel{{{_options(size=size, sequence_parallel=sequence_parallel)}}}",
            size)


class ZeroStrategy(Strategy):
    """ZeRO stage 1, 2 or 3 (DeepSpeed; FSDP for stage 3) over
    `num_replicas` data-parallel devices."""

    def __init__(self, stage, num_replicas):
        super().__init__(
            f"dist-zero{{{_options(stage=stage, replicas=num_replicas)}}}",
            num_replicas)


class PipelineStrategy(Strategy):
    """Pipeline parallelism: `stages` stages, `microbatches` microbatches,
    schedule gpipe, 1f1b, interleaved (with `virtual_stages`) or zb-h1."""

    def __init__(self, stages, microbatches, schedule="1f1b",
                 virtual_stages=None):
        super().__init__(
            f"dist-pipeline{{{_options(stages=stages, microbatches=microbatches, schedule=schedule, virtual_stages=virtual_stages)}}}",
            stages)


class ParameterServerStrategy(Strategy):
    """tf.distribute.ParameterServerStrategy: `num_ps` servers holding the
    variables (split by `partitioner`: "min-size" or "fixed"), `num_workers`
    workers; `mode` "sync" or "async"."""

    def __init__(self, num_ps, num_workers, partitioner="min-size",
                 mode="sync", shards=None, min_shard_bytes=None):
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
        super().__init__(
            "dist-hybrid{" + _options(
                hosts=hosts, dp=dp, tp=tp, pp=pp, zero=zero,
                microbatches=microbatches, schedule=schedule) + "}",
            (hosts or 1) * dp * tp * pp)
