// RUN: fusec-opt %s --split-input-file -p fold-matmul-bias | filecheck %s
// RUN: fusec-opt %s --split-input-file -p decompose,fuse,fold-matmul-bias | filecheck %s --check-prefix=PIPE

// A bias add after a linear folds back into it.
// CHECK-LABEL: func.func @linear_bias
// CHECK-SAME: (%[[X:.*]]: tensor<8x32xf32>, %[[W:.*]]: tensor<64x32xf32>, %[[B:.*]]: tensor<64xf32>)
// CHECK-NEXT: %[[R:.*]] = aten.linear %[[X]], %[[W]], %[[B]] : tensor<8x32xf32>, tensor<64x32xf32>, tensor<64xf32> -> tensor<8x64xf32>
// CHECK-NEXT: func.return %[[R]]
func.func @linear_bias(%x: tensor<8x32xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>) -> tensor<8x64xf32> {
  %m = aten.linear %x, %w : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
  %r = aten.add %m, %b : tensor<8x64xf32>, tensor<64xf32> -> tensor<8x64xf32>
  func.return %r : tensor<8x64xf32>
}

// -----

// `bias + mm` (what `decompose` makes of an addmm) folds to addmm, alpha included.
// CHECK-LABEL: func.func @addmm_alpha
// CHECK-SAME: (%[[C:.*]]: tensor<4xf32>, %[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3x4xf32>)
// CHECK-NEXT: %[[R:.*]] = aten.addmm %[[C]], %[[A]], %[[B]] alpha = 2.000000e+00 : f64 : tensor<4xf32>, tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT: func.return %[[R]]
func.func @addmm_alpha(%c: tensor<4xf32>, %a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %m = aten.mm %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %r = aten.add %c, %m alpha = 2.0 : f64 : tensor<4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}

// -----

// `mm + bias` folds too; alpha scales the right operand, so `mm + 2 * bias` does not.
// CHECK-LABEL: func.func @mm_left
// CHECK-NEXT: %[[R:.*]] = aten.addmm %{{.*}}, %{{.*}}, %{{.*}} : tensor<4xf32>, tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT: func.return %[[R]]
// CHECK-LABEL: func.func @mm_left_alpha
// CHECK-NEXT: aten.mm
// CHECK-NEXT: aten.add
func.func @mm_left(%c: tensor<4xf32>, %a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %m = aten.mm %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %r = aten.add %m, %c : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}
func.func @mm_left_alpha(%c: tensor<4xf32>, %a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %m = aten.mm %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  %r = aten.add %m, %c alpha = 2.0 : f64 : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}

// -----

// A product with another use stays (it would be computed twice); so does an add
// that promotes (addmm does not), and a full-size addend (a residual: folding it
// would round differently from eager's separate add).
// CHECK-LABEL: func.func @kept
// CHECK-NEXT: aten.linear %{{.*}}, %{{.*}} :
// CHECK-NEXT: aten.add
// CHECK-NEXT: aten.mm
// CHECK-NEXT: aten.add
// CHECK-NEXT: aten.mm
// CHECK-NEXT: aten.add
func.func @kept(%x: tensor<8x32xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>, %d: tensor<64xf64>, %e: tensor<8x64xf32>, %v: tensor<32x64xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>, tensor<8x64xf64>, tensor<8x64xf32>) {
  %m = aten.linear %x, %w : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
  %r = aten.add %m, %b : tensor<8x64xf32>, tensor<64xf32> -> tensor<8x64xf32>
  %n = aten.mm %x, %v : tensor<8x32xf32>, tensor<32x64xf32> -> tensor<8x64xf32>
  %s = aten.add %n, %d : tensor<8x64xf32>, tensor<64xf64> -> tensor<8x64xf64>
  %o = aten.mm %x, %v : tensor<8x32xf32>, tensor<32x64xf32> -> tensor<8x64xf32>
  %t = aten.add %o, %e : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  func.return %m, %r, %s, %t : tensor<8x64xf32>, tensor<8x64xf32>, tensor<8x64xf64>, tensor<8x64xf32>
}

// -----

// After fusion: the bias add that fused with the relu stays in its group; the
// last layer's, which nothing fused with, folds back into its product.
// PIPE-LABEL: func.func @two_layers
// PIPE:         aten.linear %{{.*}}, %{{.*}} : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
// PIPE-NEXT:    fusion.group
// PIPE:           aten.add
// PIPE-NEXT:      aten.relu
// PIPE:         %[[R:.*]] = aten.linear %{{.*}}, %{{.*}}, %{{.*}} : tensor<8x64xf32>, tensor<10x64xf32>, tensor<10xf32> -> tensor<8x10xf32>
// PIPE-NEXT:    func.return %[[R]]
func.func @two_layers(%x: tensor<8x32xf32>, %w1: tensor<64x32xf32>, %b1: tensor<64xf32>, %w2: tensor<10x64xf32>, %b2: tensor<10xf32>) -> tensor<8x10xf32> {
  %h = aten.linear %x, %w1, %b1 : tensor<8x32xf32>, tensor<64x32xf32>, tensor<64xf32> -> tensor<8x64xf32>
  %a = aten.relu %h : tensor<8x64xf32> -> tensor<8x64xf32>
  %y = aten.linear %a, %w2, %b2 : tensor<8x64xf32>, tensor<10x64xf32>, tensor<10xf32> -> tensor<8x10xf32>
  func.return %y : tensor<8x10xf32>
}
