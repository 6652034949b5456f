# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""distopt.Module: an MLIR module holding a training step."""

import json

from . import _distopt


class Module:
    """A module of DistOpt's dialects (a training step, or what a strategy
    or a lowering made of it). Errors raise distopt.DistOptError, whose
    `diagnostics` holds the compiler's messages with their locations."""

    def __init__(self, handle):
        self._handle = handle

    @staticmethod
    def parse(text, name="<string>"):
        """Parses MLIR text; `name` is the file name diagnostics show."""
        return Module(_distopt.Module.parse(text, name))

    @staticmethod
    def load(path):
        """Parses the file at `path`."""
        with open(path) as f:
            return Module.parse(f.read(), str(path))

    def verify(self):
        """Runs the verifiers; raises DistOptError on a violation."""
        self._handle.verify()
        return self

    def run_pipeline(self, pipeline):
        """Runs a pass pipeline ("dist-mirrored{replicas=2},dist-lower-cpu")
        in place and returns the module; the remarks the passes made are in
        `self.remarks`."""
        self.remarks = self._handle.run_pipeline(pipeline)
        return self

    def derive_eval(self):
        """Adds each training step's forward-only evaluation function
        (train-derive-eval: the loss and, for a cross-entropy, the
        `correct` count) in place; derive it before distributing the step,
        then pass `eval_dataset=` to `run` / `launch`."""
        return self.run_pipeline("train-derive-eval")

    def cost_report(self):
        """The cost report (dist-cost-report) as a dict: per function its
        FLOPs, bytes, collectives, communication and memory; for pipelined
        and parameter-server programs the simulated schedule."""
        return json.loads(self._handle.cost_report("json"))

    def cost_report_text(self):
        """The cost report as the tables dist-opt prints."""
        return self._handle.cost_report("text")

    def clone(self):
        return Module(self._handle.clone())

    def __str__(self):
        return self._handle.to_string(False)

    def to_generic_string(self):
        return self._handle.to_string(True)
