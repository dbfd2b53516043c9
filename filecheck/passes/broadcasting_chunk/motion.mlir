// RUN: fusec-opt %s --split-input-file -p broadcasting-chunk | filecheck %s

// One level: the chunk moves above the add; the bias is cut along its own dim 0.
// CHECK-LABEL: func.func @one_level
// CHECK-SAME: (%[[X:.*]]: tensor<8x64xf32>, %[[B:.*]]: tensor<64xf32>)
// CHECK-NEXT: %[[X0:.*]], %[[X1:.*]], %[[B0:.*]], %[[B1:.*]] = fusion.broadcasting_chunk %[[X]], %[[B]] chunks = 2 dim = -1 : tensor<8x64xf32>, tensor<64xf32> -> tensor<8x32xf32>, tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>
// CHECK-NEXT: %[[P:.*]] = aten.add %[[X0]], %[[B0]] : tensor<8x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
// CHECK-NEXT: %[[Q:.*]] = aten.add %[[X1]], %[[B1]] : tensor<8x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
// CHECK-NEXT: %[[R:.*]] = aten.mul %[[P]], %[[Q]]
// CHECK-NEXT: func.return %[[R]]
func.func @one_level(%x: tensor<8x64xf32>, %b: tensor<64xf32>) -> tensor<8x32xf32> {
  %z = aten.add %x, %b : tensor<8x64xf32>, tensor<64xf32> -> tensor<8x64xf32>
  %p, %q = aten.chunk %z chunks = 2 dim = 1 : tensor<8x64xf32> -> tensor<8x32xf32>, tensor<8x32xf32>
  %r = aten.mul %p, %q : tensor<8x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
  func.return %r : tensor<8x32xf32>
}

// -----

// Several levels: the chunk climbs through mul, exp and the alpha-add (properties
// kept) to the arguments; %x, read twice, is chunked once; the Python scalar and
// the operand broadcast along the chunked dim (%c) are used whole by every piece.
// CHECK-LABEL: func.func @levels
// CHECK-SAME: (%[[X:.*]]: tensor<4x6xf32>, %[[Y:.*]]: tensor<4x6xf32>, %[[C:.*]]: tensor<4x1xf32>)
// CHECK-NEXT: %[[S:.*]] = arith.constant
// CHECK-NEXT: %[[X0:.*]], %[[X1:.*]], %[[X2:.*]], %[[Y0:.*]], %[[Y1:.*]], %[[Y2:.*]] = fusion.broadcasting_chunk %[[X]], %[[Y]] chunks = 3 dim = -1 : tensor<4x6xf32>, tensor<4x6xf32> -> tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>
// CHECK-NEXT: %[[A0:.*]] = aten.add %[[X0]], %[[Y0]] alpha = 2 : i64
// CHECK-NEXT: %[[A1:.*]] = aten.add %[[X1]], %[[Y1]] alpha = 2 : i64
// CHECK-NEXT: %[[A2:.*]] = aten.add %[[X2]], %[[Y2]] alpha = 2 : i64
// CHECK-NEXT: %[[E0:.*]] = aten.exp %[[A0]]
// CHECK-NEXT: %[[E1:.*]] = aten.exp %[[A1]]
// CHECK-NEXT: %[[E2:.*]] = aten.exp %[[A2]]
// CHECK-NEXT: %[[M0:.*]] = aten.mul %[[E0]], %[[C]] : tensor<4x2xf32>, tensor<4x1xf32> -> tensor<4x2xf32>
// CHECK-NEXT: %[[M1:.*]] = aten.mul %[[E1]], %[[C]]
// CHECK-NEXT: %[[M2:.*]] = aten.mul %[[E2]], %[[C]]
// CHECK-NEXT: %[[N0:.*]] = aten.mul %[[M0]], %[[X0]]
// CHECK-NEXT: %[[N1:.*]] = aten.mul %[[M1]], %[[X1]]
// CHECK-NEXT: %[[N2:.*]] = aten.mul %[[M2]], %[[X2]]
// CHECK-NEXT: %[[D:.*]] = aten.sub %[[N0]], %[[S]]
// CHECK-NEXT: %[[K:.*]] = aten.gt %[[N1]], %[[S]]
// CHECK-NEXT: %[[R:.*]] = aten.where %[[K]], %[[D]], %[[N2]]
// CHECK-NEXT: func.return %[[R]]
func.func @levels(%x: tensor<4x6xf32>, %y: tensor<4x6xf32>, %c: tensor<4x1xf32>) -> tensor<4x2xf32> {
  %s = arith.constant 1.5 : f64
  %a = aten.add %x, %y alpha = 2 : i64 : tensor<4x6xf32>, tensor<4x6xf32> -> tensor<4x6xf32>
  %e = aten.exp %a : tensor<4x6xf32> -> tensor<4x6xf32>
  %m = aten.mul %e, %c : tensor<4x6xf32>, tensor<4x1xf32> -> tensor<4x6xf32>
  %n = aten.mul %m, %x : tensor<4x6xf32>, tensor<4x6xf32> -> tensor<4x6xf32>
  %p, %q, %r = aten.chunk %n chunks = 3 dim = -1 : tensor<4x6xf32> -> tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>
  %d = aten.sub %p, %s : tensor<4x2xf32>, f64 -> tensor<4x2xf32>
  %k = aten.gt %q, %s : tensor<4x2xf32>, f64 -> tensor<4x2xi1>
  %w = aten.where %k, %d, %r : tensor<4x2xi1>, tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
  func.return %w : tensor<4x2xf32>
}

// -----

// dtype-changing producers move too: each piece is cast on its own (and a
// comparison's bool pieces feed the where).
// CHECK-LABEL: func.func @casts
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf16>)
// CHECK-NEXT: %[[X0:.*]], %[[X1:.*]] = fusion.broadcasting_chunk %[[X]] chunks = 2 dim = -2 : tensor<2x8xf16> -> tensor<1x8xf16>, tensor<1x8xf16>
// CHECK-NEXT: %[[C0:.*]] = aten.to %[[X0]] : tensor<1x8xf16> -> tensor<1x8xf32>
// CHECK-NEXT: %[[C1:.*]] = aten.to %[[X1]] : tensor<1x8xf16> -> tensor<1x8xf32>
// CHECK-NEXT: aten.add %[[C0]], %[[C1]]
func.func @casts(%x: tensor<2x8xf16>) -> tensor<1x8xf32> {
  %c = aten.to %x : tensor<2x8xf16> -> tensor<2x8xf32>
  %p, %q = aten.chunk %c chunks = 2 dim = 0 : tensor<2x8xf32> -> tensor<1x8xf32>, tensor<1x8xf32>
  %r = aten.add %p, %q : tensor<1x8xf32>, tensor<1x8xf32> -> tensor<1x8xf32>
  func.return %r : tensor<1x8xf32>
}

// -----

// An operand of lower rank without the chunked dim is used whole; the chunk stops
// at the non-pointwise matmul.
// CHECK-LABEL: func.func @stops_at_matmul
// CHECK-SAME: (%[[A:.*]]: tensor<4x3xf32>, %[[W:.*]]: tensor<3x8xf32>, %[[V:.*]]: tensor<4x1xf32>)
// CHECK-NEXT: %[[MM:.*]] = aten.matmul %[[A]], %[[W]]
// CHECK-NEXT: %[[M0:.*]], %[[M1:.*]] = fusion.broadcasting_chunk %[[MM]] chunks = 2 dim = -1 : tensor<4x8xf32> -> tensor<4x4xf32>, tensor<4x4xf32>
// CHECK-NEXT: aten.mul %[[M0]], %[[V]] : tensor<4x4xf32>, tensor<4x1xf32>
// CHECK-NEXT: aten.mul %[[M1]], %[[V]] : tensor<4x4xf32>, tensor<4x1xf32>
func.func @stops_at_matmul(%a: tensor<4x3xf32>, %w: tensor<3x8xf32>, %v: tensor<4x1xf32>) -> tensor<4x4xf32> {
  %mm = aten.matmul %a, %w : tensor<4x3xf32>, tensor<3x8xf32> -> tensor<4x8xf32>
  %z = aten.mul %mm, %v : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %p, %q = aten.chunk %z chunks = 2 dim = 1 : tensor<4x8xf32> -> tensor<4x4xf32>, tensor<4x4xf32>
  %r = aten.sub %p, %q : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  func.return %r : tensor<4x4xf32>
}
