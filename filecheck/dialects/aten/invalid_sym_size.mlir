// RUN: fusec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.sym_size' op dimension 2 is out of range for a tensor of rank 2
func.func @sym_size_dim(%x: tensor<4x3xf32>) -> i64 {
  %n = aten.sym_size %x dim = 2 : tensor<4x3xf32> -> i64
  func.return %n : i64
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.sym_size' op result 'result' at position 0 does not verify
func.func @sym_size_type(%x: tensor<4x3xf32>) -> f64 {
  %n = "aten.sym_size"(%x) <{dim = 0 : i64}> : (tensor<4x3xf32>) -> f64
  func.return %n : f64
}
