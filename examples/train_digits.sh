#!/bin/bash
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# Trains examples/digits_mlp.mlir on scikit-learn's digits, data parallel
# over 2 processes, end to end: the dataset directory, an evaluation
# function, the distributed step, 10 epochs with evaluation and
# checkpoints, a kill and a resume, and the checkpoint exported.
#
#   bash examples/train_digits.sh [BUILD_DIR] [WORK_DIR]
#
# BUILD_DIR (default build) holds bin/dist-opt, bin/dist-run and the venv
# with the distopt package; WORK_DIR (default: a temporary directory) gets
# the dataset, the modules, the checkpoints and the exported state.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
work=${2:-$(mktemp -d)}
mkdir -p "$work"
python=$build/venv/bin/python
bin=$build/bin
run() { echo "\$ $*"; "$@"; }

echo "== the dataset: 1477 training and 320 test images (8x8, 10 classes)"
rm -rf "$work/digits"
run "$python" -m distopt.datasets digits --test 320 -o "$work/digits" > /dev/null

echo "== the step, its evaluation function, mirrored over 2 processes"
run "$bin/dist-opt" "$root/examples/digits_mlp.mlir" --train-derive-eval \
  --dist-mirrored=replicas=2 -o "$work/digits_mirrored.mlir"
run "$bin/dist-run" "$root/examples/digits_mlp.mlir" \
  --init-state="$work/state.npz" --seed=1
# A learning rate for SGD with momentum on this data.
"$python" -c "import numpy as np, sys; s = dict(np.load(sys.argv[1])); \
s['lr'] = np.float32(0.1); np.savez(sys.argv[1], **s)" "$work/state.npz"

common=(--state="$work/state.npz" --dataset="$work/digits/train" --epochs=10
        --seed=7 --eval-dataset="$work/digits/test" --eval-every=23
        --checkpoint-dir="$work/checkpoints" --checkpoint-every=23 --keep=2)
rm -rf "$work/checkpoints"
echo "== 10 epochs of 23 steps; one rank killed before step 120"
if run mpirun -np 2 "$bin/dist-run" "$work/digits_mirrored.mlir" \
    "${common[@]}" --test-raise=1:KILL:step120 > "$work/killed.log" 2>&1; then
  echo "the killed run did not fail" >&2
  exit 1
fi
if ! grep -q "^checkpoint: " "$work/killed.log"; then
  echo "the killed run saved no checkpoint:" >&2
  cat "$work/killed.log" >&2
  exit 1
fi
grep -E "^(eval|checkpoint)" "$work/killed.log"
echo "== the same command with --resume continues from the newest checkpoint"
run mpirun -np 2 "$bin/dist-run" "$work/digits_mirrored.mlir" "${common[@]}" \
  --resume --out="$work/trained.npz" | grep -E "^(resumed|eval|checkpoint)"
echo "== the newest checkpoint as one npz"
run "$bin/dist-run" --export="$work/exported.npz" \
  --checkpoint-dir="$work/checkpoints"
"$python" -c "
import numpy as np, sys
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
assert all((a[k] == b[k]).all() for k in a.files), 'export != --out'
print('exported = trained state; losses', a['loss'][0], '->', a['loss'][-1])
" "$work/trained.npz" "$work/exported.npz"
