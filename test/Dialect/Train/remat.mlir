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
// POLICY: error: train-remat: needs policy=none|full|selective, checkpoints=sqrt|layer, layers >= 0 (or -1: all) or budget > 0 bytes (not both); got policy='some' checkpoints='sqrt' layers=-1 budget=0
// RUN: not dist-opt %examples/mlp.mlir --train-remat="policy=full checkpoints=module" 2>&1 | FileCheck %s --check-prefix=CHECKPOINTS
// CHECKPOINTS: error: train-remat: needs {{.*}}got policy='full' checkpoints='module' layers=-1 budget=0
// RUN: not dist-opt %examples/mlp.mlir --train-remat="policy=full layers=1 budget=100" 2>&1 | FileCheck %s --check-prefix=BOTH
// BOTH: error: train-remat: needs {{.*}} (not both); got policy='full' checkpoints='sqrt' layers=1 budget=100
// RUN: not dist-opt %examples/mlp.mlir --train-remat="policy=selective checkpoints=layer" 2>&1 | FileCheck %s --check-prefix=SELLAYER
// SELLAYER: error: train-remat: checkpoints=layer is policy=full's, got policy='selective'
// RUN: not dist-opt %examples/mlp.mlir --train-remat="policy=none layers=2" 2>&1 | FileCheck %s --check-prefix=NONELAYER
// NONELAYER: error: train-remat: layers and budget need policy=full or selective, got policy='none'

// Per layer. The stack's layers are its numbered modules (blocks.0 ...
// blocks.3): checkpoints=layer keeps each module's input and recomputes
// the layers (the embedding and the head keep theirs); layers=N recomputes
// in the first N layers only; budget=BYTES picks the fewest first layers
// that bring the activation peak within it.
// RUN: dist-opt %examples/transformer_stack.mlir --dist-cost-report="format=json output=%t/stack_none.json" -o %t/stack_none.mlir
// RUN: dist-opt %examples/transformer_stack.mlir --train-remat="policy=full checkpoints=layer" --dist-cost-report="format=json output=%t/stack_layer.json" -o %t/stack_layer.mlir
// RUN: dist-opt %examples/transformer_stack.mlir --train-remat="policy=full checkpoints=layer layers=2" --dist-cost-report="format=json output=%t/stack_layer2.json" -o %t/stack_layer2.mlir
// RUN: dist-opt %examples/transformer_stack.mlir --train-remat="policy=selective layers=1" --dist-cost-report="format=json output=%t/stack_selective1.json" -o %t/stack_selective1.mlir
// RUN: %python %S/Inputs/compare_remat_cost.py %t/stack_none.json %t/stack_layer.json %t/stack_layer2.json %t/stack_selective1.json | FileCheck %s --check-prefix=LAYERCOST
// LAYERCOST: stack_layer: more flops, lower activation peak
// LAYERCOST: stack_layer2: more flops, lower activation peak
// LAYERCOST: stack_selective1: more flops, lower activation peak
// More layers recompute more and keep less.
// RUN: %python %S/Inputs/compare_remat_cost.py %t/stack_layer2.json %t/stack_layer.json | FileCheck %s --check-prefix=MORELAYERS
// MORELAYERS: stack_layer: more flops, lower activation peak
// RUN: FileCheck %s --check-prefix=LAYERATTR --input-file=%t/stack_layer2.mlir
// LAYERATTR: train.remat = "full checkpoints=layer layers=2"
// RUN: dist-opt %examples/transformer_stack.mlir --train-remat="policy=full checkpoints=layer budget=1000000" -o %t/stack_budget.mlir 2>&1 | FileCheck %s --check-prefix=BUDGET
// BUDGET: remark: train-remat: recomputing the first {{[1-4]}} of 4 layers of 'train_step': activation peak {{[0-9]+}} bytes (budget 1000000, {{[0-9]+}} without recomputation)
// RUN: not dist-opt %examples/transformer_stack.mlir --train-remat="policy=full checkpoints=layer budget=1000" 2>&1 | FileCheck %s --check-prefix=OVERBUDGET
// OVERBUDGET: error: train-remat: recomputing all 4 layers of 'train_step' (policy=full) leaves an activation peak of {{[0-9]+}} bytes, over the budget of 1000 bytes
// A step without numbered modules has no layers.
// RUN: not dist-opt %examples/mlp.mlir --train-remat="policy=full checkpoints=layer" 2>&1 | FileCheck %s --check-prefix=NOLAYERS
// NOLAYERS: error: train-remat: 'train_step' has no layers to recompute by: no parameter's train.name has a numbered module (as 'blocks.3.weight'); use checkpoints=sqrt without layers or budget
