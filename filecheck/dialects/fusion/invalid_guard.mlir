// RUN: fusec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Every verifier rule of fusion.guard and #fusion.input_spec.

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'fusion.guard' op fusion.guard has 1 inputs but 0 input specs
func.func @spec_count(%a: tensor<4xf32>) -> i1 {
  %ok = "fusion.guard"(%a) <{specs = []}> : (tensor<4xf32>) -> i1
  func.return %ok : i1
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'fusion.guard' op input #0 has rank 1 but its spec names size-1 dim 1
func.func @rank(%a: tensor<4xf32>) -> i1 {
  %ok = fusion.guard (%a : tensor<4xf32> <ones = [1], layout = any, device = "cpu">)
  func.return %ok : i1
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'fusion.guard' op input #0 spec says dim 0 is 1 but its type tensor<4x1xf32> has size 4
func.func @not_one(%a: tensor<4x1xf32>) -> i1 {
  %ok = fusion.guard (%a : tensor<4x1xf32> <ones = [0, 1], layout = any, device = "cpu">)
  func.return %ok : i1
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'fusion.guard' op input #0 has type tensor<4x1xf32>, size 1 in dim 1, but its spec does not say so
func.func @missing_one(%a: tensor<4x1xf32>) -> i1 {
  %ok = fusion.guard (%a : tensor<4x1xf32> <ones = [], layout = any, device = "cpu">)
  func.return %ok : i1
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'fusion.guard' op operand 'inputs' at position 0 does not verify
func.func @scalar(%s: f64) -> i1 {
  %ok = "fusion.guard"(%s) <{specs = [#fusion.input_spec<ones = [], layout = any, device = "cpu">]}> : (f64) -> i1
  func.return %ok : i1
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'fusion.guard' op input #0 spec: ones must be increasing dims >= 0, got [1, 0]
func.func @order(%a: tensor<1x1xf32>) -> i1 {
  %ok = "fusion.guard"(%a) <{specs = [#fusion.input_spec<ones = [1, 0], layout = any, device = "cpu">]}> : (tensor<1x1xf32>) -> i1
  func.return %ok : i1
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:63: error: Expected one of 'any', 'contiguous' as the layout of a guarded input
func.func @layout(%a: tensor<2xf32>) -> i1 {
  %ok = fusion.guard (%a : tensor<2xf32> <ones = [], layout = strided, device = "cpu">)
  func.return %ok : i1
}
