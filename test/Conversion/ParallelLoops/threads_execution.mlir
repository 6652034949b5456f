// Products in every form the BLAS kernel splits over the OpenMP team
// (batches, rows, columns; A or B transposed; B shared by the batches),
// with sizes that are no multiples of the split's 16 and batches that are
// no multiple of the threads, and large loops run in parallel (softmax,
// row sums, a transpose, gelu) or serial (column sums), run by dist-run on
// 1, 2 and 3 threads and checked against NumPy and against each other.
// RUN: rm -rf %t && mkdir -p %t
// RUN: dist-run %s --init-state=%t/state.npz --init-data=%t/data.npz --seed=7
// RUN: dist-run %s --state=%t/state.npz --data=%t/data.npz --num-threads=1 --out=%t/t1.npz
// RUN: dist-run %s --state=%t/state.npz --data=%t/data.npz --num-threads=2 --out=%t/t2.npz
// RUN: env OMP_NUM_THREADS=3 dist-run %s --state=%t/state.npz --data=%t/data.npz --out=%t/t3.npz
// RUN: %python %S/Inputs/threads_reference.py %t/state.npz %t/data.npz %t/t1.npz %t/t2.npz %t/t3.npz
// RUN: not dist-run %s --state=%t/state.npz --data=%t/data.npz --num-threads=0 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: --num-threads must be at least 1
// RUN: env OMP_NUM_THREADS=two not dist-run %s --state=%t/state.npz --data=%t/data.npz 2>&1 | FileCheck %s --check-prefix=ENV
// ENV: OMP_NUM_THREADS='two' is not a thread count (a positive integer)
// The large loops (softmax's three, the row sums, the transpose, gelu, the
// elementwise updates) fork the team; the small ones and the column sums
// do not.
// RUN: dist-opt %s --dist-lower-cpu | grep -c "omp.parallel" | FileCheck %s --check-prefix=FORKS
// FORKS: {{^[1-9][0-9]*$}}
func.func @train_step(
    %p_batched: tensor<3x67x53xf32> {train.role = #train.role<param>, train.name = "p_batched"},
    %p_shared: tensor<3x130x90xf32> {train.role = #train.role<param>, train.name = "p_shared"},
    %p_rows: tensor<130x90xf32> {train.role = #train.role<param>, train.name = "p_rows"},
    %p_cols: tensor<130x250xf32> {train.role = #train.role<param>, train.name = "p_cols"},
    %p_tlhs: tensor<40x250xf32> {train.role = #train.role<param>, train.name = "p_tlhs"},
    %p_trhs: tensor<40x250xf32> {train.role = #train.role<param>, train.name = "p_trhs"},
    %p_tbatched: tensor<5x67x53xf32> {train.role = #train.role<param>, train.name = "p_tbatched"},
    %p_softmax: tensor<140x250xf32> {train.role = #train.role<param>, train.name = "p_softmax"},
    %p_rowsum: tensor<140xf32> {train.role = #train.role<param>, train.name = "p_rowsum"},
    %p_colsum: tensor<250xf32> {train.role = #train.role<param>, train.name = "p_colsum"},
    %p_transpose: tensor<250x140xf32> {train.role = #train.role<param>, train.name = "p_transpose"},
    %p_gelu: tensor<140x250xf32> {train.role = #train.role<param>, train.name = "p_gelu"},
    %a: tensor<3x67x45xf32> {train.role = #train.role<input>, train.name = "a"},
    %b: tensor<3x45x53xf32> {train.role = #train.role<input>, train.name = "b"},
    %x3: tensor<3x130x70xf32> {train.role = #train.role<input>, train.name = "x3"},
    %x: tensor<130x70xf32> {train.role = #train.role<input>, train.name = "x"},
    %w: tensor<90x70xf32> {train.role = #train.role<input>, train.name = "w"},
    %w2: tensor<90x250xf32> {train.role = #train.role<input>, train.name = "w2"},
    %u: tensor<130x40xf32> {train.role = #train.role<input>, train.name = "u"},
    %v: tensor<40x70xf32> {train.role = #train.role<input>, train.name = "v"},
    %w3: tensor<250x70xf32> {train.role = #train.role<input>, train.name = "w3"},
    %at: tensor<5x45x67xf32> {train.role = #train.role<input>, train.name = "at"},
    %bt: tensor<5x53x45xf32> {train.role = #train.role<input>, train.name = "bt"},
    %s: tensor<140x250xf32> {train.role = #train.role<input>, train.name = "s"})
    -> (tensor<3x67x53xf32> {train.role = #train.role<param>, train.name = "p_batched"},
        tensor<3x130x90xf32> {train.role = #train.role<param>, train.name = "p_shared"},
        tensor<130x90xf32> {train.role = #train.role<param>, train.name = "p_rows"},
        tensor<130x250xf32> {train.role = #train.role<param>, train.name = "p_cols"},
        tensor<40x250xf32> {train.role = #train.role<param>, train.name = "p_tlhs"},
        tensor<40x250xf32> {train.role = #train.role<param>, train.name = "p_trhs"},
        tensor<5x67x53xf32> {train.role = #train.role<param>, train.name = "p_tbatched"},
        tensor<140x250xf32> {train.role = #train.role<param>, train.name = "p_softmax"},
        tensor<140xf32> {train.role = #train.role<param>, train.name = "p_rowsum"},
        tensor<250xf32> {train.role = #train.role<param>, train.name = "p_colsum"},
        tensor<250x140xf32> {train.role = #train.role<param>, train.name = "p_transpose"},
        tensor<140x250xf32> {train.role = #train.role<param>, train.name = "p_gelu"},
        tensor<f32> {train.role = #train.role<loss>, train.name = "loss"}) {
  // Batched A and B; batch 3 splits by rows on 2 threads, by batch on 3.
  %batched = train.matmul %a, %b : (tensor<3x67x45xf32>, tensor<3x45x53xf32>) -> tensor<3x67x53xf32>
  // One B for every batch, transposed.
  %shared = train.matmul %x3, %w {transpose_rhs} : (tensor<3x130x70xf32>, tensor<90x70xf32>) -> tensor<3x130x90xf32>
  // 2-D, taller than wide: rows.
  %rows = train.matmul %x, %w {transpose_rhs} : (tensor<130x70xf32>, tensor<90x70xf32>) -> tensor<130x90xf32>
  // Wider than tall: columns.
  %cols = train.matmul %rows, %w2 : (tensor<130x90xf32>, tensor<90x250xf32>) -> tensor<130x250xf32>
  // Columns with A transposed, and with B transposed.
  %tlhs = train.matmul %u, %cols {transpose_lhs} : (tensor<130x40xf32>, tensor<130x250xf32>) -> tensor<40x250xf32>
  %trhs = train.matmul %v, %w3 {transpose_rhs} : (tensor<40x70xf32>, tensor<250x70xf32>) -> tensor<40x250xf32>
  // Both transposed, 5 batches (by batch on 2 and 3 threads).
  %tbatched = train.matmul %at, %bt {transpose_lhs, transpose_rhs} : (tensor<5x45x67xf32>, tensor<5x53x45xf32>) -> tensor<5x67x53xf32>
  // Loops: 140 x 250 = 35000 iterations each.
  %softmax = train.softmax %s {dim = 1 : i64} : (tensor<140x250xf32>) -> tensor<140x250xf32>
  %rowsum = train.reduce %s {dims = array<i64: 1>, kind = #train.reduce_kind<sum>} : (tensor<140x250xf32>) -> tensor<140xf32>
  %colsum = train.reduce %s {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<140x250xf32>) -> tensor<250xf32>
  %transpose = train.transpose %s {permutation = array<i64: 1, 0>} : (tensor<140x250xf32>) -> tensor<250x140xf32>
  %gelu = train.gelu %s : (tensor<140x250xf32>) -> tensor<140x250xf32>
  %loss = train.reduce %rowsum {dims = array<i64: 0>, kind = #train.reduce_kind<sum>} : (tensor<140xf32>) -> tensor<f32>
  return %batched, %shared, %rows, %cols, %tlhs, %trhs, %tbatched, %softmax, %rowsum, %colsum, %transpose, %gelu, %loss
      : tensor<3x67x53xf32>, tensor<3x130x90xf32>, tensor<130x90xf32>, tensor<130x250xf32>, tensor<40x250xf32>, tensor<40x250xf32>, tensor<5x67x53xf32>, tensor<140x250xf32>, tensor<140xf32>, tensor<250xf32>, tensor<250x140xf32>, tensor<140x250xf32>, tensor<f32>
}
