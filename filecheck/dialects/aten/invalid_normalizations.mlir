// RUN: fusec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Every verifier rule of amax/amin/var/std, softmax, layer_norm, gather, embedding
// and its backward.

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.amax' op result #0 has type tensor<2x1xf64>, but the inferred type is tensor<2x1xf32>
func.func @amax_dtype(%x: tensor<2x3xf32>) {
  %0 = aten.amax %x dims = [1] keepdim = true : tensor<2x3xf32> -> tensor<2x1xf64>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.var' op needs a floating-point input, got tensor<2x3xi64>
func.func @var_int(%x: tensor<2x3xi64>) {
  %0 = aten.var %x : tensor<2x3xi64> -> tensor<i64>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.softmax' op needs a floating-point result, got i64
func.func @softmax_int(%x: tensor<2x3xi64>) {
  %0 = aten.softmax %x dim = 1 : tensor<2x3xi64> -> tensor<2x3xi64>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.log_softmax' op dimension 2 is out of range for a tensor of rank 2
func.func @softmax_dim(%x: tensor<2x3xf32>) {
  %0 = aten.log_softmax %x dim = 2 : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.layer_norm' op normalized_shape [4] is not the trailing shape of [2, 3]
func.func @layer_norm_shape(%x: tensor<2x3xf32>) {
  %0 = aten.layer_norm %x normalized_shape = [4] eps = 1.0e-05 : f64 : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.layer_norm' op weight and bias must have shape [3], got tensor<2xf32>
func.func @layer_norm_weight(%x: tensor<2x3xf32>, %w: tensor<2xf32>) {
  %0 = aten.layer_norm %x, %w normalized_shape = [3] eps = 1.0e-05 : f64 : tensor<2x3xf32>, tensor<2xf32> -> tensor<2x3xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.gather' op index must be i64, got tensor<2x1xi32>
func.func @gather_index(%x: tensor<2x3xf32>, %i: tensor<2x1xi32>) {
  %0 = aten.gather %x, %i dim = 1 : tensor<2x3xf32>, tensor<2x1xi32> -> tensor<2x1xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.embedding' op weight must be 2-d, got tensor<100xf32>
func.func @embedding_table(%w: tensor<100xf32>, %i: tensor<2xi64>) {
  %0 = aten.embedding %w, %i : tensor<100xf32>, tensor<2xi64> -> tensor<2xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.embedding' op indices must be i64 or i32, got tensor<2xf32>
func.func @embedding_indices(%w: tensor<100x4xf32>, %i: tensor<2xf32>) {
  %0 = aten.embedding %w, %i : tensor<100x4xf32>, tensor<2xf32> -> tensor<2x4xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.embedding_dense_backward' op grad must be shaped indices.shape + [row size], got tensor<2x7x4xf32> for indices tensor<2x8xi64>
func.func @table_gradient_shape(%d: tensor<2x7x4xf32>, %i: tensor<2x8xi64>) {
  %0 = aten.embedding_dense_backward %d, %i num_weights = 10 padding_idx = -1 : tensor<2x7x4xf32>, tensor<2x8xi64> -> tensor<10x4xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.embedding_dense_backward' op indices must be i64 or i32, got tensor<2xi1>
func.func @table_gradient_indices(%d: tensor<2x4xf32>, %i: tensor<2xi1>) {
  %0 = aten.embedding_dense_backward %d, %i num_weights = 10 padding_idx = -1 : tensor<2x4xf32>, tensor<2xi1> -> tensor<10x4xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.embedding_dense_backward' op num_weights must not be negative, got -1
func.func @table_gradient_rows(%d: tensor<2x4xf32>, %i: tensor<2xi64>) {
  %0 = aten.embedding_dense_backward %d, %i num_weights = -1 padding_idx = -1 : tensor<2x4xf32>, tensor<2xi64> -> tensor<0x4xf32>
  func.return
}
