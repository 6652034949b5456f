# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Appends the ops of one MLIR file to the module a dist-opt output holds.

    append_to_module.py MODULE.mlir OPS.mlir > ALL.mlir

MODULE.mlir is `module { ... }` as dist-opt prints it; the text of OPS.mlir
(top-level ops, comments allowed) goes before its closing brace.
"""

import sys

module = open(sys.argv[1]).read().rstrip()
if not module.endswith("}"):
    sys.exit(f"{sys.argv[1]}: expected a module ending with '}}'")
ops = open(sys.argv[2]).read()
print(module[:-1] + ops + "}")
