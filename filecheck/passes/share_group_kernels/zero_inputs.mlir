// RUN: fusec-opt %s --split-input-file -p share-group-kernels | filecheck %s

// The last backward step of a recurrence gets no gradient from a later step: it
// is the step kernel with the incoming gradient and the gate it meets at zero
// (`0 * 0 -> 0`, `x + 0 -> x`), so it becomes that kernel, fed zeros.
// CHECK-LABEL: func.func @missing_gradient
// CHECK-SAME:    (%[[DH:.*]]: tensor<4xf32>, %[[C0:.*]]: tensor<4xf32>, %[[DH2:.*]]: tensor<4xf32>, %[[C1:.*]]: tensor<4xf32>, %[[GATE:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[Z:.*]] = fusion.zeros_like %[[DH]] : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT:    %[[G:.*]] = fusion.group (%[[D:.*]] = %[[DH]], %[[C:.*]] = %[[C0]], %{{.*}} = %[[Z]], %{{.*}} = %[[Z]]) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>) {
// CHECK-NEXT:      aten.tanh %[[D]]
// CHECK-NEXT:      aten.mul
// CHECK-NEXT:      aten.add
// CHECK-NEXT:      aten.mul
// CHECK-NEXT:      fusion.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[H:.*]] = fusion.group (%{{.*}} = %[[DH2]], %{{.*}} = %[[C1]], %{{.*}} = %[[G]], %{{.*}} = %[[GATE]])
// CHECK:         func.return %[[G]], %[[H]]
func.func @missing_gradient(%dh: tensor<4xf32>, %c0: tensor<4xf32>, %dh2: tensor<4xf32>, %c1: tensor<4xf32>, %gate: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %g = fusion.group (%d = %dh, %c = %c0) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>) {
    %0 = aten.tanh %d : tensor<4xf32> -> tensor<4xf32>
    %1 = aten.mul %0, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    fusion.yield %1 : tensor<4xf32>
  }
  %h = fusion.group (%d = %dh2, %c = %c1, %n = %g, %f = %gate) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>) {
    %0 = aten.tanh %d : tensor<4xf32> -> tensor<4xf32>
    %1 = aten.mul %n, %f : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %2 = aten.add %0, %1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %3 = aten.mul %2, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    fusion.yield %3 : tensor<4xf32>
  }
  func.return %g, %h : tensor<4xf32>, tensor<4xf32>
}

// -----

// One missing addend: `0 + x -> x` (no alpha) and `x - 0 -> x`.
// CHECK-LABEL: func.func @missing_addend
// CHECK:         %[[Z:.*]] = fusion.zeros_like %{{.*}} : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT:    fusion.group (%{{.*}} = %{{.*}}, %{{.*}} = %[[Z]]) : (tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT:      aten.add
// CHECK-NEXT:      aten.sub
// CHECK-NEXT:      aten.exp
func.func @missing_addend(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = fusion.group (%p = %x) : (tensor<4xf32>) -> (tensor<4xf32>) {
    %0 = aten.exp %p : tensor<4xf32> -> tensor<4xf32>
    fusion.yield %0 : tensor<4xf32>
  }
  %b = fusion.group (%p = %a, %q = %y) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>) {
    %0 = aten.add %q, %p : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %1 = aten.sub %0, %q : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %2 = aten.exp %1 : tensor<4xf32> -> tensor<4xf32>
    fusion.yield %2 : tensor<4xf32>
  }
  func.return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// -----

// Zero times an input that is still read elsewhere is not folded: 0 * inf is NaN,
// not 0, so the groups stay apart.
// CHECK-LABEL: func.func @zero_times_a_live_input
// CHECK-NOT:     fusion.zeros_like
// CHECK:         fusion.group (%{{.*}} = %{{.*}}) : (tensor<4xf32>) -> (tensor<4xf32>)
func.func @zero_times_a_live_input(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = fusion.group (%p = %x) : (tensor<4xf32>) -> (tensor<4xf32>) {
    %0 = aten.exp %p : tensor<4xf32> -> tensor<4xf32>
    fusion.yield %0 : tensor<4xf32>
  }
  %b = fusion.group (%p = %a, %q = %y) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>) {
    %0 = aten.mul %q, %p : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %1 = aten.add %p, %0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %2 = aten.exp %1 : tensor<4xf32> -> tensor<4xf32>
    fusion.yield %2 : tensor<4xf32>
  }
  func.return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// -----

// `0 + x` does not fold when the zero broadcasts x to a larger result, nor
// `0 + alpha * x` (that is not x): the groups stay apart.
// CHECK-LABEL: func.func @no_identity
// CHECK-NOT:     fusion.zeros_like
func.func @no_identity(%x: tensor<4xf32>, %y: tensor<3x4xf32>, %w: tensor<4xf32>) -> (tensor<4xf32>, tensor<3x4xf32>, tensor<4xf32>) {
  %a = fusion.group (%p = %x) : (tensor<4xf32>) -> (tensor<4xf32>) {
    %0 = aten.exp %p : tensor<4xf32> -> tensor<4xf32>
    %1 = aten.mul %0, %p : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    fusion.yield %1 : tensor<4xf32>
  }
  %b = fusion.group (%p = %a, %q = %y) : (tensor<4xf32>, tensor<3x4xf32>) -> (tensor<3x4xf32>) {
    %0 = aten.add %q, %p : tensor<3x4xf32>, tensor<4xf32> -> tensor<3x4xf32>
    %1 = aten.exp %0 : tensor<3x4xf32> -> tensor<3x4xf32>
    %2 = aten.mul %1, %p : tensor<3x4xf32>, tensor<4xf32> -> tensor<3x4xf32>
    fusion.yield %2 : tensor<3x4xf32>
  }
  %c = fusion.group (%p = %a, %q = %w) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>) {
    %0 = aten.add %q, %p alpha = 2 : i64 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %1 = aten.exp %0 : tensor<4xf32> -> tensor<4xf32>
    %2 = aten.mul %1, %p : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    fusion.yield %2 : tensor<4xf32>
  }
  func.return %a, %b, %c : tensor<4xf32>, tensor<3x4xf32>, tensor<4xf32>
}
