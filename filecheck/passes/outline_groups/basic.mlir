// RUN: fusec-opt %s -p outline-groups --split-input-file | filecheck %s

// CHECK-LABEL: func.func @f
// CHECK:         %[[R:.*]] = fusion.launch @f_group0(%[[A:.*]]) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK:         func.return %[[R]]
// CHECK-LABEL: func.func private @f_group0
// CHECK-SAME:    attributes {fusion.kernel}
// CHECK:         %[[E:.*]] = aten.exp
// CHECK:         func.return %[[E]]
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = fusion.group (%x = %a) : (tensor<4xf32>) -> (tensor<4xf32>) {
    %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
    fusion.yield %0 : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}
