// RUN: fusec-opt %s --split-input-file -p fuse | filecheck %s

// Dynamic dims fuse as static ones do: the kernel takes its sizes at run time.
// An MLP tail over a dynamic batch (`?`): the bias add, tanh and scale are one
// group, the matmul a barrier.
// CHECK-LABEL: func.func @mlp_tail
// CHECK-SAME: (%[[X:.*]]: tensor<?x16xf32>, %[[W:.*]]: tensor<64x16xf32>, %[[B:.*]]: tensor<64xf32>, %[[N:.*]]: i64)
// CHECK-NEXT: %[[L:.*]] = aten.linear %[[X]], %[[W]] : tensor<?x16xf32>, tensor<64x16xf32> -> tensor<?x64xf32>
// CHECK-NEXT: %[[G:.*]] = fusion.group (%[[M:.*]] = %[[N]], %[[A:.*]] = %[[L]], %[[C:.*]] = %[[B]]) : (i64, tensor<?x64xf32>, tensor<64xf32>) -> (tensor<?x64xf32>) {
// CHECK-NEXT: %[[ADD:.*]] = aten.add %[[A]], %[[C]] : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
// CHECK-NEXT: %[[T:.*]] = aten.tanh %[[ADD]]
// CHECK-NEXT: %[[S:.*]] = aten.mul %[[T]], %[[M]] : tensor<?x64xf32>, i64 -> tensor<?x64xf32>
// CHECK-NEXT: fusion.yield %[[S]] : tensor<?x64xf32>
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[G]]
func.func @mlp_tail(%x: tensor<?x16xf32>, %w: tensor<64x16xf32>, %b: tensor<64xf32>, %n: i64) -> tensor<?x64xf32> {
  %l = aten.linear %x, %w : tensor<?x16xf32>, tensor<64x16xf32> -> tensor<?x64xf32>
  %a = aten.add %l, %b : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  %t = aten.tanh %a : tensor<?x64xf32> -> tensor<?x64xf32>
  %s = aten.mul %t, %n : tensor<?x64xf32>, i64 -> tensor<?x64xf32>
  func.return %s : tensor<?x64xf32>
}

// -----

// A softmax over a dynamic dim: the reductions and the pointwise work around
// them are one group, as with static sizes.
// CHECK-LABEL: func.func @softmax
// CHECK-NEXT: %[[G:.*]] = fusion.group (%{{.*}} = %{{.*}}) : (tensor<?x?xf32>) -> (tensor<?x?xf32>) {
// CHECK: aten.amax {{.*}} : tensor<?x?xf32> -> tensor<?x1xf32>
// CHECK: aten.exp
// CHECK: aten.sum {{.*}} : tensor<?x?xf32> -> tensor<?x1xf32>
// CHECK: aten.div
// CHECK: fusion.yield
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[G]]
func.func @softmax(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %m = aten.amax %x dims = [1] keepdim = true : tensor<?x?xf32> -> tensor<?x1xf32>
  %d = aten.sub %x, %m : tensor<?x?xf32>, tensor<?x1xf32> -> tensor<?x?xf32>
  %e = aten.exp %d : tensor<?x?xf32> -> tensor<?x?xf32>
  %s = aten.sum %e dims = [1] keepdim = true : tensor<?x?xf32> -> tensor<?x1xf32>
  %r = aten.div %e, %s : tensor<?x?xf32>, tensor<?x1xf32> -> tensor<?x?xf32>
  func.return %r : tensor<?x?xf32>
}
