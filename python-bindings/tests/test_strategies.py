# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""One test per strategy: distribute() runs its pass and leaves the input
as it was; a bad option raises DistOptError with the pass's message."""

import os

import pytest

import distopt

CASES = [
    (distopt.MirroredStrategy(2), "mlp.mlir", "dist.all_reduce", 2),
    (distopt.MultiWorkerMirroredStrategy(hosts=2, devices_per_host=2), "mlp.mlir", "dist.all_reduce", 4),
    (distopt.TensorParallelStrategy(2), "transformer_block.mlir", "dist.all_reduce", 2),
    (distopt.TensorParallelStrategy(2, sequence_parallel=True), "transformer_block.mlir", "dist.reduce_scatter", 2),
    (distopt.ZeroStrategy(stage=2, num_replicas=2), "mlp.mlir", "dist.reduce_scatter", 2),
    (distopt.PipelineStrategy(stages=2, microbatches=2, schedule="1f1b"), "mlp.mlir", "dist.send", 2),
    (distopt.ParameterServerStrategy(num_ps=1, num_workers=2), "mlp.mlir", "dist.recv", 3),
    (distopt.ParameterServerStrategy(num_ps=2, num_workers=2, partitioner="fixed", mode="async"), "mlp.mlir", "dist.serve", 4),
    (distopt.HybridStrategy(dp=2, tp=2, zero=1), "mlp.mlir", "dist.reduce_scatter", 4),
]


@pytest.mark.parametrize("strategy,example,op,processes", CASES,
                         ids=[repr(c[0]) for c in CASES])
def test_distribute(examples, strategy, example, op, processes):
    step = distopt.Module.load(os.path.join(examples, example))
    before = str(step)
    distributed = strategy.distribute(step)
    assert op in str(distributed)
    assert str(step) == before
    assert strategy.num_processes == processes


def test_bad_option(examples):
    step = distopt.Module.load(os.path.join(examples, "mlp.mlir"))
    with pytest.raises(distopt.DistOptError) as error:
        distopt.ParameterServerStrategy(num_ps=2, num_workers=2, shards=3).distribute(step)
    assert "shards=3 is more than ps=2" in error.value.diagnostics
