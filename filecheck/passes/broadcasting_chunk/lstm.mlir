// RUN: fusec-opt %s --split-input-file -p decompose,broadcasting-chunk,lower-broadcasting-chunk,fuse | filecheck %s

// An LSTM cell written the usual way (nn.LSTMCell: two biased linears, added, then
// chunked): the bias adds split out, the chunk climbs to the linears' results and
// the biases, and all the pointwise work, bias adds included, is ONE group.
// CHECK-LABEL: func.func @lstm_cell
// CHECK-SAME: (%[[X:.*]]: tensor<8x32xf32>, %[[HX:.*]]: tensor<8x16xf32>, %[[CX:.*]]: tensor<8x16xf32>, %[[WIH:.*]]: tensor<64x32xf32>, %[[WHH:.*]]: tensor<64x16xf32>, %[[BIH:.*]]: tensor<64xf32>, %[[BHH:.*]]: tensor<64xf32>)
// CHECK-NEXT: %[[LI:.*]] = aten.linear %[[X]], %[[WIH]] : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
// CHECK-NEXT: %[[LH:.*]] = aten.linear %[[HX]], %[[WHH]] : tensor<8x16xf32>, tensor<64x16xf32> -> tensor<8x64xf32>
// CHECK-NEXT: %[[HY:.*]], %[[CY:.*]] = fusion.group
// CHECK-DAG: = %[[CX]]
// CHECK-DAG: = %[[BHH]]
// CHECK-DAG: = %[[LH]]
// CHECK-DAG: = %[[BIH]]
// CHECK-DAG: = %[[LI]]
// CHECK-COUNT-4: aten.chunk
// CHECK-COUNT-12: aten.add
// CHECK: aten.sigmoid
// CHECK: aten.sigmoid
// CHECK: aten.tanh
// CHECK: aten.sigmoid
// CHECK: aten.mul
// CHECK: aten.mul
// CHECK: aten.add
// CHECK: aten.tanh
// CHECK: aten.mul
// CHECK-NEXT: fusion.yield
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[HY]], %[[CY]]
// CHECK-NOT: fusion.group
// CHECK-NOT: fusion.broadcasting_chunk
func.func @lstm_cell(%x: tensor<8x32xf32>, %hx: tensor<8x16xf32>, %cx: tensor<8x16xf32>, %w_ih: tensor<64x32xf32>, %w_hh: tensor<64x16xf32>, %b_ih: tensor<64xf32>, %b_hh: tensor<64xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %li = aten.linear %x, %w_ih, %b_ih : tensor<8x32xf32>, tensor<64x32xf32>, tensor<64xf32> -> tensor<8x64xf32>
  %lh = aten.linear %hx, %w_hh, %b_hh : tensor<8x16xf32>, tensor<64x16xf32>, tensor<64xf32> -> tensor<8x64xf32>
  %gates = aten.add %li, %lh : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
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

// The same cell written with matmul + transposed weights and four separate bias
// adds (`x @ w_ih.t() + b_ih + h @ w_hh.t() + b_hh`): one group again.
// CHECK-LABEL: func.func @lstm_matmul
// CHECK: %[[M1:.*]] = aten.matmul
// CHECK: %[[M2:.*]] = aten.matmul
// CHECK-NEXT: %{{.*}}, %{{.*}} = fusion.group
// CHECK-SAME: = %[[M1]]
// CHECK-NOT: fusion.group
// CHECK-NOT: fusion.broadcasting_chunk
// CHECK: aten.add
// CHECK: aten.sigmoid
// CHECK: fusion.yield
// CHECK-NOT: fusion.group
func.func @lstm_matmul(%x: tensor<8x32xf32>, %hx: tensor<8x16xf32>, %cx: tensor<8x16xf32>, %w_ih: tensor<64x32xf32>, %w_hh: tensor<64x16xf32>, %b_ih: tensor<64xf32>, %b_hh: tensor<64xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %wt1 = aten.transpose %w_ih dim0 = 0 dim1 = 1 : tensor<64x32xf32> -> tensor<32x64xf32>
  %m1 = aten.matmul %x, %wt1 : tensor<8x32xf32>, tensor<32x64xf32> -> tensor<8x64xf32>
  %s1 = aten.add %m1, %b_ih : tensor<8x64xf32>, tensor<64xf32> -> tensor<8x64xf32>
  %wt2 = aten.transpose %w_hh dim0 = 0 dim1 = 1 : tensor<64x16xf32> -> tensor<16x64xf32>
  %m2 = aten.matmul %hx, %wt2 : tensor<8x16xf32>, tensor<16x64xf32> -> tensor<8x64xf32>
  %s2 = aten.add %s1, %m2 : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %gates = aten.add %s2, %b_hh : tensor<8x64xf32>, tensor<64xf32> -> tensor<8x64xf32>
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
