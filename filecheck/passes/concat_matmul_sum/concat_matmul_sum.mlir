// RUN: fusec-opt %s --split-input-file -p concat-matmul-sum | filecheck %s

// AOTAutograd's weight gradient, `t(t(mm(t(g_t), x_t)))` summed over steps:
// one product of the transposed cat of the g_t (a row-wise copy) and the cat of
// the x_t. The double transposes and the transposes of g_t go with the sum.
// CHECK-LABEL: func.func @weight_gradient
// CHECK-SAME: (%[[G0:.*]]: tensor<4x64xf32>, %[[G1:.*]]: tensor<4x64xf32>, %[[X0:.*]]: tensor<4x16xf32>, %[[X1:.*]]: tensor<4x16xf32>)
// CHECK-NEXT: %[[G:.*]] = aten.cat %[[G0]], %[[G1]] dim = 0 : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<8x64xf32>
// CHECK-NEXT: %[[GT:.*]] = aten.transpose %[[G]] dim0 = 0 dim1 = 1 : tensor<8x64xf32> -> tensor<64x8xf32>
// CHECK-NEXT: %[[X:.*]] = aten.cat %[[X0]], %[[X1]] dim = 0 : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: %[[R:.*]] = aten.mm %[[GT]], %[[X]] : tensor<64x8xf32>, tensor<8x16xf32> -> tensor<64x16xf32>
// CHECK-NEXT: func.return %[[R]]
func.func @weight_gradient(%g0: tensor<4x64xf32>, %g1: tensor<4x64xf32>, %x0: tensor<4x16xf32>, %x1: tensor<4x16xf32>) -> tensor<64x16xf32> {
  %a0 = aten.transpose %g0 dim0 = 0 dim1 = 1 : tensor<4x64xf32> -> tensor<64x4xf32>
  %m0 = aten.mm %a0, %x0 : tensor<64x4xf32>, tensor<4x16xf32> -> tensor<64x16xf32>
  %u0 = aten.transpose %m0 dim0 = 0 dim1 = 1 : tensor<64x16xf32> -> tensor<16x64xf32>
  %v0 = aten.transpose %u0 dim0 = 0 dim1 = 1 : tensor<16x64xf32> -> tensor<64x16xf32>
  %a1 = aten.transpose %g1 dim0 = 0 dim1 = 1 : tensor<4x64xf32> -> tensor<64x4xf32>
  %m1 = aten.mm %a1, %x1 : tensor<64x4xf32>, tensor<4x16xf32> -> tensor<64x16xf32>
  %u1 = aten.transpose %m1 dim0 = 0 dim1 = 1 : tensor<64x16xf32> -> tensor<16x64xf32>
  %v1 = aten.transpose %u1 dim0 = 0 dim1 = 1 : tensor<16x64xf32> -> tensor<64x16xf32>
  %r = aten.add %v0, %v1 : tensor<64x16xf32>, tensor<64x16xf32> -> tensor<64x16xf32>
  func.return %r : tensor<64x16xf32>
}

// -----

// The same gradient under `dynamic=True`: K is the symbolic batch. The result's
// sizes are known, so the terms still concatenate (whatever K is, the copies
// are at most 1/M + 1/N of an element per flop of the product).
// CHECK-LABEL: func.func @symbolic_batch
// CHECK-SAME: (%[[G0:.*]]: tensor<?x64xf32>, %[[G1:.*]]: tensor<?x64xf32>, %[[X0:.*]]: tensor<?x16xf32>, %[[X1:.*]]: tensor<?x16xf32>)
// CHECK-NEXT: %[[G:.*]] = aten.cat %[[G0]], %[[G1]] dim = 0 : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
// CHECK-NEXT: %[[GT:.*]] = aten.transpose %[[G]] dim0 = 0 dim1 = 1 : tensor<?x64xf32> -> tensor<64x?xf32>
// CHECK-NEXT: %[[X:.*]] = aten.cat %[[X0]], %[[X1]] dim = 0 : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
// CHECK-NEXT: %[[R:.*]] = aten.mm %[[GT]], %[[X]] : tensor<64x?xf32>, tensor<?x16xf32> -> tensor<64x16xf32>
// CHECK-NEXT: func.return %[[R]]
func.func @symbolic_batch(%g0: tensor<?x64xf32>, %g1: tensor<?x64xf32>, %x0: tensor<?x16xf32>, %x1: tensor<?x16xf32>) -> tensor<64x16xf32> {
  %a0 = aten.transpose %g0 dim0 = 0 dim1 = 1 : tensor<?x64xf32> -> tensor<64x?xf32>
  %m0 = aten.mm %a0, %x0 : tensor<64x?xf32>, tensor<?x16xf32> -> tensor<64x16xf32>
  %a1 = aten.transpose %g1 dim0 = 0 dim1 = 1 : tensor<?x64xf32> -> tensor<64x?xf32>
  %m1 = aten.mm %a1, %x1 : tensor<64x?xf32>, tensor<?x16xf32> -> tensor<64x16xf32>
  %r = aten.add %m0, %m1 : tensor<64x16xf32>, tensor<64x16xf32> -> tensor<64x16xf32>
  func.return %r : tensor<64x16xf32>
}

// -----

// Three plain products and a term that is not one: the products concatenate
// along K (left operands by columns, right ones by rows), the other term is
// added after. A product under one transpose is `b^T @ a^T`.
// CHECK-LABEL: func.func @tree
// CHECK-SAME: (%[[A0:.*]]: tensor<32x2xf64>, %[[B0:.*]]: tensor<2x32xf64>, %[[A1:.*]]: tensor<32x3xf64>, %[[B1:.*]]: tensor<3x32xf64>, %[[C:.*]]: tensor<32x4xf64>, %[[D:.*]]: tensor<4x32xf64>, %[[E:.*]]: tensor<32x32xf64>)
// CHECK-NEXT: %[[DT:.*]] = aten.transpose %[[D]] dim0 = 0 dim1 = 1 : tensor<4x32xf64> -> tensor<32x4xf64>
// CHECK-NEXT: %[[CT:.*]] = aten.transpose %[[C]] dim0 = 0 dim1 = 1 : tensor<32x4xf64> -> tensor<4x32xf64>
// CHECK-NEXT: %[[L:.*]] = aten.cat %[[A0]], %[[A1]], %[[DT]] dim = 1 : tensor<32x2xf64>, tensor<32x3xf64>, tensor<32x4xf64> -> tensor<32x9xf64>
// CHECK-NEXT: %[[R:.*]] = aten.cat %[[B0]], %[[B1]], %[[CT]] dim = 0 : tensor<2x32xf64>, tensor<3x32xf64>, tensor<4x32xf64> -> tensor<9x32xf64>
// CHECK-NEXT: %[[P:.*]] = aten.mm %[[L]], %[[R]] : tensor<32x9xf64>, tensor<9x32xf64> -> tensor<32x32xf64>
// CHECK-NEXT: %[[S:.*]] = aten.add %[[P]], %[[E]] : tensor<32x32xf64>, tensor<32x32xf64> -> tensor<32x32xf64>
// CHECK-NEXT: func.return %[[S]]
func.func @tree(%a0: tensor<32x2xf64>, %b0: tensor<2x32xf64>, %a1: tensor<32x3xf64>, %b1: tensor<3x32xf64>, %c: tensor<32x4xf64>, %d: tensor<4x32xf64>, %e: tensor<32x32xf64>) -> tensor<32x32xf64> {
  %m0 = aten.mm %a0, %b0 : tensor<32x2xf64>, tensor<2x32xf64> -> tensor<32x32xf64>
  %m1 = aten.mm %a1, %b1 : tensor<32x3xf64>, tensor<3x32xf64> -> tensor<32x32xf64>
  %m2 = aten.mm %c, %d : tensor<32x4xf64>, tensor<4x32xf64> -> tensor<32x32xf64>
  %t2 = aten.transpose %m2 dim0 = 1 dim1 = 0 : tensor<32x32xf64> -> tensor<32x32xf64>
  %s0 = aten.add %m0, %e : tensor<32x32xf64>, tensor<32x32xf64> -> tensor<32x32xf64>
  %s1 = aten.add %m1, %t2 : tensor<32x32xf64>, tensor<32x32xf64> -> tensor<32x32xf64>
  %s = aten.add %s0, %s1 : tensor<32x32xf64>, tensor<32x32xf64> -> tensor<32x32xf64>
  func.return %s : tensor<32x32xf64>
}

// -----

// Left alone: a product with another use (it would be computed twice); a sum
// with one product; products whose K is large next to the result (the copies
// would cost more than the adds); a result of sizes not known at compile time;
// an inner
// sum with another use.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: aten.cat
// CHECK: func.return
func.func @kept(%a: tensor<8x4xf32>, %b: tensor<4x8xf32>, %c: tensor<8x64xf32>, %d: tensor<64x8xf32>, %e: tensor<8x8xf32>, %x: tensor<?x4xf32>, %y: tensor<4x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<?x8xf32>, tensor<8x8xf32>) {
  %m0 = aten.mm %a, %b : tensor<8x4xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %m1 = aten.mm %a, %b : tensor<8x4xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %used = aten.add %m0, %m1 : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %m2 = aten.mm %a, %b : tensor<8x4xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %one = aten.add %m2, %e : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %k0 = aten.mm %c, %d : tensor<8x64xf32>, tensor<64x8xf32> -> tensor<8x8xf32>
  %k1 = aten.mm %c, %d : tensor<8x64xf32>, tensor<64x8xf32> -> tensor<8x8xf32>
  %large = aten.add %k0, %k1 : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  %n0 = aten.mm %x, %y : tensor<?x4xf32>, tensor<4x8xf32> -> tensor<?x8xf32>
  %n1 = aten.mm %x, %y : tensor<?x4xf32>, tensor<4x8xf32> -> tensor<?x8xf32>
  %dynamic = aten.add %n0, %n1 : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  %p0 = aten.mm %a, %b : tensor<8x4xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %p1 = aten.mm %a, %b : tensor<8x4xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %scaled = aten.add %p0, %p1 alpha = 2.0 : f64 : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
  func.return %m0, %used, %one, %large, %dynamic, %scaled : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<?x8xf32>, tensor<8x8xf32>
}
