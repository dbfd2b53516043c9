// RUN: fusec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Every verifier rule of the aten shape ops.

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.expand' op 1 sizes given for a tensor of rank 2
func.func @expand_rank(%x: tensor<2x3xf32>) {
  %0 = aten.expand %x size = [3] : tensor<2x3xf32> -> tensor<3xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.expand' op -1 is not allowed for a new leading dim
func.func @expand_new_dim_minus_one(%x: tensor<3xf32>) {
  %0 = aten.expand %x size = [-1, 3] : tensor<3xf32> -> tensor<3x3xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.expand' op size -2 of dim 0 is negative
func.func @expand_negative(%x: tensor<1xf32>) {
  %0 = aten.expand %x size = [-2] : tensor<1xf32> -> tensor<1xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.expand' op dim 0 of size 2 cannot be expanded to 4
func.func @expand_non_one(%x: tensor<2x3xf32>) {
  %0 = aten.expand %x size = [4, 3] : tensor<2x3xf32> -> tensor<4x3xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.view' op cannot change the element type
func.func @view_dtype(%x: tensor<4xf32>) {
  %0 = aten.view %x : tensor<4xf32> -> tensor<4xf16>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.reshape' op shape [4, 4] and [15] have different element counts
func.func @reshape_count(%x: tensor<4x4xf32>) {
  %0 = aten.reshape %x : tensor<4x4xf32> -> tensor<15xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.unsqueeze' op dimension 2 is out of range for a tensor of rank 2
func.func @unsqueeze_dim(%x: tensor<3xf32>) {
  %0 = aten.unsqueeze %x dim = 2 : tensor<3xf32> -> tensor<3x1xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.squeeze' op dimension -3 is out of range for a tensor of rank 2
func.func @squeeze_dim(%x: tensor<1x3xf32>) {
  %0 = aten.squeeze %x dim = -3 : tensor<1x3xf32> -> tensor<3xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.permute' op dims [0, 0] are not a permutation of the 2 dims
func.func @permute_not_permutation(%x: tensor<2x3xf32>) {
  %0 = aten.permute %x dims = [0, 0] : tensor<2x3xf32> -> tensor<2x2xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.transpose' op dimension 2 is out of range for a tensor of rank 2
func.func @transpose_dim(%x: tensor<2x3xf32>) {
  %0 = aten.transpose %x dim0 = 0 dim1 = 2 : tensor<2x3xf32> -> tensor<3x2xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.chunk' op chunks must be positive, got 0
func.func @chunk_count(%x: tensor<2x6xf32>) {
  %0, %1 = aten.chunk %x chunks = 0 dim = 1 : tensor<2x6xf32> -> tensor<2x3xf32>, tensor<2x3xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.chunk' op expected 3 results, but got 2
func.func @chunk_results(%x: tensor<2x6xf32>) {
  %0, %1 = aten.chunk %x chunks = 3 dim = 1 : tensor<2x6xf32> -> tensor<2x3xf32>, tensor<2x3xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.chunk' op needs a tensor with at least one dim, got tensor<f32>
func.func @chunk_0d(%x: tensor<f32>) {
  %0 = aten.chunk %x chunks = 1 dim = 0 : tensor<f32> -> tensor<f32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.chunk' op dimension 2 is out of range for a tensor of rank 2
func.func @chunk_dim(%x: tensor<2x6xf32>) {
  %0 = aten.chunk %x chunks = 1 dim = 2 : tensor<2x6xf32> -> tensor<2x6xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.split' op needs exactly one of split_size and sizes
func.func @split_both(%x: tensor<2x6xf32>) {
  %0, %1 = aten.split %x split_size = 3 sizes = [3, 3] dim = 1 : tensor<2x6xf32> -> tensor<2x3xf32>, tensor<2x3xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.split' op sizes [3, 4] do not add up to dim 1 of size 6
func.func @split_sizes_sum(%x: tensor<2x6xf32>) {
  %0, %1 = aten.split %x sizes = [3, 4] dim = 1 : tensor<2x6xf32> -> tensor<2x3xf32>, tensor<2x4xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.split' op split_size must be positive, got 0
func.func @split_size_positive(%x: tensor<2x6xf32>) {
  %0 = aten.split %x split_size = 0 dim = 1 : tensor<2x6xf32> -> tensor<2x6xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.cat' op shapes [2, 3] and [3, 3] differ outside dim 1
func.func @cat_mismatch(%x: tensor<2x3xf32>, %y: tensor<3x3xf32>) {
  %0 = aten.cat %x, %y dim = 1 : tensor<2x3xf32>, tensor<3x3xf32> -> tensor<2x6xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.cat' op shapes [2, 3] and [3] differ outside dim 0
func.func @cat_rank(%x: tensor<2x3xf32>, %y: tensor<3xf32>) {
  %0 = aten.cat %x, %y dim = 0 : tensor<2x3xf32>, tensor<3xf32> -> tensor<5x3xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.cat' op needs at least one input
func.func @cat_empty() {
  %0 = "aten.cat"() <{dim = 0 : i64}> : () -> tensor<2xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.cat' op result #0 has type tensor<4xi32>, but the inferred type is tensor<4xf16>
func.func @cat_dtype(%x: tensor<2xi32>, %y: tensor<2xf16>) {
  %0 = aten.cat %x, %y dim = 0 : tensor<2xi32>, tensor<2xf16> -> tensor<4xi32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.narrow' op start 4 and length 3 exceed dim 1 of size 6
func.func @narrow_bounds(%x: tensor<2x6xf32>) {
  %0 = aten.narrow %x dim = 1 start = 4 length = 3 : tensor<2x6xf32> -> tensor<2x3xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.narrow' op needs a tensor with at least one dim, got tensor<f32>
func.func @narrow_0d(%x: tensor<f32>) {
  %0 = aten.narrow %x dim = 0 start = 0 length = 1 : tensor<f32> -> tensor<f32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.slice' op step must be positive, got 0
func.func @slice_step(%x: tensor<2x6xf32>) {
  %0 = aten.slice %x dim = 1 start = 0 end = 6 step = 0 : tensor<2x6xf32> -> tensor<2x6xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.slice' op result #0 has type tensor<2x6xf32>, but the inferred type is tensor<2x3xf32>
func.func @slice_length(%x: tensor<2x6xf32>) {
  %0 = aten.slice %x dim = 1 start = 0 end = 6 step = 2 : tensor<2x6xf32> -> tensor<2x6xf32>
  func.return
}
