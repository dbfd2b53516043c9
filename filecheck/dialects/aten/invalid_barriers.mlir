// RUN: fusec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Every verifier rule of the matrix products, reductions and aten.opaque.

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.matmul' op inner dims differ: [2, 3] @ [4, 5]
func.func @matmul_inner(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  %0 = aten.matmul %a, %b : tensor<2x3xf32>, tensor<4x5xf32> -> tensor<2x5xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.matmul' op both operands need at least one dim
func.func @matmul_0d(%a: tensor<f32>, %b: tensor<4xf32>) {
  %0 = aten.matmul %a, %b : tensor<f32>, tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.matmul' op operands must have one dtype, got f32 and f16
func.func @matmul_dtype(%a: tensor<2x3xf32>, %b: tensor<3x4xf16>) {
  %0 = aten.matmul %a, %b : tensor<2x3xf32>, tensor<3x4xf16> -> tensor<2x4xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.matmul' op matrix products do not support bool operands
func.func @matmul_bool(%a: tensor<2x3xi1>, %b: tensor<3x4xi1>) {
  %0 = aten.matmul %a, %b : tensor<2x3xi1>, tensor<3x4xi1> -> tensor<2x4xi1>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.matmul' op shapes [2] and [5] cannot be broadcast (dimension 0 is 2 and 5)
func.func @matmul_batch(%a: tensor<2x2x3xf32>, %b: tensor<5x3x4xf32>) {
  %0 = aten.matmul %a, %b : tensor<2x2x3xf32>, tensor<5x3x4xf32> -> tensor<2x2x4xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.mm' op both operands must be 2-d
func.func @mm_rank(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  %0 = aten.mm %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.addmm' op mat1 and mat2 must be 2-d
func.func @addmm_rank(%c: tensor<4xf32>, %a: tensor<3xf32>, %b: tensor<3x4xf32>) {
  %0 = aten.addmm %c, %a, %b : tensor<4xf32>, tensor<3xf32>, tensor<3x4xf32> -> tensor<4xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.addmm' op shapes [3] and [2, 4] cannot be broadcast (dimension 1 is 3 and 4)
func.func @addmm_bias(%c: tensor<3xf32>, %a: tensor<2x3xf32>, %b: tensor<3x4xf32>) {
  %0 = aten.addmm %c, %a, %b : tensor<3xf32>, tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.addmm' op bias [3, 2, 4] does not broadcast to [2, 4]
func.func @addmm_bias_larger(%c: tensor<3x2x4xf32>, %a: tensor<2x3xf32>, %b: tensor<3x4xf32>) {
  %0 = aten.addmm %c, %a, %b : tensor<3x2x4xf32>, tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.addmm' op operands must have one dtype, got f32 and f64
func.func @addmm_bias_dtype(%c: tensor<4xf64>, %a: tensor<2x3xf32>, %b: tensor<3x4xf32>) {
  %0 = aten.addmm %c, %a, %b : tensor<4xf64>, tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.linear' op weight must be 1-d or 2-d
func.func @linear_weight(%x: tensor<2x3xf32>, %w: tensor<1x4x3xf32>) {
  %0 = aten.linear %x, %w : tensor<2x3xf32>, tensor<1x4x3xf32> -> tensor<2x4xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.linear' op inner dims differ: [2, 3] @ [5, 4]
func.func @linear_inner(%x: tensor<2x3xf32>, %w: tensor<4x5xf32>) {
  %0 = aten.linear %x, %w : tensor<2x3xf32>, tensor<4x5xf32> -> tensor<2x4xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.linear' op bias [2, 2, 4] does not broadcast to [2, 4]
func.func @linear_bias(%x: tensor<2x3xf32>, %w: tensor<4x3xf32>, %b: tensor<2x2x4xf32>) {
  %0 = aten.linear %x, %w, %b : tensor<2x3xf32>, tensor<4x3xf32>, tensor<2x2x4xf32> -> tensor<2x4xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.scaled_dot_product_attention' op inner dims differ: [8, 16] @ [12, 6]
func.func @attention_head_dims(%q: tensor<8x16xf32>, %k: tensor<6x12xf32>, %v: tensor<6x4xf32>) {
  %0 = aten.scaled_dot_product_attention %q, %k, %v scale = 1.000000e+00 : f64 : tensor<8x16xf32>, tensor<6x12xf32>, tensor<6x4xf32> -> tensor<8x4xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.scaled_dot_product_attention' op shapes [8, 5] and [8, 6] cannot be broadcast (dimension 1 is 5 and 6)
func.func @attention_mask(%q: tensor<8x16xf32>, %k: tensor<6x16xf32>, %v: tensor<6x4xf32>, %m: tensor<8x5xf32>) {
  %0 = aten.scaled_dot_product_attention %q, %k, %v, %m scale = 1.000000e+00 : f64 : tensor<8x16xf32>, tensor<6x16xf32>, tensor<6x4xf32>, tensor<8x5xf32> -> tensor<8x4xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.scaled_dot_product_attention' op needs floating-point operands, got i64
func.func @attention_ints(%q: tensor<8x16xi64>, %k: tensor<6x16xi64>, %v: tensor<6x4xi64>) {
  %0 = aten.scaled_dot_product_attention %q, %k, %v scale = 1.000000e+00 : f64 : tensor<8x16xi64>, tensor<6x16xi64>, tensor<6x4xi64> -> tensor<8x4xi64>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.sum' op dimension 2 is out of range for a tensor of rank 2
func.func @sum_dim(%x: tensor<2x3xf32>) {
  %0 = aten.sum %x dims = [2] : tensor<2x3xf32> -> tensor<2xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.sum' op dims [1, -1] name a dim twice
func.func @sum_dims_twice(%x: tensor<2x3xf32>) {
  %0 = aten.sum %x dims = [1, -1] : tensor<2x3xf32> -> tensor<2xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.sum' op result #0 has type tensor<2xf32>, but the inferred type is tensor<2x1xf32>
func.func @sum_keepdim_shape(%x: tensor<2x3xf32>) {
  %0 = aten.sum %x dims = [1] keepdim = true : tensor<2x3xf32> -> tensor<2xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.mean' op needs a floating-point input, got tensor<2x3xi32>
func.func @mean_int(%x: tensor<2x3xi32>) {
  %0 = aten.mean %x : tensor<2x3xi32> -> tensor<f32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.mean' op needs a floating-point result, got tensor<i64>
func.func @mean_int_result(%x: tensor<2x3xf32>) {
  %0 = aten.mean %x : tensor<2x3xf32> -> tensor<i64>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.opaque' op needs a non-empty target name
func.func @opaque_target(%x: tensor<2xf32>) {
  aten.opaque ""(%x) : (tensor<2xf32>) -> ()
  func.return
}
