// RUN: fusec-opt %s --split-input-file -p functionalize | filecheck %s

// A chain of in-place ops on a fresh value: every write goes, and each read
// after a write reads the written value.
// CHECK-LABEL: func.func @fresh_chain
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK: %[[Y:.*]] = aten.mul %[[X]], %{{.*}} : tensor<4xf32>, i64 -> tensor<4xf32>
// CHECK: %[[T:.*]] = aten.add %[[Y]], %{{.*}} : tensor<4xf32>, i64 -> tensor<4xf32>
// CHECK-NEXT: %[[R:.*]] = aten.neg %[[Y]] : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[U:.*]] = aten.sigmoid %[[T]] : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT: func.return %[[R]], %[[U]] : tensor<4xf32>, tensor<4xf32>
func.func @fresh_chain(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %c = arith.constant 2 : i64
  %y = aten.mul %x, %c : tensor<4xf32>, i64 -> tensor<4xf32>
  %d = arith.constant 1 : i64
  %t = aten.add %y, %d : tensor<4xf32>, i64 -> tensor<4xf32>
  // Read before the write: still %y.
  %r = aten.neg %y : tensor<4xf32> -> tensor<4xf32>
  aten.copy_ %y, %t : tensor<4xf32>, tensor<4xf32>
  %u = aten.sigmoid %y : tensor<4xf32> -> tensor<4xf32>
  aten.copy_ %y, %u : tensor<4xf32>, tensor<4xf32>
  func.return %r, %y : tensor<4xf32>, tensor<4xf32>
}

// -----

// A write to a function argument is the caller's to see: it stays.
// CHECK-LABEL: func.func @argument
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: %[[T:.*]] = aten.relu %[[X]] : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT: aten.copy_ %[[X]], %[[T]] : tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT: %[[R:.*]] = aten.exp %[[X]] : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT: func.return %[[R]]
func.func @argument(%x: tensor<4xf32>) -> tensor<4xf32> {
  %t = aten.relu %x : tensor<4xf32> -> tensor<4xf32>
  aten.copy_ %x, %t : tensor<4xf32>, tensor<4xf32>
  %r = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

// A fresh value with a view: the write through the view changes the value, and a
// write to the value changes the view, so both stay.
// CHECK-LABEL: func.func @view
// CHECK: %[[Y:.*]] = aten.exp %{{.*}} : tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT: %[[V:.*]] = aten.narrow %[[Y]] dim = 0 start = 0 length = 1 : tensor<2x3xf32> -> tensor<1x3xf32>
// CHECK-NEXT: %[[T:.*]] = aten.neg %[[V]] : tensor<1x3xf32> -> tensor<1x3xf32>
// CHECK-NEXT: aten.copy_ %[[V]], %[[T]] : tensor<1x3xf32>, tensor<1x3xf32>
// CHECK-NEXT: %[[U:.*]] = aten.neg %[[Y]] : tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT: aten.copy_ %[[Y]], %[[U]] : tensor<2x3xf32>, tensor<2x3xf32>
// CHECK-NEXT: func.return %[[Y]], %[[V]]
func.func @view(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<1x3xf32>) {
  %y = aten.exp %x : tensor<2x3xf32> -> tensor<2x3xf32>
  %v = aten.narrow %y dim = 0 start = 0 length = 1 : tensor<2x3xf32> -> tensor<1x3xf32>
  %t = aten.neg %v : tensor<1x3xf32> -> tensor<1x3xf32>
  aten.copy_ %v, %t : tensor<1x3xf32>, tensor<1x3xf32>
  %u = aten.neg %y : tensor<2x3xf32> -> tensor<2x3xf32>
  aten.copy_ %y, %u : tensor<2x3xf32>, tensor<2x3xf32>
  func.return %y, %v : tensor<2x3xf32>, tensor<1x3xf32>
}

// -----

// An opaque op's result may be a view of anything: a write to it stays. A cast
// to the same type is a copy (the importer emits one only for a copy: a clone,
// `contiguous()` of a non-contiguous tensor; a no-op cast is the value itself):
// a write to it goes, and never reaches the tensor it copied.
// CHECK-LABEL: func.func @opaque_and_same_type_cast
// CHECK:         aten.copy_ %o,
// CHECK-NOT:     aten.copy_
// CHECK:         %[[U:.*]] = aten.neg
// CHECK-NEXT:    func.return %o, %e
func.func @opaque_and_same_type_cast(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %o = aten.opaque "torch.Tensor.view_as"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t = aten.exp %o : tensor<4xf32> -> tensor<4xf32>
  aten.copy_ %o, %t : tensor<4xf32>, tensor<4xf32>
  %e = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
  %s = aten.to %e : tensor<4xf32> -> tensor<4xf32>
  %u = aten.neg %s : tensor<4xf32> -> tensor<4xf32>
  aten.copy_ %s, %u : tensor<4xf32>, tensor<4xf32>
  func.return %o, %e : tensor<4xf32>, tensor<4xf32>
}

// -----

// A `fresh` opaque op (an ATen OpOverload whose schema aliases nothing, such as
// `aten.conv2d`) returns a new tensor: a write to it goes, as to any aten op's
// result (the `relu_` after a convolution in an exported ResNet). A fresh opaque
// op reading a value is no view of it either, so a write to that value goes too.
// CHECK-LABEL: func.func @fresh_opaque
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: %[[O:.*]] = aten.opaque "aten.conv1d.default"(%[[X]]) {fresh}
// CHECK-NEXT: %[[T:.*]] = aten.relu %[[O]]
// CHECK-NEXT: %[[P:.*]] = aten.opaque "aten.conv1d.default"(%[[T]]) {fresh}
// CHECK-NEXT: %[[U:.*]] = aten.neg %[[T]]
// CHECK-NEXT: func.return %[[U]], %[[P]]
func.func @fresh_opaque(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %o = aten.opaque "aten.conv1d.default"(%x) {fresh} : (tensor<4xf32>) -> tensor<4xf32>
  %t = aten.relu %o : tensor<4xf32> -> tensor<4xf32>
  aten.copy_ %o, %t : tensor<4xf32>, tensor<4xf32>
  %p = aten.opaque "aten.conv1d.default"(%o) {fresh} : (tensor<4xf32>) -> tensor<4xf32>
  %u = aten.neg %o : tensor<4xf32> -> tensor<4xf32>
  aten.copy_ %o, %u : tensor<4xf32>, tensor<4xf32>
  func.return %o, %p : tensor<4xf32>, tensor<4xf32>
}

// -----

// A write of another dtype (a cast) is not a plain value substitution: it stays.
// CHECK-LABEL: func.func @cast_write
// CHECK: aten.copy_
func.func @cast_write(%x: tensor<4xf32>, %y: tensor<4xf64>) -> tensor<4xf32> {
  %e = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
  aten.copy_ %e, %y : tensor<4xf32>, tensor<4xf64>
  func.return %e : tensor<4xf32>
}
