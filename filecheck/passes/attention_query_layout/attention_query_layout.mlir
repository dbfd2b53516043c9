// RUN: fusec-opt %s --split-input-file -p attention-query-layout | filecheck %s

// Llama's rotary query: `q * cos + rotate_half(q) * sin`. The group computes
// it in [b, t, h, d] order, reading each operand transposed (`%c`, of rank 3,
// padded first), and the query is the transpose of its result.
// CHECK-LABEL: func.func @rope_query
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x8x8xf32>, %[[R:.*]]: tensor<2x4x8x8xf32>, %[[C:.*]]: tensor<1x8x8xf32>, %[[S:.*]]: tensor<1x1x8x8xf32>, %[[K:.*]]: tensor<2x4x8x8xf32>)
// CHECK-NEXT: %[[G:.*]] = fusion.group (%[[A:.*]] = %[[Q]], %[[B:.*]] = %[[C]], %[[D:.*]] = %[[R]], %[[E:.*]] = %[[S]]) : (tensor<2x4x8x8xf32>, tensor<1x8x8xf32>, tensor<2x4x8x8xf32>, tensor<1x1x8x8xf32>) -> (tensor<2x8x4x8xf32>) {
// CHECK-NEXT:   %[[AT:.*]] = aten.transpose %[[A]] dim0 = 1 dim1 = 2 : tensor<2x4x8x8xf32> -> tensor<2x8x4x8xf32>
// CHECK-NEXT:   %[[BP:.*]] = aten.unsqueeze %[[B]] dim = 0 : tensor<1x8x8xf32> -> tensor<1x1x8x8xf32>
// CHECK-NEXT:   %[[BT:.*]] = aten.transpose %[[BP]] dim0 = 1 dim1 = 2 : tensor<1x1x8x8xf32> -> tensor<1x8x1x8xf32>
// CHECK-NEXT:   %[[M0:.*]] = aten.mul %[[AT]], %[[BT]] : tensor<2x8x4x8xf32>, tensor<1x8x1x8xf32> -> tensor<2x8x4x8xf32>
// CHECK-NEXT:   %[[DT:.*]] = aten.transpose %[[D]] dim0 = 1 dim1 = 2
// CHECK-NEXT:   %[[ET:.*]] = aten.transpose %[[E]] dim0 = 1 dim1 = 2 : tensor<1x1x8x8xf32> -> tensor<1x8x1x8xf32>
// CHECK-NEXT:   %[[M1:.*]] = aten.mul %[[DT]], %[[ET]]
// CHECK-NEXT:   %[[SUM:.*]] = aten.add %[[M0]], %[[M1]] : tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32> -> tensor<2x8x4x8xf32>
// CHECK-NEXT:   fusion.yield %[[SUM]] : tensor<2x8x4x8xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %[[QE:.*]] = aten.transpose %[[G]] dim0 = 1 dim1 = 2 : tensor<2x8x4x8xf32> -> tensor<2x4x8x8xf32>
// CHECK-NEXT: %[[O:.*]] = aten.scaled_dot_product_attention %[[QE]], %[[K]], %[[K]]
func.func @rope_query(%q: tensor<2x4x8x8xf32>, %r: tensor<2x4x8x8xf32>, %c: tensor<1x8x8xf32>, %s: tensor<1x1x8x8xf32>, %k: tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32> {
  %g = fusion.group (%a = %q, %b = %c, %d = %r, %e = %s) : (tensor<2x4x8x8xf32>, tensor<1x8x8xf32>, tensor<2x4x8x8xf32>, tensor<1x1x8x8xf32>) -> (tensor<2x4x8x8xf32>) {
    %m0 = aten.mul %a, %b : tensor<2x4x8x8xf32>, tensor<1x8x8xf32> -> tensor<2x4x8x8xf32>
    %m1 = aten.mul %d, %e : tensor<2x4x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<2x4x8x8xf32>
    %sum = aten.add %m0, %m1 : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
    fusion.yield %sum : tensor<2x4x8x8xf32>
  }
  %o = aten.scaled_dot_product_attention %g, %k, %k scale = 3.535534e-01 : f64 : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  func.return %o : tensor<2x4x8x8xf32>
}

// -----

// AOTAutograd's graphs call PyTorch's CPU attention as an opaque op; a view of
// an input inside the group is read through the transpose too.
// CHECK-LABEL: func.func @opaque_attention
// CHECK: fusion.group
// CHECK-NEXT: %[[V:.*]] = aten.transpose %{{.*}} dim0 = 1 dim1 = 2 : tensor<2x8x4x8xf32> -> tensor<2x4x8x8xf32>
// CHECK-NEXT: %[[VT:.*]] = aten.transpose %[[V]] dim0 = 1 dim1 = 2 : tensor<2x4x8x8xf32> -> tensor<2x8x4x8xf32>
// CHECK-NEXT: aten.neg %[[VT]] : tensor<2x8x4x8xf32> -> tensor<2x8x4x8xf32>
// CHECK: %[[QE:.*]] = aten.transpose %{{.*}} dim0 = 1 dim1 = 2 : tensor<2x8x4x8xf32> -> tensor<2x4x8x8xf32>
// CHECK-NEXT: aten.opaque "aten._scaled_dot_product_flash_attention_for_cpu.default"(%[[QE]], %{{.*}}, %{{.*}})
func.func @opaque_attention(%x: tensor<2x8x4x8xf32>, %k: tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32> {
  %g = fusion.group (%a = %x) : (tensor<2x8x4x8xf32>) -> (tensor<2x4x8x8xf32>) {
    %t = aten.transpose %a dim0 = 1 dim1 = 2 : tensor<2x8x4x8xf32> -> tensor<2x4x8x8xf32>
    %n = aten.neg %t : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
    fusion.yield %n : tensor<2x4x8x8xf32>
  }
  %o, %lse = aten.opaque "aten._scaled_dot_product_flash_attention_for_cpu.default"(%g, %k, %k) {fresh} : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x4x8xf32>)
  func.return %o : tensor<2x4x8x8xf32>
}

// -----

// Left alone: the key (not the query), a reduction in the group, and a
// symbolic size.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: aten.transpose
// CHECK: func.return
func.func @left_alone(%x: tensor<2x4x8x8xf32>, %y: tensor<2x4x?x8xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x?x8xf32>) {
  %g = fusion.group (%a = %x) : (tensor<2x4x8x8xf32>) -> (tensor<2x4x8x8xf32>) {
    %n = aten.neg %a : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
    fusion.yield %n : tensor<2x4x8x8xf32>
  }
  %o = aten.scaled_dot_product_attention %x, %g, %g scale = 3.535534e-01 : f64 : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %h = fusion.group (%a = %x) : (tensor<2x4x8x8xf32>) -> (tensor<2x4x8x8xf32>) {
    %s = aten.sum %a dims = [3] keepdim = true : tensor<2x4x8x8xf32> -> tensor<2x4x8x1xf32>
    %d = aten.div %a, %s : tensor<2x4x8x8xf32>, tensor<2x4x8x1xf32> -> tensor<2x4x8x8xf32>
    fusion.yield %d : tensor<2x4x8x8xf32>
  }
  %p = aten.scaled_dot_product_attention %h, %x, %x scale = 3.535534e-01 : f64 : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %j = fusion.group (%a = %y) : (tensor<2x4x?x8xf32>) -> (tensor<2x4x?x8xf32>) {
    %n = aten.neg %a : tensor<2x4x?x8xf32> -> tensor<2x4x?x8xf32>
    fusion.yield %n : tensor<2x4x?x8xf32>
  }
  %r = aten.scaled_dot_product_attention %j, %y, %y scale = 3.535534e-01 : f64 : tensor<2x4x?x8xf32>, tensor<2x4x?x8xf32>, tensor<2x4x?x8xf32> -> tensor<2x4x?x8xf32>
  func.return %o, %p, %r : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x?x8xf32>
}
