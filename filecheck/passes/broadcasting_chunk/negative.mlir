// RUN: fusec-opt %s --split-input-file -p broadcasting-chunk | filecheck %s
// Chunks that must stay where they are: each function comes out unchanged.

// The producer is not pointwise.
// CHECK-LABEL: func.func @matmul_producer
// CHECK-NEXT: %[[MM:.*]] = aten.matmul
// CHECK-NEXT: %{{.*}}, %{{.*}} = aten.chunk %[[MM]] chunks = 2 dim = 1
// CHECK-NOT: fusion.broadcasting_chunk
func.func @matmul_producer(%a: tensor<4x3xf32>, %w: tensor<3x8xf32>) -> tensor<4x4xf32> {
  %mm = aten.matmul %a, %w : tensor<4x3xf32>, tensor<3x8xf32> -> tensor<4x8xf32>
  %p, %q = aten.chunk %mm chunks = 2 dim = 1 : tensor<4x8xf32> -> tensor<4x4xf32>, tensor<4x4xf32>
  %r = aten.add %p, %q : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  func.return %r : tensor<4x4xf32>
}

// -----

// The producer has another use: moving would compute it twice.
// CHECK-LABEL: func.func @producer_used_elsewhere
// CHECK-NEXT: %[[Z:.*]] = aten.exp
// CHECK-NEXT: %{{.*}}, %{{.*}} = aten.chunk %[[Z]]
// CHECK-NOT: fusion.broadcasting_chunk
// CHECK: func.return %{{.*}}, %[[Z]]
func.func @producer_used_elsewhere(%x: tensor<4x8xf32>) -> (tensor<4x4xf32>, tensor<4x8xf32>) {
  %z = aten.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %p, %q = aten.chunk %z chunks = 2 dim = 1 : tensor<4x8xf32> -> tensor<4x4xf32>, tensor<4x4xf32>
  %r = aten.add %p, %q : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  func.return %r, %z : tensor<4x4xf32>, tensor<4x8xf32>
}

// -----

// A piece feeds a barrier (and the function's result): no fusible consumer to
// gain, so the producer stays whole.
// CHECK-LABEL: func.func @piece_feeds_barrier
// CHECK-NEXT: %[[Z:.*]] = aten.exp
// CHECK-NEXT: %[[P:.*]], %[[Q:.*]] = aten.chunk %[[Z]]
// CHECK-NOT: fusion.broadcasting_chunk
func.func @piece_feeds_barrier(%x: tensor<4x8xf32>, %w: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %z = aten.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %p, %q = aten.chunk %z chunks = 2 dim = 1 : tensor<4x8xf32> -> tensor<4x4xf32>, tensor<4x4xf32>
  %r = aten.neg %p : tensor<4x4xf32> -> tensor<4x4xf32>
  %m = aten.mm %q, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  func.return %r, %m : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// The chunked dim is a broadcast dim of the result (size 1): nothing to cut.
// CHECK-LABEL: func.func @broadcast_dim
// CHECK-NEXT: %[[Z:.*]] = aten.mul
// CHECK-NEXT: %{{.*}} = aten.chunk %[[Z]] chunks = 2 dim = 1
// CHECK-NOT: fusion.broadcasting_chunk
func.func @broadcast_dim(%x: tensor<4x1xf32>, %y: tensor<1xf32>) -> tensor<4x1xf32> {
  %z = aten.mul %x, %y : tensor<4x1xf32>, tensor<1xf32> -> tensor<4x1xf32>
  %p = aten.chunk %z chunks = 2 dim = 1 : tensor<4x1xf32> -> tensor<4x1xf32>
  %r = aten.neg %p : tensor<4x1xf32> -> tensor<4x1xf32>
  func.return %r : tensor<4x1xf32>
}

// -----

// An operand whose chunked dim is dynamic may or may not broadcast at run time.
// CHECK-LABEL: func.func @dynamic_operand_dim
// CHECK-NEXT: %[[Z:.*]] = aten.add
// CHECK-NEXT: %{{.*}}, %{{.*}} = aten.chunk %[[Z]]
// CHECK-NOT: fusion.broadcasting_chunk
func.func @dynamic_operand_dim(%x: tensor<4x8xf32>, %y: tensor<4x?xf32>) -> tensor<4x4xf32> {
  %z = aten.add %x, %y : tensor<4x8xf32>, tensor<4x?xf32> -> tensor<4x8xf32>
  %p, %q = aten.chunk %z chunks = 2 dim = 1 : tensor<4x8xf32> -> tensor<4x4xf32>, tensor<4x4xf32>
  %r = aten.add %p, %q : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  func.return %r : tensor<4x4xf32>
}

// -----

// A chunk of an argument has no producer to move.
// CHECK-LABEL: func.func @argument
// CHECK-NEXT: aten.chunk
// CHECK-NOT: fusion.broadcasting_chunk
func.func @argument(%x: tensor<4x8xf32>) -> tensor<4x4xf32> {
  %p, %q = aten.chunk %x chunks = 2 dim = 1 : tensor<4x8xf32> -> tensor<4x4xf32>, tensor<4x4xf32>
  %r = aten.add %p, %q : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  func.return %r : tensor<4x4xf32>
}
