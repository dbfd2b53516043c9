// RUN: fusec-opt %s --split-input-file -p fuse | filecheck %s

// Opaque ops, matmul/linear and reductions are barriers: the pointwise ops on
// either side fuse only among themselves.
// CHECK-LABEL: func.func @matmul_barrier
// CHECK: %[[G1:.*]] = fusion.group
// CHECK: aten.exp
// CHECK: aten.neg
// CHECK: %[[M:.*]] = aten.matmul %[[G1]]
// CHECK: fusion.group (%{{.*}} = %[[M]])
// CHECK: aten.sigmoid
// CHECK: aten.tanh
func.func @matmul_barrier(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = aten.exp %x : tensor<4x4xf32> -> tensor<4x4xf32>
  %1 = aten.neg %0 : tensor<4x4xf32> -> tensor<4x4xf32>
  %2 = aten.matmul %1, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %3 = aten.sigmoid %2 : tensor<4x4xf32> -> tensor<4x4xf32>
  %4 = aten.tanh %3 : tensor<4x4xf32> -> tensor<4x4xf32>
  func.return %4 : tensor<4x4xf32>
}

// -----

// CHECK-LABEL: func.func @reduction_and_linear_are_barriers
// CHECK-NOT: fusion.group
func.func @reduction_and_linear_are_barriers(%x: tensor<2x3xf32>, %w: tensor<4x3xf32>) -> (tensor<2xf32>, tensor<2x4xf32>) {
  %0 = aten.exp %x : tensor<2x3xf32> -> tensor<2x3xf32>
  %1 = aten.sum %0 dims = [1] : tensor<2x3xf32> -> tensor<2xf32>
  %2 = aten.neg %1 : tensor<2xf32> -> tensor<2xf32>
  %3 = aten.linear %0, %w : tensor<2x3xf32>, tensor<4x3xf32> -> tensor<2x4xf32>
  %4 = aten.relu %3 : tensor<2x4xf32> -> tensor<2x4xf32>
  func.return %2, %4 : tensor<2xf32>, tensor<2x4xf32>
}

// -----

// CHECK-LABEL: func.func @opaque_barrier
// CHECK-NOT: fusion.group
// CHECK: aten.opaque "aten.softmax.int"
func.func @opaque_barrier(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
  %1 = aten.opaque "aten.softmax.int"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = aten.neg %1 : tensor<4xf32> -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// -----

// Shape ops other than chunk (expand here) stay outside.
// CHECK-LABEL: func.func @expand_not_fused
// CHECK-NOT: fusion.group
// CHECK: aten.expand
func.func @expand_not_fused(%x: tensor<1x3xf32>) -> tensor<4x3xf32> {
  %0 = aten.exp %x : tensor<1x3xf32> -> tensor<1x3xf32>
  %1 = aten.expand %0 size = [4, -1] : tensor<1x3xf32> -> tensor<4x3xf32>
  %2 = aten.neg %1 : tensor<4x3xf32> -> tensor<4x3xf32>
  func.return %2 : tensor<4x3xf32>
}
