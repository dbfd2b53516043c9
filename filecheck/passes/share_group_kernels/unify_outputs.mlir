// RUN: fusec-opt %s --split-input-file -p share-group-kernels | filecheck %s

// Alpha-equivalent bodies that yield different values all yield the union (the
// first group's outputs first); the second group writes %0 to a buffer nobody reads.
// CHECK-LABEL: func.func @last_step_yields_less
// CHECK:         %[[A0:.*]], %[[A1:.*]] = fusion.group (%{{.*}} = %{{.*}}) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
// CHECK:           fusion.yield %{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32>
// CHECK:         %[[B0:.*]], %{{.*}} = fusion.group (%[[X:.*]] = %[[A0]]) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
// CHECK-NEXT:      %[[E:.*]] = aten.exp %[[X]]
// CHECK-NEXT:      %[[N:.*]] = aten.neg %[[E]]
// CHECK-NEXT:      fusion.yield %[[N]], %[[E]] : tensor<4xf32>, tensor<4xf32>
// CHECK:         func.return %[[A1]], %[[B0]]
func.func @last_step_yields_less(%p: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a:2 = fusion.group (%x = %p) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
    %1 = aten.neg %0 : tensor<4xf32> -> tensor<4xf32>
    fusion.yield %1, %0 : tensor<4xf32>, tensor<4xf32>
  }
  %b = fusion.group (%x = %a#0) : (tensor<4xf32>) -> (tensor<4xf32>) {
    %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
    %1 = aten.neg %0 : tensor<4xf32> -> tensor<4xf32>
    fusion.yield %1 : tensor<4xf32>
  }
  func.return %a#1, %b : tensor<4xf32>, tensor<4xf32>
}

// -----

// Yields that are a subset in another order: every group yields the union in the
// first group's order, and each old result maps to the new result of its value.
// CHECK-LABEL: func.func @reordered_yields
// CHECK:         %[[A0:.*]], %[[A1:.*]] = fusion.group
// CHECK:           fusion.yield %{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32>
// CHECK:         %{{.*}}, %[[B1:.*]] = fusion.group
// CHECK:           %[[BE:.*]] = aten.exp
// CHECK-NEXT:      %[[BN:.*]] = aten.neg %[[BE]]
// CHECK-NEXT:      fusion.yield %[[BE]], %[[BN]] : tensor<4xf32>, tensor<4xf32>
// CHECK:         func.return %[[A0]], %[[A1]], %[[B1]]
func.func @reordered_yields(%p: tensor<4xf32>, %q: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a:2 = fusion.group (%x = %p) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
    %1 = aten.neg %0 : tensor<4xf32> -> tensor<4xf32>
    fusion.yield %0, %1 : tensor<4xf32>, tensor<4xf32>
  }
  %b = fusion.group (%x = %q) : (tensor<4xf32>) -> (tensor<4xf32>) {
    %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
    %1 = aten.neg %0 : tensor<4xf32> -> tensor<4xf32>
    fusion.yield %1 : tensor<4xf32>
  }
  func.return %a#0, %a#1, %b : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Different bodies keep their outputs.
// CHECK-LABEL: func.func @different_bodies
// CHECK:         fusion.group (%{{.*}} = %{{.*}}) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
// CHECK:         fusion.group (%{{.*}} = %{{.*}}) : (tensor<4xf32>) -> (tensor<4xf32>) {
// CHECK-NEXT:      aten.exp
// CHECK-NEXT:      aten.tanh
// CHECK-NEXT:      fusion.yield %{{.*}} : tensor<4xf32>
func.func @different_bodies(%p: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a:2 = fusion.group (%x = %p) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
    %1 = aten.neg %0 : tensor<4xf32> -> tensor<4xf32>
    fusion.yield %1, %0 : tensor<4xf32>, tensor<4xf32>
  }
  %b = fusion.group (%x = %a#0) : (tensor<4xf32>) -> (tensor<4xf32>) {
    %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
    %1 = aten.tanh %0 : tensor<4xf32> -> tensor<4xf32>
    fusion.yield %1 : tensor<4xf32>
  }
  func.return %a#1, %b : tensor<4xf32>, tensor<4xf32>
}

// -----

// The union would exceed arg-limit (1 input + 2 outputs > 2): nothing changes.
// RUN: fusec-opt %s --split-input-file -p 'share-group-kernels{arg-limit=2}' | filecheck %s --check-prefix=LIMIT
// LIMIT-LABEL: func.func @over_the_limit
// LIMIT:         fusion.group (%{{.*}} = %{{.*}}) : (tensor<4xf32>) -> (tensor<4xf32>) {
// LIMIT:         fusion.group (%{{.*}} = %{{.*}}) : (tensor<4xf32>) -> (tensor<4xf32>) {
func.func @over_the_limit(%p: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = fusion.group (%x = %p) : (tensor<4xf32>) -> (tensor<4xf32>) {
    %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
    %1 = aten.neg %0 : tensor<4xf32> -> tensor<4xf32>
    fusion.yield %1 : tensor<4xf32>
  }
  %b = fusion.group (%x = %a) : (tensor<4xf32>) -> (tensor<4xf32>) {
    %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
    %1 = aten.neg %0 : tensor<4xf32> -> tensor<4xf32>
    fusion.yield %0 : tensor<4xf32>
  }
  func.return %a, %b : tensor<4xf32>, tensor<4xf32>
}
