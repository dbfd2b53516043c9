// RUN: fusec-opt --fuse %s | filecheck %s
// The pointwise tail of an LSTM cell, after the gates were computed and chunked:
// `--fuse` makes it one group (chunk included) with outputs hy and cy.

// CHECK-LABEL: func.func @lstm_tail
// CHECK-SAME: (%[[GATES:.*]]: tensor<8x64xf32>, %[[CX:.*]]: tensor<8x16xf32>)
// CHECK-NEXT: %[[HY:.*]], %[[CY:.*]] = fusion.group ({{.*}}) : (tensor<8x16xf32>, tensor<8x64xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>)
// CHECK: aten.chunk
// CHECK: fusion.yield
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[HY]], %[[CY]]
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
