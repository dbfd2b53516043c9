// RUN: fusec-opt %s --split-input-file -p fuse | filecheck %s

// The seeds' run() example: %3 and %4 fuse, %1 cannot join them (it has a use
// before the group), %1 and %2 fuse, and the next sweep merges the two groups.
// CHECK-LABEL: func.func @fixpoint_merges_groups
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK: %[[R0:.*]], %[[R1:.*]] = fusion.group (%[[A:.*]] = %[[X]])
// CHECK-NEXT: %[[E:.*]] = aten.exp %[[A]]
// CHECK-DAG: %[[N:.*]] = aten.neg %[[E]]
// CHECK-DAG: %[[S:.*]] = aten.sigmoid %[[E]]
// CHECK: %[[T:.*]] = aten.tanh %[[S]]
// CHECK: fusion.yield %[[T]], %[[N]]
// CHECK-NOT: fusion.group
// CHECK: func.return %[[R0]], %[[R1]]
func.func @fixpoint_merges_groups(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %1 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
  %2 = aten.neg %1 : tensor<4xf32> -> tensor<4xf32>
  %3 = aten.sigmoid %1 : tensor<4xf32> -> tensor<4xf32>
  %4 = aten.tanh %3 : tensor<4xf32> -> tensor<4xf32>
  func.return %4, %2 : tensor<4xf32>, tensor<4xf32>
}

// -----

// A use of the producer between it and its consumer, on which the consumer
// depends, would make a cycle: no fusion.
// CHECK-LABEL: func.func @cycle_blocks_fusion
// CHECK-NOT: fusion.group
// CHECK: aten.exp
// CHECK: aten.opaque
// CHECK: aten.add
func.func @cycle_blocks_fusion(%x: tensor<4xf32>) -> tensor<4xf32> {
  %1 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
  %2 = aten.opaque "aten.foo"(%1) : (tensor<4xf32>) -> tensor<4xf32>
  %3 = aten.add %1, %2 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return %3 : tensor<4xf32>
}

// -----

// A producer used after the group joins, and the later use reads an extra output.
// CHECK-LABEL: func.func @multiple_outputs
// CHECK: %[[G0:.*]], %[[G1:.*]] = fusion.group
// CHECK: %[[E:.*]] = aten.exp
// CHECK: %[[N:.*]] = aten.neg %[[E]]
// CHECK: fusion.yield %[[N]], %[[E]]
// CHECK: %[[O:.*]] = aten.opaque "aten.foo"(%[[G1]])
// CHECK: func.return %[[G0]], %[[O]]
func.func @multiple_outputs(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %1 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
  %2 = aten.neg %1 : tensor<4xf32> -> tensor<4xf32>
  %3 = aten.opaque "aten.foo"(%1) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %2, %3 : tensor<4xf32>, tensor<4xf32>
}

// -----

// A diamond fuses into one group with one output; f(a, a + b) sees a + b first.
// CHECK-LABEL: func.func @diamond
// CHECK: %[[G:.*]] = fusion.group
// CHECK: aten.exp
// CHECK: aten.neg
// CHECK: aten.sigmoid
// CHECK: aten.mul
// CHECK: fusion.yield
// CHECK-NOT: fusion.group
// CHECK: func.return %[[G]]
func.func @diamond(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
  %b = aten.neg %a : tensor<4xf32> -> tensor<4xf32>
  %c = aten.sigmoid %a : tensor<4xf32> -> tensor<4xf32>
  %d = aten.mul %b, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return %d : tensor<4xf32>
}

// -----

// Broadcasting ops fuse; scalar constants are cloned into the group and the
// outer one goes away; scalar SSA values become inputs.
// CHECK-LABEL: func.func @broadcast_and_constants
// CHECK-SAME: (%[[X:.*]]: tensor<4x1xf32>, %[[Y:.*]]: tensor<3xf32>, %[[S:.*]]: f64)
// CHECK-NOT: arith.constant
// CHECK: fusion.group
// CHECK-SAME: (%{{.*}} = %[[Y]], %{{.*}} = %[[S]], %{{.*}} = %[[X]]) : (tensor<3xf32>, f64, tensor<4x1xf32>) -> (tensor<4x3xf32>)
// CHECK: arith.constant 2.000000e+00 : f64
// CHECK: aten.mul
// CHECK: aten.add
// CHECK: aten.sub
// CHECK: fusion.yield
func.func @broadcast_and_constants(%x: tensor<4x1xf32>, %y: tensor<3xf32>, %s: f64) -> tensor<4x3xf32> {
  %c = arith.constant 2.0 : f64
  %0 = aten.mul %x, %c : tensor<4x1xf32>, f64 -> tensor<4x1xf32>
  %1 = aten.add %0, %s : tensor<4x1xf32>, f64 -> tensor<4x1xf32>
  %2 = aten.sub %1, %y : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
  func.return %2 : tensor<4x3xf32>
}

// -----

// CSE inside groups: two equal ops merged from two producers leave one.
// CHECK-LABEL: func.func @cse_in_group
// CHECK: fusion.group
// CHECK: aten.exp
// CHECK-NOT: aten.exp
// CHECK: fusion.yield
func.func @cse_in_group(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
  %b = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
  %c = aten.add %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// -----

// Two equal fresh results leave the group: CSE shares them, and the group
// computes the second again, so a group run through PyTorch hands out two tensors.
// CHECK-LABEL: func.func @equal_results
// CHECK:         fusion.group
// CHECK:           %[[A:.*]] = aten.sub
// CHECK-NEXT:      %[[B:.*]] = aten.sub
// CHECK-NEXT:      fusion.yield %[[A]], %[[B]]
func.func @equal_results(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %s = "aten.sin"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %a = "aten.sub"(%s, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = "aten.sub"(%s, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %a, %b : tensor<4xf32>, tensor<4xf32>
}
