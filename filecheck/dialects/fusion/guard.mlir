// RUN: fusec-opt %s --split-input-file | filecheck %s
// RUN: fusec-opt %s --split-input-file --print-op-generic | fusec-opt --split-input-file | filecheck %s

// fusion.guard and #fusion.input_spec, in custom and generic form.

// CHECK-LABEL: func.func @two_inputs
// CHECK-SAME: (%[[A:.*]]: tensor<4x1xf32>, %[[B:.*]]: tensor<3xf16>)
// CHECK-NEXT: %[[OK:.*]] = fusion.guard (%[[A]] : tensor<4x1xf32> <ones = [1], layout = contiguous, device = "cpu">, %[[B]] : tensor<3xf16> <ones = [], layout = any, device = "cuda:1">)
// CHECK-NEXT: func.return %[[OK]] : i1
func.func @two_inputs(%a: tensor<4x1xf32>, %b: tensor<3xf16>) -> i1 {
  %ok = fusion.guard (%a : tensor<4x1xf32> <ones = [1], layout = contiguous, device = "cpu">, %b : tensor<3xf16> <ones = [], layout = any, device = "cuda:1">)
  func.return %ok : i1
}

// -----

// 0-d tensors, dynamic dims (which may be 1 or not) and attributes.
// CHECK-LABEL: func.func @zero_d_and_dynamic
// CHECK-NEXT: %{{.*}} = fusion.guard (%{{.*}} : tensor<f32> <ones = [], layout = any, device = "cpu">, %{{.*}} : tensor<?x1xi64> <ones = [0, 1], layout = any, device = "cpu">) attributes {note = "x"}
func.func @zero_d_and_dynamic(%a: tensor<f32>, %b: tensor<?x1xi64>) -> i1 {
  %ok = fusion.guard (%a : tensor<f32> <ones = [], layout = any, device = "cpu">, %b : tensor<?x1xi64> <ones = [0, 1], layout = any, device = "cpu">) attributes {note = "x"}
  func.return %ok : i1
}

// -----

// The generic form spells the specs as a property.
// CHECK-LABEL: func.func @generic
// CHECK-NEXT: fusion.guard (%{{.*}} : tensor<2xf32> <ones = [], layout = any, device = "cpu">)
func.func @generic(%a: tensor<2xf32>) -> i1 {
  %ok = "fusion.guard"(%a) <{specs = [#fusion.input_spec<ones = [], layout = any, device = "cpu">]}> : (tensor<2xf32>) -> i1
  func.return %ok : i1
}
