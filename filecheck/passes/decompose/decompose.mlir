// RUN: fusec-opt %s --split-input-file -p decompose | filecheck %s
// RUN: fusec-opt %s --split-input-file -p decompose,fuse | filecheck %s --check-prefix=FUSE

// CHECK-LABEL: func.func @linear_bias
// CHECK-SAME: (%[[X:.*]]: tensor<8x32xf32>, %[[W:.*]]: tensor<64x32xf32>, %[[B:.*]]: tensor<64xf32>)
// CHECK-NEXT: %[[M:.*]] = aten.linear %[[X]], %[[W]] : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
// CHECK-NEXT: %[[R:.*]] = aten.add %[[M]], %[[B]] : tensor<8x64xf32>, tensor<64xf32> -> tensor<8x64xf32>
// CHECK-NEXT: func.return %[[R]]
func.func @linear_bias(%x: tensor<8x32xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>) -> tensor<8x64xf32> {
  %r = aten.linear %x, %w, %b : tensor<8x32xf32>, tensor<64x32xf32>, tensor<64xf32> -> tensor<8x64xf32>
  func.return %r : tensor<8x64xf32>
}

// -----

// Without bias there is nothing to split.
// CHECK-LABEL: func.func @linear_no_bias
// CHECK-NEXT: %[[R:.*]] = aten.linear %{{.*}}, %{{.*}} : tensor<2x3x4xf32>, tensor<5x4xf32> -> tensor<2x3x5xf32>
// CHECK-NEXT: func.return %[[R]]
func.func @linear_no_bias(%x: tensor<2x3x4xf32>, %w: tensor<5x4xf32>) -> tensor<2x3x5xf32> {
  %r = aten.linear %x, %w : tensor<2x3x4xf32>, tensor<5x4xf32> -> tensor<2x3x5xf32>
  func.return %r : tensor<2x3x5xf32>
}

// -----

// CHECK-LABEL: func.func @addmm_plain
// CHECK-SAME: (%[[C:.*]]: tensor<4xf32>, %[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3x4xf32>)
// CHECK-NEXT: %[[M:.*]] = aten.mm %[[A]], %[[B]] : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT: %[[R:.*]] = aten.add %[[C]], %[[M]] : tensor<4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT: func.return %[[R]]
func.func @addmm_plain(%c: tensor<4xf32>, %a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %r = aten.addmm %c, %a, %b : tensor<4xf32>, tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}

// -----

// beta scales the bias with a Python-scalar mul; alpha rides on the add.
// CHECK-LABEL: func.func @addmm_scaled
// CHECK-SAME: (%[[C:.*]]: tensor<2x4xf64>, %[[A:.*]]: tensor<2x3xf64>, %[[B:.*]]: tensor<3x4xf64>)
// CHECK-NEXT: %[[M:.*]] = aten.mm %[[A]], %[[B]]
// CHECK-NEXT: %[[BETA:.*]] = arith.constant 5.000000e-01 : f64
// CHECK-NEXT: %[[S:.*]] = aten.mul %[[C]], %[[BETA]] : tensor<2x4xf64>, f64 -> tensor<2x4xf64>
// CHECK-NEXT: %[[R:.*]] = aten.add %[[S]], %[[M]] alpha = 3.000000e+00 : f64 : tensor<2x4xf64>, tensor<2x4xf64> -> tensor<2x4xf64>
// CHECK-NEXT: func.return %[[R]]
func.func @addmm_scaled(%c: tensor<2x4xf64>, %a: tensor<2x3xf64>, %b: tensor<3x4xf64>) -> tensor<2x4xf64> {
  %r = aten.addmm %c, %a, %b beta = 0.5 : f64 alpha = 3.0 : f64 : tensor<2x4xf64>, tensor<2x3xf64>, tensor<3x4xf64> -> tensor<2x4xf64>
  func.return %r : tensor<2x4xf64>
}

// -----

// beta = 0 drops the bias (PyTorch ignores it, NaNs included); alpha scales the product.
// CHECK-LABEL: func.func @addmm_beta_zero
// CHECK-SAME: (%[[C:.*]]: tensor<4xf32>, %[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3x4xf32>)
// CHECK-NEXT: %[[M:.*]] = aten.mm %[[A]], %[[B]]
// CHECK-NEXT: %[[ALPHA:.*]] = arith.constant 2 : i64
// CHECK-NEXT: %[[R:.*]] = aten.mul %[[M]], %[[ALPHA]] : tensor<2x4xf32>, i64 -> tensor<2x4xf32>
// CHECK-NEXT: func.return %[[R]]
func.func @addmm_beta_zero(%c: tensor<4xf32>, %a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %r = aten.addmm %c, %a, %b beta = 0 : i64 alpha = 2 : i64 : tensor<4xf32>, tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}

// -----

// The split-out bias add fuses with the pointwise op after it.
// FUSE-LABEL: func.func @bias_fuses
// FUSE: %[[M:.*]] = aten.linear
// FUSE-NEXT: fusion.group
// FUSE-SAME: = %[[M]]
// FUSE-NEXT: aten.add
// FUSE-NEXT: aten.relu
// FUSE-NEXT: fusion.yield
func.func @bias_fuses(%x: tensor<8x32xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>) -> tensor<8x64xf32> {
  %l = aten.linear %x, %w, %b : tensor<8x32xf32>, tensor<64x32xf32>, tensor<64xf32> -> tensor<8x64xf32>
  %r = aten.relu %l : tensor<8x64xf32> -> tensor<8x64xf32>
  func.return %r : tensor<8x64xf32>
}
