// RUN: dist-opt %examples/mlp.mlir --train-test-sharding-rule | FileCheck %s --check-prefix=RULE
// RUN: dist-opt %examples/mlp.mlir --train-test-sharding-rule | FileCheck %s --check-prefix=ALLRULES
// RUN: dist-opt %examples/mlp.mlir --train-test-cost | FileCheck %s --check-prefix=COST
// RUN: dist-opt %examples/mlp.mlir --train-test-cost | FileCheck %s --check-prefix=ALLCOSTS

// The test passes succeed on the shipped MLP step and annotate all of its 20
// ops. Spot check: the first matmul, x[64x784] times fc1.weight[128x784]
// with transpose_rhs, contracts k = 784 and costs 2*64*128*784 FLOPs; it
// reads (64 + 128) * 784 f32 and writes 64 * 128 f32.

// RULE-LABEL: func.func @train_step
// RULE:       train.matmul {{.*}}train.sharding_rule = "([i, k], [j, k])->([i, j]) {i=64, j=128, k=784} reduction={k}"{{.*}} : (tensor<64x784xf32>, tensor<128x784xf32>) -> tensor<64x128xf32>

// ALLRULES-COUNT-20: train.sharding_rule = "
// ALLRULES-NOT:      train.sharding_rule

// COST-LABEL: func.func @train_step
// COST:       train.matmul {{.*}}train.cost = {flops = 12845056 : i64, read = 602112 : i64, written = 32768 : i64}{{.*}} : (tensor<64x784xf32>, tensor<128x784xf32>) -> tensor<64x128xf32>

// ALLCOSTS-COUNT-20: train.cost = {flops =
// ALLCOSTS-NOT:      train.cost
