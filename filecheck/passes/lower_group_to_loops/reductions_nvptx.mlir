// RUN: fusec-opt %s -p 'lower-group-to-loops{target=nvptx}' | filecheck %s

// On nvptx a warp takes a row: warps grid-stride over the kept indices, lanes
// stride over the reduced ones, and five butterfly shuffles give every lane the
// row's sum; lane 0 stores the row output.
// CHECK-LABEL: func.func @row_sum(
// CHECK-SAME:    %[[NUMEL:[^:]*]]: index, %[[N0:[^:]*]]: index, %[[N1:[^:]*]]: index,
// CHECK:         %[[WS:.*]] = arith.constant 32 : index
// CHECK:         %[[G:.*]] = arith.addi
// CHECK-NEXT:    %[[WARP:.*]] = arith.divui %[[G]], %[[WS]] : index
// CHECK-NEXT:    %[[LANE:.*]] = arith.remui %[[G]], %[[WS]] : index
// CHECK:         scf.for %{{.*}} = %[[WARP]] to %{{.*}} step %{{.*}} {
// CHECK:           %[[P:.*]] = scf.for %{{.*}} = %[[LANE]] to %{{.*}} step %[[WS]] iter_args(%{{.*}} = %{{.*}}) -> (f32) {
// CHECK:           %[[S16:.*]] = llvm.call_intrinsic "llvm.nvvm.shfl.sync.bfly.f32"(%{{.*}}, %[[P]], %{{.*}}, %{{.*}}) : (i32, f32, i32, i32) -> f32
// CHECK-COUNT-4:   llvm.call_intrinsic "llvm.nvvm.shfl.sync.bfly.f32"
// CHECK:           %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]], %{{.*}} : index
// CHECK-NEXT:      scf.if %[[FIRST]] {
// CHECK:             memref.store
func.func @row_sum(%x: tensor<4x8xf32>) -> tensor<4x1xf32> attributes {fusion.kernel} {
  %e = aten.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %s = aten.sum %e dims = [1] keepdim = true : tensor<4x8xf32> -> tensor<4x1xf32>
  func.return %s : tensor<4x1xf32>
}
