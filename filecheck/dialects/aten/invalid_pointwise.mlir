// RUN: fusec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Every verifier rule of the pointwise aten ops, one failing op per case.

// int tensor + float scalar is the default float, f32.
// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.add' op result #0 has type tensor<4xf64>, but the inferred type is tensor<4xf32>
func.func @wrong_result_int_plus_float_scalar(%x: tensor<4xi32>, %s: f64) {
  %0 = aten.add %x, %s : tensor<4xi32>, f64 -> tensor<4xf64>
  func.return
}

// -----

// A 0-d tensor of the same category does not promote a tensor with dims.
// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.mul' op result #0 has type tensor<4xf32>, but the inferred type is tensor<4xf16>
func.func @wrong_result_f16_plus_0d_f32(%x: tensor<4xf16>, %z: tensor<f32>) {
  %0 = aten.mul %x, %z : tensor<4xf16>, tensor<f32> -> tensor<4xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.div' op result #0 has type tensor<4xi64>, but the inferred type is tensor<4xf32>
func.func @wrong_result_true_division(%x: tensor<4xi64>, %y: tensor<4xi64>) {
  %0 = aten.div %x, %y : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.lt' op result #0 has type tensor<4xf32>, but the inferred type is tensor<4xi1>
func.func @wrong_result_comparison(%x: tensor<4xf32>, %y: tensor<4xf32>) {
  %0 = aten.lt %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.exp' op result #0 has type tensor<4xi32>, but the inferred type is tensor<4xf32>
func.func @wrong_result_exp_int(%x: tensor<4xi32>) {
  %0 = aten.exp %x : tensor<4xi32> -> tensor<4xi32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.add' op result #0 has type tensor<4x1xf32>, but the inferred type is tensor<4x3xf32>
func.func @wrong_result_shape(%x: tensor<4x1xf32>, %y: tensor<3xf32>) {
  %0 = aten.add %x, %y : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x1xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.add' op shapes [4, 2] and [3] cannot be broadcast (dimension 1 is 2 and 3)
func.func @impossible_broadcast(%x: tensor<4x2xf32>, %y: tensor<3xf32>) {
  %0 = aten.add %x, %y : tensor<4x2xf32>, tensor<3xf32> -> tensor<4x3xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.where' op shapes [5] and [4] cannot be broadcast (dimension 0 is 5 and 4)
func.func @impossible_broadcast_where(%c: tensor<5xi1>, %x: tensor<4xf32>, %s: f64) {
  %0 = aten.where %c, %x, %s : tensor<5xi1>, tensor<4xf32>, f64 -> tensor<5xf32>
  func.return
}

// -----

// Python scalars are f64, i64 or i1 only.
// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.add' op operand of type f32 is neither a tensor nor a Python scalar (f64, i64, i1)
func.func @operand_not_tensor_or_scalar(%x: tensor<4xf32>, %s: f32) {
  %0 = aten.add %x, %s : tensor<4xf32>, f32 -> tensor<4xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.add' op unsupported element type in tensor<4xi7>
func.func @unsupported_operand_dtype(%x: tensor<4xi7>) {
  %0 = aten.add %x, %x : tensor<4xi7>, tensor<4xi7> -> tensor<4xi7>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.to' op unsupported element type in tensor<4xi3>
func.func @unsupported_result_dtype(%x: tensor<4xf32>) {
  %0 = aten.to %x : tensor<4xf32> -> tensor<4xi3>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.mul' op needs at least one tensor operand
func.func @no_tensor_operand(%s: f64, %t: f64) {
  %0 = aten.mul %s, %t : f64, f64 -> tensor<f32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.neg' op does not support bool inputs, got tensor<4xi1>
func.func @neg_bool(%x: tensor<4xi1>) {
  %0 = aten.neg %x : tensor<4xi1> -> tensor<4xi1>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.gelu' op needs a floating-point input, got tensor<4xi32>
func.func @gelu_int(%x: tensor<4xi32>) {
  %0 = aten.gelu %x : tensor<4xi32> -> tensor<4xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.gelu' op approximate must be "none" or "tanh", got "erf"
func.func @gelu_approximate(%x: tensor<4xf32>) {
  %0 = aten.gelu %x approximate = "erf" : tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.clamp' op needs at least one of min and max
func.func @clamp_without_bounds(%x: tensor<4xf32>) {
  %0 = aten.clamp %x : tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.clamp' op cannot clamp to a bool result
func.func @clamp_bool(%x: tensor<4xi1>) {
  %0 = aten.clamp %x max = true : tensor<4xi1> -> tensor<4xi1>
  func.return
}

// -----

// A float bound on an int tensor gives f32.
// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.clamp' op result #0 has type tensor<4xi32>, but the inferred type is tensor<4xf32>
func.func @clamp_int_float_bound(%x: tensor<4xi32>) {
  %0 = aten.clamp %x min = 5.000000e-01 : f64 : tensor<4xi32> -> tensor<4xi32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.maximum' op takes tensors only, not Python scalars
func.func @maximum_scalar(%x: tensor<4xf32>, %s: f64) {
  %0 = aten.maximum %x, %s : tensor<4xf32>, f64 -> tensor<4xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.pow' op does not support bool operands
func.func @pow_bool(%x: tensor<4xi1>) {
  %0 = aten.pow %x, %x : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.add' op a float alpha needs a floating-point result, not i32
func.func @float_alpha_int(%x: tensor<4xi32>) {
  %0 = aten.add %x, %x alpha = 2.500000e+00 : f64 : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.add' op a bool alpha needs a bool result, not i32
func.func @bool_alpha_int(%x: tensor<4xi32>) {
  %0 = aten.add %x, %x alpha = true : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.sub' op does not support bool operands (use logical_xor)
func.func @sub_bool(%x: tensor<4xf32>, %b: i1) {
  %0 = aten.sub %x, %b : tensor<4xf32>, i1 -> tensor<4xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.div' op rounding_mode must be "trunc" or "floor", got "round"
func.func @div_rounding_mode(%x: tensor<4xf32>) {
  %0 = aten.div %x, %x rounding_mode = "round" : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.div' op rounding division does not support bool operands
func.func @div_floor_bool(%x: tensor<4xi1>) {
  %0 = aten.div %x, %x rounding_mode = "floor" : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.where' op condition must be a bool tensor, got tensor<4xf32>
func.func @where_condition(%c: tensor<4xf32>, %x: tensor<4xf32>) {
  %0 = aten.where %c, %x, %x : tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

// A fill keeps its input's shape.
// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.full_like' op result #0 has type tensor<3xf32>, but the inferred type is tensor<4xf32>
func.func @full_like_of_another_shape(%x: tensor<4xf32>) {
  %0 = aten.full_like %x value = 0 : i64 : tensor<4xf32> -> tensor<3xf32>
  func.return
}

// -----

// Positions are int32, as many as the dim is long.
// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.positions' op result #0 has type tensor<4xi64>, but the inferred type is tensor<4xi32>
func.func @positions_not_int32(%x: tensor<4x3xf32>) {
  %0 = aten.positions %x dim = 0 : tensor<4x3xf32> -> tensor<4xi64>
  func.return
}

// -----

// A 0-d tensor has no dim to count along.
// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'aten.positions' op needs a tensor with at least one dim, got tensor<f32>
func.func @positions_of_a_scalar_tensor(%x: tensor<f32>) {
  %0 = aten.positions %x dim = 0 : tensor<f32> -> tensor<1xi64>
  func.return
}
