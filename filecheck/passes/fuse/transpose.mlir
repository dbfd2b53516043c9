// RUN: fusec-opt %s --split-input-file -p fuse | filecheck %s

// A transpose whose uses are all in a group joins it: its output is a view
// inside (the kernel's launch plan works out its strides once per layout).
// CHECK-LABEL: func.func @transposed_add
// CHECK-SAME:    (%[[A:.*]]: tensor<4x3xf32>, %[[B:.*]]: tensor<3x4xf32>)
// CHECK-NEXT:    %[[R:.*]] = fusion.group (%[[GB:.*]] = %[[B]], %[[GA:.*]] = %[[A]])
// CHECK-NEXT:      %[[T:.*]] = aten.transpose %[[GA]] dim0 = 0 dim1 = 1
// CHECK-NEXT:      %[[S:.*]] = aten.add %[[T]], %[[GB]]
// CHECK-NEXT:      %[[Y:.*]] = aten.relu %[[S]]
// CHECK-NEXT:      fusion.yield %[[Y]]
// CHECK:         func.return %[[R]]
func.func @transposed_add(%a: tensor<4x3xf32>, %b: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %t = aten.transpose %a dim0 = 0 dim1 = 1 : tensor<4x3xf32> -> tensor<3x4xf32>
  %s = aten.add %t, %b : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
  %r = aten.relu %s : tensor<3x4xf32> -> tensor<3x4xf32>
  func.return %r : tensor<3x4xf32>
}

// -----

// A permute joins the same way.
// CHECK-LABEL: func.func @permuted
// CHECK:         fusion.group
// CHECK-NEXT:      aten.permute
// CHECK-NEXT:      aten.mul
// CHECK-NEXT:      aten.exp
func.func @permuted(%x: tensor<2x3x4xf32>, %y: tensor<4x2x3xf32>) -> tensor<4x2x3xf32> {
  %p = aten.permute %x dims = [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %m = aten.mul %p, %y : tensor<4x2x3xf32>, tensor<4x2x3xf32> -> tensor<4x2x3xf32>
  %e = aten.exp %m : tensor<4x2x3xf32> -> tensor<4x2x3xf32>
  func.return %e : tensor<4x2x3xf32>
}

// -----

// A transpose and one op alone form no group (one op alone stays with ATen, and
// so does it with a view in front); a transpose also used outside the group
// stays outside, the group reading its result.
// CHECK-LABEL: func.func @alone
// CHECK-NOT:     fusion.group
// CHECK:         aten.transpose
// CHECK-NEXT:    aten.relu
// CHECK-LABEL: func.func @outside_use
// CHECK:         %[[T:.*]] = aten.transpose
// CHECK-NEXT:    fusion.group (%{{.*}} = %[[T]]
// CHECK:         func.return %{{.*}}, %[[T]]
func.func @alone(%a: tensor<4x3xf32>) -> tensor<3x4xf32> {
  %t = aten.transpose %a dim0 = 0 dim1 = 1 : tensor<4x3xf32> -> tensor<3x4xf32>
  %r = aten.relu %t : tensor<3x4xf32> -> tensor<3x4xf32>
  func.return %r : tensor<3x4xf32>
}
func.func @outside_use(%a: tensor<4x3xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>) {
  %t = aten.transpose %a dim0 = 0 dim1 = 1 : tensor<4x3xf32> -> tensor<3x4xf32>
  %e = aten.exp %t : tensor<3x4xf32> -> tensor<3x4xf32>
  %r = aten.relu %e : tensor<3x4xf32> -> tensor<3x4xf32>
  func.return %r, %t : tensor<3x4xf32>, tensor<3x4xf32>
}

// -----

// A kernel takes a transpose's strides only from its inputs: the pointwise work
// whose result the group transposes stays a group of its own
// (square here, so the shapes alone do not keep them apart; with symbolic
// sizes they never do).
// CHECK-LABEL: func.func @transpose_of_computed
// CHECK:         %[[N:.*]] = fusion.group
// CHECK-NEXT:      aten.exp
// CHECK-NEXT:      aten.neg
// CHECK:         fusion.group (%{{.*}} = %[[N]]
// CHECK-NEXT:      aten.transpose
// CHECK-NEXT:      aten.add
// CHECK-NEXT:      aten.relu
func.func @transpose_of_computed(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %e = aten.exp %a : tensor<4x4xf32> -> tensor<4x4xf32>
  %n = aten.neg %e : tensor<4x4xf32> -> tensor<4x4xf32>
  %t = aten.transpose %n dim0 = 0 dim1 = 1 : tensor<4x4xf32> -> tensor<4x4xf32>
  %s = aten.add %t, %b : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %r = aten.relu %s : tensor<4x4xf32> -> tensor<4x4xf32>
  func.return %r : tensor<4x4xf32>
}
