// RUN: fusec-opt %s --split-input-file | filecheck %s
// RUN: fusec-opt %s --split-input-file --print-op-generic | fusec-opt --split-input-file | filecheck %s

// Every unary pointwise aten op, in custom and generic form.

// CHECK-LABEL: func.func @neg
// CHECK-SAME: (%[[X:.*]]: tensor<4x3xf32>)
// CHECK: %[[R:.*]] = aten.neg %[[X]] : tensor<4x3xf32> -> tensor<4x3xf32>
// CHECK-NEXT: func.return %[[R]] : tensor<4x3xf32>
func.func @neg(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %r = aten.neg %x : tensor<4x3xf32> -> tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}

// -----

// Integers keep their dtype.
// CHECK-LABEL: func.func @neg_int
// CHECK-SAME: (%[[X:.*]]: tensor<4xi32>)
// CHECK: %[[R:.*]] = aten.neg %[[X]] : tensor<4xi32> -> tensor<4xi32>
// CHECK-NEXT: func.return %[[R]] : tensor<4xi32>
func.func @neg_int(%x: tensor<4xi32>) -> tensor<4xi32> {
  %r = aten.neg %x : tensor<4xi32> -> tensor<4xi32>
  func.return %r : tensor<4xi32>
}

// -----

// CHECK-LABEL: func.func @abs
// CHECK-SAME: (%[[X:.*]]: tensor<4x3xf32>)
// CHECK: %[[R:.*]] = aten.abs %[[X]] : tensor<4x3xf32> -> tensor<4x3xf32>
// CHECK-NEXT: func.return %[[R]] : tensor<4x3xf32>
func.func @abs(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %r = aten.abs %x : tensor<4x3xf32> -> tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}

// -----

// Integers keep their dtype.
// CHECK-LABEL: func.func @abs_int
// CHECK-SAME: (%[[X:.*]]: tensor<4xi32>)
// CHECK: %[[R:.*]] = aten.abs %[[X]] : tensor<4xi32> -> tensor<4xi32>
// CHECK-NEXT: func.return %[[R]] : tensor<4xi32>
func.func @abs_int(%x: tensor<4xi32>) -> tensor<4xi32> {
  %r = aten.abs %x : tensor<4xi32> -> tensor<4xi32>
  func.return %r : tensor<4xi32>
}

// -----

// CHECK-LABEL: func.func @relu
// CHECK-SAME: (%[[X:.*]]: tensor<4x3xf32>)
// CHECK: %[[R:.*]] = aten.relu %[[X]] : tensor<4x3xf32> -> tensor<4x3xf32>
// CHECK-NEXT: func.return %[[R]] : tensor<4x3xf32>
func.func @relu(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %r = aten.relu %x : tensor<4x3xf32> -> tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}

// -----

// Integers keep their dtype.
// CHECK-LABEL: func.func @relu_int
// CHECK-SAME: (%[[X:.*]]: tensor<4xi32>)
// CHECK: %[[R:.*]] = aten.relu %[[X]] : tensor<4xi32> -> tensor<4xi32>
// CHECK-NEXT: func.return %[[R]] : tensor<4xi32>
func.func @relu_int(%x: tensor<4xi32>) -> tensor<4xi32> {
  %r = aten.relu %x : tensor<4xi32> -> tensor<4xi32>
  func.return %r : tensor<4xi32>
}

// -----

// CHECK-LABEL: func.func @exp
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf16>)
// CHECK: %[[R:.*]] = aten.exp %[[X]] : tensor<2x3xf16> -> tensor<2x3xf16>
// CHECK-NEXT: func.return %[[R]] : tensor<2x3xf16>
func.func @exp(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %r = aten.exp %x : tensor<2x3xf16> -> tensor<2x3xf16>
  func.return %r : tensor<2x3xf16>
}

// -----

// Integers become the default float, as in PyTorch.
// CHECK-LABEL: func.func @exp_int
// CHECK-SAME: (%[[X:.*]]: tensor<3xi64>)
// CHECK: %[[R:.*]] = aten.exp %[[X]] : tensor<3xi64> -> tensor<3xf32>
// CHECK-NEXT: func.return %[[R]] : tensor<3xf32>
func.func @exp_int(%x: tensor<3xi64>) -> tensor<3xf32> {
  %r = aten.exp %x : tensor<3xi64> -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @expm1
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf16>)
// CHECK: %[[R:.*]] = aten.expm1 %[[X]] : tensor<2x3xf16> -> tensor<2x3xf16>
// CHECK-NEXT: func.return %[[R]] : tensor<2x3xf16>
func.func @expm1(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %r = aten.expm1 %x : tensor<2x3xf16> -> tensor<2x3xf16>
  func.return %r : tensor<2x3xf16>
}

// -----

// Integers become the default float, as in PyTorch.
// CHECK-LABEL: func.func @expm1_int
// CHECK-SAME: (%[[X:.*]]: tensor<3xi64>)
// CHECK: %[[R:.*]] = aten.expm1 %[[X]] : tensor<3xi64> -> tensor<3xf32>
// CHECK-NEXT: func.return %[[R]] : tensor<3xf32>
func.func @expm1_int(%x: tensor<3xi64>) -> tensor<3xf32> {
  %r = aten.expm1 %x : tensor<3xi64> -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @log
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf16>)
// CHECK: %[[R:.*]] = aten.log %[[X]] : tensor<2x3xf16> -> tensor<2x3xf16>
// CHECK-NEXT: func.return %[[R]] : tensor<2x3xf16>
func.func @log(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %r = aten.log %x : tensor<2x3xf16> -> tensor<2x3xf16>
  func.return %r : tensor<2x3xf16>
}

// -----

// Integers become the default float, as in PyTorch.
// CHECK-LABEL: func.func @log_int
// CHECK-SAME: (%[[X:.*]]: tensor<3xi64>)
// CHECK: %[[R:.*]] = aten.log %[[X]] : tensor<3xi64> -> tensor<3xf32>
// CHECK-NEXT: func.return %[[R]] : tensor<3xf32>
func.func @log_int(%x: tensor<3xi64>) -> tensor<3xf32> {
  %r = aten.log %x : tensor<3xi64> -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @log1p
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf16>)
// CHECK: %[[R:.*]] = aten.log1p %[[X]] : tensor<2x3xf16> -> tensor<2x3xf16>
// CHECK-NEXT: func.return %[[R]] : tensor<2x3xf16>
func.func @log1p(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %r = aten.log1p %x : tensor<2x3xf16> -> tensor<2x3xf16>
  func.return %r : tensor<2x3xf16>
}

// -----

// Integers become the default float, as in PyTorch.
// CHECK-LABEL: func.func @log1p_int
// CHECK-SAME: (%[[X:.*]]: tensor<3xi64>)
// CHECK: %[[R:.*]] = aten.log1p %[[X]] : tensor<3xi64> -> tensor<3xf32>
// CHECK-NEXT: func.return %[[R]] : tensor<3xf32>
func.func @log1p_int(%x: tensor<3xi64>) -> tensor<3xf32> {
  %r = aten.log1p %x : tensor<3xi64> -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @sqrt
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf16>)
// CHECK: %[[R:.*]] = aten.sqrt %[[X]] : tensor<2x3xf16> -> tensor<2x3xf16>
// CHECK-NEXT: func.return %[[R]] : tensor<2x3xf16>
func.func @sqrt(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %r = aten.sqrt %x : tensor<2x3xf16> -> tensor<2x3xf16>
  func.return %r : tensor<2x3xf16>
}

// -----

// Integers become the default float, as in PyTorch.
// CHECK-LABEL: func.func @sqrt_int
// CHECK-SAME: (%[[X:.*]]: tensor<3xi64>)
// CHECK: %[[R:.*]] = aten.sqrt %[[X]] : tensor<3xi64> -> tensor<3xf32>
// CHECK-NEXT: func.return %[[R]] : tensor<3xf32>
func.func @sqrt_int(%x: tensor<3xi64>) -> tensor<3xf32> {
  %r = aten.sqrt %x : tensor<3xi64> -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @rsqrt
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf16>)
// CHECK: %[[R:.*]] = aten.rsqrt %[[X]] : tensor<2x3xf16> -> tensor<2x3xf16>
// CHECK-NEXT: func.return %[[R]] : tensor<2x3xf16>
func.func @rsqrt(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %r = aten.rsqrt %x : tensor<2x3xf16> -> tensor<2x3xf16>
  func.return %r : tensor<2x3xf16>
}

// -----

// Integers become the default float, as in PyTorch.
// CHECK-LABEL: func.func @rsqrt_int
// CHECK-SAME: (%[[X:.*]]: tensor<3xi64>)
// CHECK: %[[R:.*]] = aten.rsqrt %[[X]] : tensor<3xi64> -> tensor<3xf32>
// CHECK-NEXT: func.return %[[R]] : tensor<3xf32>
func.func @rsqrt_int(%x: tensor<3xi64>) -> tensor<3xf32> {
  %r = aten.rsqrt %x : tensor<3xi64> -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @reciprocal
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf16>)
// CHECK: %[[R:.*]] = aten.reciprocal %[[X]] : tensor<2x3xf16> -> tensor<2x3xf16>
// CHECK-NEXT: func.return %[[R]] : tensor<2x3xf16>
func.func @reciprocal(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %r = aten.reciprocal %x : tensor<2x3xf16> -> tensor<2x3xf16>
  func.return %r : tensor<2x3xf16>
}

// -----

// Integers become the default float, as in PyTorch.
// CHECK-LABEL: func.func @reciprocal_int
// CHECK-SAME: (%[[X:.*]]: tensor<3xi64>)
// CHECK: %[[R:.*]] = aten.reciprocal %[[X]] : tensor<3xi64> -> tensor<3xf32>
// CHECK-NEXT: func.return %[[R]] : tensor<3xf32>
func.func @reciprocal_int(%x: tensor<3xi64>) -> tensor<3xf32> {
  %r = aten.reciprocal %x : tensor<3xi64> -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @sigmoid
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf16>)
// CHECK: %[[R:.*]] = aten.sigmoid %[[X]] : tensor<2x3xf16> -> tensor<2x3xf16>
// CHECK-NEXT: func.return %[[R]] : tensor<2x3xf16>
func.func @sigmoid(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %r = aten.sigmoid %x : tensor<2x3xf16> -> tensor<2x3xf16>
  func.return %r : tensor<2x3xf16>
}

// -----

// Integers become the default float, as in PyTorch.
// CHECK-LABEL: func.func @sigmoid_int
// CHECK-SAME: (%[[X:.*]]: tensor<3xi64>)
// CHECK: %[[R:.*]] = aten.sigmoid %[[X]] : tensor<3xi64> -> tensor<3xf32>
// CHECK-NEXT: func.return %[[R]] : tensor<3xf32>
func.func @sigmoid_int(%x: tensor<3xi64>) -> tensor<3xf32> {
  %r = aten.sigmoid %x : tensor<3xi64> -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @tanh
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf16>)
// CHECK: %[[R:.*]] = aten.tanh %[[X]] : tensor<2x3xf16> -> tensor<2x3xf16>
// CHECK-NEXT: func.return %[[R]] : tensor<2x3xf16>
func.func @tanh(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %r = aten.tanh %x : tensor<2x3xf16> -> tensor<2x3xf16>
  func.return %r : tensor<2x3xf16>
}

// -----

// Integers become the default float, as in PyTorch.
// CHECK-LABEL: func.func @tanh_int
// CHECK-SAME: (%[[X:.*]]: tensor<3xi64>)
// CHECK: %[[R:.*]] = aten.tanh %[[X]] : tensor<3xi64> -> tensor<3xf32>
// CHECK-NEXT: func.return %[[R]] : tensor<3xf32>
func.func @tanh_int(%x: tensor<3xi64>) -> tensor<3xf32> {
  %r = aten.tanh %x : tensor<3xi64> -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @erf
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf16>)
// CHECK: %[[R:.*]] = aten.erf %[[X]] : tensor<2x3xf16> -> tensor<2x3xf16>
// CHECK-NEXT: func.return %[[R]] : tensor<2x3xf16>
func.func @erf(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %r = aten.erf %x : tensor<2x3xf16> -> tensor<2x3xf16>
  func.return %r : tensor<2x3xf16>
}

// -----

// Integers become the default float, as in PyTorch.
// CHECK-LABEL: func.func @erf_int
// CHECK-SAME: (%[[X:.*]]: tensor<3xi64>)
// CHECK: %[[R:.*]] = aten.erf %[[X]] : tensor<3xi64> -> tensor<3xf32>
// CHECK-NEXT: func.return %[[R]] : tensor<3xf32>
func.func @erf_int(%x: tensor<3xi64>) -> tensor<3xf32> {
  %r = aten.erf %x : tensor<3xi64> -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @sin
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf16>)
// CHECK: %[[R:.*]] = aten.sin %[[X]] : tensor<2x3xf16> -> tensor<2x3xf16>
// CHECK-NEXT: func.return %[[R]] : tensor<2x3xf16>
func.func @sin(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %r = aten.sin %x : tensor<2x3xf16> -> tensor<2x3xf16>
  func.return %r : tensor<2x3xf16>
}

// -----

// Integers become the default float, as in PyTorch.
// CHECK-LABEL: func.func @sin_int
// CHECK-SAME: (%[[X:.*]]: tensor<3xi64>)
// CHECK: %[[R:.*]] = aten.sin %[[X]] : tensor<3xi64> -> tensor<3xf32>
// CHECK-NEXT: func.return %[[R]] : tensor<3xf32>
func.func @sin_int(%x: tensor<3xi64>) -> tensor<3xf32> {
  %r = aten.sin %x : tensor<3xi64> -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @cos
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf16>)
// CHECK: %[[R:.*]] = aten.cos %[[X]] : tensor<2x3xf16> -> tensor<2x3xf16>
// CHECK-NEXT: func.return %[[R]] : tensor<2x3xf16>
func.func @cos(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %r = aten.cos %x : tensor<2x3xf16> -> tensor<2x3xf16>
  func.return %r : tensor<2x3xf16>
}

// -----

// Integers become the default float, as in PyTorch.
// CHECK-LABEL: func.func @cos_int
// CHECK-SAME: (%[[X:.*]]: tensor<3xi64>)
// CHECK: %[[R:.*]] = aten.cos %[[X]] : tensor<3xi64> -> tensor<3xf32>
// CHECK-NEXT: func.return %[[R]] : tensor<3xf32>
func.func @cos_int(%x: tensor<3xi64>) -> tensor<3xf32> {
  %r = aten.cos %x : tensor<3xi64> -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// -----

// 0-d tensors and bool inputs.
// CHECK-LABEL: func.func @exp_bool_0d
// CHECK-SAME: (%[[X:.*]]: tensor<i1>)
// CHECK: %[[R:.*]] = aten.exp %[[X]] : tensor<i1> -> tensor<f32>
// CHECK-NEXT: func.return %[[R]] : tensor<f32>
func.func @exp_bool_0d(%x: tensor<i1>) -> tensor<f32> {
  %r = aten.exp %x : tensor<i1> -> tensor<f32>
  func.return %r : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @silu
// CHECK-SAME: (%[[X:.*]]: tensor<8xbf16>)
// CHECK: %[[R:.*]] = aten.silu %[[X]] : tensor<8xbf16> -> tensor<8xbf16>
// CHECK-NEXT: func.return %[[R]] : tensor<8xbf16>
func.func @silu(%x: tensor<8xbf16>) -> tensor<8xbf16> {
  %r = aten.silu %x : tensor<8xbf16> -> tensor<8xbf16>
  func.return %r : tensor<8xbf16>
}

// -----

// CHECK-LABEL: func.func @logical_not
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<i1>)
// CHECK: %[[A:.*]] = aten.logical_not %[[X]] : tensor<4xf32> -> tensor<4xi1>
// CHECK-NEXT: %[[B:.*]] = aten.logical_not %[[Y]] : tensor<i1> -> tensor<i1>
// CHECK-NEXT: func.return %[[A]], %[[B]] : tensor<4xi1>, tensor<i1>
func.func @logical_not(%x: tensor<4xf32>, %y: tensor<i1>) -> (tensor<4xi1>, tensor<i1>) {
  %a = aten.logical_not %x : tensor<4xf32> -> tensor<4xi1>
  %b = aten.logical_not %y : tensor<i1> -> tensor<i1>
  func.return %a, %b : tensor<4xi1>, tensor<i1>
}

// -----

// negative_slope is optional, a float or an int.
// CHECK-LABEL: func.func @leaky_relu
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK: %[[A:.*]] = aten.leaky_relu %[[X]] : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[B:.*]] = aten.leaky_relu %[[X]] negative_slope = 2.000000e-01 : f64 : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[C:.*]] = aten.leaky_relu %[[X]] negative_slope = 1 : i64 : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT: func.return %[[A]], %[[B]], %[[C]] : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
func.func @leaky_relu(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = aten.leaky_relu %x : tensor<4xf32> -> tensor<4xf32>
  %b = aten.leaky_relu %x negative_slope = 2.000000e-01 : f64 : tensor<4xf32> -> tensor<4xf32>
  %c = aten.leaky_relu %x negative_slope = 1 : i64 : tensor<4xf32> -> tensor<4xf32>
  func.return %a, %b, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// approximate is optional: absent, "none" or "tanh".
// CHECK-LABEL: func.func @gelu
// CHECK-SAME: (%[[X:.*]]: tensor<2x2xf64>)
// CHECK: %[[A:.*]] = aten.gelu %[[X]] : tensor<2x2xf64> -> tensor<2x2xf64>
// CHECK-NEXT: %[[B:.*]] = aten.gelu %[[X]] approximate = "tanh" : tensor<2x2xf64> -> tensor<2x2xf64>
// CHECK-NEXT: %[[C:.*]] = aten.gelu %[[X]] approximate = "none" : tensor<2x2xf64> -> tensor<2x2xf64>
// CHECK-NEXT: func.return %[[A]], %[[B]], %[[C]] : tensor<2x2xf64>, tensor<2x2xf64>, tensor<2x2xf64>
func.func @gelu(%x: tensor<2x2xf64>) -> (tensor<2x2xf64>, tensor<2x2xf64>, tensor<2x2xf64>) {
  %a = aten.gelu %x : tensor<2x2xf64> -> tensor<2x2xf64>
  %b = aten.gelu %x approximate = "tanh" : tensor<2x2xf64> -> tensor<2x2xf64>
  %c = aten.gelu %x approximate = "none" : tensor<2x2xf64> -> tensor<2x2xf64>
  func.return %a, %b, %c : tensor<2x2xf64>, tensor<2x2xf64>, tensor<2x2xf64>
}

// -----

// Dynamic sizes pass through.
// CHECK-LABEL: func.func @dynamic
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32>)
// CHECK: %[[R:.*]] = aten.tanh %[[X]] : tensor<?x4xf32> -> tensor<?x4xf32>
// CHECK-NEXT: func.return %[[R]] : tensor<?x4xf32>
func.func @dynamic(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %r = aten.tanh %x : tensor<?x4xf32> -> tensor<?x4xf32>
  func.return %r : tensor<?x4xf32>
}
