# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

"""Checks one data-parallel step whose gradients were reduced in 16 bits
(grad-dtype=bf16|f16 over 2 replicas) against the float32 single-device
step, element by element, within the rounding the compression adds.

    check_compressed_grads.py DTYPE LR STATE SINGLE HALF0 HALF1 RUN...

Every optimizer in the step is SGD with momentum and its buffers start at
zero, so after one step each `<param>.momentum_buffer` is the reduced
gradient. SINGLE is the float32 single-device step (gradient g); HALF0 and
HALF1 the single-device step on each replica's half of the batch repeated
twice, so each replica's divided partial gradient is g_r = buffer / 2
(exact). A RUN reduced round(g_0) + round(g_1) in float32 and rounded the
sum once more, so its gradient g' satisfies, with u the unit roundoff of
DTYPE (bf16 2^-8, f16 2^-11) and t the absolute rounding of subnormals
(half their spacing: 2^-25 for f16; bf16 has f32's range, t = 0):

    |g' - g| <= u (|g_0| + |g_1| + |g'|) + 3 t + 2^-22 (|g_0| + |g_1|)

(the last term: float32 differences between the single-device and the
split computation). Each g' element must be a DTYPE value (so the
compression ran), some must differ from g, the parameters must be
w - lr g', and the losses must equal the float32 ones (the loss is not
compressed). Prints "ok: ..." or the failures and exits 1 on a failure.
"""

import sys

import numpy as np

SUFFIX = ".momentum_buffer"


def is_representable(values, dtype):
    if dtype == "bf16":
        bits = np.asarray(values, np.float32).view(np.uint32)
        return np.all((bits & 0xFFFF) == 0)
    return np.all(np.asarray(values, np.float32).astype(np.float16)
                  .astype(np.float32) == values)


def main():
    dtype, lr = sys.argv[1], float(sys.argv[2])
    state, single, half0, half1 = (np.load(p) for p in sys.argv[3:7])
    unit, subnormal = {"bf16": (2.0**-8, 0.0), "f16": (2.0**-11, 2.0**-25)}[dtype]
    failures, differing, total = [], 0, 0
    buffers = [name for name in single.files if name.endswith(SUFFIX)]
    if not buffers:
        failures.append("no momentum buffer in the single-device run")
    for path in sys.argv[7:]:
        run = np.load(path)
        for name in buffers:
            g, got = single[name], run[name]
            g0, g1 = half0[name] / 2, half1[name] / 2
            spread = np.abs(g0) + np.abs(g1)
            bound = (unit * (spread + np.abs(got)) + 3 * subnormal +
                     2.0**-22 * spread + 1e-12)
            excess = np.abs(got - g) - bound
            if np.any(excess > 0):
                i = np.unravel_index(np.argmax(excess), g.shape)
                failures.append(f"{path}: '{name}'{list(i)} = {got[i]} is "
                                f"{abs(got[i] - g[i])} from {g[i]}, more "
                                f"than the bound {bound[i]}")
            if not is_representable(got, dtype):
                failures.append(f"{path}: '{name}' holds values that are "
                                f"not {dtype}: the gradient was not reduced "
                                f"in {dtype}")
            differing += int(np.count_nonzero(got != g))
            total += got.size
            param = name[: -len(SUFFIX)]
            want = state[param] - np.float32(lr) * got
            if not np.allclose(run[param], want, rtol=1e-6, atol=1e-7):
                failures.append(f"{path}: '{param}' is not the old value "
                                f"minus lr times its reduced gradient")
        if not np.allclose(run["loss"], single["loss"], rtol=1e-6, atol=0):
            failures.append(f"{path}: loss {run['loss']} differs from the "
                            f"float32 loss {single['loss']}")
    if total and differing == 0:
        failures.append("every gradient equals the float32 one: nothing "
                        "was rounded")
    for failure in failures:
        print(failure)
    if not failures:
        print(f"ok: {len(sys.argv) - 7} runs within the {dtype} bound "
              f"({differing} of {total} gradient elements rounded)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
