// RUN: fusec-opt %s --split-input-file | filecheck %s
// RUN: fusec-opt %s --split-input-file --print-op-generic | fusec-opt --split-input-file | filecheck %s

// fusion.group and fusion.yield, in custom and generic form.

// CHECK-LABEL: func.func @one_in_one_out
// CHECK-SAME: (%[[A:.*]]: tensor<4xf32>)
// CHECK-NEXT: %[[R:.*]] = fusion.group (%[[X:.*]] = %[[A]]) : (tensor<4xf32>) -> (tensor<4xf32>) {
// CHECK-NEXT: %[[N:.*]] = aten.neg %[[X]] : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT: fusion.yield %[[N]] : tensor<4xf32>
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[R]] : tensor<4xf32>
func.func @one_in_one_out(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = fusion.group (%x = %a) : (tensor<4xf32>) -> (tensor<4xf32>) {
    %0 = aten.neg %x : tensor<4xf32> -> tensor<4xf32>
    fusion.yield %0 : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

// -----

// Several inputs (one a Python scalar), several outputs, broadcasting inside.
// CHECK-LABEL: func.func @many
// CHECK-SAME: (%[[A:.*]]: tensor<4x1xf32>, %[[B:.*]]: tensor<3xf32>, %[[S:.*]]: f64)
// CHECK-NEXT: %[[R:.*]], %[[Q:.*]] = fusion.group (%[[X:.*]] = %[[A]], %[[Y:.*]] = %[[B]], %[[Z:.*]] = %[[S]]) : (tensor<4x1xf32>, tensor<3xf32>, f64) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
// CHECK-NEXT: %[[ADD:.*]] = aten.add %[[X]], %[[Y]] : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
// CHECK-NEXT: %[[MUL:.*]] = aten.mul %[[ADD]], %[[Z]] : tensor<4x3xf32>, f64 -> tensor<4x3xf32>
// CHECK-NEXT: %[[SIG:.*]] = aten.sigmoid %[[MUL]] : tensor<4x3xf32> -> tensor<4x3xf32>
// CHECK-NEXT: fusion.yield %[[ADD]], %[[SIG]] : tensor<4x3xf32>, tensor<4x3xf32>
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[R]], %[[Q]] : tensor<4x3xf32>, tensor<4x3xf32>
func.func @many(%a: tensor<4x1xf32>, %b: tensor<3xf32>, %s: f64) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %r, %q = fusion.group (%x = %a, %y = %b, %z = %s) : (tensor<4x1xf32>, tensor<3xf32>, f64) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
    %0 = aten.add %x, %y : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
    %1 = aten.mul %0, %z : tensor<4x3xf32>, f64 -> tensor<4x3xf32>
    %2 = aten.sigmoid %1 : tensor<4x3xf32> -> tensor<4x3xf32>
    fusion.yield %0, %2 : tensor<4x3xf32>, tensor<4x3xf32>
  }
  func.return %r, %q : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// A group may yield one of its inputs unchanged, and carry attributes.
// CHECK-LABEL: func.func @passthrough_with_attrs
// CHECK-SAME: (%[[A:.*]]: tensor<2xi64>)
// CHECK-NEXT: %[[R:.*]] = fusion.group (%[[X:.*]] = %[[A]]) : (tensor<2xi64>) -> (tensor<2xi64>) attributes {kernel = "k0"} {
// CHECK-NEXT: fusion.yield %[[X]] : tensor<2xi64>
// CHECK-NEXT: }
func.func @passthrough_with_attrs(%a: tensor<2xi64>) -> tensor<2xi64> {
  %r = fusion.group (%x = %a) : (tensor<2xi64>) -> (tensor<2xi64>) attributes {kernel = "k0"} {
    fusion.yield %x : tensor<2xi64>
  }
  func.return %r : tensor<2xi64>
}

// -----

// No inputs and no outputs.
// CHECK-LABEL: func.func @empty
// CHECK-NEXT: fusion.group () : () -> () {
// CHECK-NEXT: fusion.yield
// CHECK-NEXT: }
// CHECK-NEXT: func.return
func.func @empty() {
  fusion.group () : () -> () {
    fusion.yield
  }
  func.return
}

// -----

// Groups nest inside other regions and take 0-d tensors.
// CHECK-LABEL: func.func @zero_d
// CHECK-SAME: (%[[A:.*]]: tensor<f16>, %[[B:.*]]: tensor<f32>)
// CHECK-NEXT: %[[R:.*]] = fusion.group (%[[X:.*]] = %[[A]], %[[Y:.*]] = %[[B]]) : (tensor<f16>, tensor<f32>) -> (tensor<i1>) {
// CHECK-NEXT: %[[C:.*]] = aten.lt %[[X]], %[[Y]] : tensor<f16>, tensor<f32> -> tensor<i1>
// CHECK-NEXT: fusion.yield %[[C]] : tensor<i1>
func.func @zero_d(%a: tensor<f16>, %b: tensor<f32>) -> tensor<i1> {
  %r = fusion.group (%x = %a, %y = %b) : (tensor<f16>, tensor<f32>) -> (tensor<i1>) {
    %0 = aten.lt %x, %y : tensor<f16>, tensor<f32> -> tensor<i1>
    fusion.yield %0 : tensor<i1>
  }
  func.return %r : tensor<i1>
}
