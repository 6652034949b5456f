// train-remat: forward values the backward reads are recomputed before
// their first backward use; the cost model sees more work and a smaller
// activation peak.
// RUN: rm -rf %t && mkdir -p %t
// RUN: dist-opt %examples/transformer_block.mlir --train-remat=policy=selective | FileCheck %s --check-prefix=SELECTIVE
// SELECTIVE-LABEL: func.func @train_step(
// SELECTIVE-SAME: train.remat = "selective"
// The attention's probabilities: made in the forward, made again for the
// backward from the kept scores' product.
// SELECTIVE: %[[P:.*]] = train.softmax %
// SELECTIVE: %[[P2:.*]] = train.softmax %
// SELECTIVE: train.softmax_backward %{{[0-9]+}}, %[[P2]]
// RUN: dist-opt %examples/transformer_block.mlir --train-remat=policy=none | FileCheck %s --check-prefix=NONE
// NONE-NOT: train.remat

// More work, less memory: selective and full against none.
// RUN: dist-opt %examples/transformer_block.mlir --dist-cost-report="format=json output=%t/none.json" -o %t/none.mlir
// RUN: dist-opt %examples/transformer_block.mlir --train-remat=policy=selective --dist-cost-report="format=json output=%t/selective.json" -o %t/selective.mlir
// RUN: dist-opt %examples/transformer_block.mlir --train-remat=policy=full --dist-cost-report="format=json output=%t/full.json" -o %t/full.mlir
// RUN: %python %S/Inputs/compare_remat_cost.py %t/none.json %t/selective.json %t/full.json | FileCheck %s --check-prefix=COST
// COST: selective: more flops, lower activation peak
// COST: full: more flops, lower activation peak

// With a strategy after it.
// RUN: dist-opt %examples/transformer_block.mlir --train-remat=policy=selective --dist-mirrored=replicas=2 -o %t/mirrored.mlir

// Refused: twice, an unknown policy, a step whose seed is ambiguous.
// RUN: not dist-opt %t/selective.mlir --train-remat=policy=full 2>&1 | FileCheck %s --check-prefix=TWICE
// TWICE: error: train-remat: 'train_step' already recomputes its activations ("selective")
// RUN: not dist-opt %examples/mlp.mlir --train-remat=policy=some 2>&1 | FileCheck %s --check-prefix=POLICY
// POLICY: error: train-remat: policy must be none, full or selective, got 'some'
