// RUN: fusec-opt %s --split-input-file | filecheck %s
// RUN: fusec-opt %s --split-input-file --print-op-generic | fusec-opt --split-input-file | filecheck %s

// CHECK-LABEL: func.func @add_broadcast
// CHECK-SAME: (%[[X:.*]]: tensor<4x1xf32>, %[[Y:.*]]: tensor<3xf32>)
// CHECK: %[[R:.*]] = aten.add %[[X]], %[[Y]] alpha = 2 : i64 : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
// CHECK: func.return %[[R]]
func.func @add_broadcast(%x: tensor<4x1xf32>, %y: tensor<3xf32>) -> tensor<4x3xf32> {
  %0 = aten.add %x, %y alpha = 2 : i64 : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}
