// RUN: fusec-opt %s --split-input-file -p slice-pointwise | filecheck %s

// Llama's RoPE backward: the gradient times `sin`, read only as two halves
// (rotate_half's backward negates one and concatenates them). The product runs
// once per half, on halves of its operands; `%s`, broadcast over dims 0 and 1
// but not along dim 3, is cut too.
// CHECK-LABEL: func.func @halves
// CHECK-SAME: (%[[G:.*]]: tensor<2x2x8x8xf32>, %[[S:.*]]: tensor<1x1x8x8xf32>)
// CHECK-NEXT: %[[G0:.*]] = aten.slice %[[G]] dim = 3 start = 0 end = 4 step = 1 : tensor<2x2x8x8xf32> -> tensor<2x2x8x4xf32>
// CHECK-NEXT: %[[S0:.*]] = aten.slice %[[S]] dim = 3 start = 0 end = 4 step = 1 : tensor<1x1x8x8xf32> -> tensor<1x1x8x4xf32>
// CHECK-NEXT: %[[LO:.*]] = aten.mul %[[G0]], %[[S0]] : tensor<2x2x8x4xf32>, tensor<1x1x8x4xf32> -> tensor<2x2x8x4xf32>
// CHECK-NEXT: %[[G1:.*]] = aten.slice %[[G]] dim = 3 start = 4 end = 8 step = 1
// CHECK-NEXT: %[[S1:.*]] = aten.slice %[[S]] dim = 3 start = 4 end = 8 step = 1
// CHECK-NEXT: %[[HI:.*]] = aten.mul %[[G1]], %[[S1]] : tensor<2x2x8x4xf32>, tensor<1x1x8x4xf32> -> tensor<2x2x8x4xf32>
// CHECK-NEXT: %[[N:.*]] = aten.neg %[[LO]]
// CHECK-NEXT: %[[C:.*]] = aten.cat %[[HI]], %[[N]] dim = 3
// CHECK-NEXT: func.return %[[C]]
func.func @halves(%g: tensor<2x2x8x8xf32>, %s: tensor<1x1x8x8xf32>) -> tensor<2x2x8x8xf32> {
  %m = aten.mul %g, %s : tensor<2x2x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<2x2x8x8xf32>
  %lo = aten.slice %m dim = 3 start = 0 end = 4 step = 1 : tensor<2x2x8x8xf32> -> tensor<2x2x8x4xf32>
  %hi = aten.slice %m dim = 3 start = 4 end = 8 step = 1 : tensor<2x2x8x8xf32> -> tensor<2x2x8x4xf32>
  %n = aten.neg %lo : tensor<2x2x8x4xf32> -> tensor<2x2x8x4xf32>
  %c = aten.cat %hi, %n dim = 3 : tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x8xf32>
  func.return %c : tensor<2x2x8x8xf32>
}

// -----

// An operand broadcast along the cut dim (size 1, or of lower rank) and a
// Python scalar are read whole.
// CHECK-LABEL: func.func @broadcast_operands
// CHECK-SAME: (%[[X:.*]]: tensor<4x6xf32>, %[[R:.*]]: tensor<4x1xf32>)
// CHECK-NEXT: %[[X0:.*]] = aten.slice %[[X]] dim = 1 start = 0 end = 3 step = 1
// CHECK-NEXT: %[[A:.*]] = aten.add %[[X0]], %[[R]] : tensor<4x3xf32>, tensor<4x1xf32> -> tensor<4x3xf32>
// CHECK-NEXT: %[[X1:.*]] = aten.slice %[[X]] dim = 1 start = 3 end = 9223372036854775807 step = 1
// CHECK-NEXT: %[[B:.*]] = aten.add %[[X1]], %[[R]] : tensor<4x3xf32>, tensor<4x1xf32> -> tensor<4x3xf32>
func.func @broadcast_operands(%x: tensor<4x6xf32>, %r: tensor<4x1xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %m = aten.add %x, %r : tensor<4x6xf32>, tensor<4x1xf32> -> tensor<4x6xf32>
  %a = aten.slice %m dim = 1 start = 0 end = 3 step = 1 : tensor<4x6xf32> -> tensor<4x3xf32>
  %b = aten.slice %m dim = -1 start = 3 end = 9223372036854775807 step = 1 : tensor<4x6xf32> -> tensor<4x3xf32>
  %ea = aten.exp %a : tensor<4x3xf32> -> tensor<4x3xf32>
  %eb = aten.exp %b : tensor<4x3xf32> -> tensor<4x3xf32>
  func.return %ea, %eb : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// Left alone: a result also read whole; overlapping slices (the overlap would
// be computed twice); a slice read by an op that does not fuse (a product).
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-3: aten.add %
// CHECK-NOT: aten.add %
// CHECK: func.return
func.func @kept(%x: tensor<4x6xf32>, %y: tensor<4x6xf32>, %w: tensor<3x3xf32>) -> (tensor<4x6xf32>, tensor<4x3xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x3xf32>) {
  %m = aten.add %x, %y : tensor<4x6xf32>, tensor<4x6xf32> -> tensor<4x6xf32>
  %a = aten.slice %m dim = 1 start = 0 end = 3 step = 1 : tensor<4x6xf32> -> tensor<4x3xf32>
  %n = aten.add %x, %x : tensor<4x6xf32>, tensor<4x6xf32> -> tensor<4x6xf32>
  %b = aten.slice %n dim = 1 start = 0 end = 4 step = 1 : tensor<4x6xf32> -> tensor<4x4xf32>
  %c = aten.slice %n dim = 1 start = 2 end = 6 step = 1 : tensor<4x6xf32> -> tensor<4x4xf32>
  %p = aten.add %y, %y : tensor<4x6xf32>, tensor<4x6xf32> -> tensor<4x6xf32>
  %d = aten.slice %p dim = 1 start = 0 end = 3 step = 1 : tensor<4x6xf32> -> tensor<4x3xf32>
  %e = aten.mm %d, %w : tensor<4x3xf32>, tensor<3x3xf32> -> tensor<4x3xf32>
  func.return %m, %a, %b, %c, %e : tensor<4x6xf32>, tensor<4x3xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x3xf32>
}
