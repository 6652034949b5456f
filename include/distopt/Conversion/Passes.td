//===- Passes.td - conversions out of the train and dist dialects -*- tablegen -*-===//

#ifndef DISTOPT_CONVERSION_PASSES
#define DISTOPT_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

def TrainToLinalgPass : Pass<"train-to-linalg", "ModuleOp"> {
  let summary = "Lower train ops to linalg, tensor, arith and math on tensors";
  let description = [{
    Rewrites train ops into `linalg.generic` ops on tensors (with `arith`,
    `math` and `tensor` in their bodies), ready for one-shot bufferization:

    - elementwise ops with NumPy broadcasting: one `linalg.generic` whose
      indexing maps read a size-1 (or missing) dim at index 0;
    - `matmul` (batch dims, transposes): a contraction `linalg.generic`
      over a zero-filled accumulator;
    - `reduce` (sum, mean, max, min; keepdims): a reduction `linalg.generic`
      from the combiner's identity, divided by the count for `mean`;
    - `cross_entropy` and its backward op: a numerically stable log-softmax
      (row max, sum of exponentials) and the label's logit read with
      `tensor.extract`;
    - `sgd`, `adam`, `adamw`: one elementwise `linalg.generic` per update,
      all results at once;
    - `constant`: `arith.constant`.

    Every other train op is not lowered yet: the pass fails with an error at
    the op naming it (nothing is left half converted silently).

    ```mlir
    // Before:
    %z = train.add %xw, %b : (tensor<64x128xf32>, tensor<128xf32>) -> tensor<64x128xf32>
    // After:
    %e = tensor.empty() : tensor<64x128xf32>
    %z = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                          affine_map<(d0, d1) -> (d1)>,
                                          affine_map<(d0, d1) -> (d0, d1)>],
                         iterator_types = ["parallel", "parallel"]}
        ins(%xw, %b : tensor<64x128xf32>, tensor<128xf32>) outs(%e : tensor<64x128xf32>) {
    ^bb0(%a: f32, %c: f32, %out: f32):
      %s = arith.addf %a, %c : f32
      linalg.yield %s : f32
    } -> tensor<64x128xf32>
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

#endif // DISTOPT_CONVERSION_PASSES
