// RUN: fusec-opt %s --split-input-file -p hoist-reductions | filecheck %s

// The bias gradient of a linear's backward: the column sum moves above the two
// matrix products that read the gradient first.
// CHECK-LABEL: func.func @bias_grad
// CHECK-SAME:    (%[[D:.*]]: tensor<16x64xf32>, %[[Y:.*]]: tensor<16x64xf32>, %[[W:.*]]: tensor<64x32xf32>)
// CHECK-NEXT:    %[[G:.*]] = aten.mul %[[D]], %[[Y]]
// CHECK-NEXT:    %[[S:.*]] = aten.sum %[[G]] dims = [0] keepdim = true
// CHECK-NEXT:    %[[A:.*]] = aten.mm %[[G]], %[[W]]
// CHECK-NEXT:    %[[T:.*]] = aten.transpose %[[G]]
// CHECK-NEXT:    %[[B:.*]] = aten.mm %[[T]], %[[Y]]
// CHECK-NEXT:    func.return %[[A]], %[[B]], %[[S]]
func.func @bias_grad(%d: tensor<16x64xf32>, %y: tensor<16x64xf32>, %w: tensor<64x32xf32>) -> (tensor<16x32xf32>, tensor<64x64xf32>, tensor<1x64xf32>) {
  %g = aten.mul %d, %y : tensor<16x64xf32>, tensor<16x64xf32> -> tensor<16x64xf32>
  %a = aten.mm %g, %w : tensor<16x64xf32>, tensor<64x32xf32> -> tensor<16x32xf32>
  %t = aten.transpose %g dim0 = 0 dim1 = 1 : tensor<16x64xf32> -> tensor<64x16xf32>
  %b = aten.mm %t, %y : tensor<64x16xf32>, tensor<16x64xf32> -> tensor<64x64xf32>
  %s = aten.sum %g dims = [0] keepdim = true : tensor<16x64xf32> -> tensor<1x64xf32>
  func.return %a, %b, %s : tensor<16x32xf32>, tensor<64x64xf32>, tensor<1x64xf32>
}

// -----

// A write between the producer and the sum may change what the sum reads: it
// stays below the write.
// CHECK-LABEL: func.func @write_between
// CHECK:         aten.mm
// CHECK-NEXT:    aten.copy_
// CHECK-NEXT:    aten.sum
func.func @write_between(%d: tensor<16x64xf32>, %y: tensor<16x64xf32>, %w: tensor<64x64xf32>) -> (tensor<16x64xf32>, tensor<1x64xf32>) {
  %g = aten.mul %d, %y : tensor<16x64xf32>, tensor<16x64xf32> -> tensor<16x64xf32>
  %a = aten.mm %g, %w : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xf32>
  aten.copy_ %g, %y : tensor<16x64xf32>, tensor<16x64xf32>
  %s = aten.sum %g dims = [0] keepdim = true : tensor<16x64xf32> -> tensor<1x64xf32>
  func.return %a, %s : tensor<16x64xf32>, tensor<1x64xf32>
}

// -----

// Nothing reads the product between it and the sum (the matrix product reads
// another value): the sum stays where it is.
// CHECK-LABEL: func.func @no_reader_between
// CHECK:         aten.mul
// CHECK-NEXT:    aten.mm
// CHECK-NEXT:    aten.sum
func.func @no_reader_between(%d: tensor<16x64xf32>, %y: tensor<16x64xf32>, %w: tensor<64x64xf32>) -> (tensor<16x64xf32>, tensor<1x64xf32>) {
  %g = aten.mul %d, %y : tensor<16x64xf32>, tensor<16x64xf32> -> tensor<16x64xf32>
  %a = aten.mm %y, %w : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xf32>
  %s = aten.sum %g dims = [0] keepdim = true : tensor<16x64xf32> -> tensor<1x64xf32>
  func.return %a, %s : tensor<16x64xf32>, tensor<1x64xf32>
}

// -----

// The sum of a block argument has no producer to join: it stays.
// CHECK-LABEL: func.func @of_an_argument
// CHECK:         aten.mm
// CHECK-NEXT:    aten.sum
func.func @of_an_argument(%d: tensor<16x64xf32>, %w: tensor<64x64xf32>) -> (tensor<16x64xf32>, tensor<1x64xf32>) {
  %a = aten.mm %d, %w : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xf32>
  %s = aten.sum %d dims = [0] keepdim = true : tensor<16x64xf32> -> tensor<1x64xf32>
  func.return %a, %s : tensor<16x64xf32>, tensor<1x64xf32>
}

// -----

// A reduction a pointwise op broadcasts back over the view's shape (softmax's
// `x - amax(x)`) stays in that shape's domain: its view's source is not reduced.
// CHECK-LABEL: func.func @broadcast_back
// CHECK:         %[[V:.*]] = aten.view
// CHECK-NEXT:    %[[M:.*]] = aten.amax %[[V]] dims = [2] keepdim = true : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
// CHECK-NEXT:    aten.sub %[[V]], %[[M]]
func.func @broadcast_back(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
  %p = aten.mul %a, %b : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %v = aten.view %p : tensor<8x8xf32> -> tensor<2x4x8xf32>
  %m = aten.amax %v dims = [2] keepdim = true : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %s = aten.sub %v, %m : tensor<2x4x8xf32>, tensor<2x4x1xf32> -> tensor<2x4x8xf32>
  func.return %s : tensor<2x4x8xf32>
}

// -----

// A reshaped gradient's bias sum reduces the reshape's source (its merged dims).
// CHECK-LABEL: func.func @through_a_view
// CHECK:         %[[G:.*]] = aten.mul
// CHECK-NEXT:    %[[S:.*]] = aten.sum %[[G]] dims = [0, 1] keepdim = true : tensor<4x5x32xf32> -> tensor<1x1x32xf32>
// CHECK:         aten.mm
// CHECK:         %[[R:.*]] = aten.view %[[S]] : tensor<1x1x32xf32> -> tensor<1x32xf32>
// CHECK-NEXT:    func.return %{{.*}}, %[[R]]
func.func @through_a_view(%d: tensor<4x5x32xf32>, %y: tensor<4x5x32xf32>, %w: tensor<32x32xf32>) -> (tensor<20x32xf32>, tensor<1x32xf32>) {
  %g = aten.mul %d, %y : tensor<4x5x32xf32>, tensor<4x5x32xf32> -> tensor<4x5x32xf32>
  %v = aten.view %g : tensor<4x5x32xf32> -> tensor<20x32xf32>
  %a = aten.mm %v, %w : tensor<20x32xf32>, tensor<32x32xf32> -> tensor<20x32xf32>
  %s = aten.sum %v dims = [0] keepdim = true : tensor<20x32xf32> -> tensor<1x32xf32>
  func.return %a, %s : tensor<20x32xf32>, tensor<1x32xf32>
}
