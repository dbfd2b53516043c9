// RUN: fusec-opt %s --split-input-file -p raise-attention | filecheck %s

// softmax(q @ k^T * s) @ v is one attention; the key's transpose and the
// scale's constant go with the products.
// CHECK-LABEL: func.func @scaled
// CHECK-SAME:    (%[[Q:.*]]: tensor<2x4x8x16xf32>, %[[K:.*]]: tensor<2x4x6x16xf32>, %[[V:.*]]: tensor<2x4x6x32xf32>)
// CHECK-NEXT:    %[[R:.*]] = aten.scaled_dot_product_attention %[[Q]], %[[K]], %[[V]] scale = 2.500000e-01 : f64 : tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x32xf32> -> tensor<2x4x8x32xf32>
// CHECK-NEXT:    func.return %[[R]]
func.func @scaled(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x6x16xf32>, %v: tensor<2x4x6x32xf32>) -> tensor<2x4x8x32xf32> {
  %kt = aten.transpose %k dim0 = -2 dim1 = -1 : tensor<2x4x6x16xf32> -> tensor<2x4x16x6xf32>
  %s = aten.matmul %q, %kt : tensor<2x4x8x16xf32>, tensor<2x4x16x6xf32> -> tensor<2x4x8x6xf32>
  %c = arith.constant 2.500000e-01 : f64
  %m = aten.mul %s, %c : tensor<2x4x8x6xf32>, f64 -> tensor<2x4x8x6xf32>
  %p = aten.softmax %m dim = -1 : tensor<2x4x8x6xf32> -> tensor<2x4x8x6xf32>
  %r = aten.matmul %p, %v : tensor<2x4x8x6xf32>, tensor<2x4x6x32xf32> -> tensor<2x4x8x32xf32>
  func.return %r : tensor<2x4x8x32xf32>
}

// -----

// Divided by a constant, with a float mask added, the key permuted: scale 1/8.
// CHECK-LABEL: func.func @divided_masked
// CHECK-SAME:    (%[[Q:.*]]: tensor<3x8x16xf64>, %[[K:.*]]: tensor<3x6x16xf64>, %[[V:.*]]: tensor<3x6x16xf64>, %[[M:.*]]: tensor<8x6xf64>)
// CHECK-NEXT:    %[[R:.*]] = aten.scaled_dot_product_attention %[[Q]], %[[K]], %[[V]], %[[M]] scale = 1.250000e-01 : f64
// CHECK-NEXT:    func.return %[[R]]
func.func @divided_masked(%q: tensor<3x8x16xf64>, %k: tensor<3x6x16xf64>, %v: tensor<3x6x16xf64>, %mask: tensor<8x6xf64>) -> tensor<3x8x16xf64> {
  %kt = aten.permute %k dims = [0, 2, 1] : tensor<3x6x16xf64> -> tensor<3x16x6xf64>
  %s = aten.matmul %q, %kt : tensor<3x8x16xf64>, tensor<3x16x6xf64> -> tensor<3x8x6xf64>
  %c = arith.constant 8.000000e+00 : f64
  %d = aten.div %s, %c : tensor<3x8x6xf64>, f64 -> tensor<3x8x6xf64>
  %a = aten.add %d, %mask : tensor<3x8x6xf64>, tensor<8x6xf64> -> tensor<3x8x6xf64>
  %p = aten.softmax %a dim = 2 : tensor<3x8x6xf64> -> tensor<3x8x6xf64>
  %r = aten.matmul %p, %v : tensor<3x8x6xf64>, tensor<3x6x16xf64> -> tensor<3x8x16xf64>
  func.return %r : tensor<3x8x16xf64>
}

// -----

// No scale (1), and a right operand that is not a transpose: the key is its
// transpose, a view.
// CHECK-LABEL: func.func @unscaled_computed_key
// CHECK-SAME:    (%[[Q:.*]]: tensor<8x16xf32>, %[[KT:.*]]: tensor<16x6xf32>, %[[V:.*]]: tensor<6x4xf32>)
// CHECK-NEXT:    %[[E:.*]] = aten.exp %[[KT]]
// CHECK-NEXT:    %[[K:.*]] = aten.transpose %[[E]] dim0 = -2 dim1 = -1 : tensor<16x6xf32> -> tensor<6x16xf32>
// CHECK-NEXT:    %[[R:.*]] = aten.scaled_dot_product_attention %[[Q]], %[[K]], %[[V]] scale = 1.000000e+00 : f64
// CHECK-NEXT:    func.return %[[R]]
func.func @unscaled_computed_key(%q: tensor<8x16xf32>, %kt: tensor<16x6xf32>, %v: tensor<6x4xf32>) -> tensor<8x4xf32> {
  %e = aten.exp %kt : tensor<16x6xf32> -> tensor<16x6xf32>
  %s = aten.matmul %q, %e : tensor<8x16xf32>, tensor<16x6xf32> -> tensor<8x6xf32>
  %p = aten.softmax %s dim = -1 : tensor<8x6xf32> -> tensor<8x6xf32>
  %r = aten.matmul %p, %v : tensor<8x6xf32>, tensor<6x4xf32> -> tensor<8x4xf32>
  func.return %r : tensor<8x4xf32>
}

// -----

// The probabilities are also returned (as a training forward saves them for
// the backward): the attention stays written out.
// CHECK-LABEL: func.func @probabilities_used_twice
// CHECK-NOT:     aten.scaled_dot_product_attention
// CHECK:         aten.softmax
// CHECK:         aten.matmul
func.func @probabilities_used_twice(%q: tensor<8x16xf32>, %k: tensor<6x16xf32>, %v: tensor<6x4xf32>) -> (tensor<8x4xf32>, tensor<8x6xf32>) {
  %kt = aten.transpose %k dim0 = 0 dim1 = 1 : tensor<6x16xf32> -> tensor<16x6xf32>
  %s = aten.matmul %q, %kt : tensor<8x16xf32>, tensor<16x6xf32> -> tensor<8x6xf32>
  %p = aten.softmax %s dim = -1 : tensor<8x6xf32> -> tensor<8x6xf32>
  %r = aten.matmul %p, %v : tensor<8x6xf32>, tensor<6x4xf32> -> tensor<8x4xf32>
  func.return %r, %p : tensor<8x4xf32>, tensor<8x6xf32>
}

// -----

// The scaled scores have another use: nothing changes.
// CHECK-LABEL: func.func @scaled_scores_used_twice
// CHECK-NOT:     aten.scaled_dot_product_attention
func.func @scaled_scores_used_twice(%q: tensor<8x16xf32>, %k: tensor<6x16xf32>, %v: tensor<6x4xf32>) -> (tensor<8x4xf32>, tensor<8x6xf32>) {
  %kt = aten.transpose %k dim0 = 0 dim1 = 1 : tensor<6x16xf32> -> tensor<16x6xf32>
  %s = aten.matmul %q, %kt : tensor<8x16xf32>, tensor<16x6xf32> -> tensor<8x6xf32>
  %c = arith.constant 2.500000e-01 : f64
  %m = aten.mul %s, %c : tensor<8x6xf32>, f64 -> tensor<8x6xf32>
  %p = aten.softmax %m dim = -1 : tensor<8x6xf32> -> tensor<8x6xf32>
  %r = aten.matmul %p, %v : tensor<8x6xf32>, tensor<6x4xf32> -> tensor<8x4xf32>
  func.return %r, %m : tensor<8x4xf32>, tensor<8x6xf32>
}

// -----

// A softmax over the queries (not the last dim), a half-precision attention and
// a scale that is a tensor stay as written.
// CHECK-LABEL: func.func @not_attention
// CHECK-NOT:     aten.scaled_dot_product_attention
func.func @not_attention(%q: tensor<8x16xf32>, %k: tensor<6x16xf32>, %v: tensor<6x4xf32>, %qh: tensor<8x16xf16>, %kh: tensor<6x16xf16>, %vh: tensor<6x4xf16>, %t: tensor<f32>) -> (tensor<8x4xf32>, tensor<8x4xf16>, tensor<8x4xf32>) {
  %kt = aten.transpose %k dim0 = 0 dim1 = 1 : tensor<6x16xf32> -> tensor<16x6xf32>
  %s = aten.matmul %q, %kt : tensor<8x16xf32>, tensor<16x6xf32> -> tensor<8x6xf32>
  %p = aten.softmax %s dim = 0 : tensor<8x6xf32> -> tensor<8x6xf32>
  %r = aten.matmul %p, %v : tensor<8x6xf32>, tensor<6x4xf32> -> tensor<8x4xf32>
  %kth = aten.transpose %kh dim0 = 0 dim1 = 1 : tensor<6x16xf16> -> tensor<16x6xf16>
  %sh = aten.matmul %qh, %kth : tensor<8x16xf16>, tensor<16x6xf16> -> tensor<8x6xf16>
  %ph = aten.softmax %sh dim = -1 : tensor<8x6xf16> -> tensor<8x6xf16>
  %rh = aten.matmul %ph, %vh : tensor<8x6xf16>, tensor<6x4xf16> -> tensor<8x4xf16>
  %s2 = aten.matmul %q, %kt : tensor<8x16xf32>, tensor<16x6xf32> -> tensor<8x6xf32>
  %m2 = aten.mul %s2, %t : tensor<8x6xf32>, tensor<f32> -> tensor<8x6xf32>
  %p2 = aten.softmax %m2 dim = -1 : tensor<8x6xf32> -> tensor<8x6xf32>
  %r2 = aten.matmul %p2, %v : tensor<8x6xf32>, tensor<6x4xf32> -> tensor<8x4xf32>
  func.return %r, %rh, %r2 : tensor<8x4xf32>, tensor<8x4xf16>, tensor<8x4xf32>
}

// -----

// ATen's spelling (torch.export after decompositions): each N-d product as a
// batched one over flattened, cloned operands. Both products are raised back to
// N-d, then the attention is one op; the clones and reshapes go with them.
// CHECK-LABEL: func.func @flattened_batch_products
// CHECK-SAME:    (%[[Q:.*]]: tensor<2x4x8x16xf32>, %[[K:.*]]: tensor<2x4x6x16xf32>, %[[V:.*]]: tensor<2x4x6x32xf32>)
// CHECK-NEXT:    %[[R:.*]] = aten.scaled_dot_product_attention %[[Q]], %[[K]], %[[V]] scale = 2.500000e-01 : f64
// CHECK-NEXT:    func.return %[[R]]
func.func @flattened_batch_products(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x6x16xf32>, %v: tensor<2x4x6x32xf32>) -> tensor<2x4x8x32xf32> {
  %kt = aten.permute %k dims = [0, 1, 3, 2] : tensor<2x4x6x16xf32> -> tensor<2x4x16x6xf32>
  %qe = aten.expand %q size = [2, 4, 8, 16] : tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
  %qc = aten.to %qe : tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
  %qf = aten.reshape %qc : tensor<2x4x8x16xf32> -> tensor<8x8x16xf32>
  %ke = aten.expand %kt size = [2, 4, 16, 6] : tensor<2x4x16x6xf32> -> tensor<2x4x16x6xf32>
  %kc = aten.to %ke : tensor<2x4x16x6xf32> -> tensor<2x4x16x6xf32>
  %kf = aten.reshape %kc : tensor<2x4x16x6xf32> -> tensor<8x16x6xf32>
  %b = aten.matmul %qf, %kf : tensor<8x8x16xf32>, tensor<8x16x6xf32> -> tensor<8x8x6xf32>
  %s = aten.reshape %b : tensor<8x8x6xf32> -> tensor<2x4x8x6xf32>
  %c = arith.constant 2.500000e-01 : f64
  %m = aten.mul %s, %c : tensor<2x4x8x6xf32>, f64 -> tensor<2x4x8x6xf32>
  %p = aten.softmax %m dim = -1 : tensor<2x4x8x6xf32> -> tensor<2x4x8x6xf32>
  %pe = aten.expand %p size = [2, 4, 8, 6] : tensor<2x4x8x6xf32> -> tensor<2x4x8x6xf32>
  %pf = aten.reshape %pe : tensor<2x4x8x6xf32> -> tensor<8x8x6xf32>
  %ve = aten.expand %v size = [2, 4, 6, 32] : tensor<2x4x6x32xf32> -> tensor<2x4x6x32xf32>
  %vc = aten.to %ve : tensor<2x4x6x32xf32> -> tensor<2x4x6x32xf32>
  %vf = aten.reshape %vc : tensor<2x4x6x32xf32> -> tensor<8x6x32xf32>
  %b2 = aten.matmul %pf, %vf : tensor<8x8x6xf32>, tensor<8x6x32xf32> -> tensor<8x8x32xf32>
  %r = aten.reshape %b2 : tensor<8x8x32xf32> -> tensor<2x4x8x32xf32>
  func.return %r : tensor<2x4x8x32xf32>
}

// -----

// A batched product that feeds no softmax stays as ATen wrote it.
// CHECK-LABEL: func.func @flattened_product_alone
// CHECK:         aten.matmul %{{.*}}, %{{.*}} : tensor<8x8x16xf32>, tensor<8x16x6xf32> -> tensor<8x8x6xf32>
// CHECK:         aten.reshape
func.func @flattened_product_alone(%q: tensor<2x4x8x16xf32>, %kt: tensor<2x4x16x6xf32>) -> tensor<2x4x8x6xf32> {
  %qf = aten.reshape %q : tensor<2x4x8x16xf32> -> tensor<8x8x16xf32>
  %kf = aten.reshape %kt : tensor<2x4x16x6xf32> -> tensor<8x16x6xf32>
  %b = aten.matmul %qf, %kf : tensor<8x8x16xf32>, tensor<8x16x6xf32> -> tensor<8x8x6xf32>
  %s = aten.reshape %b : tensor<8x8x6xf32> -> tensor<2x4x8x6xf32>
  %e = aten.exp %s : tensor<2x4x8x6xf32> -> tensor<2x4x8x6xf32>
  func.return %e : tensor<2x4x8x6xf32>
}

// -----

// A causal mask built per call (`ones_like(s, dtype=bool).tril()`, then
// `masked_fill(~mask, -inf)`): positions compared, which `raise-attention`
// evaluates at compile time. It is exactly the columns past their row, so the
// attention is causal; the mask's ops go with it.
// CHECK-LABEL: func.func @causal
// CHECK-SAME:    (%[[Q:.*]]: tensor<2x8x16xf32>, %[[K:.*]]: tensor<2x8x16xf32>, %[[V:.*]]: tensor<2x8x16xf32>)
// CHECK-NEXT:    %[[R:.*]] = aten.scaled_dot_product_attention %[[Q]], %[[K]], %[[V]] scale = 2.500000e-01 : f64 is_causal = true
// CHECK-NEXT:    func.return %[[R]]
func.func @causal(%q: tensor<2x8x16xf32>, %k: tensor<2x8x16xf32>, %v: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %kt = aten.transpose %k dim0 = -2 dim1 = -1 : tensor<2x8x16xf32> -> tensor<2x16x8xf32>
  %s = aten.matmul %q, %kt : tensor<2x8x16xf32>, tensor<2x16x8xf32> -> tensor<2x8x8xf32>
  %c = arith.constant 2.500000e-01 : f64
  %m = aten.mul %s, %c : tensor<2x8x8xf32>, f64 -> tensor<2x8x8xf32>
  %ones = aten.full_like %m value = 1 : i64 : tensor<2x8x8xf32> -> tensor<2x8x8xi1>
  %cols = aten.positions %s dim = -1 : tensor<2x8x8xf32> -> tensor<8xi32>
  %rows = aten.positions %s dim = -2 : tensor<2x8x8xf32> -> tensor<8xi32>
  %r1 = aten.unsqueeze %rows dim = 1 : tensor<8xi32> -> tensor<8x1xi32>
  %d = aten.sub %cols, %r1 : tensor<8xi32>, tensor<8x1xi32> -> tensor<8x8xi32>
  %zero = arith.constant 0 : i64
  %le = aten.le %d, %zero : tensor<8x8xi32>, i64 -> tensor<8x8xi1>
  %false = arith.constant false
  %tril = aten.where %le, %ones, %false : tensor<8x8xi1>, tensor<2x8x8xi1>, i1 -> tensor<2x8x8xi1>
  %inv = aten.logical_not %tril : tensor<2x8x8xi1> -> tensor<2x8x8xi1>
  %ninf = arith.constant 0xfff0000000000000 : f64
  %w = aten.where %inv, %ninf, %m : tensor<2x8x8xi1>, f64, tensor<2x8x8xf32> -> tensor<2x8x8xf32>
  %p = aten.softmax %w dim = -1 : tensor<2x8x8xf32> -> tensor<2x8x8xf32>
  %r = aten.matmul %p, %v : tensor<2x8x8xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>
  func.return %r : tensor<2x8x16xf32>
}

// -----

// The mask keeps the diagonal's right neighbour too (`tril(1)`): not causal, so
// the attention stays as written.
// CHECK-LABEL: func.func @not_causal
// CHECK-NOT:     aten.scaled_dot_product_attention
func.func @not_causal(%q: tensor<8x16xf32>, %kt: tensor<16x8xf32>, %v: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %s = aten.matmul %q, %kt : tensor<8x16xf32>, tensor<16x8xf32> -> tensor<8x8xf32>
  %cols = aten.positions %s dim = -1 : tensor<8x8xf32> -> tensor<8xi32>
  %rows = aten.positions %s dim = -2 : tensor<8x8xf32> -> tensor<8xi32>
  %r1 = aten.unsqueeze %rows dim = 1 : tensor<8xi32> -> tensor<8x1xi32>
  %d = aten.sub %cols, %r1 : tensor<8xi32>, tensor<8x1xi32> -> tensor<8x8xi32>
  %one = arith.constant 1 : i64
  %gt = aten.gt %d, %one : tensor<8x8xi32>, i64 -> tensor<8x8xi1>
  %ninf = arith.constant 0xfff0000000000000 : f64
  %w = aten.where %gt, %ninf, %s : tensor<8x8xi1>, f64, tensor<8x8xf32> -> tensor<8x8xf32>
  %p = aten.softmax %w dim = -1 : tensor<8x8xf32> -> tensor<8x8xf32>
  %r = aten.matmul %p, %v : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  func.return %r : tensor<8x16xf32>
}

// -----

// One causal mask read by two attentions: the first cannot take the mask's
// ops with it (the second reads them), so both stay as written.
// CHECK-LABEL: func.func @shared_mask
// CHECK-NOT:     aten.scaled_dot_product_attention
func.func @shared_mask(%q: tensor<8x16xf32>, %kt: tensor<16x8xf32>, %v: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %s = aten.matmul %q, %kt : tensor<8x16xf32>, tensor<16x8xf32> -> tensor<8x8xf32>
  %cols = aten.positions %s dim = -1 : tensor<8x8xf32> -> tensor<8xi32>
  %rows = aten.positions %s dim = -2 : tensor<8x8xf32> -> tensor<8xi32>
  %r1 = aten.unsqueeze %rows dim = 1 : tensor<8xi32> -> tensor<8x1xi32>
  %d = aten.sub %cols, %r1 : tensor<8xi32>, tensor<8x1xi32> -> tensor<8x8xi32>
  %zero = arith.constant 0 : i64
  %gt = aten.gt %d, %zero : tensor<8x8xi32>, i64 -> tensor<8x8xi1>
  %ninf = arith.constant 0xfff0000000000000 : f64
  %w = aten.where %gt, %ninf, %s : tensor<8x8xi1>, f64, tensor<8x8xf32> -> tensor<8x8xf32>
  %p = aten.softmax %w dim = -1 : tensor<8x8xf32> -> tensor<8x8xf32>
  %r = aten.matmul %p, %v : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %s2 = aten.matmul %q, %kt : tensor<8x16xf32>, tensor<16x8xf32> -> tensor<8x8xf32>
  %w2 = aten.where %gt, %ninf, %s2 : tensor<8x8xi1>, f64, tensor<8x8xf32> -> tensor<8x8xf32>
  %p2 = aten.softmax %w2 dim = -1 : tensor<8x8xf32> -> tensor<8x8xf32>
  %r2 = aten.matmul %p2, %v : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  func.return %r, %r2 : tensor<8x16xf32>, tensor<8x16xf32>
}
