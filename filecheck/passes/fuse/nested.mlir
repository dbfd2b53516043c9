// RUN: fusec-opt %s --split-input-file -p fuse | filecheck %s

// Bodies of scf.if and scf.for are fused too; values from outside are inputs.
// CHECK-LABEL: func.func @in_if
// CHECK: scf.if
// CHECK: fusion.group
// CHECK: aten.exp
// CHECK: aten.neg
// CHECK: fusion.yield
// CHECK: scf.yield
// CHECK: else
// CHECK: fusion.group
// CHECK: aten.sigmoid
// CHECK: aten.tanh
func.func @in_if(%c: i1, %x: tensor<4xf32>) -> tensor<4xf32> {
  %r = scf.if %c -> (tensor<4xf32>) {
    %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
    %1 = aten.neg %0 : tensor<4xf32> -> tensor<4xf32>
    scf.yield %1 : tensor<4xf32>
  } else {
    %0 = aten.sigmoid %x : tensor<4xf32> -> tensor<4xf32>
    %1 = aten.tanh %0 : tensor<4xf32> -> tensor<4xf32>
    scf.yield %1 : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @in_for
// CHECK: scf.for
// CHECK-SAME: iter_args(%[[ACC:.*]] = %{{.*}})
// CHECK: %[[G:.*]] = fusion.group (%{{.*}} = %[[ACC]])
// CHECK: aten.exp
// CHECK: aten.neg
// CHECK: scf.yield %[[G]]
func.func @in_for(%x: tensor<4xf32>, %lb: index, %ub: index, %step: index) -> tensor<4xf32> {
  %r = scf.for %i = %lb to %ub step %step iter_args(%acc = %x) -> (tensor<4xf32>) {
    %0 = aten.exp %acc : tensor<4xf32> -> tensor<4xf32>
    %1 = aten.neg %0 : tensor<4xf32> -> tensor<4xf32>
    scf.yield %1 : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}
