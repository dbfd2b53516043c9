// RUN: fusec-opt %s --split-input-file | filecheck %s
// RUN: fusec-opt %s --split-input-file --print-op-generic | fusec-opt --split-input-file | filecheck %s

// aten.opaque: PyTorch operators fusec does not model.

// Any number of operands and results of any type; node is optional.
// CHECK-LABEL: func.func @opaque
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[S:.*]]: i64)
// CHECK: %[[A:.*]] = aten.opaque "aten.softmax.int"(%[[X]], %[[S]]) : (tensor<2x3xf32>, i64) -> tensor<2x3xf32>
// CHECK-NEXT: %[[B:.*]], %[[C:.*]] = aten.opaque "aten.max.dim" node = "max_1"(%[[X]], %[[S]]) : (tensor<2x3xf32>, i64) -> (tensor<2xf32>, tensor<2xi64>)
// CHECK-NEXT: aten.opaque "aten.print"(%[[X]]) : (tensor<2x3xf32>) -> ()
// CHECK-NEXT: %[[D:.*]] = aten.opaque "aten.rand.default"() : () -> tensor<4xf32>
// CHECK-NEXT: func.return %[[A]], %[[B]], %[[C]], %[[D]] : tensor<2x3xf32>, tensor<2xf32>, tensor<2xi64>, tensor<4xf32>
func.func @opaque(%x: tensor<2x3xf32>, %s: i64) -> (tensor<2x3xf32>, tensor<2xf32>, tensor<2xi64>, tensor<4xf32>) {
  %a = aten.opaque "aten.softmax.int"(%x, %s) : (tensor<2x3xf32>, i64) -> tensor<2x3xf32>
  %b, %c = aten.opaque "aten.max.dim" node = "max_1"(%x, %s) : (tensor<2x3xf32>, i64) -> (tensor<2xf32>, tensor<2xi64>)
  aten.opaque "aten.print"(%x) : (tensor<2x3xf32>) -> ()
  %d = aten.opaque "aten.rand.default"() : () -> tensor<4xf32>
  func.return %a, %b, %c, %d : tensor<2x3xf32>, tensor<2xf32>, tensor<2xi64>, tensor<4xf32>
}
