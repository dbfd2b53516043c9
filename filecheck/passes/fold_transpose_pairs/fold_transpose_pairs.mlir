// RUN: fusec-opt %s --split-input-file -p fold-transpose-pairs | filecheck %s

// The backward of a linear's weight: `t(t(w))` is `w`, and both transposes go.
// CHECK-LABEL: func.func @weight
// CHECK-SAME: (%[[G:.*]]: tensor<4x10xf32>, %[[W:.*]]: tensor<10x32xf32>)
// CHECK-NEXT: %[[M:.*]] = aten.mm %[[G]], %[[W]] : tensor<4x10xf32>, tensor<10x32xf32> -> tensor<4x32xf32>
// CHECK-NEXT: func.return %[[M]]
func.func @weight(%g: tensor<4x10xf32>, %w: tensor<10x32xf32>) -> tensor<4x32xf32> {
  %t = aten.transpose %w dim0 = 0 dim1 = 1 : tensor<10x32xf32> -> tensor<32x10xf32>
  %u = aten.transpose %t dim0 = 0 dim1 = 1 : tensor<32x10xf32> -> tensor<10x32xf32>
  %m = aten.mm %g, %u : tensor<4x10xf32>, tensor<10x32xf32> -> tensor<4x32xf32>
  func.return %m : tensor<4x32xf32>
}

// -----

// A gradient returned as `t(t(...))` is the computed value itself; dims given in
// the other order or as negative indices are the same swap.
// CHECK-LABEL: func.func @gradient
// CHECK-NEXT: %[[M:.*]] = aten.exp
// CHECK-NEXT: func.return %[[M]] : tensor<3x4x5xf32>
func.func @gradient(%a: tensor<3x4x5xf32>) -> tensor<3x4x5xf32> {
  %m = aten.exp %a : tensor<3x4x5xf32> -> tensor<3x4x5xf32>
  %t = aten.transpose %m dim0 = 1 dim1 = 2 : tensor<3x4x5xf32> -> tensor<3x5x4xf32>
  %u = aten.transpose %t dim0 = -1 dim1 = -2 : tensor<3x5x4xf32> -> tensor<3x4x5xf32>
  func.return %u : tensor<3x4x5xf32>
}

// -----

// The first transpose stays for its other use.
// CHECK-LABEL: func.func @shared
// CHECK-SAME: (%[[W:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: %[[T:.*]] = aten.transpose %[[W]] dim0 = 0 dim1 = 1
// CHECK-NEXT: %[[E:.*]] = aten.exp %[[T]]
// CHECK-NEXT: %[[N:.*]] = aten.neg %[[W]]
// CHECK-NEXT: func.return %[[E]], %[[N]]
func.func @shared(%w: tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<2x3xf32>) {
  %t = aten.transpose %w dim0 = 0 dim1 = 1 : tensor<2x3xf32> -> tensor<3x2xf32>
  %e = aten.exp %t : tensor<3x2xf32> -> tensor<3x2xf32>
  %u = aten.transpose %t dim0 = 1 dim1 = 0 : tensor<3x2xf32> -> tensor<2x3xf32>
  %n = aten.neg %u : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %e, %n : tensor<3x2xf32>, tensor<2x3xf32>
}

// -----

// Different dims are a permutation, not the identity: both stay.
// CHECK-LABEL: func.func @different_dims
// CHECK-NEXT: aten.transpose %{{.*}} dim0 = 0 dim1 = 1
// CHECK-NEXT: aten.transpose %{{.*}} dim0 = 1 dim1 = 2
func.func @different_dims(%x: tensor<2x3x4xf32>) -> tensor<3x4x2xf32> {
  %t = aten.transpose %x dim0 = 0 dim1 = 1 : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %u = aten.transpose %t dim0 = 1 dim1 = 2 : tensor<3x2x4xf32> -> tensor<3x4x2xf32>
  func.return %u : tensor<3x4x2xf32>
}

// -----

// An argument returned through a pair stays a view of it (the caller was told so).
// CHECK-LABEL: func.func @returned_argument
// CHECK-NEXT: %[[T:.*]] = aten.transpose
// CHECK-NEXT: %[[U:.*]] = aten.transpose %[[T]]
// CHECK-NEXT: func.return %[[U]]
func.func @returned_argument(%w: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %t = aten.transpose %w dim0 = 0 dim1 = 1 : tensor<2x3xf32> -> tensor<3x2xf32>
  %u = aten.transpose %t dim0 = 0 dim1 = 1 : tensor<3x2xf32> -> tensor<2x3xf32>
  func.return %u : tensor<2x3xf32>
}
