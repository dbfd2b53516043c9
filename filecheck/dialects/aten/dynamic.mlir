// RUN: fusec-opt %s --split-input-file | filecheck %s
// RUN: fusec-opt %s --split-input-file --print-op-generic | fusec-opt --split-input-file | filecheck %s

// Dynamic dims (`?`): sizes a graph with symbolic shapes knows only at run time.
// Broadcasting treats `?` as any size; a static size beside it is what it must be.

// CHECK-LABEL: func.func @pointwise
// CHECK-SAME: (%[[X:.*]]: tensor<?x16xf32>, %[[B:.*]]: tensor<16xf32>, %[[Y:.*]]: tensor<?x?xf32>, %[[V:.*]]: tensor<?xf32>, %[[N:.*]]: i64)
// CHECK: %[[A:.*]] = aten.add %[[X]], %[[B]] : tensor<?x16xf32>, tensor<16xf32> -> tensor<?x16xf32>
// CHECK-NEXT: %[[M:.*]] = aten.mul %[[Y]], %[[V]] : tensor<?x?xf32>, tensor<?xf32> -> tensor<?x?xf32>
// CHECK-NEXT: %[[S:.*]] = aten.sub %[[X]], %[[Y]] : tensor<?x16xf32>, tensor<?x?xf32> -> tensor<?x16xf32>
// CHECK-NEXT: %[[D:.*]] = aten.div %[[A]], %[[N]] : tensor<?x16xf32>, i64 -> tensor<?x16xf32>
// CHECK-NEXT: %[[G:.*]] = aten.sigmoid %[[D]] : tensor<?x16xf32> -> tensor<?x16xf32>
func.func @pointwise(%x: tensor<?x16xf32>, %b: tensor<16xf32>, %y: tensor<?x?xf32>, %v: tensor<?xf32>, %n: i64) -> (tensor<?x?xf32>, tensor<?x16xf32>, tensor<?x16xf32>) {
  %a = aten.add %x, %b : tensor<?x16xf32>, tensor<16xf32> -> tensor<?x16xf32>
  %m = aten.mul %y, %v : tensor<?x?xf32>, tensor<?xf32> -> tensor<?x?xf32>
  %s = aten.sub %x, %y : tensor<?x16xf32>, tensor<?x?xf32> -> tensor<?x16xf32>
  %d = aten.div %a, %n : tensor<?x16xf32>, i64 -> tensor<?x16xf32>
  %g = aten.sigmoid %d : tensor<?x16xf32> -> tensor<?x16xf32>
  func.return %m, %s, %g : tensor<?x?xf32>, tensor<?x16xf32>, tensor<?x16xf32>
}

// -----

// Views keep `?` where they keep the dim; a chunk or a slice of a static dim
// leaves the dynamic ones alone; the whole of a dynamic dim is a slice too.
// CHECK-LABEL: func.func @views
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf32>, %[[O:.*]]: tensor<1x8xf32>)
// CHECK: %[[P:[a-z0-9_]+]], %{{.*}} = aten.chunk %[[X]] chunks = 2 dim = 1 : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
// CHECK-NEXT: %[[T:.*]] = aten.transpose %[[X]] dim0 = 0 dim1 = 1 : tensor<?x8xf32> -> tensor<8x?xf32>
// CHECK-NEXT: %[[U:.*]] = aten.unsqueeze %[[X]] dim = 0 : tensor<?x8xf32> -> tensor<1x?x8xf32>
// CHECK-NEXT: %[[Q:.*]] = aten.squeeze %[[U]] dim = 0 : tensor<1x?x8xf32> -> tensor<?x8xf32>
// CHECK-NEXT: %[[E:.*]] = aten.expand %[[X]] size = [-1, 8] : tensor<?x8xf32> -> tensor<?x8xf32>
// CHECK-NEXT: %[[F:.*]] = aten.expand %[[O]] size = [-1, 8] : tensor<1x8xf32> -> tensor<1x8xf32>
// CHECK-NEXT: %[[R:.*]] = aten.reshape %[[X]] : tensor<?x8xf32> -> tensor<?x2x4xf32>
// CHECK-NEXT: %[[W:.*]] = aten.slice %[[X]] dim = 0 start = 0 end = 9223372036854775807 step = 1 : tensor<?x8xf32> -> tensor<?x8xf32>
// CHECK-NEXT: %[[Z:.*]] = aten.slice %[[X]] dim = 1 start = 2 end = 6 step = 2 : tensor<?x8xf32> -> tensor<?x2xf32>
// CHECK-NEXT: %[[C:.*]] = aten.cat %[[X]], %[[W]] dim = 0 : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
// CHECK-NEXT: %[[K:.*]] = aten.cat %[[X]], %[[O]] dim = 0 : tensor<?x8xf32>, tensor<1x8xf32> -> tensor<?x8xf32>
// CHECK-NEXT: %[[L:.*]] = aten.cat %[[P]], %[[T]] dim = 1 : tensor<?x4xf32>, tensor<8x?xf32> -> tensor<8x?xf32>
func.func @views(%x: tensor<?x8xf32>, %o: tensor<1x8xf32>) {
  %p:2 = aten.chunk %x chunks = 2 dim = 1 : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
  %t = aten.transpose %x dim0 = 0 dim1 = 1 : tensor<?x8xf32> -> tensor<8x?xf32>
  %u = aten.unsqueeze %x dim = 0 : tensor<?x8xf32> -> tensor<1x?x8xf32>
  %q = aten.squeeze %u dim = 0 : tensor<1x?x8xf32> -> tensor<?x8xf32>
  %e = aten.expand %x size = [-1, 8] : tensor<?x8xf32> -> tensor<?x8xf32>
  %f = aten.expand %o size = [-1, 8] : tensor<1x8xf32> -> tensor<1x8xf32>
  %r = aten.reshape %x : tensor<?x8xf32> -> tensor<?x2x4xf32>
  %w = aten.slice %x dim = 0 start = 0 end = 9223372036854775807 step = 1 : tensor<?x8xf32> -> tensor<?x8xf32>
  %z = aten.slice %x dim = 1 start = 2 end = 6 step = 2 : tensor<?x8xf32> -> tensor<?x2xf32>
  %c = aten.cat %x, %w dim = 0 : tensor<?x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  %k = aten.cat %x, %o dim = 0 : tensor<?x8xf32>, tensor<1x8xf32> -> tensor<?x8xf32>
  %l = aten.cat %p#0, %t dim = 1 : tensor<?x4xf32>, tensor<8x?xf32> -> tensor<8x?xf32>
  func.return
}

// -----

// Barriers and reductions: a static size meets a dynamic one where the product
// contracts; reducing a dynamic dim drops it (or keeps a 1).
// CHECK-LABEL: func.func @barriers
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x32xf32>, %[[W:.*]]: tensor<32x8xf32>, %[[G:.*]]: tensor<32xf32>, %[[Y:.*]]: tensor<?x?xf32>)
// CHECK: %[[M:.*]] = aten.matmul %[[X]], %[[W]] : tensor<?x?x32xf32>, tensor<32x8xf32> -> tensor<?x?x8xf32>
// CHECK-NEXT: %[[P:.*]] = aten.mm %[[Y]], %[[W]] : tensor<?x?xf32>, tensor<32x8xf32> -> tensor<?x8xf32>
// CHECK-NEXT: %[[S:.*]] = aten.sum %[[X]] dims = [1] : tensor<?x?x32xf32> -> tensor<?x32xf32>
// CHECK-NEXT: %[[A:.*]] = aten.amax %[[X]] dims = [1] keepdim = true : tensor<?x?x32xf32> -> tensor<?x1x32xf32>
// CHECK-NEXT: %[[F:.*]] = aten.softmax %[[X]] dim = 1 : tensor<?x?x32xf32> -> tensor<?x?x32xf32>
// CHECK-NEXT: %[[L:.*]] = aten.layer_norm %[[X]], %[[G]] normalized_shape = [32] eps = 1.000000e-05 : f64 : tensor<?x?x32xf32>, tensor<32xf32> -> tensor<?x?x32xf32>
// CHECK-NEXT: %[[N:.*]] = aten.sym_size %[[X]] dim = 1 : tensor<?x?x32xf32> -> i64
func.func @barriers(%x: tensor<?x?x32xf32>, %w: tensor<32x8xf32>, %g: tensor<32xf32>, %y: tensor<?x?xf32>) {
  %m = aten.matmul %x, %w : tensor<?x?x32xf32>, tensor<32x8xf32> -> tensor<?x?x8xf32>
  %p = aten.mm %y, %w : tensor<?x?xf32>, tensor<32x8xf32> -> tensor<?x8xf32>
  %s = aten.sum %x dims = [1] : tensor<?x?x32xf32> -> tensor<?x32xf32>
  %a = aten.amax %x dims = [1] keepdim = true : tensor<?x?x32xf32> -> tensor<?x1x32xf32>
  %f = aten.softmax %x dim = 1 : tensor<?x?x32xf32> -> tensor<?x?x32xf32>
  %l = aten.layer_norm %x, %g normalized_shape = [32] eps = 1.000000e-05 : f64 : tensor<?x?x32xf32>, tensor<32xf32> -> tensor<?x?x32xf32>
  %n = aten.sym_size %x dim = 1 : tensor<?x?x32xf32> -> i64
  func.return
}
