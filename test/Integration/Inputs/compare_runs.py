"""Compares dist-run outputs with the single-device run.

    compare_runs.py RTOL ATOL SINGLE.npz OTHER.npz...

Every array (the final params, the optimizer state and the per-step losses)
of every OTHER must match SINGLE within numpy.allclose(rtol, atol).
"""

import sys

import numpy as np

rtol, atol = float(sys.argv[1]), float(sys.argv[2])
single = np.load(sys.argv[3])
failed = False
for path in sys.argv[4:]:
    other = np.load(path)
    for name in single.files:
        if name not in other.files:
            print(f"{path}: no '{name}'")
            failed = True
            continue
        a, b = single[name], other[name]
        if a.shape != b.shape or not np.allclose(b, a, rtol=rtol, atol=atol):
            worst = np.max(np.abs(a - b)) if a.shape == b.shape else "shape"
            print(f"{path}: '{name}' differs from the single-device run "
                  f"(max abs {worst})")
            failed = True
print("FAILED" if failed else
      f"ok: {len(sys.argv) - 4} runs equal the single-device run")
sys.exit(1 if failed else 0)
