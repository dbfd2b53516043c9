// RUN: fusec-opt %s --split-input-file -p batch-shared-matmul | filecheck %s

// An unrolled loop's input projections `xs[t] @ w`: the rows of `xs` are
// already stacked, so the product reads a reshape of `xs`; it goes where the
// first step's product was, with the later steps' row views moved up to it, and
// each step reads its rows of the result. The recurrence's product, whose left
// operand comes from an earlier step, stays in the loop.
// CHECK-LABEL: func.func @input_projection
// CHECK-SAME: (%[[XS:.*]]: tensor<2x4x8xf32>, %[[W:.*]]: tensor<8x32xf32>, %[[H:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[N0:.*]] = aten.narrow %[[XS]] dim = 0 start = 0 length = 1
// CHECK-NEXT: %[[X0:.*]] = aten.squeeze %[[N0]] dim = 0
// CHECK-NEXT: %[[N1:.*]] = aten.narrow %[[XS]] dim = 0 start = 1 length = 1
// CHECK-NEXT: %[[X1:.*]] = aten.squeeze %[[N1]] dim = 0
// CHECK-NEXT: %[[FLAT:.*]] = aten.reshape %[[XS]] : tensor<2x4x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[P:.*]] = aten.mm %[[FLAT]], %[[W]] : tensor<8x8xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
// CHECK-NEXT: %[[P0:.*]] = aten.narrow %[[P]] dim = 0 start = 0 length = 4 : tensor<8x32xf32> -> tensor<4x32xf32>
// CHECK-NEXT: %[[P1:.*]] = aten.narrow %[[P]] dim = 0 start = 4 length = 4 : tensor<8x32xf32> -> tensor<4x32xf32>
// CHECK-NEXT: %[[S0:.*]] = aten.sigmoid %[[P0]]
// CHECK-NEXT: %[[H1:.*]] = aten.narrow %[[S0]] dim = 1 start = 0 length = 8
// CHECK-NEXT: %[[R:.*]] = aten.mm %[[H1]], %[[W]] : tensor<4x8xf32>, tensor<8x32xf32> -> tensor<4x32xf32>
// CHECK-NEXT: %[[S1:.*]] = aten.add %[[P1]], %[[R]]
// CHECK-NEXT: func.return %[[S1]], %[[X0]], %[[X1]]
func.func @input_projection(%xs: tensor<2x4x8xf32>, %w: tensor<8x32xf32>, %h: tensor<4x8xf32>) -> (tensor<4x32xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %n0 = aten.narrow %xs dim = 0 start = 0 length = 1 : tensor<2x4x8xf32> -> tensor<1x4x8xf32>
  %x0 = aten.squeeze %n0 dim = 0 : tensor<1x4x8xf32> -> tensor<4x8xf32>
  %p0 = aten.mm %x0, %w : tensor<4x8xf32>, tensor<8x32xf32> -> tensor<4x32xf32>
  %s0 = aten.sigmoid %p0 : tensor<4x32xf32> -> tensor<4x32xf32>
  %h1 = aten.narrow %s0 dim = 1 start = 0 length = 8 : tensor<4x32xf32> -> tensor<4x8xf32>
  %n1 = aten.narrow %xs dim = 0 start = 1 length = 1 : tensor<2x4x8xf32> -> tensor<1x4x8xf32>
  %x1 = aten.squeeze %n1 dim = 0 : tensor<1x4x8xf32> -> tensor<4x8xf32>
  %p1 = aten.mm %x1, %w : tensor<4x8xf32>, tensor<8x32xf32> -> tensor<4x32xf32>
  %r = aten.mm %h1, %w : tensor<4x8xf32>, tensor<8x32xf32> -> tensor<4x32xf32>
  %s1 = aten.add %p1, %r : tensor<4x32xf32>, tensor<4x32xf32> -> tensor<4x32xf32>
  func.return %s1, %x0, %x1 : tensor<4x32xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Left operands that are not rows of one tensor are copied into a cat. A
// torch-level trace transposes the weight anew for each product: `t(w)` twice
// is one right operand (the second, now unused, goes).
// CHECK-LABEL: func.func @stacked
// CHECK-SAME: (%[[A:.*]]: tensor<2x8xf32>, %[[B:.*]]: tensor<3x8xf32>, %[[W:.*]]: tensor<32x8xf32>)
// CHECK-NEXT: %[[T0:.*]] = aten.transpose %[[W]]
// CHECK-NEXT: %[[C:.*]] = aten.cat %[[A]], %[[B]] dim = 0 : tensor<2x8xf32>, tensor<3x8xf32> -> tensor<5x8xf32>
// CHECK-NEXT: %[[P:.*]] = aten.mm %[[C]], %[[T0]] : tensor<5x8xf32>, tensor<8x32xf32> -> tensor<5x32xf32>
// CHECK-NEXT: %[[PA:.*]] = aten.narrow %[[P]] dim = 0 start = 0 length = 2
// CHECK-NEXT: %[[PB:.*]] = aten.narrow %[[P]] dim = 0 start = 2 length = 3
// CHECK-NEXT: func.return %[[PA]], %[[PB]]
func.func @stacked(%a: tensor<2x8xf32>, %b: tensor<3x8xf32>, %w: tensor<32x8xf32>) -> (tensor<2x32xf32>, tensor<3x32xf32>) {
  %t0 = aten.transpose %w dim0 = 0 dim1 = 1 : tensor<32x8xf32> -> tensor<8x32xf32>
  %pa = aten.mm %a, %t0 : tensor<2x8xf32>, tensor<8x32xf32> -> tensor<2x32xf32>
  %t1 = aten.transpose %w dim0 = 0 dim1 = 1 : tensor<32x8xf32> -> tensor<8x32xf32>
  %pb = aten.mm %b, %t1 : tensor<3x8xf32>, tensor<8x32xf32> -> tensor<3x32xf32>
  func.return %pa, %pb : tensor<2x32xf32>, tensor<3x32xf32>
}

// -----

// Left alone: products with different right operands; products with as many
// rows as the right operand has columns (not thin: their arithmetic, not the
// packing of `w`, is the cost); a product whose left operand is computed
// (not a view) after the first one.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: aten.cat
// CHECK-NOT: aten.reshape
// CHECK: func.return
func.func @kept(%a: tensor<2x8xf32>, %w: tensor<8x32xf32>, %v: tensor<8x32xf32>, %big: tensor<32x8xf32>, %x: tensor<2x8xf32>) -> (tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<2x32xf32>) {
  %p = aten.mm %a, %w : tensor<2x8xf32>, tensor<8x32xf32> -> tensor<2x32xf32>
  %q = aten.mm %a, %v : tensor<2x8xf32>, tensor<8x32xf32> -> tensor<2x32xf32>
  %b0 = aten.mm %big, %v : tensor<32x8xf32>, tensor<8x32xf32> -> tensor<32x32xf32>
  %b1 = aten.mm %big, %v : tensor<32x8xf32>, tensor<8x32xf32> -> tensor<32x32xf32>
  %e = aten.exp %x : tensor<2x8xf32> -> tensor<2x8xf32>
  %r = aten.mm %e, %w : tensor<2x8xf32>, tensor<8x32xf32> -> tensor<2x32xf32>
  func.return %p, %q, %b0, %b1, %r : tensor<2x32xf32>, tensor<2x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<2x32xf32>
}
