// RUN: fusec-opt %s --split-input-file | filecheck %s
// RUN: fusec-opt %s --split-input-file --print-op-generic | fusec-opt --split-input-file | filecheck %s

// CHECK-LABEL: func.func @broadcast_sizes
// CHECK-SAME: (%[[X:.*]]: tensor<4x1xf32>, %[[Y:.*]]: tensor<3xf32>)
// CHECK-NEXT: %[[A:.*]] = aten.size %[[X]] : tensor<4x1xf32> -> !aten.size<2>
// CHECK-NEXT: %[[B:.*]] = aten.size %[[Y]] : tensor<3xf32> -> !aten.size<1>
// CHECK-NEXT: %[[S:.*]] = fusion.broadcast_sizes %[[A]], %[[B]] : !aten.size<2>, !aten.size<1> -> !aten.size<2>
// CHECK-NEXT: %[[T:.*]] = fusion.broadcast_sizes %[[B]] : !aten.size<1> -> !aten.size<1>
// CHECK-NEXT: func.return %[[S]], %[[T]] : !aten.size<2>, !aten.size<1>
func.func @broadcast_sizes(%x: tensor<4x1xf32>, %y: tensor<3xf32>) -> (!aten.size<2>, !aten.size<1>) {
  %a = aten.size %x : tensor<4x1xf32> -> !aten.size<2>
  %b = aten.size %y : tensor<3xf32> -> !aten.size<1>
  %s = fusion.broadcast_sizes %a, %b : !aten.size<2>, !aten.size<1> -> !aten.size<2>
  %t = fusion.broadcast_sizes %b : !aten.size<1> -> !aten.size<1>
  func.return %s, %t : !aten.size<2>, !aten.size<1>
}
