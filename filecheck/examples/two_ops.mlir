// RUN: fusec-opt %s --fuse | filecheck %s
// CHECK-LABEL: func.func @two_ops
// CHECK:         %[[G:.*]] = fusion.group (%[[A:.*]] = %{{.*}}) : (tensor<4xf32>) -> (tensor<4xf32>) {
// CHECK:           aten.exp %[[A]]
// CHECK:         func.return %[[G]]
func.func @two_ops(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
  %1 = aten.neg %0 : tensor<4xf32> -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
