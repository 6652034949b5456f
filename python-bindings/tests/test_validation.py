# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Strategy arguments are checked before they reach the pass pipeline (a
string was pasted into it: `num_replicas='2},dist-lower-cpu{'` also lowered
the module, `hosts='2'` gave 22 processes); a failed pipeline leaves the
module as it was; text that would crash MLIR's parser raises DistOptError
instead of killing the interpreter."""

import os

import pytest

import distopt


@pytest.mark.parametrize("make,name", [
    (lambda: distopt.MirroredStrategy("2},dist-lower-cpu{"), "num_replicas"),
    (lambda: distopt.MirroredStrategy(True), "num_replicas"),
    (lambda: distopt.MirroredStrategy(2.0), "num_replicas"),
    (lambda: distopt.MirroredStrategy(2, bucket_mb="25"), "bucket_mb"),
    (lambda: distopt.MultiWorkerMirroredStrategy(hosts="2", devices_per_host=2), "hosts"),
    (lambda: distopt.TensorParallelStrategy(2, sequence_parallel="true"), "sequence_parallel"),
    (lambda: distopt.ZeroStrategy(stage="1", num_replicas=2), "stage"),
    (lambda: distopt.PipelineStrategy(stages=2, microbatches=None), "microbatches"),
    (lambda: distopt.PipelineStrategy(stages=2, microbatches=2, schedule=1), "schedule"),
    (lambda: distopt.ParameterServerStrategy(num_ps=1, num_workers=[2]), "num_workers"),
    (lambda: distopt.HybridStrategy(dp=2, tp="2"), "tp"),
    (lambda: distopt.HybridStrategy(dp=2, microbatches=False), "microbatches"),
])
def test_type_errors_name_the_argument(make, name):
    with pytest.raises(TypeError, match=name):
        make()


@pytest.mark.parametrize("make,name", [
    (lambda: distopt.MirroredStrategy(0), "num_replicas"),
    (lambda: distopt.MirroredStrategy(-2), "num_replicas"),
    (lambda: distopt.MirroredStrategy(2, bucket_mb=float("nan")), "bucket_mb"),
    (lambda: distopt.MirroredStrategy(2, bucket_mb=0), "bucket_mb"),
    (lambda: distopt.ZeroStrategy(stage=4, num_replicas=2), "stage"),
    (lambda: distopt.PipelineStrategy(stages=2, microbatches=4294967297), "microbatches"),
    (lambda: distopt.PipelineStrategy(stages=2, microbatches=2, schedule="1f1b},dist-lower-cpu{"), "schedule"),
    (lambda: distopt.PipelineStrategy(stages=2, microbatches=2, virtual_stages=0), "virtual_stages"),
    (lambda: distopt.ParameterServerStrategy(num_ps=1, num_workers=2, mode="sync}"), "mode"),
    (lambda: distopt.ParameterServerStrategy(num_ps=1, num_workers=2, partitioner="x"), "partitioner"),
    (lambda: distopt.HybridStrategy(pp=1000000), "pp"),
    (lambda: distopt.HybridStrategy(zero=-1), "zero"),
    (lambda: distopt.HybridStrategy(dp=256, tp=256, pp=2), "hosts \\* dp \\* tp \\* pp"),
    (lambda: distopt.MultiWorkerMirroredStrategy(hosts=1024, devices_per_host=1024), "hosts \\* devices_per_host"),
])
def test_range_errors_name_the_argument(make, name):
    with pytest.raises(ValueError, match=name):
        make()


def test_valid_arguments_build_the_pipeline():
    import numpy as np
    strategy = distopt.HybridStrategy(dp=np.int64(2), tp=2, zero=1)
    assert strategy.pipeline == "dist-hybrid{dp=2 tp=2 pp=1 zero=1}"
    assert strategy.num_processes == 4
    assert distopt.MultiWorkerMirroredStrategy(2, 2).num_processes == 4
    assert distopt.MirroredStrategy(2, bucket_mb=0.5).pipeline == \
        "dist-mirrored{replicas=2 bucket-mb=0.5}"


def test_failed_pipeline_leaves_the_module_unchanged(examples):
    step = distopt.Module.load(os.path.join(examples, "mlp.mlir"))
    before = str(step)
    # The first pass rewrites the step, the second refuses the result.
    with pytest.raises(distopt.DistOptError):
        step.run_pipeline("dist-mirrored{replicas=2},dist-tensor-parallel{size=2}")
    assert str(step) == before
    # The module still works.
    assert "dist.all_reduce" in str(step.run_pipeline("dist-mirrored{replicas=2}"))


def test_parser_crashes_raise():
    with pytest.raises(distopt.DistOptError) as error:
        distopt.Module.parse("func.func @f() attributes {a = array<index: 1, 2>} {\n"
                             "  return\n}\n", "index.mlir")
    assert "index.mlir:1:32: error: 'array<index ...>' is not supported" in \
        error.value.diagnostics
    with pytest.raises(distopt.DistOptError) as error:
        distopt.Module.parse("func.func @f() attributes {a = " + "[" * 200000 + "\n",
                             "deep.mlir")
    assert "deep.mlir:1:1031: error: brackets nested deeper than 1000 levels" in \
        error.value.diagnostics
    # The interpreter and the context still work.
    assert "func.func @g" in str(distopt.Module.parse("func.func @g() {\n  return\n}\n"))
