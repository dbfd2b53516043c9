// RUN: fusec-opt %s --split-input-file -p guard | filecheck %s

// A group becomes fusion.guard + scf.if { group } else { its ops unfused }; the
// guard lists the tensor inputs only (the f64 scalar needs no check).
// CHECK-LABEL: func.func @pointwise
// CHECK-SAME: (%[[A:.*]]: tensor<4x1xf32>, %[[B:.*]]: tensor<3xf32>, %[[S:.*]]: f64)
// CHECK-NEXT: %[[OK:.*]] = fusion.guard (%[[A]] : tensor<4x1xf32> <ones = [1], layout = any, device = "cpu">, %[[B]] : tensor<3xf32> <ones = [], layout = any, device = "cpu">)
// CHECK-NEXT: %[[R:.*]] = scf.if %[[OK]] -> (tensor<4x3xf32>) {
// CHECK-NEXT: %[[G:.*]] = fusion.group (%[[X:.*]] = %[[A]], %[[Y:.*]] = %[[B]], %[[Z:.*]] = %[[S]]) : (tensor<4x1xf32>, tensor<3xf32>, f64) -> (tensor<4x3xf32>) {
// CHECK-NEXT: %[[ADD:.*]] = aten.add %[[X]], %[[Y]]
// CHECK-NEXT: %[[MUL:.*]] = aten.mul %[[ADD]], %[[Z]]
// CHECK-NEXT: fusion.yield %[[MUL]] : tensor<4x3xf32>
// CHECK-NEXT: }
// CHECK-NEXT: scf.yield %[[G]] : tensor<4x3xf32>
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[FADD:.*]] = aten.add %[[A]], %[[B]] : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
// CHECK-NEXT: %[[FMUL:.*]] = aten.mul %[[FADD]], %[[S]] : tensor<4x3xf32>, f64 -> tensor<4x3xf32>
// CHECK-NEXT: scf.yield %[[FMUL]] : tensor<4x3xf32>
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[R]] : tensor<4x3xf32>
func.func @pointwise(%a: tensor<4x1xf32>, %b: tensor<3xf32>, %s: f64) -> tensor<4x3xf32> {
  %r = fusion.group (%x = %a, %y = %b, %z = %s) : (tensor<4x1xf32>, tensor<3xf32>, f64) -> (tensor<4x3xf32>) {
    %0 = aten.add %x, %y : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
    %1 = aten.mul %0, %z : tensor<4x3xf32>, f64 -> tensor<4x3xf32>
    fusion.yield %1 : tensor<4x3xf32>
  }
  func.return %r : tensor<4x3xf32>
}

// -----

// Several outputs, one of them an input passed through: the fallback yields the
// operand itself.
// CHECK-LABEL: func.func @two_outputs
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf16>)
// CHECK-NEXT: %[[OK:.*]] = fusion.guard (%[[A]] : tensor<2x3xf16> <ones = [], layout = any, device = "cpu">)
// CHECK-NEXT: %[[R0:.*]], %[[R1:.*]] = scf.if %[[OK]] -> (tensor<2x3xf16>, tensor<2x3xf16>) {
// CHECK: fusion.group
// CHECK: } else {
// CHECK-NEXT: %[[N:.*]] = aten.neg %[[A]]
// CHECK-NEXT: scf.yield %[[N]], %[[A]] : tensor<2x3xf16>, tensor<2x3xf16>
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[R0]], %[[R1]]
func.func @two_outputs(%a: tensor<2x3xf16>) -> (tensor<2x3xf16>, tensor<2x3xf16>) {
  %r, %q = fusion.group (%x = %a) : (tensor<2x3xf16>) -> (tensor<2x3xf16>, tensor<2x3xf16>) {
    %0 = aten.neg %x : tensor<2x3xf16> -> tensor<2x3xf16>
    fusion.yield %0, %x : tensor<2x3xf16>, tensor<2x3xf16>
  }
  func.return %r, %q : tensor<2x3xf16>, tensor<2x3xf16>
}

// -----

// A group over scalars only has nothing to guard and stays as it is.
// CHECK-LABEL: func.func @scalars_only
// CHECK-NOT: fusion.guard
// CHECK: fusion.group
func.func @scalars_only(%s: f64) -> f64 {
  %r = fusion.group (%x = %s) : (f64) -> (f64) {
    fusion.yield %x : f64
  }
  func.return %r : f64
}
