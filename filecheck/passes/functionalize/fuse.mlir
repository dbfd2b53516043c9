// RUN: fusec-opt %s --split-input-file -p functionalize,fuse | filecheck %s

// Functionalized writes fuse away: one group computes the whole chain.
// CHECK-LABEL: func.func @fresh
// CHECK-NEXT: %[[G:.*]] = fusion.group
// CHECK: aten.mul
// CHECK: aten.add
// CHECK: aten.sigmoid
// CHECK: fusion.yield
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[G]]
func.func @fresh(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = arith.constant 2 : i64
  %y = aten.mul %x, %c : tensor<4xf32>, i64 -> tensor<4xf32>
  %d = arith.constant 1 : i64
  %t = aten.add %y, %d : tensor<4xf32>, i64 -> tensor<4xf32>
  aten.copy_ %y, %t : tensor<4xf32>, tensor<4xf32>
  %u = aten.sigmoid %y : tensor<4xf32> -> tensor<4xf32>
  aten.copy_ %y, %u : tensor<4xf32>, tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// A kept write to an argument: `exp %x` reads %x before the write and must not
// move into the `add` after it, where %x holds the written value.
// CHECK-LABEL: func.func @no_fusion_across_write
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: %[[E:.*]] = aten.exp %[[X]]
// CHECK-NEXT: %[[C:.*]] = arith.constant
// CHECK-NEXT: %[[M:.*]] = aten.mul %[[X]], %[[C]]
// CHECK-NEXT: aten.copy_ %[[X]], %[[M]]
// CHECK-NEXT: %[[A:.*]] = aten.add %[[E]], %[[X]]
// CHECK-NEXT: func.return %[[A]]
func.func @no_fusion_across_write(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
  %c = arith.constant 2 : i64
  %m = aten.mul %x, %c : tensor<4xf32>, i64 -> tensor<4xf32>
  aten.copy_ %x, %m : tensor<4xf32>, tensor<4xf32>
  %a = aten.add %e, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return %a : tensor<4xf32>
}

// -----

// The same through a view of the argument: the write to the view may change
// what `exp %x` reads.
// CHECK-LABEL: func.func @no_fusion_across_view_write
// CHECK: aten.exp
// CHECK: aten.copy_
// CHECK-NEXT: %{{.*}} = aten.add
func.func @no_fusion_across_view_write(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %e = aten.exp %x : tensor<2x4xf32> -> tensor<2x4xf32>
  %v = aten.narrow %x dim = 0 start = 0 length = 1 : tensor<2x4xf32> -> tensor<1x4xf32>
  %n = aten.neg %v : tensor<1x4xf32> -> tensor<1x4xf32>
  aten.copy_ %v, %n : tensor<1x4xf32>, tensor<1x4xf32>
  %a = aten.add %e, %x : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  func.return %a : tensor<2x4xf32>
}

// -----

// A write to an unrelated fresh tensor does not stop fusion.
// CHECK-LABEL: func.func @unrelated_write
// CHECK: fusion.group
// CHECK: aten.exp
// CHECK: aten.add
// CHECK: fusion.yield
func.func @unrelated_write(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<2x4xf32>) {
  %e = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
  %f = aten.neg %y : tensor<4xf32> -> tensor<4xf32>
  %w = aten.expand %f size = [2, 4] : tensor<4xf32> -> tensor<2x4xf32>
  %g = aten.sin %y : tensor<4xf32> -> tensor<4xf32>
  aten.copy_ %f, %g : tensor<4xf32>, tensor<4xf32>
  %a = aten.add %e, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return %a, %w : tensor<4xf32>, tensor<2x4xf32>
}
