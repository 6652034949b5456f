# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""The PyTorch importer's emitter: the front-end-neutral one of
distopt/_emit.py (a Value's dtype is a torch dtype here)."""

from .._emit import (Emitter, Value, attr_array, attr_f64, attr_i64,
                     element_type, scalar_literal, tensor_type)

__all__ = ["Emitter", "Value", "attr_array", "attr_f64", "attr_i64",
           "element_type", "scalar_literal", "tensor_type"]
