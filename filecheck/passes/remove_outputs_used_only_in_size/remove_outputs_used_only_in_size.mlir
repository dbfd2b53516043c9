// RUN: fusec-opt %s --split-input-file -p remove-outputs-used-only-in-size | filecheck %s
// RUN: fusec-opt %s --split-input-file -p fuse,remove-outputs-used-only-in-size | filecheck %s --check-prefix=FUSE

// An output read only by aten.size is dropped; its size is the broadcast of the
// sizes of the inputs it is computed from.
// CHECK-LABEL: func.func @size_only
// CHECK-SAME: (%[[X:.*]]: tensor<4x1xf32>, %[[Y:.*]]: tensor<3xf32>, %[[S:.*]]: f64)
// CHECK-NEXT: %[[G:.*]] = fusion.group (%[[A:.*]] = %[[X]], %[[B:.*]] = %[[Y]], %[[C:.*]] = %[[S]]) : (tensor<4x1xf32>, tensor<3xf32>, f64) -> (tensor<4x3xf32>) {
// CHECK-NEXT: %[[Z:.*]] = aten.mul %[[A]], %[[B]]
// CHECK-NEXT: %[[Z2:.*]] = aten.mul %[[Z]], %[[C]]
// CHECK-NEXT: %[[W:.*]] = aten.tanh %[[Z2]]
// CHECK-NEXT: fusion.yield %[[W]] : tensor<4x3xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %[[SX:.*]] = aten.size %[[X]] : tensor<4x1xf32> -> !aten.size<2>
// CHECK-NEXT: %[[SY:.*]] = aten.size %[[Y]] : tensor<3xf32> -> !aten.size<1>
// CHECK-NEXT: %[[SZ:.*]] = fusion.broadcast_sizes %[[SX]], %[[SY]] : !aten.size<2>, !aten.size<1> -> !aten.size<2>
// CHECK-NEXT: func.return %[[G]], %[[SZ]]
func.func @size_only(%x: tensor<4x1xf32>, %y: tensor<3xf32>, %s: f64) -> (tensor<4x3xf32>, !aten.size<2>) {
  %r:2 = fusion.group (%a = %x, %b = %y, %c = %s) : (tensor<4x1xf32>, tensor<3xf32>, f64) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
    %z = aten.mul %a, %b : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
    %z2 = aten.mul %z, %c : tensor<4x3xf32>, f64 -> tensor<4x3xf32>
    %w = aten.tanh %z2 : tensor<4x3xf32> -> tensor<4x3xf32>
    fusion.yield %w, %z2 : tensor<4x3xf32>, tensor<4x3xf32>
  }
  %sz = aten.size %r#1 : tensor<4x3xf32> -> !aten.size<2>
  func.return %r#0, %sz : tensor<4x3xf32>, !aten.size<2>
}

// -----

// A single input: its size directly; the dead sigmoid leaves the group.
// CHECK-LABEL: func.func @one_input
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK: fusion.group
// CHECK-NOT: aten.sigmoid
// CHECK: fusion.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[SX:.*]] = aten.size %[[X]] : tensor<4xf32> -> !aten.size<1>
// CHECK-NEXT: func.return %{{.*}}, %[[SX]]
func.func @one_input(%x: tensor<4xf32>) -> (tensor<4xf32>, !aten.size<1>) {
  %r:2 = fusion.group (%a = %x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %e = aten.exp %a : tensor<4xf32> -> tensor<4xf32>
    %s = aten.sigmoid %a : tensor<4xf32> -> tensor<4xf32>
    fusion.yield %e, %s : tensor<4xf32>, tensor<4xf32>
  }
  %sz = aten.size %r#1 : tensor<4xf32> -> !aten.size<1>
  func.return %r#0, %sz : tensor<4xf32>, !aten.size<1>
}

// -----

// Outputs with other users, and outputs that are not a broadcast of inputs (a
// chunk piece), stay.
// CHECK-LABEL: func.func @kept
// CHECK: %[[R0:.*]], %[[R1:.*]], %[[R2:.*]] = fusion.group {{.*}} -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>)
// CHECK: aten.size %[[R1]]
// CHECK-NEXT: aten.size %[[R2]]
// CHECK-NOT: fusion.broadcast_sizes
func.func @kept(%x: tensor<4x4xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>, !aten.size<2>, !aten.size<2>) {
  %r:3 = fusion.group (%a = %x) : (tensor<4x4xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>) {
    %p:2 = aten.chunk %a chunks = 2 dim = 1 : tensor<4x4xf32> -> tensor<4x2xf32>, tensor<4x2xf32>
    %e = aten.exp %p#0 : tensor<4x2xf32> -> tensor<4x2xf32>
    %n = aten.neg %p#1 : tensor<4x2xf32> -> tensor<4x2xf32>
    fusion.yield %e, %n, %p#0 : tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>
  }
  %s1 = aten.size %r#1 : tensor<4x2xf32> -> !aten.size<2>
  %s2 = aten.size %r#2 : tensor<4x2xf32> -> !aten.size<2>
  func.return %r#0, %r#1, %s1, %s2 : tensor<4x2xf32>, tensor<4x2xf32>, !aten.size<2>, !aten.size<2>
}

// -----

// After fuse: the intermediate `z` becomes an output only for its size, and the
// size pass takes it back out.
// FUSE-LABEL: func.func @after_fuse
// FUSE-SAME: (%[[X:.*]]: tensor<4x1xf32>, %[[Y:.*]]: tensor<3xf32>)
// FUSE: fusion.group {{.*}} -> (tensor<4x3xf32>) {
// FUSE: aten.sigmoid
// FUSE: aten.mul
// FUSE: aten.tanh
// FUSE: fusion.broadcast_sizes
// FUSE-NEXT: func.return
func.func @after_fuse(%x: tensor<4x1xf32>, %y: tensor<3xf32>) -> (tensor<4x3xf32>, !aten.size<2>) {
  %s = aten.sigmoid %x : tensor<4x1xf32> -> tensor<4x1xf32>
  %z = aten.mul %s, %y : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %w = aten.tanh %z : tensor<4x3xf32> -> tensor<4x3xf32>
  %sz = aten.size %z : tensor<4x3xf32> -> !aten.size<2>
  func.return %w, %sz : tensor<4x3xf32>, !aten.size<2>
}
