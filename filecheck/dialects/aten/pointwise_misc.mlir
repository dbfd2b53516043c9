// RUN: fusec-opt %s --split-input-file | filecheck %s
// RUN: fusec-opt %s --split-input-file --print-op-generic | fusec-opt --split-input-file | filecheck %s

// aten.where, aten.clamp and aten.to.

// All three broadcast; the condition does not take part in promotion.
// CHECK-LABEL: func.func @where
// CHECK-SAME: (%[[C:.*]]: tensor<4x1xi1>, %[[X:.*]]: tensor<3xf16>, %[[S:.*]]: f64, %[[I:.*]]: i64)
// CHECK: %[[A:.*]] = aten.where %[[C]], %[[X]], %[[S]] : tensor<4x1xi1>, tensor<3xf16>, f64 -> tensor<4x3xf16>
// CHECK-NEXT: %[[B:.*]] = aten.where %[[C]], %[[I]], %[[S]] : tensor<4x1xi1>, i64, f64 -> tensor<4x1xf32>
// CHECK-NEXT: %[[D:.*]] = aten.where %[[C]], %[[I]], %[[I]] : tensor<4x1xi1>, i64, i64 -> tensor<4x1xi64>
// CHECK-NEXT: func.return %[[A]], %[[B]], %[[D]] : tensor<4x3xf16>, tensor<4x1xf32>, tensor<4x1xi64>
func.func @where(%c: tensor<4x1xi1>, %x: tensor<3xf16>, %s: f64, %i: i64) -> (tensor<4x3xf16>, tensor<4x1xf32>, tensor<4x1xi64>) {
  %a = aten.where %c, %x, %s : tensor<4x1xi1>, tensor<3xf16>, f64 -> tensor<4x3xf16>
  %b = aten.where %c, %i, %s : tensor<4x1xi1>, i64, f64 -> tensor<4x1xf32>
  %d = aten.where %c, %i, %i : tensor<4x1xi1>, i64, i64 -> tensor<4x1xi64>
  func.return %a, %b, %d : tensor<4x3xf16>, tensor<4x1xf32>, tensor<4x1xi64>
}

// -----

// min, max or both; a float bound makes an int tensor f32, as in PyTorch.
// CHECK-LABEL: func.func @clamp
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[I:.*]]: tensor<4xi32>)
// CHECK: %[[A:.*]] = aten.clamp %[[X]] min = 0.000000e+00 : f64 : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[B:.*]] = aten.clamp %[[X]] max = 6.000000e+00 : f64 : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[C:.*]] = aten.clamp %[[X]] min = -1 : i64 max = 1 : i64 : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[D:.*]] = aten.clamp %[[I]] min = 0 : i64 : tensor<4xi32> -> tensor<4xi32>
// CHECK-NEXT: %[[E:.*]] = aten.clamp %[[I]] min = 0 : i64 max = 2.500000e+00 : f64 : tensor<4xi32> -> tensor<4xf32>
// CHECK-NEXT: func.return %[[A]], %[[B]], %[[C]], %[[D]], %[[E]] : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>, tensor<4xf32>
func.func @clamp(%x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>, tensor<4xf32>) {
  %a = aten.clamp %x min = 0.000000e+00 : f64 : tensor<4xf32> -> tensor<4xf32>
  %b = aten.clamp %x max = 6.000000e+00 : f64 : tensor<4xf32> -> tensor<4xf32>
  %c = aten.clamp %x min = -1 : i64 max = 1 : i64 : tensor<4xf32> -> tensor<4xf32>
  %d = aten.clamp %i min = 0 : i64 : tensor<4xi32> -> tensor<4xi32>
  %e = aten.clamp %i min = 0 : i64 max = 2.500000e+00 : f64 : tensor<4xi32> -> tensor<4xf32>
  func.return %a, %b, %c, %d, %e : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>, tensor<4xf32>
}

// -----

// The result type names the dtype.
// CHECK-LABEL: func.func @to
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[Z:.*]]: tensor<i64>)
// CHECK: %[[A:.*]] = aten.to %[[X]] : tensor<2x3xf32> -> tensor<2x3xf16>
// CHECK-NEXT: %[[B:.*]] = aten.to %[[X]] : tensor<2x3xf32> -> tensor<2x3xi1>
// CHECK-NEXT: %[[C:.*]] = aten.to %[[Z]] : tensor<i64> -> tensor<bf16>
// CHECK-NEXT: %[[D:.*]] = aten.to %[[X]] : tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT: func.return %[[A]], %[[B]], %[[C]], %[[D]] : tensor<2x3xf16>, tensor<2x3xi1>, tensor<bf16>, tensor<2x3xf32>
func.func @to(%x: tensor<2x3xf32>, %z: tensor<i64>) -> (tensor<2x3xf16>, tensor<2x3xi1>, tensor<bf16>, tensor<2x3xf32>) {
  %a = aten.to %x : tensor<2x3xf32> -> tensor<2x3xf16>
  %b = aten.to %x : tensor<2x3xf32> -> tensor<2x3xi1>
  %c = aten.to %z : tensor<i64> -> tensor<bf16>
  %d = aten.to %x : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %a, %b, %c, %d : tensor<2x3xf16>, tensor<2x3xi1>, tensor<bf16>, tensor<2x3xf32>
}

// -----

// aten.full_like: the input's shape, the result type's dtype, a number value;
// aten.positions: 0..n-1 along one dim, int32, `?` where the dim is dynamic.
// CHECK-LABEL: func.func @fills_and_positions
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x?xf32>)
// CHECK: %[[O:.*]] = aten.full_like %[[X]] value = 1 : i64 : tensor<2x4x?xf32> -> tensor<2x4x?xi1>
// CHECK-NEXT: %[[F:.*]] = aten.full_like %[[X]] value = -2.500000e+00 : f64 : tensor<2x4x?xf32> -> tensor<2x4x?xf32>
// CHECK-NEXT: %[[C:.*]] = aten.positions %[[X]] dim = -1 : tensor<2x4x?xf32> -> tensor<?xi32>
// CHECK-NEXT: %[[R:.*]] = aten.positions %[[X]] dim = 1 : tensor<2x4x?xf32> -> tensor<4xi32>
// CHECK-NEXT: func.return %[[O]], %[[F]], %[[C]], %[[R]]
func.func @fills_and_positions(%x: tensor<2x4x?xf32>) -> (tensor<2x4x?xi1>, tensor<2x4x?xf32>, tensor<?xi32>, tensor<4xi32>) {
  %o = aten.full_like %x value = 1 : i64 : tensor<2x4x?xf32> -> tensor<2x4x?xi1>
  %f = aten.full_like %x value = -2.5 : f64 : tensor<2x4x?xf32> -> tensor<2x4x?xf32>
  %c = aten.positions %x dim = -1 : tensor<2x4x?xf32> -> tensor<?xi32>
  %r = aten.positions %x dim = 1 : tensor<2x4x?xf32> -> tensor<4xi32>
  func.return %o, %f, %c, %r : tensor<2x4x?xi1>, tensor<2x4x?xf32>, tensor<?xi32>, tensor<4xi32>
}
