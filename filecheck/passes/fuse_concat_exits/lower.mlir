// RUN: fusec-opt %s -p fuse-concat-exits --emit=loops | filecheck %s

// The kernel's index space is the parts' shape: it writes each part through its
// own pointer + strides (the runtime passes `narrow` views of the one cat
// buffer), so the cat itself leaves no trace in the loops.
// CHECK-LABEL: func.func @f(
// CHECK-NEXT:    %[[C:.*]] = fusion.launch @f_group0(%{{.*}}) : (tensor<4x3xf32>) -> tensor<4x6xf32>
// CHECK-NEXT:    func.return %[[C]]
// CHECK-LABEL: func.func @f_group0(
// CHECK-SAME:    %{{[0-9]+}}: index, %{{[0-9]+}}: index, %{{[0-9]+}}: index, %{{[0-9]+}}: index,
// CHECK-SAME:    %[[X:[0-9]+]]: memref<?xf32>, %{{[0-9]+}}: index, %{{[0-9]+}}: index,
// CHECK-SAME:    %[[P0:[0-9]+]]: memref<?xf32>, %{{[0-9]+}}: index, %{{[0-9]+}}: index,
// CHECK-SAME:    %[[P1:[0-9]+]]: memref<?xf32>, %{{[0-9]+}}: index, %{{[0-9]+}}: index)
// CHECK-NOT:     aten.cat
// CHECK:         %[[L:.*]] = memref.load %[[X]]
// CHECK-DAG:     %[[E:.*]] = math.exp %[[L]]
// CHECK-DAG:     %[[N:.*]] = arith.negf %[[L]]
// CHECK:         memref.store %[[E]], %[[P0]]
// CHECK-NEXT:    memref.store %[[N]], %[[P1]]
func.func @f(%a: tensor<4x3xf32>) -> tensor<4x6xf32> {
  %r:2 = fusion.group (%x = %a) : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
    %0 = aten.exp %x : tensor<4x3xf32> -> tensor<4x3xf32>
    %1 = aten.neg %x : tensor<4x3xf32> -> tensor<4x3xf32>
    fusion.yield %0, %1 : tensor<4x3xf32>, tensor<4x3xf32>
  }
  %c = aten.cat %r#0, %r#1 dim = 1 : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x6xf32>
  func.return %c : tensor<4x6xf32>
}
