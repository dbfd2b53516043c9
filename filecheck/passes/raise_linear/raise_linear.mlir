// RUN: fusec-opt %s --split-input-file -p raise-linear | filecheck %s

// ATen's 3-d linear (view, addmm over the flattened rows, view back) is one linear.
// CHECK-LABEL: func.func @addmm_3d
// CHECK-SAME:    (%[[X:.*]]: tensor<2x4x32xf32>, %[[W:.*]]: tensor<96x32xf32>, %[[B:.*]]: tensor<96xf32>)
// CHECK-NEXT:    %[[R:.*]] = aten.linear %[[X]], %[[W]], %[[B]] : tensor<2x4x32xf32>, tensor<96x32xf32>, tensor<96xf32> -> tensor<2x4x96xf32>
// CHECK-NOT:     aten.addmm
// CHECK:         func.return %[[R]]
func.func @addmm_3d(%x: tensor<2x4x32xf32>, %w: tensor<96x32xf32>, %b: tensor<96xf32>) -> tensor<2x4x96xf32> {
  %f = aten.reshape %x : tensor<2x4x32xf32> -> tensor<8x32xf32>
  %t = aten.transpose %w dim0 = 0 dim1 = 1 : tensor<96x32xf32> -> tensor<32x96xf32>
  %m = aten.addmm %b, %f, %t : tensor<96xf32>, tensor<8x32xf32>, tensor<32x96xf32> -> tensor<8x96xf32>
  %r = aten.reshape %m : tensor<8x96xf32> -> tensor<2x4x96xf32>
  func.return %r : tensor<2x4x96xf32>
}

// -----

// Without a bias, through `permute [1, 0]` (torch.export's core ATen spelling).
// CHECK-LABEL: func.func @mm_permute
// CHECK:         %[[R:.*]] = aten.linear %{{.*}}, %{{.*}} : tensor<3x5x16xf32>, tensor<8x16xf32> -> tensor<3x5x8xf32>
// CHECK-NEXT:    func.return %[[R]]
func.func @mm_permute(%x: tensor<3x5x16xf32>, %w: tensor<8x16xf32>) -> tensor<3x5x8xf32> {
  %f = aten.view %x : tensor<3x5x16xf32> -> tensor<15x16xf32>
  %t = aten.permute %w dims = [1, 0] : tensor<8x16xf32> -> tensor<16x8xf32>
  %m = aten.mm %f, %t : tensor<15x16xf32>, tensor<16x8xf32> -> tensor<15x8xf32>
  %r = aten.view %m : tensor<15x8xf32> -> tensor<3x5x8xf32>
  func.return %r : tensor<3x5x8xf32>
}

// -----

// The product is also returned: raising would compute it twice, so it stays.
// CHECK-LABEL: func.func @product_used_twice
// CHECK:         aten.addmm
// CHECK-NOT:     aten.linear
func.func @product_used_twice(%x: tensor<2x4x32xf32>, %w: tensor<96x32xf32>, %b: tensor<96xf32>) -> (tensor<2x4x96xf32>, tensor<8x96xf32>) {
  %f = aten.reshape %x : tensor<2x4x32xf32> -> tensor<8x32xf32>
  %t = aten.transpose %w dim0 = 0 dim1 = 1 : tensor<96x32xf32> -> tensor<32x96xf32>
  %m = aten.addmm %b, %f, %t : tensor<96xf32>, tensor<8x32xf32>, tensor<32x96xf32> -> tensor<8x96xf32>
  %r = aten.reshape %m : tensor<8x96xf32> -> tensor<2x4x96xf32>
  func.return %r, %m : tensor<2x4x96xf32>, tensor<8x96xf32>
}

// -----

// The reshape back does not restore the leading dims: not a linear layer.
// CHECK-LABEL: func.func @other_reshape
// CHECK:         aten.mm
// CHECK-NOT:     aten.linear
func.func @other_reshape(%x: tensor<2x4x32xf32>, %w: tensor<96x32xf32>) -> tensor<4x2x96xf32> {
  %f = aten.reshape %x : tensor<2x4x32xf32> -> tensor<8x32xf32>
  %t = aten.transpose %w dim0 = 0 dim1 = 1 : tensor<96x32xf32> -> tensor<32x96xf32>
  %m = aten.mm %f, %t : tensor<8x32xf32>, tensor<32x96xf32> -> tensor<8x96xf32>
  %r = aten.reshape %m : tensor<8x96xf32> -> tensor<4x2x96xf32>
  func.return %r : tensor<4x2x96xf32>
}

// -----

// GPT-2's `Conv1D` multiplies by a [K, N] weight, not a transposed [N, K] one:
// it is the linear of the weight's transpose (a view PyTorch's `linear` undoes).
// CHECK-LABEL: func.func @conv1d_weight
// CHECK-SAME:    (%[[X:.*]]: tensor<2x4x32xf32>, %[[W:.*]]: tensor<32x96xf32>, %[[B:.*]]: tensor<96xf32>)
// CHECK-NEXT:    %[[T:.*]] = aten.transpose %[[W]] dim0 = 0 dim1 = 1 : tensor<32x96xf32> -> tensor<96x32xf32>
// CHECK-NEXT:    %[[R:.*]] = aten.linear %[[X]], %[[T]], %[[B]] : tensor<2x4x32xf32>, tensor<96x32xf32>, tensor<96xf32> -> tensor<2x4x96xf32>
// CHECK-NEXT:    func.return %[[R]]
func.func @conv1d_weight(%x: tensor<2x4x32xf32>, %w: tensor<32x96xf32>, %b: tensor<96xf32>) -> tensor<2x4x96xf32> {
  %f = aten.reshape %x : tensor<2x4x32xf32> -> tensor<8x32xf32>
  %m = aten.addmm %b, %f, %w : tensor<96xf32>, tensor<8x32xf32>, tensor<32x96xf32> -> tensor<8x96xf32>
  %r = aten.reshape %m : tensor<8x96xf32> -> tensor<2x4x96xf32>
  func.return %r : tensor<2x4x96xf32>
}
