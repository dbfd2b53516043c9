// RUN: fusec-opt %s --split-input-file -p lower-broadcasting-chunk | filecheck %s

// Spanning inputs get an aten.chunk along their own copy of the dim; an input
// broadcast along it (%c) stands for all its pieces; no expand is needed.
// CHECK-LABEL: func.func @split
// CHECK-SAME: (%[[X:.*]]: tensor<8x64xf32>, %[[B:.*]]: tensor<64xf32>, %[[C:.*]]: tensor<8x1xf32>)
// CHECK-NEXT: %[[X0:.*]], %[[X1:.*]] = aten.chunk %[[X]] chunks = 2 dim = 1 : tensor<8x64xf32> -> tensor<8x32xf32>, tensor<8x32xf32>
// CHECK-NEXT: %[[B0:.*]], %[[B1:.*]] = aten.chunk %[[B]] chunks = 2 dim = 0 : tensor<64xf32> -> tensor<32xf32>, tensor<32xf32>
// CHECK-NOT: aten.expand
// CHECK-NEXT: %[[P:.*]] = aten.add %[[X0]], %[[B0]]
// CHECK-NEXT: %[[Q:.*]] = aten.mul %[[X1]], %[[C]]
// CHECK-NEXT: %[[K:.*]] = aten.gt %[[P]], %[[Q]]
// CHECK-NEXT: aten.where %[[K]], %[[B1]], %[[C]]
func.func @split(%x: tensor<8x64xf32>, %b: tensor<64xf32>, %c: tensor<8x1xf32>) -> tensor<8x32xf32> {
  %x0, %x1, %b0, %b1, %c0, %c1 = fusion.broadcasting_chunk %x, %b, %c chunks = 2 dim = -1 : tensor<8x64xf32>, tensor<64xf32>, tensor<8x1xf32> -> tensor<8x32xf32>, tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<8x1xf32>, tensor<8x1xf32>
  %p = aten.add %x0, %b0 : tensor<8x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
  %q = aten.mul %x1, %c0 : tensor<8x32xf32>, tensor<8x1xf32> -> tensor<8x32xf32>
  %k = aten.gt %p, %q : tensor<8x32xf32>, tensor<8x32xf32> -> tensor<8x32xi1>
  %r = aten.where %k, %b1, %c1 : tensor<8x32xi1>, tensor<32xf32>, tensor<8x1xf32> -> tensor<8x32xf32>
  func.return %r : tensor<8x32xf32>
}

// -----

// A non-negative dim counts in the broadcast shape's rank.
// CHECK-LABEL: func.func @positive_dim
// CHECK-NEXT: aten.chunk %{{.*}} chunks = 3 dim = 1 : tensor<2x6x5xf32>
// CHECK-NEXT: aten.chunk %{{.*}} chunks = 3 dim = 0 : tensor<6x1xf32>
func.func @positive_dim(%x: tensor<2x6x5xf32>, %y: tensor<6x1xf32>) -> tensor<2x2x5xf32> {
  %r:6 = fusion.broadcasting_chunk %x, %y chunks = 3 dim = 1 : tensor<2x6x5xf32>, tensor<6x1xf32> -> tensor<2x2x5xf32>, tensor<2x2x5xf32>, tensor<2x2x5xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x1xf32>
  %s = aten.add %r#0, %r#3 : tensor<2x2x5xf32>, tensor<2x1xf32> -> tensor<2x2x5xf32>
  func.return %s : tensor<2x2x5xf32>
}
