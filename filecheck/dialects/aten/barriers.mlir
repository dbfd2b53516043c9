// RUN: fusec-opt %s --split-input-file | filecheck %s
// RUN: fusec-opt %s --split-input-file --print-op-generic | fusec-opt --split-input-file | filecheck %s

// Ops that are neither Pointwise nor ShapeOp: matrix products and reductions.

// Batch broadcasting and 1-d operands.
// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[A:.*]]: tensor<2x3x4xf32>, %[[B:.*]]: tensor<4x5xf32>, %[[V:.*]]: tensor<4xf32>)
// CHECK: %[[X:.*]] = aten.matmul %[[A]], %[[B]] : tensor<2x3x4xf32>, tensor<4x5xf32> -> tensor<2x3x5xf32>
// CHECK-NEXT: %[[Y:.*]] = aten.matmul %[[A]], %[[V]] : tensor<2x3x4xf32>, tensor<4xf32> -> tensor<2x3xf32>
// CHECK-NEXT: %[[Z:.*]] = aten.matmul %[[V]], %[[V]] : tensor<4xf32>, tensor<4xf32> -> tensor<f32>
// CHECK-NEXT: func.return %[[X]], %[[Y]], %[[Z]] : tensor<2x3x5xf32>, tensor<2x3xf32>, tensor<f32>
func.func @matmul(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>, %v: tensor<4xf32>) -> (tensor<2x3x5xf32>, tensor<2x3xf32>, tensor<f32>) {
  %x = aten.matmul %a, %b : tensor<2x3x4xf32>, tensor<4x5xf32> -> tensor<2x3x5xf32>
  %y = aten.matmul %a, %v : tensor<2x3x4xf32>, tensor<4xf32> -> tensor<2x3xf32>
  %z = aten.matmul %v, %v : tensor<4xf32>, tensor<4xf32> -> tensor<f32>
  func.return %x, %y, %z : tensor<2x3x5xf32>, tensor<2x3xf32>, tensor<f32>
}

// -----

// CHECK-LABEL: func.func @mm
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xi64>, %[[B:.*]]: tensor<3x4xi64>)
// CHECK: %[[R:.*]] = aten.mm %[[A]], %[[B]] : tensor<2x3xi64>, tensor<3x4xi64> -> tensor<2x4xi64>
// CHECK-NEXT: func.return %[[R]] : tensor<2x4xi64>
func.func @mm(%a: tensor<2x3xi64>, %b: tensor<3x4xi64>) -> tensor<2x4xi64> {
  %r = aten.mm %a, %b : tensor<2x3xi64>, tensor<3x4xi64> -> tensor<2x4xi64>
  func.return %r : tensor<2x4xi64>
}

// -----

// beta and alpha are optional.
// CHECK-LABEL: func.func @addmm
// CHECK-SAME: (%[[C:.*]]: tensor<4xf32>, %[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3x4xf32>)
// CHECK: %[[X:.*]] = aten.addmm %[[C]], %[[A]], %[[B]] : tensor<4xf32>, tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT: %[[Y:.*]] = aten.addmm %[[C]], %[[A]], %[[B]] beta = 5.000000e-01 : f64 alpha = 2 : i64 : tensor<4xf32>, tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT: func.return %[[X]], %[[Y]] : tensor<2x4xf32>, tensor<2x4xf32>
func.func @addmm(%c: tensor<4xf32>, %a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %x = aten.addmm %c, %a, %b : tensor<4xf32>, tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %y = aten.addmm %c, %a, %b beta = 5.000000e-01 : f64 alpha = 2 : i64 : tensor<4xf32>, tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  func.return %x, %y : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// With and without bias.
// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:.*]]: tensor<5x2x3xf32>, %[[W:.*]]: tensor<4x3xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK: %[[Y:.*]] = aten.linear %[[X]], %[[W]], %[[B]] : tensor<5x2x3xf32>, tensor<4x3xf32>, tensor<4xf32> -> tensor<5x2x4xf32>
// CHECK-NEXT: %[[Z:.*]] = aten.linear %[[X]], %[[W]] : tensor<5x2x3xf32>, tensor<4x3xf32> -> tensor<5x2x4xf32>
// CHECK-NEXT: func.return %[[Y]], %[[Z]] : tensor<5x2x4xf32>, tensor<5x2x4xf32>
func.func @linear(%x: tensor<5x2x3xf32>, %w: tensor<4x3xf32>, %b: tensor<4xf32>) -> (tensor<5x2x4xf32>, tensor<5x2x4xf32>) {
  %y = aten.linear %x, %w, %b : tensor<5x2x3xf32>, tensor<4x3xf32>, tensor<4xf32> -> tensor<5x2x4xf32>
  %z = aten.linear %x, %w : tensor<5x2x3xf32>, tensor<4x3xf32> -> tensor<5x2x4xf32>
  func.return %y, %z : tensor<5x2x4xf32>, tensor<5x2x4xf32>
}

// -----

// Attention with and without a mask; the batch dims broadcast as in matmul.
// CHECK-LABEL: func.func @scaled_dot_product_attention
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x8x16xf32>, %[[K:.*]]: tensor<1x4x6x16xf32>, %[[V:.*]]: tensor<2x4x6x32xf32>, %[[M:.*]]: tensor<8x6xf32>)
// CHECK: %[[A:.*]] = aten.scaled_dot_product_attention %[[Q]], %[[K]], %[[V]] scale = 2.500000e-01 : f64 : tensor<2x4x8x16xf32>, tensor<1x4x6x16xf32>, tensor<2x4x6x32xf32> -> tensor<2x4x8x32xf32>
// CHECK-NEXT: %[[B:.*]] = aten.scaled_dot_product_attention %[[Q]], %[[K]], %[[V]], %[[M]] scale = 1.000000e+00 : f64 : tensor<2x4x8x16xf32>, tensor<1x4x6x16xf32>, tensor<2x4x6x32xf32>, tensor<8x6xf32> -> tensor<2x4x8x32xf32>
// CHECK-NEXT: func.return %[[A]], %[[B]]
func.func @scaled_dot_product_attention(%q: tensor<2x4x8x16xf32>, %k: tensor<1x4x6x16xf32>, %v: tensor<2x4x6x32xf32>, %m: tensor<8x6xf32>) -> (tensor<2x4x8x32xf32>, tensor<2x4x8x32xf32>) {
  %a = aten.scaled_dot_product_attention %q, %k, %v scale = 2.500000e-01 : f64 : tensor<2x4x8x16xf32>, tensor<1x4x6x16xf32>, tensor<2x4x6x32xf32> -> tensor<2x4x8x32xf32>
  %b = aten.scaled_dot_product_attention %q, %k, %v, %m scale = 1.000000e+00 : f64 : tensor<2x4x8x16xf32>, tensor<1x4x6x16xf32>, tensor<2x4x6x32xf32>, tensor<8x6xf32> -> tensor<2x4x8x32xf32>
  func.return %a, %b : tensor<2x4x8x32xf32>, tensor<2x4x8x32xf32>
}

// -----

// dims and keepdim are optional; integers sum to i64; the result type may name a dtype.
// CHECK-LABEL: func.func @sum
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[I:.*]]: tensor<2x3xi1>)
// CHECK: %[[A:.*]] = aten.sum %[[X]] : tensor<2x3xf32> -> tensor<f32>
// CHECK-NEXT: %[[B:.*]] = aten.sum %[[X]] dims = [1] keepdim = true : tensor<2x3xf32> -> tensor<2x1xf32>
// CHECK-NEXT: %[[C:.*]] = aten.sum %[[X]] dims = [0, -1] : tensor<2x3xf32> -> tensor<f32>
// CHECK-NEXT: %[[D:.*]] = aten.sum %[[I]] dims = [0] : tensor<2x3xi1> -> tensor<3xi64>
// CHECK-NEXT: %[[E:.*]] = aten.sum %[[X]] dims = [0] keepdim = false : tensor<2x3xf32> -> tensor<3xf64>
// CHECK-NEXT: func.return %[[A]], %[[B]], %[[C]], %[[D]], %[[E]] : tensor<f32>, tensor<2x1xf32>, tensor<f32>, tensor<3xi64>, tensor<3xf64>
func.func @sum(%x: tensor<2x3xf32>, %i: tensor<2x3xi1>) -> (tensor<f32>, tensor<2x1xf32>, tensor<f32>, tensor<3xi64>, tensor<3xf64>) {
  %a = aten.sum %x : tensor<2x3xf32> -> tensor<f32>
  %b = aten.sum %x dims = [1] keepdim = true : tensor<2x3xf32> -> tensor<2x1xf32>
  %c = aten.sum %x dims = [0, -1] : tensor<2x3xf32> -> tensor<f32>
  %d = aten.sum %i dims = [0] : tensor<2x3xi1> -> tensor<3xi64>
  %e = aten.sum %x dims = [0] keepdim = false : tensor<2x3xf32> -> tensor<3xf64>
  func.return %a, %b, %c, %d, %e : tensor<f32>, tensor<2x1xf32>, tensor<f32>, tensor<3xi64>, tensor<3xf64>
}

// -----

// CHECK-LABEL: func.func @mean
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf16>)
// CHECK: %[[A:.*]] = aten.mean %[[X]] : tensor<2x3xf16> -> tensor<f16>
// CHECK-NEXT: %[[B:.*]] = aten.mean %[[X]] dims = [0] : tensor<2x3xf16> -> tensor<3xf16>
// CHECK-NEXT: %[[C:.*]] = aten.mean %[[X]] dims = [-1] keepdim = true : tensor<2x3xf16> -> tensor<2x1xf32>
// CHECK-NEXT: func.return %[[A]], %[[B]], %[[C]] : tensor<f16>, tensor<3xf16>, tensor<2x1xf32>
func.func @mean(%x: tensor<2x3xf16>) -> (tensor<f16>, tensor<3xf16>, tensor<2x1xf32>) {
  %a = aten.mean %x : tensor<2x3xf16> -> tensor<f16>
  %b = aten.mean %x dims = [0] : tensor<2x3xf16> -> tensor<3xf16>
  %c = aten.mean %x dims = [-1] keepdim = true : tensor<2x3xf16> -> tensor<2x1xf32>
  func.return %a, %b, %c : tensor<f16>, tensor<3xf16>, tensor<2x1xf32>
}
