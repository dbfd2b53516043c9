// RUN: fusec-opt %s --fuse | filecheck %s

// In `--fuse`: the bias gradient's column sum is an extra output of the group
// that computes the gradient, though two matrix products read it first.
// CHECK-LABEL: func.func @bias_grad
// CHECK:         %[[S:.*]], %[[G:.*]] = fusion.group
// CHECK-NEXT:      %[[M:.*]] = aten.mul
// CHECK-NEXT:      %[[R:.*]] = aten.sum %[[M]] dims = [0] keepdim = true
// CHECK-NEXT:      fusion.yield %[[R]], %[[M]]
// CHECK:         aten.mm %[[G]]
// CHECK-NOT:     aten.sum
// CHECK:         func.return
func.func @bias_grad(%d: tensor<16x64xf32>, %y: tensor<16x64xf32>, %w: tensor<64x32xf32>) -> (tensor<16x32xf32>, tensor<64x64xf32>, tensor<1x64xf32>) {
  %g = aten.mul %d, %y : tensor<16x64xf32>, tensor<16x64xf32> -> tensor<16x64xf32>
  %a = aten.mm %g, %w : tensor<16x64xf32>, tensor<64x32xf32> -> tensor<16x32xf32>
  %t = aten.transpose %g dim0 = 0 dim1 = 1 : tensor<16x64xf32> -> tensor<64x16xf32>
  %b = aten.mm %t, %y : tensor<64x16xf32>, tensor<16x64xf32> -> tensor<64x64xf32>
  %s = aten.sum %g dims = [0] keepdim = true : tensor<16x64xf32> -> tensor<1x64xf32>
  func.return %a, %b, %s : tensor<16x32xf32>, tensor<64x64xf32>, tensor<1x64xf32>
}
