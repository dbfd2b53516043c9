// RUN: fusec-opt %s --split-input-file | filecheck %s
// RUN: fusec-opt %s --split-input-file --print-op-generic | fusec-opt --split-input-file | filecheck %s

// CHECK-LABEL: func.func @zeros_like
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>)
// CHECK-NEXT: %[[Z:.*]] = fusion.zeros_like %[[X]] : tensor<2x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT: func.return %[[Z]] : tensor<2x8xf32>
func.func @zeros_like(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %z = fusion.zeros_like %x : tensor<2x8xf32> -> tensor<2x8xf32>
  func.return %z : tensor<2x8xf32>
}
