// RUN: fusec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Ops whose result sizes follow a cut dim's size need it static: with a dynamic
// dim (`?`) they are errors, never sizes made up from -1.

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.chunk' op chunk needs a static size, but dim 0 of tensor<?x8xf32> is dynamic
func.func @chunk_dynamic_dim(%x: tensor<?x8xf32>) {
  %a, %b = aten.chunk %x chunks = 2 dim = 0 : tensor<?x8xf32> -> tensor<?x8xf32>, tensor<?x8xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.split' op split needs a static size, but dim 0 of tensor<?xf32> is dynamic
func.func @split_dynamic_dim(%x: tensor<?xf32>) {
  %a, %b = aten.split %x sizes = [1, 3] dim = 0 : tensor<?xf32> -> tensor<1xf32>, tensor<3xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.narrow' op narrow needs a static size, but dim 0 of tensor<?xf32> is dynamic
func.func @narrow_dynamic_dim(%x: tensor<?xf32>) {
  %a = aten.narrow %x dim = 0 start = 1 length = 2 : tensor<?xf32> -> tensor<2xf32>
  func.return
}

// -----

// Only the whole of a dynamic dim is a slice whose size is known.
// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.slice' op slice needs a static size, but dim 0 of tensor<?xf32> is dynamic
func.func @slice_dynamic_dim(%x: tensor<?xf32>) {
  %a = aten.slice %x dim = 0 start = 0 end = 4 step = 1 : tensor<?xf32> -> tensor<4xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.squeeze' op squeeze needs a static size, but dim 0 of tensor<?x3xf32> is dynamic
func.func @squeeze_dynamic_dim(%x: tensor<?x3xf32>) {
  %a = aten.squeeze %x dim = 0 : tensor<?x3xf32> -> tensor<?x3xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.squeeze' op squeezing every size-1 dim of tensor<?x1xf32> needs static sizes
func.func @squeeze_all_dynamic(%x: tensor<?x1xf32>) {
  %a = aten.squeeze %x : tensor<?x1xf32> -> tensor<?xf32>
  func.return
}

// -----

// A reshape infers one dynamic size (as a -1 would), not two.
// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.reshape' op the dynamic dims of tensor<?x?xf32> cannot be inferred
func.func @reshape_two_dynamic(%x: tensor<?x8xf32>) {
  %a = aten.reshape %x : tensor<?x8xf32> -> tensor<?x?xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.cat' op shapes [?, 8] and [?, 4] differ outside dim 0
func.func @cat_static_mismatch(%x: tensor<?x8xf32>, %y: tensor<?x4xf32>) {
  %a = aten.cat %x, %y dim = 0 : tensor<?x8xf32>, tensor<?x4xf32> -> tensor<?x8xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.add' op result #0 has type tensor<?x?xf32>, but the inferred type is tensor<?x16xf32>
func.func @static_size_is_known(%x: tensor<?x16xf32>, %y: tensor<?x?xf32>) {
  %a = aten.add %x, %y : tensor<?x16xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  func.return
}
