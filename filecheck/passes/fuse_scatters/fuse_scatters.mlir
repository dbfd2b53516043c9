// RUN: fusec-opt %s --split-input-file -p fuse-scatters | filecheck %s

// GPT-2's tied token table: the lookup's gradient plus the output projection's.
// The add joins the group and its other operand is the table's starting value.
// CHECK-LABEL: func.func @tied_table
// CHECK-SAME: (%[[D:.*]]: tensor<2x8x32xf32>, %[[IDS:.*]]: tensor<2x8xi64>, %[[MM:.*]]: tensor<100x32xf32>)
// CHECK-NEXT: %[[R:.*]] = fusion.group (%[[A:.*]] = %[[D]], %[[B:.*]] = %[[IDS]], %[[C:.*]] = %[[MM]]) : (tensor<2x8x32xf32>, tensor<2x8xi64>, tensor<100x32xf32>) -> (tensor<100x32xf32>) {
// CHECK-NEXT:   %[[G:.*]] = aten.embedding_dense_backward %[[A]], %[[B]] num_weights = 100 padding_idx = -1
// CHECK-NEXT:   %[[S:.*]] = aten.add %[[C]], %[[G]] : tensor<100x32xf32>, tensor<100x32xf32> -> tensor<100x32xf32>
// CHECK-NEXT:   fusion.yield %[[S]] : tensor<100x32xf32>
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[R]]
func.func @tied_table(%d: tensor<2x8x32xf32>, %ids: tensor<2x8xi64>, %mm: tensor<100x32xf32>) -> tensor<100x32xf32> {
  %g = aten.embedding_dense_backward %d, %ids num_weights = 100 padding_idx = -1 : tensor<2x8x32xf32>, tensor<2x8xi64> -> tensor<100x32xf32>
  %s = aten.add %mm, %g : tensor<100x32xf32>, tensor<100x32xf32> -> tensor<100x32xf32>
  func.return %s : tensor<100x32xf32>
}

// -----

// A table of its own (BERT's, with a padding row): the gradient alone.
// CHECK-LABEL: func.func @own_table
// CHECK-NEXT: %[[R:.*]] = fusion.group (%[[A:.*]] = %{{.*}}, %[[B:.*]] = %{{.*}}) : (tensor<16x32xf32>, tensor<16xi32>) -> (tensor<50x32xf32>) {
// CHECK-NEXT:   %[[G:.*]] = aten.embedding_dense_backward %[[A]], %[[B]] num_weights = 50 padding_idx = 0
// CHECK-NEXT:   fusion.yield %[[G]] : tensor<50x32xf32>
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[R]]
func.func @own_table(%d: tensor<16x32xf32>, %ids: tensor<16xi32>) -> tensor<50x32xf32> {
  %g = aten.embedding_dense_backward %d, %ids num_weights = 50 padding_idx = 0 : tensor<16x32xf32>, tensor<16xi32> -> tensor<50x32xf32>
  func.return %g : tensor<50x32xf32>
}

// -----

// Adds that are not a starting table stay out of the group: a scaled one, a
// broadcast one, and an add of a gradient someone else reads too.
// CHECK-LABEL: func.func @adds_left_out
// CHECK:      %[[G0:.*]] = fusion.group
// CHECK:      aten.add %{{.*}}, %[[G0]] alpha = 2
// CHECK:      %[[G1:.*]] = fusion.group
// CHECK:      aten.add %[[G1]], %{{.*}} : tensor<10x4xf32>, tensor<4xf32>
// CHECK:      %[[G2:.*]] = fusion.group
// CHECK:      aten.add %{{.*}}, %[[G2]] : tensor<10x4xf32>, tensor<10x4xf32>
// CHECK-NEXT: func.return
func.func @adds_left_out(%d: tensor<3x4xf32>, %ids: tensor<3xi64>, %t: tensor<10x4xf32>, %b: tensor<4xf32>) -> (tensor<10x4xf32>, tensor<10x4xf32>, tensor<10x4xf32>, tensor<10x4xf32>) {
  %g0 = aten.embedding_dense_backward %d, %ids num_weights = 10 padding_idx = -1 : tensor<3x4xf32>, tensor<3xi64> -> tensor<10x4xf32>
  %s0 = aten.add %t, %g0 alpha = 2 : i64 : tensor<10x4xf32>, tensor<10x4xf32> -> tensor<10x4xf32>
  %g1 = aten.embedding_dense_backward %d, %ids num_weights = 10 padding_idx = -1 : tensor<3x4xf32>, tensor<3xi64> -> tensor<10x4xf32>
  %s1 = aten.add %g1, %b : tensor<10x4xf32>, tensor<4xf32> -> tensor<10x4xf32>
  %g2 = aten.embedding_dense_backward %d, %ids num_weights = 10 padding_idx = -1 : tensor<3x4xf32>, tensor<3xi64> -> tensor<10x4xf32>
  %s2 = aten.add %t, %g2 : tensor<10x4xf32>, tensor<10x4xf32> -> tensor<10x4xf32>
  func.return %s0, %s1, %s2, %g2 : tensor<10x4xf32>, tensor<10x4xf32>, tensor<10x4xf32>, tensor<10x4xf32>
}

// -----

// Left to PyTorch: one id (no dim for the kernel to walk) and an integer gradient.
// CHECK-LABEL: func.func @left_alone
// CHECK-NEXT: aten.embedding_dense_backward
// CHECK-NEXT: aten.embedding_dense_backward
// CHECK-NEXT: func.return
func.func @left_alone(%d: tensor<4xf32>, %id: tensor<i64>, %n: tensor<3x4xi64>, %ids: tensor<3xi64>) -> (tensor<10x4xf32>, tensor<10x4xi64>) {
  %g = aten.embedding_dense_backward %d, %id num_weights = 10 padding_idx = -1 : tensor<4xf32>, tensor<i64> -> tensor<10x4xf32>
  %h = aten.embedding_dense_backward %n, %ids num_weights = 10 padding_idx = -1 : tensor<3x4xi64>, tensor<3xi64> -> tensor<10x4xi64>
  func.return %g, %h : tensor<10x4xf32>, tensor<10x4xi64>
}
