// RUN: fusec-opt %s --split-input-file -p sink-views | filecheck %s

// A unary op on a view of a pointwise result runs on the view's source; the
// view moves below it.
// CHECK-LABEL: func.func @unary
// CHECK-SAME:    (%[[A:.*]]: tensor<16x32xf32>)
// CHECK-NEXT:    %[[E:.*]] = aten.exp %[[A]]
// CHECK-NEXT:    %[[G:.*]] = aten.gelu %[[E]] approximate = "tanh" : tensor<16x32xf32> -> tensor<16x32xf32>
// CHECK-NEXT:    %[[V:.*]] = aten.view %[[G]] : tensor<16x32xf32> -> tensor<2x8x32xf32>
// CHECK-NEXT:    func.return %[[V]]
func.func @unary(%a: tensor<16x32xf32>) -> tensor<2x8x32xf32> {
  %e = aten.exp %a : tensor<16x32xf32> -> tensor<16x32xf32>
  %v = aten.view %e : tensor<16x32xf32> -> tensor<2x8x32xf32>
  %g = aten.gelu %v approximate = "tanh" : tensor<2x8x32xf32> -> tensor<2x8x32xf32>
  func.return %g : tensor<2x8x32xf32>
}

// -----

// A view of an argument (or of a matrix product) stays where it is: no
// pointwise work above it to fuse with, and the ops after it keep one shape (a
// GELU backward reading a saved [b*t, c] product beside [b, t, c] gradients
// would otherwise be cut into kernels of both shapes).
// CHECK-LABEL: func.func @view_of_argument
// CHECK-SAME:    (%[[A:.*]]: tensor<16x32xf32>)
// CHECK-NEXT:    %[[V:.*]] = aten.view %[[A]] : tensor<16x32xf32> -> tensor<2x8x32xf32>
// CHECK-NEXT:    %[[G:.*]] = aten.gelu %[[V]] approximate = "tanh" : tensor<2x8x32xf32> -> tensor<2x8x32xf32>
// CHECK-NEXT:    func.return %[[G]]
func.func @view_of_argument(%a: tensor<16x32xf32>) -> tensor<2x8x32xf32> {
  %v = aten.view %a : tensor<16x32xf32> -> tensor<2x8x32xf32>
  %g = aten.gelu %v approximate = "tanh" : tensor<2x8x32xf32> -> tensor<2x8x32xf32>
  func.return %g : tensor<2x8x32xf32>
}

// -----

// A residual add of an input and a view of a bias add: the input is viewed to
// the source shape, so the two adds are neighbours that `fuse` can group; a
// Python scalar operand stays as it is.
// CHECK-LABEL: func.func @residual
// CHECK-SAME:    (%[[X:.*]]: tensor<2x8x32xf32>, %[[M:.*]]: tensor<16x32xf32>, %[[B:.*]]: tensor<32xf32>)
// CHECK-NEXT:    %[[BIAS:.*]] = aten.add %[[M]], %[[B]]
// CHECK-NEXT:    %[[XV:.*]] = aten.view %[[X]] : tensor<2x8x32xf32> -> tensor<16x32xf32>
// CHECK-NEXT:    %[[R:.*]] = aten.add %[[XV]], %[[BIAS]] alpha = 2 : i64 : tensor<16x32xf32>, tensor<16x32xf32> -> tensor<16x32xf32>
// CHECK-NEXT:    %[[RV:.*]] = aten.view %[[R]] : tensor<16x32xf32> -> tensor<2x8x32xf32>
// CHECK-NEXT:    func.return %[[RV]]
func.func @residual(%x: tensor<2x8x32xf32>, %m: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<2x8x32xf32> {
  %bias = aten.add %m, %b : tensor<16x32xf32>, tensor<32xf32> -> tensor<16x32xf32>
  %v = aten.view %bias : tensor<16x32xf32> -> tensor<2x8x32xf32>
  %r = aten.add %x, %v alpha = 2 : i64 : tensor<2x8x32xf32>, tensor<2x8x32xf32> -> tensor<2x8x32xf32>
  func.return %r : tensor<2x8x32xf32>
}

// -----

// Two views of one source shape: the op reads both sources; a view with another
// reader stays for it.
// CHECK-LABEL: func.func @two_views
// CHECK-SAME:    (%[[A:.*]]: tensor<16x32xf32>, %[[B:.*]]: tensor<16x32xf32>)
// CHECK-NEXT:    %[[EA:.*]] = aten.exp %[[A]]
// CHECK-NEXT:    %[[VA:.*]] = aten.view %[[EA]]
// CHECK-NEXT:    %[[M:.*]] = aten.mul %[[EA]], %[[B]] : tensor<16x32xf32>, tensor<16x32xf32> -> tensor<16x32xf32>
// CHECK-NEXT:    %[[MV:.*]] = aten.view %[[M]] : tensor<16x32xf32> -> tensor<2x8x32xf32>
// CHECK-NEXT:    %[[S:.*]] = aten.sum %[[VA]]
// CHECK-NEXT:    func.return %[[MV]], %[[S]]
func.func @two_views(%a: tensor<16x32xf32>, %b: tensor<16x32xf32>) -> (tensor<2x8x32xf32>, tensor<1x8x32xf32>) {
  %ea = aten.exp %a : tensor<16x32xf32> -> tensor<16x32xf32>
  %va = aten.view %ea : tensor<16x32xf32> -> tensor<2x8x32xf32>
  %vb = aten.view %b : tensor<16x32xf32> -> tensor<2x8x32xf32>
  %m = aten.mul %va, %vb : tensor<2x8x32xf32>, tensor<2x8x32xf32> -> tensor<2x8x32xf32>
  %s = aten.sum %va dims = [0] keepdim = true : tensor<2x8x32xf32> -> tensor<1x8x32xf32>
  func.return %m, %s : tensor<2x8x32xf32>, tensor<1x8x32xf32>
}

// -----

// Negative: the other operand broadcasts.
// CHECK-LABEL: func.func @broadcast
// CHECK-NEXT:    %[[V:.*]] = aten.view
// CHECK-NEXT:    %[[R:.*]] = aten.add %[[V]], %{{.*}} : tensor<2x8x32xf32>, tensor<32xf32> -> tensor<2x8x32xf32>
// CHECK-NEXT:    func.return %[[R]]
func.func @broadcast(%a: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<2x8x32xf32> {
  %v = aten.view %a : tensor<16x32xf32> -> tensor<2x8x32xf32>
  %r = aten.add %v, %b : tensor<2x8x32xf32>, tensor<32xf32> -> tensor<2x8x32xf32>
  func.return %r : tensor<2x8x32xf32>
}

// -----

// Negative: viewing the other operand buys no fusion (the view's source is not
// a pointwise result), and the rewrite would undo itself: nothing moves.
// CHECK-LABEL: func.func @no_gain
// CHECK-NEXT:    %[[V:.*]] = aten.view
// CHECK-NEXT:    %[[R:.*]] = aten.add %[[V]], %{{.*}} : tensor<2x8x32xf32>, tensor<2x8x32xf32>
// CHECK-NEXT:    func.return %[[R]]
func.func @no_gain(%a: tensor<16x32xf32>, %b: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  %v = aten.view %a : tensor<16x32xf32> -> tensor<2x8x32xf32>
  %r = aten.add %v, %b : tensor<2x8x32xf32>, tensor<2x8x32xf32> -> tensor<2x8x32xf32>
  func.return %r : tensor<2x8x32xf32>
}

// -----

// Negative: views of two different source shapes.
// CHECK-LABEL: func.func @two_sources
// CHECK:         %[[R:.*]] = aten.mul %{{.*}}, %{{.*}} : tensor<4x4xf32>, tensor<4x4xf32>
// CHECK-NEXT:    func.return %[[R]]
func.func @two_sources(%a: tensor<16xf32>, %b: tensor<2x8xf32>) -> tensor<4x4xf32> {
  %va = aten.view %a : tensor<16xf32> -> tensor<4x4xf32>
  %vb = aten.view %b : tensor<2x8xf32> -> tensor<4x4xf32>
  %r = aten.mul %va, %vb : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  func.return %r : tensor<4x4xf32>
}
