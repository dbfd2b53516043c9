// RUN: fusec-opt %s --fuse -p guard | filecheck %s
// RUN: fusec-opt %s --fuse -p guard --emit=loops | filecheck %s --check-prefix=LOOPS

// The LSTM tail after --fuse: one group, guarded on the gates and cx; the fallback
// is the chunk and the pointwise ops. Guarded IR still outlines and lowers.
// CHECK-LABEL: func.func @lstm_tail
// CHECK-SAME: (%[[GATES:.*]]: tensor<8x64xf32>, %[[CX:.*]]: tensor<8x16xf32>)
// CHECK-NEXT: %[[OK:.*]] = fusion.guard ({{.*}})
// CHECK-NEXT: %[[HY:.*]], %[[CY:.*]] = scf.if %[[OK]]
// CHECK-NEXT: fusion.group
// CHECK: } else {
// CHECK-NEXT: aten.chunk %[[GATES]]
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[HY]], %[[CY]]

// LOOPS-LABEL: func.func @lstm_tail
// LOOPS: scf.if
// LOOPS-NEXT: fusion.launch @lstm_tail_group0
// LOOPS: func.func @lstm_tail_group0({{.*}}) attributes {fusion.kernel}
// LOOPS: scf.for
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
