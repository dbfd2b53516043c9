// RUN: fusec-opt %s --split-input-file -p decompose-reductions | filecheck %s

// CHECK-LABEL: func.func @softmax
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT:    %[[M:.*]] = aten.amax %[[X]] dims = [1] keepdim = true : tensor<4x8xf32> -> tensor<4x1xf32>
// CHECK-NEXT:    %[[D:.*]] = aten.sub %[[X]], %[[M]] : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    %[[E:.*]] = aten.exp %[[D]] : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    %[[S:.*]] = aten.sum %[[E]] dims = [1] keepdim = true : tensor<4x8xf32> -> tensor<4x1xf32>
// CHECK-NEXT:    %[[I:.*]] = aten.reciprocal %[[S]] : tensor<4x1xf32> -> tensor<4x1xf32>
// CHECK-NEXT:    %[[R:.*]] = aten.mul %[[E]], %[[I]] : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    func.return %[[R]]
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = aten.softmax %x dim = -1 : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// -----

// log_softmax subtracts the log of the sum from the shifted input.
// CHECK-LABEL: func.func @log_softmax
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT:    %[[M:.*]] = aten.amax %[[X]] dims = [0] keepdim = true
// CHECK-NEXT:    %[[D:.*]] = aten.sub %[[X]], %[[M]]
// CHECK-NEXT:    %[[E:.*]] = aten.exp %[[D]]
// CHECK-NEXT:    %[[S:.*]] = aten.sum %[[E]] dims = [0] keepdim = true
// CHECK-NEXT:    %[[L:.*]] = aten.log %[[S]]
// CHECK-NEXT:    %[[R:.*]] = aten.sub %[[D]], %[[L]]
// CHECK-NEXT:    func.return %[[R]]
func.func @log_softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = aten.log_softmax %x dim = 0 : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// -----

// A softmax to another dtype converts first.
// CHECK-LABEL: func.func @softmax_dtype
// CHECK-NEXT:    %[[C:.*]] = aten.to %{{.*}} : tensor<4x8xf16> -> tensor<4x8xf32>
// CHECK-NEXT:    aten.amax %[[C]]
func.func @softmax_dtype(%x: tensor<4x8xf16>) -> tensor<4x8xf32> {
  %r = aten.softmax %x dim = 1 : tensor<4x8xf16> -> tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME:    (%[[X:.*]]: tensor<2x4x8xf32>, %[[W:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<4x8xf32>)
// CHECK-NEXT:    %[[M:.*]] = aten.mean %[[X]] dims = [1, 2] keepdim = true : tensor<2x4x8xf32> -> tensor<2x1x1xf32>
// CHECK-NEXT:    %[[C:.*]] = aten.sub %[[X]], %[[M]]
// CHECK-NEXT:    %[[SQ:.*]] = aten.mul %[[C]], %[[C]]
// CHECK-NEXT:    %[[V:.*]] = aten.mean %[[SQ]] dims = [1, 2] keepdim = true
// CHECK-NEXT:    %[[EPS:.*]] = arith.constant 1.000000e-05 : f64
// CHECK-NEXT:    %[[VE:.*]] = aten.add %[[V]], %[[EPS]]
// CHECK-NEXT:    %[[I:.*]] = aten.rsqrt %[[VE]]
// CHECK-NEXT:    %[[N:.*]] = aten.mul %[[C]], %[[I]]
// CHECK-NEXT:    %[[S:.*]] = aten.mul %[[N]], %[[W]]
// CHECK-NEXT:    %[[R:.*]] = aten.add %[[S]], %[[B]]
// CHECK-NEXT:    func.return %[[R]]
func.func @layer_norm(%x: tensor<2x4x8xf32>, %w: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<2x4x8xf32> {
  %r = aten.layer_norm %x, %w, %b normalized_shape = [4, 8] eps = 1.0e-05 : f64 : tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32> -> tensor<2x4x8xf32>
  func.return %r : tensor<2x4x8xf32>
}

// -----

// Without weight, only the bias is applied.
// CHECK-LABEL: func.func @layer_norm_bias_only
// CHECK:         %[[N:.*]] = aten.mul %{{.*}}, %{{.*}} : tensor<3x8xf32>, tensor<3x1xf32> -> tensor<3x8xf32>
// CHECK-NEXT:    %[[R:.*]] = aten.add %[[N]], %{{.*}} : tensor<3x8xf32>, tensor<8xf32>
// CHECK-NEXT:    func.return %[[R]]
func.func @layer_norm_bias_only(%x: tensor<3x8xf32>, %b: tensor<8xf32>) -> tensor<3x8xf32> {
  %r = aten.layer_norm %x, %b normalized_shape = [8] eps = 1.0e-05 : f64 has_weight = false : tensor<3x8xf32>, tensor<8xf32> -> tensor<3x8xf32>
  func.return %r : tensor<3x8xf32>
}

// -----

// Reductions keep their dims; squeezes (views, shape-independent) restore the result.
// CHECK-LABEL: func.func @keep_dims
// CHECK-NEXT:    %[[K:.*]] = aten.var %{{.*}} dims = [0, 2] keepdim = true correction = 0 : i64 : tensor<2x3x4xf32> -> tensor<1x3x1xf32>
// CHECK-NEXT:    %[[S1:.*]] = aten.squeeze %[[K]] dim = 2 : tensor<1x3x1xf32> -> tensor<1x3xf32>
// CHECK-NEXT:    %[[S0:.*]] = aten.squeeze %[[S1]] dim = 0 : tensor<1x3xf32> -> tensor<3xf32>
// CHECK-NEXT:    func.return %[[S0]]
func.func @keep_dims(%x: tensor<2x3x4xf32>) -> tensor<3xf32> {
  %r = aten.var %x dims = [0, -1] correction = 0 : i64 : tensor<2x3x4xf32> -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// -----

// A squeezed leading dim that broadcasting restores anyway is read unsqueezed.
// CHECK-LABEL: func.func @leading_broadcast
// CHECK-SAME:    (%[[G:.*]]: tensor<4x8xf32>, %[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT:    %[[K:.*]] = aten.sum %[[X]] dims = [0] keepdim = true : tensor<4x8xf32> -> tensor<1x8xf32>
// CHECK-NEXT:    %[[S:.*]] = aten.squeeze %[[K]] dim = 0
// CHECK-NEXT:    %[[R:.*]] = aten.sub %[[G]], %[[K]] : tensor<4x8xf32>, tensor<1x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    func.return %[[R]], %[[S]]
func.func @leading_broadcast(%g: tensor<4x8xf32>, %x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>) {
  %s = aten.sum %x dims = [0] : tensor<4x8xf32> -> tensor<8xf32>
  %r = aten.sub %g, %s : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  func.return %r, %s : tensor<4x8xf32>, tensor<8xf32>
}

// -----

// A square is a product; other exponents stay.
// CHECK-LABEL: func.func @square
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT:    %{{.*}} = arith.constant 3.000000e+00 : f64
// CHECK-NEXT:    %[[S:.*]] = aten.mul %[[X]], %[[X]] : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    %[[C:.*]] = aten.pow %[[X]], %{{.*}} : tensor<4x8xf32>, f64 -> tensor<4x8xf32>
func.func @square(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %two = arith.constant 2.0 : f64
  %three = arith.constant 3.0 : f64
  %s = aten.pow %x, %two : tensor<4x8xf32>, f64 -> tensor<4x8xf32>
  %c = aten.pow %x, %three : tensor<4x8xf32>, f64 -> tensor<4x8xf32>
  func.return %s, %c : tensor<4x8xf32>, tensor<4x8xf32>
}
