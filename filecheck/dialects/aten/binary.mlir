// RUN: fusec-opt %s --split-input-file | filecheck %s
// RUN: fusec-opt %s --split-input-file --print-op-generic | fusec-opt --split-input-file | filecheck %s

// Every binary pointwise aten op: promotion, Python scalars, 0-d tensors, broadcasting.

// Broadcasting: [4, 1] and [3] give [4, 3].
// CHECK-LABEL: func.func @add_broadcast
// CHECK-SAME: (%[[X:.*]]: tensor<4x1xf32>, %[[Y:.*]]: tensor<3xf32>)
// CHECK: %[[R:.*]] = aten.add %[[X]], %[[Y]] : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
// CHECK-NEXT: func.return %[[R]] : tensor<4x3xf32>
func.func @add_broadcast(%x: tensor<4x1xf32>, %y: tensor<3xf32>) -> tensor<4x3xf32> {
  %r = aten.add %x, %y : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}

// -----

// alpha: absent, int, float, or bool (bool results only).
// CHECK-LABEL: func.func @add_alpha
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<4xf32>, %[[I:.*]]: tensor<4xi32>, %[[B:.*]]: tensor<4xi1>)
// CHECK: %[[A:.*]] = aten.add %[[X]], %[[Y]] alpha = 2 : i64 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[C:.*]] = aten.add %[[X]], %[[Y]] alpha = 5.000000e-01 : f64 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[D:.*]] = aten.add %[[I]], %[[I]] alpha = 3 : i64 : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
// CHECK-NEXT: %[[E:.*]] = aten.add %[[B]], %[[B]] alpha = true : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
// CHECK-NEXT: func.return %[[A]], %[[C]], %[[D]], %[[E]] : tensor<4xf32>, tensor<4xf32>, tensor<4xi32>, tensor<4xi1>
func.func @add_alpha(%x: tensor<4xf32>, %y: tensor<4xf32>, %i: tensor<4xi32>, %b: tensor<4xi1>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xi32>, tensor<4xi1>) {
  %a = aten.add %x, %y alpha = 2 : i64 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %c = aten.add %x, %y alpha = 5.000000e-01 : f64 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %d = aten.add %i, %i alpha = 3 : i64 : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  %e = aten.add %b, %b alpha = true : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  func.return %a, %c, %d, %e : tensor<4xf32>, tensor<4xf32>, tensor<4xi32>, tensor<4xi1>
}

// -----

// CHECK-LABEL: func.func @sub_alpha
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[S:.*]]: f64)
// CHECK: %[[A:.*]] = aten.sub %[[X]], %[[S]] : tensor<4xf32>, f64 -> tensor<4xf32>
// CHECK-NEXT: %[[B:.*]] = aten.sub %[[X]], %[[X]] alpha = 2.500000e+00 : f64 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT: func.return %[[A]], %[[B]] : tensor<4xf32>, tensor<4xf32>
func.func @sub_alpha(%x: tensor<4xf32>, %s: f64) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = aten.sub %x, %s : tensor<4xf32>, f64 -> tensor<4xf32>
  %b = aten.sub %x, %x alpha = 2.500000e+00 : f64 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// -----

// Python scalars (f64, i64, i1) rank below tensors: int tensor * float scalar is f32.
// CHECK-LABEL: func.func @scalar_promotion
// CHECK-SAME: (%[[X:.*]]: tensor<4xi32>, %[[F:.*]]: f64, %[[I:.*]]: i64, %[[B:.*]]: i1, %[[H:.*]]: tensor<2xf16>)
// CHECK: %[[A:.*]] = aten.mul %[[X]], %[[F]] : tensor<4xi32>, f64 -> tensor<4xf32>
// CHECK-NEXT: %[[C:.*]] = aten.mul %[[X]], %[[I]] : tensor<4xi32>, i64 -> tensor<4xi32>
// CHECK-NEXT: %[[D:.*]] = aten.mul %[[X]], %[[B]] : tensor<4xi32>, i1 -> tensor<4xi32>
// CHECK-NEXT: %[[E:.*]] = aten.mul %[[H]], %[[F]] : tensor<2xf16>, f64 -> tensor<2xf16>
// CHECK-NEXT: %[[G:.*]] = aten.mul %[[F]], %[[X]] : f64, tensor<4xi32> -> tensor<4xf32>
// CHECK-NEXT: func.return %[[A]], %[[C]], %[[D]], %[[E]], %[[G]] : tensor<4xf32>, tensor<4xi32>, tensor<4xi32>, tensor<2xf16>, tensor<4xf32>
func.func @scalar_promotion(%x: tensor<4xi32>, %f: f64, %i: i64, %b: i1, %h: tensor<2xf16>) -> (tensor<4xf32>, tensor<4xi32>, tensor<4xi32>, tensor<2xf16>, tensor<4xf32>) {
  %a = aten.mul %x, %f : tensor<4xi32>, f64 -> tensor<4xf32>
  %c = aten.mul %x, %i : tensor<4xi32>, i64 -> tensor<4xi32>
  %d = aten.mul %x, %b : tensor<4xi32>, i1 -> tensor<4xi32>
  %e = aten.mul %h, %f : tensor<2xf16>, f64 -> tensor<2xf16>
  %g = aten.mul %f, %x : f64, tensor<4xi32> -> tensor<4xf32>
  func.return %a, %c, %d, %e, %g : tensor<4xf32>, tensor<4xi32>, tensor<4xi32>, tensor<2xf16>, tensor<4xf32>
}

// -----

// 0-d tensors rank below tensors with dims, but a higher category still wins.
// CHECK-LABEL: func.func @zero_d_promotion
// CHECK-SAME: (%[[H:.*]]: tensor<4xf16>, %[[Z:.*]]: tensor<f32>, %[[I:.*]]: tensor<4xi32>, %[[D:.*]]: tensor<f64>)
// CHECK: %[[A:.*]] = aten.add %[[H]], %[[Z]] : tensor<4xf16>, tensor<f32> -> tensor<4xf16>
// CHECK-NEXT: %[[B:.*]] = aten.add %[[I]], %[[D]] : tensor<4xi32>, tensor<f64> -> tensor<4xf64>
// CHECK-NEXT: %[[C:.*]] = aten.add %[[Z]], %[[D]] : tensor<f32>, tensor<f64> -> tensor<f64>
// CHECK-NEXT: func.return %[[A]], %[[B]], %[[C]] : tensor<4xf16>, tensor<4xf64>, tensor<f64>
func.func @zero_d_promotion(%h: tensor<4xf16>, %z: tensor<f32>, %i: tensor<4xi32>, %d: tensor<f64>) -> (tensor<4xf16>, tensor<4xf64>, tensor<f64>) {
  %a = aten.add %h, %z : tensor<4xf16>, tensor<f32> -> tensor<4xf16>
  %b = aten.add %i, %d : tensor<4xi32>, tensor<f64> -> tensor<4xf64>
  %c = aten.add %z, %d : tensor<f32>, tensor<f64> -> tensor<f64>
  func.return %a, %b, %c : tensor<4xf16>, tensor<4xf64>, tensor<f64>
}

// -----

// True division of integers is f32; trunc and floor keep the promoted dtype.
// CHECK-LABEL: func.func @div
// CHECK-SAME: (%[[X:.*]]: tensor<4xi64>, %[[Y:.*]]: tensor<4xi64>, %[[F:.*]]: tensor<4xf32>)
// CHECK: %[[A:.*]] = aten.div %[[X]], %[[Y]] : tensor<4xi64>, tensor<4xi64> -> tensor<4xf32>
// CHECK-NEXT: %[[B:.*]] = aten.div %[[X]], %[[Y]] rounding_mode = "trunc" : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
// CHECK-NEXT: %[[C:.*]] = aten.div %[[X]], %[[Y]] rounding_mode = "floor" : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
// CHECK-NEXT: %[[D:.*]] = aten.div %[[F]], %[[X]] rounding_mode = "floor" : tensor<4xf32>, tensor<4xi64> -> tensor<4xf32>
// CHECK-NEXT: func.return %[[A]], %[[B]], %[[C]], %[[D]] : tensor<4xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xf32>
func.func @div(%x: tensor<4xi64>, %y: tensor<4xi64>, %f: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xf32>) {
  %a = aten.div %x, %y : tensor<4xi64>, tensor<4xi64> -> tensor<4xf32>
  %b = aten.div %x, %y rounding_mode = "trunc" : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  %c = aten.div %x, %y rounding_mode = "floor" : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  %d = aten.div %f, %x rounding_mode = "floor" : tensor<4xf32>, tensor<4xi64> -> tensor<4xf32>
  func.return %a, %b, %c, %d : tensor<4xf32>, tensor<4xi64>, tensor<4xi64>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @pow
// CHECK-SAME: (%[[X:.*]]: tensor<4xi32>, %[[F:.*]]: f64, %[[I:.*]]: i64)
// CHECK: %[[A:.*]] = aten.pow %[[X]], %[[I]] : tensor<4xi32>, i64 -> tensor<4xi32>
// CHECK-NEXT: %[[B:.*]] = aten.pow %[[X]], %[[F]] : tensor<4xi32>, f64 -> tensor<4xf32>
// CHECK-NEXT: func.return %[[A]], %[[B]] : tensor<4xi32>, tensor<4xf32>
func.func @pow(%x: tensor<4xi32>, %f: f64, %i: i64) -> (tensor<4xi32>, tensor<4xf32>) {
  %a = aten.pow %x, %i : tensor<4xi32>, i64 -> tensor<4xi32>
  %b = aten.pow %x, %f : tensor<4xi32>, f64 -> tensor<4xf32>
  func.return %a, %b : tensor<4xi32>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @maximum
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[Y:.*]]: tensor<3xf64>)
// CHECK: %[[R:.*]] = aten.maximum %[[X]], %[[Y]] : tensor<2x3xf32>, tensor<3xf64> -> tensor<2x3xf64>
// CHECK-NEXT: func.return %[[R]] : tensor<2x3xf64>
func.func @maximum(%x: tensor<2x3xf32>, %y: tensor<3xf64>) -> tensor<2x3xf64> {
  %r = aten.maximum %x, %y : tensor<2x3xf32>, tensor<3xf64> -> tensor<2x3xf64>
  func.return %r : tensor<2x3xf64>
}

// -----

// CHECK-LABEL: func.func @minimum
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[Y:.*]]: tensor<3xf64>)
// CHECK: %[[R:.*]] = aten.minimum %[[X]], %[[Y]] : tensor<2x3xf32>, tensor<3xf64> -> tensor<2x3xf64>
// CHECK-NEXT: func.return %[[R]] : tensor<2x3xf64>
func.func @minimum(%x: tensor<2x3xf32>, %y: tensor<3xf64>) -> tensor<2x3xf64> {
  %r = aten.minimum %x, %y : tensor<2x3xf32>, tensor<3xf64> -> tensor<2x3xf64>
  func.return %r : tensor<2x3xf64>
}

// -----

// CHECK-LABEL: func.func @eq
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[Y:.*]]: tensor<3xi32>, %[[S:.*]]: f64)
// CHECK: %[[A:.*]] = aten.eq %[[X]], %[[Y]] : tensor<2x3xf32>, tensor<3xi32> -> tensor<2x3xi1>
// CHECK-NEXT: %[[B:.*]] = aten.eq %[[Y]], %[[S]] : tensor<3xi32>, f64 -> tensor<3xi1>
// CHECK-NEXT: func.return %[[A]], %[[B]] : tensor<2x3xi1>, tensor<3xi1>
func.func @eq(%x: tensor<2x3xf32>, %y: tensor<3xi32>, %s: f64) -> (tensor<2x3xi1>, tensor<3xi1>) {
  %a = aten.eq %x, %y : tensor<2x3xf32>, tensor<3xi32> -> tensor<2x3xi1>
  %b = aten.eq %y, %s : tensor<3xi32>, f64 -> tensor<3xi1>
  func.return %a, %b : tensor<2x3xi1>, tensor<3xi1>
}

// -----

// CHECK-LABEL: func.func @ne
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[Y:.*]]: tensor<3xi32>, %[[S:.*]]: f64)
// CHECK: %[[A:.*]] = aten.ne %[[X]], %[[Y]] : tensor<2x3xf32>, tensor<3xi32> -> tensor<2x3xi1>
// CHECK-NEXT: %[[B:.*]] = aten.ne %[[Y]], %[[S]] : tensor<3xi32>, f64 -> tensor<3xi1>
// CHECK-NEXT: func.return %[[A]], %[[B]] : tensor<2x3xi1>, tensor<3xi1>
func.func @ne(%x: tensor<2x3xf32>, %y: tensor<3xi32>, %s: f64) -> (tensor<2x3xi1>, tensor<3xi1>) {
  %a = aten.ne %x, %y : tensor<2x3xf32>, tensor<3xi32> -> tensor<2x3xi1>
  %b = aten.ne %y, %s : tensor<3xi32>, f64 -> tensor<3xi1>
  func.return %a, %b : tensor<2x3xi1>, tensor<3xi1>
}

// -----

// CHECK-LABEL: func.func @lt
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[Y:.*]]: tensor<3xi32>, %[[S:.*]]: f64)
// CHECK: %[[A:.*]] = aten.lt %[[X]], %[[Y]] : tensor<2x3xf32>, tensor<3xi32> -> tensor<2x3xi1>
// CHECK-NEXT: %[[B:.*]] = aten.lt %[[Y]], %[[S]] : tensor<3xi32>, f64 -> tensor<3xi1>
// CHECK-NEXT: func.return %[[A]], %[[B]] : tensor<2x3xi1>, tensor<3xi1>
func.func @lt(%x: tensor<2x3xf32>, %y: tensor<3xi32>, %s: f64) -> (tensor<2x3xi1>, tensor<3xi1>) {
  %a = aten.lt %x, %y : tensor<2x3xf32>, tensor<3xi32> -> tensor<2x3xi1>
  %b = aten.lt %y, %s : tensor<3xi32>, f64 -> tensor<3xi1>
  func.return %a, %b : tensor<2x3xi1>, tensor<3xi1>
}

// -----

// CHECK-LABEL: func.func @le
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[Y:.*]]: tensor<3xi32>, %[[S:.*]]: f64)
// CHECK: %[[A:.*]] = aten.le %[[X]], %[[Y]] : tensor<2x3xf32>, tensor<3xi32> -> tensor<2x3xi1>
// CHECK-NEXT: %[[B:.*]] = aten.le %[[Y]], %[[S]] : tensor<3xi32>, f64 -> tensor<3xi1>
// CHECK-NEXT: func.return %[[A]], %[[B]] : tensor<2x3xi1>, tensor<3xi1>
func.func @le(%x: tensor<2x3xf32>, %y: tensor<3xi32>, %s: f64) -> (tensor<2x3xi1>, tensor<3xi1>) {
  %a = aten.le %x, %y : tensor<2x3xf32>, tensor<3xi32> -> tensor<2x3xi1>
  %b = aten.le %y, %s : tensor<3xi32>, f64 -> tensor<3xi1>
  func.return %a, %b : tensor<2x3xi1>, tensor<3xi1>
}

// -----

// CHECK-LABEL: func.func @gt
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[Y:.*]]: tensor<3xi32>, %[[S:.*]]: f64)
// CHECK: %[[A:.*]] = aten.gt %[[X]], %[[Y]] : tensor<2x3xf32>, tensor<3xi32> -> tensor<2x3xi1>
// CHECK-NEXT: %[[B:.*]] = aten.gt %[[Y]], %[[S]] : tensor<3xi32>, f64 -> tensor<3xi1>
// CHECK-NEXT: func.return %[[A]], %[[B]] : tensor<2x3xi1>, tensor<3xi1>
func.func @gt(%x: tensor<2x3xf32>, %y: tensor<3xi32>, %s: f64) -> (tensor<2x3xi1>, tensor<3xi1>) {
  %a = aten.gt %x, %y : tensor<2x3xf32>, tensor<3xi32> -> tensor<2x3xi1>
  %b = aten.gt %y, %s : tensor<3xi32>, f64 -> tensor<3xi1>
  func.return %a, %b : tensor<2x3xi1>, tensor<3xi1>
}

// -----

// CHECK-LABEL: func.func @ge
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[Y:.*]]: tensor<3xi32>, %[[S:.*]]: f64)
// CHECK: %[[A:.*]] = aten.ge %[[X]], %[[Y]] : tensor<2x3xf32>, tensor<3xi32> -> tensor<2x3xi1>
// CHECK-NEXT: %[[B:.*]] = aten.ge %[[Y]], %[[S]] : tensor<3xi32>, f64 -> tensor<3xi1>
// CHECK-NEXT: func.return %[[A]], %[[B]] : tensor<2x3xi1>, tensor<3xi1>
func.func @ge(%x: tensor<2x3xf32>, %y: tensor<3xi32>, %s: f64) -> (tensor<2x3xi1>, tensor<3xi1>) {
  %a = aten.ge %x, %y : tensor<2x3xf32>, tensor<3xi32> -> tensor<2x3xi1>
  %b = aten.ge %y, %s : tensor<3xi32>, f64 -> tensor<3xi1>
  func.return %a, %b : tensor<2x3xi1>, tensor<3xi1>
}

// -----

// CHECK-LABEL: func.func @logical_and
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<1xi64>)
// CHECK: %[[R:.*]] = aten.logical_and %[[X]], %[[Y]] : tensor<4xf32>, tensor<1xi64> -> tensor<4xi1>
// CHECK-NEXT: func.return %[[R]] : tensor<4xi1>
func.func @logical_and(%x: tensor<4xf32>, %y: tensor<1xi64>) -> tensor<4xi1> {
  %r = aten.logical_and %x, %y : tensor<4xf32>, tensor<1xi64> -> tensor<4xi1>
  func.return %r : tensor<4xi1>
}

// -----

// CHECK-LABEL: func.func @logical_or
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<1xi64>)
// CHECK: %[[R:.*]] = aten.logical_or %[[X]], %[[Y]] : tensor<4xf32>, tensor<1xi64> -> tensor<4xi1>
// CHECK-NEXT: func.return %[[R]] : tensor<4xi1>
func.func @logical_or(%x: tensor<4xf32>, %y: tensor<1xi64>) -> tensor<4xi1> {
  %r = aten.logical_or %x, %y : tensor<4xf32>, tensor<1xi64> -> tensor<4xi1>
  func.return %r : tensor<4xi1>
}

// -----

// CHECK-LABEL: func.func @logical_xor
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<1xi64>)
// CHECK: %[[R:.*]] = aten.logical_xor %[[X]], %[[Y]] : tensor<4xf32>, tensor<1xi64> -> tensor<4xi1>
// CHECK-NEXT: func.return %[[R]] : tensor<4xi1>
func.func @logical_xor(%x: tensor<4xf32>, %y: tensor<1xi64>) -> tensor<4xi1> {
  %r = aten.logical_xor %x, %y : tensor<4xf32>, tensor<1xi64> -> tensor<4xi1>
  func.return %r : tensor<4xi1>
}

// -----

// uint8 and int8 promote to int16; bool promotes to anything.
// CHECK-LABEL: func.func @bool_and_uint8
// CHECK-SAME: (%[[B:.*]]: tensor<4xi1>, %[[U:.*]]: tensor<4xui8>, %[[S:.*]]: tensor<4xi8>)
// CHECK: %[[A:.*]] = aten.add %[[B]], %[[B]] : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
// CHECK-NEXT: %[[C:.*]] = aten.add %[[U]], %[[S]] : tensor<4xui8>, tensor<4xi8> -> tensor<4xi16>
// CHECK-NEXT: %[[D:.*]] = aten.mul %[[B]], %[[U]] : tensor<4xi1>, tensor<4xui8> -> tensor<4xui8>
// CHECK-NEXT: func.return %[[A]], %[[C]], %[[D]] : tensor<4xi1>, tensor<4xi16>, tensor<4xui8>
func.func @bool_and_uint8(%b: tensor<4xi1>, %u: tensor<4xui8>, %s: tensor<4xi8>) -> (tensor<4xi1>, tensor<4xi16>, tensor<4xui8>) {
  %a = aten.add %b, %b : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  %c = aten.add %u, %s : tensor<4xui8>, tensor<4xi8> -> tensor<4xi16>
  %d = aten.mul %b, %u : tensor<4xi1>, tensor<4xui8> -> tensor<4xui8>
  func.return %a, %c, %d : tensor<4xi1>, tensor<4xi16>, tensor<4xui8>
}
