// RUN: fusec-opt %s --split-input-file -p fuse | filecheck %s

// The LSTM cell's pointwise tail: the chunk of precomputed gates joins the group
// (its outputs are views inside), and cy, used outside too, is a second output.
// CHECK-LABEL: func.func @lstm_tail
// CHECK-SAME: (%[[GATES:.*]]: tensor<8x64xf32>, %[[CX:.*]]: tensor<8x16xf32>)
// CHECK: %[[HY:.*]], %[[CY:.*]] = fusion.group
// CHECK-SAME: = %[[CX]]
// CHECK-SAME: = %[[GATES]]
// CHECK: aten.chunk
// CHECK: %[[C:.*]] = aten.add
// CHECK: %[[T:.*]] = aten.tanh %[[C]]
// CHECK: %[[H:.*]] = aten.mul %{{.*}}, %[[T]]
// CHECK: fusion.yield %[[H]], %[[C]]
// CHECK-NOT: fusion.group
// CHECK: func.return %[[HY]], %[[CY]]
func.func @lstm_tail(%gates: tensor<8x64xf32>, %cx: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %i, %f, %g, %o = aten.chunk %gates chunks = 4 dim = 1 : tensor<8x64xf32> -> tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
  %ig = aten.sigmoid %i : tensor<8x16xf32> -> tensor<8x16xf32>
  %fg = aten.sigmoid %f : tensor<8x16xf32> -> tensor<8x16xf32>
  %gg = aten.tanh %g : tensor<8x16xf32> -> tensor<8x16xf32>
  %og = aten.sigmoid %o : tensor<8x16xf32> -> tensor<8x16xf32>
  %a = aten.mul %fg, %cx : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %b = aten.mul %ig, %gg : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %cy = aten.add %a, %b : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %t = aten.tanh %cy : tensor<8x16xf32> -> tensor<8x16xf32>
  %hy = aten.mul %og, %t : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  func.return %hy, %cy : tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

// A chunk output also used outside the group keeps the chunk outside.
// CHECK-LABEL: func.func @chunk_with_outside_use
// CHECK: %[[A:.*]], %[[B:.*]] = aten.chunk
// CHECK: fusion.group (%{{.*}} = %[[B]], %{{.*}} = %[[A]])
// CHECK-NOT: aten.chunk
// CHECK: fusion.yield
// CHECK: func.return %{{.*}}, %[[B]]
func.func @chunk_with_outside_use(%x: tensor<4x8xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %a, %b = aten.chunk %x chunks = 2 dim = 1 : tensor<4x8xf32> -> tensor<4x4xf32>, tensor<4x4xf32>
  %0 = aten.exp %a : tensor<4x4xf32> -> tensor<4x4xf32>
  %1 = aten.add %0, %b : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  func.return %1, %b : tensor<4x4xf32>, tensor<4x4xf32>
}
