// RUN: fusec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Every verifier rule of aten.copy_, aten.foreach_copy_ and aten.size.

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.copy_' op tensor<4x3xf32> does not broadcast to the destination tensor<3xf32>
func.func @copy_grows(%x: tensor<3xf32>, %y: tensor<4x3xf32>) {
  aten.copy_ %x, %y : tensor<3xf32>, tensor<4x3xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.copy_' op tensor<2xf32> does not broadcast to the destination tensor<3xf32>
func.func @copy_mismatch(%x: tensor<3xf32>, %y: tensor<2xf32>) {
  aten.copy_ %x, %y : tensor<3xf32>, tensor<2xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.copy_' op operand 'dst' at position 0 does not verify
func.func @copy_to_scalar(%s: f64, %y: tensor<3xf32>) {
  "aten.copy_"(%s, %y) : (f64, tensor<3xf32>) -> ()
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.size' op the size of a tensor of rank 2 has rank 2, got !aten.size<1>
func.func @size_rank(%x: tensor<4x3xf32>) -> !aten.size<1> {
  %a = aten.size %x : tensor<4x3xf32> -> !aten.size<1>
  func.return %a : !aten.size<1>
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.foreach_copy_' op source tensor<4xf16> is not of its destination's type tensor<4xf32>
func.func @foreach_copy_types(%a: tensor<4xf32>, %x: tensor<4xf16>) {
  aten.foreach_copy_ (%a), (%x) : (tensor<4xf32>), (tensor<4xf16>)
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.foreach_copy_' op 2 destinations but 1 sources
func.func @foreach_copy_counts(%a: tensor<4xf32>, %b: tensor<4xf32>, %x: tensor<4xf32>) {
  aten.foreach_copy_ (%a, %b), (%x) : (tensor<4xf32>, tensor<4xf32>), (tensor<4xf32>)
  func.return
}
