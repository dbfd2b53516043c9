// RUN: fusec-opt %s --split-input-file -p fuse | filecheck %s --check-prefix=DEFAULT
// RUN: fusec-opt %s --split-input-file -p 'fuse{lone-copies=true}' | filecheck %s --check-prefix=COPIES

// AOTAutograd's contiguous copy of a transposed attention gradient, read by a
// product: with lone-copies it is a kernel of its own (the copy reads the
// transpose's strides); by default it stays with PyTorch.
// DEFAULT-LABEL: func.func @contiguous_copy
// DEFAULT-NOT: fusion.group
// DEFAULT: aten.to
// COPIES-LABEL: func.func @contiguous_copy
// COPIES-SAME: (%[[X:.*]]: tensor<2x4x8x8xf32>, %[[W:.*]]: tensor<32x32xf32>)
// COPIES-NEXT: %[[T:.*]] = aten.transpose %[[X]] dim0 = 1 dim1 = 2
// COPIES-NEXT: %[[C:.*]] = fusion.group (%[[A:.*]] = %[[T]]) : (tensor<2x8x4x8xf32>) -> (tensor<2x8x4x8xf32>) {
// COPIES-NEXT: %[[R:.*]] = aten.to %[[A]] : tensor<2x8x4x8xf32> -> tensor<2x8x4x8xf32>
// COPIES-NEXT: fusion.yield %[[R]]
// COPIES-NEXT: }
// COPIES-NEXT: %[[V:.*]] = aten.reshape %[[C]]
// COPIES-NEXT: aten.mm %[[V]], %[[W]]
func.func @contiguous_copy(%x: tensor<2x4x8x8xf32>, %w: tensor<32x32xf32>) -> tensor<16x32xf32> {
  %t = aten.transpose %x dim0 = 1 dim1 = 2 : tensor<2x4x8x8xf32> -> tensor<2x8x4x8xf32>
  %c = aten.to %t : tensor<2x8x4x8xf32> -> tensor<2x8x4x8xf32>
  %v = aten.reshape %c : tensor<2x8x4x8xf32> -> tensor<16x32xf32>
  %m = aten.mm %v, %w : tensor<16x32xf32>, tensor<32x32xf32> -> tensor<16x32xf32>
  func.return %m : tensor<16x32xf32>
}

// -----

// A copy that fuses with its producer is in that group already; an integer
// copy stays with PyTorch (the copy kernels are float ones).
// COPIES-LABEL: func.func @fused_or_integer
// COPIES: fusion.group
// COPIES: aten.exp
// COPIES: aten.to
// COPIES: fusion.yield
// COPIES-NOT: fusion.group
// COPIES: aten.to %{{.*}} : tensor<4x4xi64> -> tensor<4x4xi64>
func.func @fused_or_integer(%x: tensor<4x4xf32>, %i: tensor<4x4xi64>) -> (tensor<4x4xf32>, tensor<4x4xi64>) {
  %e = aten.exp %x : tensor<4x4xf32> -> tensor<4x4xf32>
  %c = aten.to %e : tensor<4x4xf32> -> tensor<4x4xf32>
  %j = aten.to %i : tensor<4x4xi64> -> tensor<4x4xi64>
  func.return %c, %j : tensor<4x4xf32>, tensor<4x4xi64>
}
