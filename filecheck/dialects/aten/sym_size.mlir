// RUN: fusec-opt %s --split-input-file | filecheck %s
// RUN: fusec-opt %s --split-input-file | fusec-opt --split-input-file | filecheck %s

// A size of a graph with symbolic shapes is a runtime i64 that pointwise ops take
// like any Python scalar.
// CHECK-LABEL: func.func @scaled_by_batch
// CHECK:         %[[N:.*]] = aten.sym_size %{{.*}} dim = 0 : tensor<4x3xf32> -> i64
// CHECK:         aten.mul %{{.*}}, %[[N]] : tensor<4x3xf32>, i64 -> tensor<4x3xf32>
func.func @scaled_by_batch(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %n = aten.sym_size %x dim = 0 : tensor<4x3xf32> -> i64
  %r = aten.mul %x, %n : tensor<4x3xf32>, i64 -> tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}

// -----

// CHECK-LABEL: func.func @last_dim
// CHECK:         aten.sym_size %{{.*}} dim = -1 : tensor<4x3xf32> -> i64
func.func @last_dim(%x: tensor<4x3xf32>) -> i64 {
  %n = aten.sym_size %x dim = -1 : tensor<4x3xf32> -> i64
  func.return %n : i64
}
