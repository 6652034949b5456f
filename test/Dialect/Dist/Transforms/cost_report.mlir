// Mirrored, 4 replicas, examples/mlp.mlir: one bucket holds the loss (4 bytes)
// and every gradient (4 * 101770 params = 407080 bytes); its ring bus bytes
// are 2(n-1)/n * S = 2 * 3/4 * 407084 = 610626.
// RUN: dist-opt %examples/mlp.mlir --dist-mirrored=replicas=4 --dist-cost-report=format=json -o %t.out | FileCheck %s --check-prefix=DP
// DP:      "collective_count": 1,
// DP:      "bus_bytes": 610626,
// DP-NEXT: "group_size": 4,
// DP-NEXT: "kind": "all_reduce",
// DP-NEXT: "loc": "{{.*}}mlp.mlir:{{[0-9]+}}:{{[0-9]+}}",
// DP-NEXT: "payload_bytes": 407084,
// DP-NEXT: "tensors": 5
// DP:      "comm_bytes_per_rank": 610626,
// DP:      "gradient_bytes": 407080,
// DP:      "param_bytes": 407080

// Before bucketing: one all-reduce per gradient plus the loss's.
// RUN: dist-opt %examples/mlp.mlir --dist-annotate-mirrored=replicas=2 --dist-propagate-sharding --dist-partition --dist-cost-report=format=json -o %t.out | FileCheck %s --check-prefix=UNBUCKETED
// UNBUCKETED: "collective_count": 5,
// UNBUCKETED: "comm_bytes_per_rank": 407084,

// ZeRO memory per rank with AdamW in fp32 (examples/mlp_adam.mlir, Psi =
// 101770 params, N = 2): model states 16 Psi -> 4 Psi + 12 Psi/N (stages 1
// and 2: the gradient is reduce-scattered, and a step holds none across
// steps, so only its shard is kept at either stage) -> 16 Psi/N bytes, plus
// 4 bytes for each of the 4 replicated step counters (16 bytes).
//   data parallel: 16 * 101770 + 16           = 1628336
//   stages 1, 2:   4 * 101770 + 6 * 101770 + 16 = 1017716
//   stage 3:       8 * 101770 + 16             = 814176
// RUN: dist-opt %examples/mlp_adam.mlir --dist-mirrored=replicas=2 --dist-cost-report=format=json -o %t.out | FileCheck %s --check-prefix=Z0
// RUN: dist-opt %examples/mlp_adam.mlir --dist-zero="stage=1 replicas=2" --dist-cost-report=format=json -o %t.out | FileCheck %s --check-prefix=Z1
// RUN: dist-opt %examples/mlp_adam.mlir --dist-zero="stage=2 replicas=2" --dist-cost-report=format=json -o %t.out | FileCheck %s --check-prefix=Z2
// RUN: dist-opt %examples/mlp_adam.mlir --dist-zero="stage=3 replicas=2" --dist-cost-report=format=json -o %t.out | FileCheck %s --check-prefix=Z3
// Communication: ZeRO-1 and -2 move what data parallelism moves (a
// reduce-scatter of the gradients and an all-gather of the updated shards
// are one all-reduce's ring bytes, 2 (N-1)/N * 4 Psi + the loss's 4 bytes =
// 407084 for N = 2), not 1.5x as an all-reduce then a slice did; ZeRO-3
// adds only the all-gather of fc2.weight for the backward pass ((N-1)/N *
// 5120 = 2560 bytes: fc1.weight is not needed there, the input needs no
// gradient).
// Z0: "comm_bytes_per_rank": 407084,
// Z1: "comm_bytes_per_rank": 407084,
// Z2: "comm_bytes_per_rank": 407084,
// Z3: "comm_bytes_per_rank": 409644,
// Z0: "gradient_bytes": 407080,
// Z0: "model_state_bytes_per_rank": 1628336,
// Z0: "opt_state_bytes": 814176,
// Z0: "param_bytes": 407080
// Z1: "gradient_bytes": 203540,
// Z1: "model_state_bytes_per_rank": 1017716,
// Z1: "opt_state_bytes": 407096,
// Z1: "param_bytes": 407080
// Z2: "gradient_bytes": 203540,
// Z2: "model_state_bytes_per_rank": 1017716,
// Z2: "opt_state_bytes": 407096,
// Z2: "param_bytes": 407080
// Z3: "gradient_bytes": 203540,
// Z3: "model_state_bytes_per_rank": 814176,
// Z3: "opt_state_bytes": 407096,
// Z3: "param_bytes": 203540

// The text form is a table with the totals and one row per collective.
// RUN: dist-opt %examples/mlp.mlir --dist-mirrored=replicas=4 --dist-cost-report -o %t.out | FileCheck %s --check-prefix=TEXT
// TEXT:      cost of @train_step per rank
// TEXT:      comm bytes (ring bus) 610626 (610.63 K)
// TEXT:      collectives 1
// TEXT-NEXT: collective axes group tensors payload bytes bus bytes time us location
// TEXT-NEXT: all_reduce [data] 4 5 407084 610626.0 - {{.*}}mlp.mlir

// The report can go to a file; the IR is unchanged.
// RUN: dist-opt %examples/mlp.mlir --dist-mirrored=replicas=2 --dist-cost-report="format=json output=%t.json" | FileCheck %s --check-prefix=IR
// RUN: FileCheck %s --check-prefix=FILE < %t.json
// IR:   func.func @train_step
// FILE: "functions": [

// Bad options are errors.
// RUN: not dist-opt %examples/mlp.mlir --dist-cost-report=format=xml -o %t.out 2>&1 | FileCheck %s --check-prefix=BADFORMAT
// BADFORMAT: error: dist-cost-report: unknown format 'xml' (expected 'text' or 'json')
// RUN: not dist-opt %examples/mlp.mlir --dist-cost-report="output=%t.missing/dir/report.json" -o %t.out 2>&1 | FileCheck %s --check-prefix=BADFILE
// BADFILE: error: dist-cost-report: cannot write '{{.*}}report.json':
