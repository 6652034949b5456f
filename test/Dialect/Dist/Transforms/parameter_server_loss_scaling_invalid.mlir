// What dist-parameter-server refuses in a dynamically loss-scaled step
// (train-mixed-precision loss-scale=dynamic, edited): each server adds its
// own gradients' parts of the finiteness and server 0 the servers' parts,
// so the finiteness must be a sum of one part per gradient, each added
// once, and every variable kept on that one flag.
// (The step's finiteness: %43 = %38 + %42, %44 = %43 + %25, %45 = %44 + %29,
// the flag %46 = %45 == %45; %49 keeps fc1.bias.)

// A product of the parts is no sum.
// RUN: dist-opt %examples/mlp.mlir --train-mixed-precision="compute=f16 loss-scale=dynamic" | sed 's/%45 = train.add %44, %29/%45 = train.mul %44, %29/' | not dist-opt --dist-parameter-server="ps=2 workers=2" 2>&1 | FileCheck %s --check-prefix=PRODUCT
// PRODUCT: error: dist-parameter-server: the finiteness of the gradients (dynamic loss scaling) must be a sum of one part per variable's gradient, each server adding its own; this op is neither on one variable's gradient alone nor an add of such parts
// PRODUCT-NEXT: %45 = train.mul %44, %29

// fc2.bias's part added twice.
// RUN: dist-opt %examples/mlp.mlir --train-mixed-precision="compute=f16 loss-scale=dynamic" | sed 's/%45 = train.add %44, %29 : (tensor<f32>, tensor<f32>) -> tensor<f32>/%again = train.add %44, %29 : (tensor<f32>, tensor<f32>) -> tensor<f32>\n    %45 = train.add %again, %29 : (tensor<f32>, tensor<f32>) -> tensor<f32>/' | not dist-opt --dist-parameter-server="ps=2 workers=2" 2>&1 | FileCheck %s --check-prefix=TWICE
// TWICE: error: dist-parameter-server: this part of the gradients' finiteness is added 2 times; each server adds its own once
// TWICE-NEXT: %29 = train.reduce %28

// A flag that reads something besides the sum of the parts.
// RUN: dist-opt %examples/mlp.mlir --train-mixed-precision="compute=f16 loss-scale=dynamic" | sed 's/%46 = train.compare %45, %45/%46 = train.compare %45, %44/' | not dist-opt --dist-parameter-server="ps=2 workers=2" 2>&1 | FileCheck %s --check-prefix=FLAG
// FLAG: error: dist-parameter-server: the flag the variables are kept on (dynamic loss scaling) must read the sum of the gradients' parts alone
// FLAG-NEXT: %46 = train.compare %45, %44

// fc1.bias kept on a flag of its own.
// RUN: dist-opt %examples/mlp.mlir --train-mixed-precision="compute=f16 loss-scale=dynamic" | sed 's/%49 = train.select %46, %new_param_0, %arg1/%other = train.compare %45, %44 {direction = #train.compare_direction<eq>} : (tensor<f32>, tensor<f32>) -> tensor<i1>\n    %49 = train.select %other, %new_param_0, %arg1/' | not dist-opt --dist-parameter-server="ps=2 workers=2" 2>&1 | FileCheck %s --check-prefix=OTHER
// OTHER: error: dist-parameter-server: this select keeps a variable on another condition than the others; a parameter-server step keeps every variable on one flag
// OTHER-NEXT: %49 = train.select %other, %new_param_0, %arg1
