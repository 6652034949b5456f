# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""DistOpt from Python: distribute a single-device training step.

    import distopt
    step = distopt.Module.parse(open("examples/mlp.mlir").read())
    mirrored = distopt.MirroredStrategy(num_replicas=2).distribute(step)
    print(mirrored.cost_report()["functions"][0]["comm_bytes_per_rank"])
    state, batch = distopt.init(step, seed=1)
    result = distopt.launch(mirrored, state, batch, steps=3, np=2)

See docs/guides/python.md.
"""

from ._distopt import DistOptError
from .module import Module
from .strategies import (
    HybridStrategy,
    MirroredStrategy,
    MultiWorkerMirroredStrategy,
    ParameterServerStrategy,
    PipelineStrategy,
    Strategy,
    TensorParallelStrategy,
    ZeroStrategy,
)
from .runner import RunResult, export_checkpoint, init, launch, run
from .training import fit
from . import callbacks

__all__ = [
    "DistOptError", "Module", "Strategy", "MirroredStrategy",
    "MultiWorkerMirroredStrategy", "TensorParallelStrategy", "ZeroStrategy",
    "PipelineStrategy", "ParameterServerStrategy", "HybridStrategy",
    "RunResult", "init", "run", "launch", "export_checkpoint", "fit",
    "callbacks",
]
