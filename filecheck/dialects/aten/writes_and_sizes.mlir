// RUN: fusec-opt %s --split-input-file | filecheck %s
// RUN: fusec-opt %s --split-input-file --print-op-generic | fusec-opt --split-input-file | filecheck %s

// aten.copy_ (an in-place write), its batched forms, and aten.size (a size as a
// runtime value).

// A write of a same-shaped tensor, of a broadcast one, and of a Python scalar.
// CHECK-LABEL: func.func @copy
// CHECK-SAME: (%[[X:.*]]: tensor<4x3xf32>, %[[Y:.*]]: tensor<3xf64>, %[[S:.*]]: f64)
// CHECK-NEXT: %[[T:.*]] = aten.exp %[[X]] : tensor<4x3xf32> -> tensor<4x3xf32>
// CHECK-NEXT: aten.copy_ %[[X]], %[[T]] : tensor<4x3xf32>, tensor<4x3xf32>
// CHECK-NEXT: aten.copy_ %[[X]], %[[Y]] : tensor<4x3xf32>, tensor<3xf64>
// CHECK-NEXT: aten.copy_ %[[X]], %[[S]] : tensor<4x3xf32>, f64
// CHECK-NEXT: func.return
func.func @copy(%x: tensor<4x3xf32>, %y: tensor<3xf64>, %s: f64) {
  %t = aten.exp %x : tensor<4x3xf32> -> tensor<4x3xf32>
  aten.copy_ %x, %t : tensor<4x3xf32>, tensor<4x3xf32>
  aten.copy_ %x, %y : tensor<4x3xf32>, tensor<3xf64>
  aten.copy_ %x, %s : tensor<4x3xf32>, f64
  func.return
}

// -----

// CHECK-LABEL: func.func @size
// CHECK-SAME: (%[[X:.*]]: tensor<4x3xf32>, %[[Z:.*]]: tensor<i64>)
// CHECK-NEXT: %[[A:.*]] = aten.size %[[X]] : tensor<4x3xf32> -> !aten.size<2>
// CHECK-NEXT: %[[B:.*]] = aten.size %[[Z]] : tensor<i64> -> !aten.size<0>
// CHECK-NEXT: func.return %[[A]], %[[B]] : !aten.size<2>, !aten.size<0>
func.func @size(%x: tensor<4x3xf32>, %z: tensor<i64>) -> (!aten.size<2>, !aten.size<0>) {
  %a = aten.size %x : tensor<4x3xf32> -> !aten.size<2>
  %b = aten.size %z : tensor<i64> -> !aten.size<0>
  func.return %a, %b : !aten.size<2>, !aten.size<0>
}

// -----

// Batched writes: copies of same-typed tensors, and a number added in place.
// CHECK-LABEL: func.func @foreach_writes
// CHECK-SAME: (%[[A:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<i64>, %[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<i64>)
// CHECK-NEXT: aten.foreach_copy_(%[[A]], %[[B]]), (%[[X]], %[[Y]]) : (tensor<4xf32>, tensor<i64>), (tensor<4xf32>, tensor<i64>)
// CHECK-NEXT: aten.foreach_add_(%[[B]], %[[Y]]) value = 1 : i64 : (tensor<i64>, tensor<i64>)
func.func @foreach_writes(%a: tensor<4xf32>, %b: tensor<i64>, %x: tensor<4xf32>, %y: tensor<i64>) {
  aten.foreach_copy_ (%a, %b), (%x, %y) : (tensor<4xf32>, tensor<i64>), (tensor<4xf32>, tensor<i64>)
  aten.foreach_add_ (%b, %y) value = 1 : i64 : (tensor<i64>, tensor<i64>)
  func.return
}
