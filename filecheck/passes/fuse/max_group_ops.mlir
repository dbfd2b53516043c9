// RUN: fusec-opt %s --split-input-file -p 'fuse{max-group-ops=3}' | filecheck %s
// RUN: fusec-opt %s --split-input-file -p 'fuse{max-group-ops=0}' | filecheck %s --check-prefix=NOCAP

// A chain of six ops with a cap of three: two groups of three, the later one
// formed first (the walk runs backwards), the earlier one feeding it.
// CHECK-LABEL: func.func @chain
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>)
// CHECK:         %[[G0:.*]] = fusion.group (%[[A:.*]] = %[[X]])
// CHECK-NEXT:      aten.exp %[[A]]
// CHECK-NEXT:      aten.neg
// CHECK-NEXT:      aten.tanh
// CHECK-NEXT:      fusion.yield
// CHECK:         %[[G1:.*]] = fusion.group (%[[B:.*]] = %[[G0]])
// CHECK-NEXT:      aten.sigmoid %[[B]]
// CHECK-NEXT:      aten.exp
// CHECK-NEXT:      aten.neg
// CHECK-NEXT:      fusion.yield
// CHECK:         func.return %[[G1]]
// NOCAP-LABEL: func.func @chain
// NOCAP-COUNT-1: fusion.group
// NOCAP-NOT:     fusion.group
func.func @chain(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
  %1 = aten.neg %0 : tensor<4xf32> -> tensor<4xf32>
  %2 = aten.tanh %1 : tensor<4xf32> -> tensor<4xf32>
  %3 = aten.sigmoid %2 : tensor<4xf32> -> tensor<4xf32>
  %4 = aten.exp %3 : tensor<4xf32> -> tensor<4xf32>
  %5 = aten.neg %4 : tensor<4xf32> -> tensor<4xf32>
  func.return %5 : tensor<4xf32>
}

// -----

// Scalar constants cloned into a group do not count towards the cap (they cost a
// kernel nothing): a chain repeating "exp, mul by 0.5, neg" is cut into identical
// pieces of three ops, each with its own copy of the constant. (Counted, the
// constant would leave the later group at mul and neg.)
// CHECK-LABEL: func.func @constants_do_not_count
// CHECK:         %[[G0:.*]] = fusion.group
// CHECK-NEXT:      aten.exp
// CHECK-NEXT:      arith.constant 5.000000e-01 : f64
// CHECK-NEXT:      aten.mul
// CHECK-NEXT:      aten.neg
// CHECK-NEXT:      fusion.yield
// CHECK:         %[[G1:.*]] = fusion.group (%{{.*}} = %[[G0]])
// CHECK-NEXT:      aten.exp
// CHECK-NEXT:      arith.constant 5.000000e-01 : f64
// CHECK-NEXT:      aten.mul
// CHECK-NEXT:      aten.neg
// CHECK-NEXT:      fusion.yield
// CHECK:         func.return %[[G1]]
// NOCAP-LABEL: func.func @constants_do_not_count
// NOCAP-COUNT-1: fusion.group
// NOCAP-NOT:     fusion.group
func.func @constants_do_not_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = arith.constant 0.5 : f64
  %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
  %1 = aten.mul %0, %c : tensor<4xf32>, f64 -> tensor<4xf32>
  %2 = aten.neg %1 : tensor<4xf32> -> tensor<4xf32>
  %3 = aten.exp %2 : tensor<4xf32> -> tensor<4xf32>
  %4 = aten.mul %3, %c : tensor<4xf32>, f64 -> tensor<4xf32>
  %5 = aten.neg %4 : tensor<4xf32> -> tensor<4xf32>
  func.return %5 : tensor<4xf32>
}
