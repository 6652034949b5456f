# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""distopt.Module: parse, verify, print, run a pipeline, the cost report,
errors with diagnostics."""

import os

import pytest

import distopt


def test_parse_print_verify(examples):
    step = distopt.Module.load(os.path.join(examples, "mlp.mlir")).verify()
    text = str(step)
    assert "func.func @train_step" in text and "train.sgd" in text
    # Printed text parses back to the same module.
    assert str(distopt.Module.parse(text)) == text
    assert '"train.sgd"' in step.to_generic_string()


def test_run_pipeline_and_cost_report(examples):
    step = distopt.Module.load(os.path.join(examples, "mlp.mlir"))
    step.run_pipeline("dist-mirrored{replicas=2}")
    assert "dist.all_reduce" in str(step)
    report = step.cost_report()
    (function,) = report["functions"]
    assert function["function"] == "train_step"
    assert function["collective_count"] >= 1 and function["comm_bytes_per_rank"] > 0
    assert "train_step" in step.cost_report_text()


def test_parse_error_has_location():
    with pytest.raises(distopt.DistOptError) as error:
        distopt.Module.parse("func.func @f() {\n  %0 = train.nope\n}", "bad.mlir")
    assert "bad.mlir:2:8: error: custom op 'train.nope' is unknown" in error.value.diagnostics


def test_verifier_error_at_parse():
    # Parsing runs the verifiers: an invalid attribute is reported there.
    with pytest.raises(distopt.DistOptError) as error:
        distopt.Module.parse("func.func private @f(tensor<4xf32> {dist.cache})\n", "cache.mlir")
    assert ("cache.mlir:1:1: error: 'func.func' op argument #0: 'dist.cache' is a "
            "unit attribute of a placed program" in error.value.diagnostics)


def test_bad_pipeline_and_failing_pass(examples):
    step = distopt.Module.load(os.path.join(examples, "mlp.mlir"))
    with pytest.raises(distopt.DistOptError) as error:
        step.run_pipeline("no-such-pass")
    assert "no-such-pass" in str(error.value)
    with pytest.raises(distopt.DistOptError) as error:
        step.run_pipeline("dist-mirrored{replicas=0}")
    assert "needs replicas >= 1, got 0" in error.value.diagnostics
