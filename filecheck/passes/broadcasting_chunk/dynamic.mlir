// RUN: fusec-opt %s --split-input-file -p decompose,broadcasting-chunk,lower-broadcasting-chunk,fuse | filecheck %s

// The LSTM cell of `lstm.mlir` with a dynamic batch (`?`, as Dynamo's
// `dynamic=True` imports it): the chunked dim (64) is static, so the chunk still
// climbs to the linears and the biases, and everything pointwise is ONE group.
// CHECK-LABEL: func.func @lstm_cell_dynamic_batch
// CHECK-SAME: (%[[X:.*]]: tensor<?x32xf32>, %[[HX:.*]]: tensor<?x16xf32>, %[[CX:.*]]: tensor<?x16xf32>, %{{.*}}: tensor<64x32xf32>, %{{.*}}: tensor<64x16xf32>, %{{.*}}: tensor<64xf32>, %{{.*}}: tensor<64xf32>)
// CHECK-NEXT: %[[LI:.*]] = aten.linear %[[X]], %{{.*}} : tensor<?x32xf32>, tensor<64x32xf32> -> tensor<?x64xf32>
// CHECK-NEXT: %[[LH:.*]] = aten.linear %[[HX]], %{{.*}} : tensor<?x16xf32>, tensor<64x16xf32> -> tensor<?x64xf32>
// CHECK-NEXT: %[[HY:.*]], %[[CY:.*]] = fusion.group
// CHECK-SAME: -> (tensor<?x16xf32>, tensor<?x16xf32>)
// CHECK-COUNT-4: aten.chunk
// CHECK-COUNT-12: aten.add
// CHECK: fusion.yield
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[HY]], %[[CY]]
// CHECK-NOT: fusion.group
// CHECK-NOT: fusion.broadcasting_chunk
func.func @lstm_cell_dynamic_batch(%x: tensor<?x32xf32>, %hx: tensor<?x16xf32>, %cx: tensor<?x16xf32>, %w_ih: tensor<64x32xf32>, %w_hh: tensor<64x16xf32>, %b_ih: tensor<64xf32>, %b_hh: tensor<64xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  %li = aten.linear %x, %w_ih, %b_ih : tensor<?x32xf32>, tensor<64x32xf32>, tensor<64xf32> -> tensor<?x64xf32>
  %lh = aten.linear %hx, %w_hh, %b_hh : tensor<?x16xf32>, tensor<64x16xf32>, tensor<64xf32> -> tensor<?x64xf32>
  %gates = aten.add %li, %lh : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  %i, %f, %g, %o = aten.chunk %gates chunks = 4 dim = 1 : tensor<?x64xf32> -> tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>
  %ig = aten.sigmoid %i : tensor<?x16xf32> -> tensor<?x16xf32>
  %fg = aten.sigmoid %f : tensor<?x16xf32> -> tensor<?x16xf32>
  %gg = aten.tanh %g : tensor<?x16xf32> -> tensor<?x16xf32>
  %og = aten.sigmoid %o : tensor<?x16xf32> -> tensor<?x16xf32>
  %a = aten.mul %fg, %cx : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  %b = aten.mul %ig, %gg : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  %cy = aten.add %a, %b : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  %t = aten.tanh %cy : tensor<?x16xf32> -> tensor<?x16xf32>
  %hy = aten.mul %og, %t : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  func.return %hy, %cy : tensor<?x16xf32>, tensor<?x16xf32>
}

// -----

// A dynamic size in the chunked dim of an operand may be 1 (broadcast) or the
// full size at run time: that producer stays above the chunk.
// CHECK-LABEL: func.func @maybe_broadcast
// CHECK: %[[Z:.*]] = aten.add %{{.*}}, %{{.*}} : tensor<?x8xf32>, tensor<?x?xf32> -> tensor<?x8xf32>
// CHECK-NOT: fusion.broadcasting_chunk
// CHECK: aten.chunk %{{.*}} chunks = 2 dim = 1 : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
func.func @maybe_broadcast(%x: tensor<?x8xf32>, %y: tensor<?x?xf32>) -> tensor<?x4xf32> {
  %z = aten.add %x, %y : tensor<?x8xf32>, tensor<?x?xf32> -> tensor<?x8xf32>
  %p, %q = aten.chunk %z chunks = 2 dim = 1 : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
  %r = aten.mul %p, %q : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
  func.return %r : tensor<?x4xf32>
}
