// RUN: fusec-opt %s --split-input-file -p fuse | filecheck %s --check-prefix=DEFAULT
// RUN: fusec-opt %s --split-input-file -p 'fuse{arg-limit=3}' | filecheck %s --check-prefix=LIMIT
// RUN: fusec-opt %s --split-input-file -p 'fuse{singleton-groups=true}' | filecheck %s --check-prefix=SINGLE
// RUN: fusec-opt %s --split-input-file -p 'fuse{horizontal=true}' | filecheck %s --check-prefix=HORIZ
// RUN: fusec-opt %s --split-input-file -p 'fuse{lone-reductions=false}' | filecheck %s --check-prefix=NOLONE

// The argument limit counts inputs + outputs: with 3, the last add (a fourth
// input) stays out of the group, which grows from the last op backwards.
// DEFAULT-LABEL: func.func @arg_limit
// DEFAULT: fusion.group (%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>)
// LIMIT-LABEL: func.func @arg_limit
// LIMIT-SAME: (%[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<4xf32>, %[[Z:.*]]: tensor<4xf32>)
// LIMIT: %[[A:.*]] = aten.add %[[X]], %[[Y]]
// LIMIT: fusion.group (%{{.*}} = %[[Z]], %{{.*}} = %[[A]]) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>)
// LIMIT: aten.exp
// LIMIT: aten.add
// LIMIT: fusion.yield
func.func @arg_limit(%x: tensor<4xf32>, %y: tensor<4xf32>, %z: tensor<4xf32>) -> tensor<4xf32> {
  %0 = aten.add %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = aten.exp %0 : tensor<4xf32> -> tensor<4xf32>
  %2 = aten.add %1, %z : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// -----

// A pointwise op that fuses with nothing gets a group only with singleton-groups.
// DEFAULT-LABEL: func.func @single_op
// DEFAULT-NOT: fusion.group
// SINGLE-LABEL: func.func @single_op
// SINGLE: fusion.group
// SINGLE: aten.exp
// SINGLE: fusion.yield
// SINGLE: aten.opaque
func.func @single_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
  %1 = aten.opaque "aten.foo"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}

// -----

// Siblings reading the same tensor fuse only with horizontal=true.
// DEFAULT-LABEL: func.func @siblings
// DEFAULT-NOT: fusion.group
// HORIZ-LABEL: func.func @siblings
// HORIZ: %[[G0:.*]], %[[G1:.*]] = fusion.group (%[[A:.*]] = %{{.*}})
// HORIZ-DAG: aten.exp %[[A]]
// HORIZ-DAG: aten.neg %[[A]]
// HORIZ: fusion.yield
// HORIZ: aten.opaque "aten.foo"(%[[G1]], %[[G0]])
func.func @siblings(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
  %1 = aten.neg %x : tensor<4xf32> -> tensor<4xf32>
  %2 = aten.opaque "aten.foo"(%0, %1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// -----

// A reduction that fuses with nothing is a group of its own by default, and
// stays PyTorch's with lone-reductions=false.
// DEFAULT-LABEL: func.func @lone_sum
// DEFAULT:         fusion.group
// DEFAULT-NEXT:      aten.sum
// NOLONE-LABEL: func.func @lone_sum
// NOLONE-NOT:     fusion.group
// NOLONE:         aten.sum
// NOLONE-NOT:     fusion.group
func.func @lone_sum(%x: tensor<8x4xf32>) -> tensor<1x4xf32> {
  %0 = aten.sum %x dims = [0] keepdim = true : tensor<8x4xf32> -> tensor<1x4xf32>
  func.return %0 : tensor<1x4xf32>
}
