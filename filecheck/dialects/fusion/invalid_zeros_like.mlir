// RUN: fusec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Every verifier rule of fusion.zeros_like.

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'fusion.zeros_like' op zeros like a tensor<2x8xf32> have that type, not tensor<8x2xf32>
func.func @other_type(%x: tensor<2x8xf32>) -> tensor<8x2xf32> {
  %z = fusion.zeros_like %x : tensor<2x8xf32> -> tensor<8x2xf32>
  func.return %z : tensor<8x2xf32>
}
