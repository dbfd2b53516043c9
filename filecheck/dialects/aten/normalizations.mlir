// RUN: fusec-opt %s --split-input-file | filecheck %s
// RUN: fusec-opt %s --split-input-file --print-op-generic | fusec-opt --split-input-file | filecheck %s

// Reductions beyond sum/mean, and the composite normalization ops.

// CHECK-LABEL: func.func @reductions
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT:    %{{.*}} = aten.amax %[[X]] dims = [1] keepdim = true : tensor<2x3xf32> -> tensor<2x1xf32>
// CHECK-NEXT:    %{{.*}} = aten.amin %[[X]] : tensor<2x3xf32> -> tensor<f32>
// CHECK-NEXT:    %{{.*}} = aten.var %[[X]] dims = [0] correction = 0 : i64 : tensor<2x3xf32> -> tensor<3xf32>
// CHECK-NEXT:    %{{.*}} = aten.std %[[X]] dims = [-1] keepdim = true : tensor<2x3xf32> -> tensor<2x1xf32>
func.func @reductions(%x: tensor<2x3xf32>) {
  %0 = aten.amax %x dims = [1] keepdim = true : tensor<2x3xf32> -> tensor<2x1xf32>
  %1 = aten.amin %x : tensor<2x3xf32> -> tensor<f32>
  %2 = aten.var %x dims = [0] correction = 0 : i64 : tensor<2x3xf32> -> tensor<3xf32>
  %3 = aten.std %x dims = [-1] keepdim = true : tensor<2x3xf32> -> tensor<2x1xf32>
  func.return
}

// -----

// CHECK-LABEL: func.func @normalizations
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf16>, %[[W:.*]]: tensor<8xf16>, %[[I:.*]]: tensor<4x1xi64>)
// CHECK-NEXT:    %{{.*}} = aten.softmax %[[X]] dim = -1 : tensor<4x8xf16> -> tensor<4x8xf16>
// CHECK-NEXT:    %{{.*}} = aten.log_softmax %[[X]] dim = 0 : tensor<4x8xf16> -> tensor<4x8xf32>
// CHECK-NEXT:    %{{.*}} = aten.layer_norm %[[X]], %[[W]] normalized_shape = [8] eps = 1.000000e-05 : f64 : tensor<4x8xf16>, tensor<8xf16> -> tensor<4x8xf16>
// CHECK-NEXT:    %{{.*}} = aten.layer_norm %[[X]] normalized_shape = [4, 8] eps = 1.000000e-06 : f64 : tensor<4x8xf16> -> tensor<4x8xf16>
// CHECK-NEXT:    %{{.*}} = aten.gather %[[X]], %[[I]] dim = 1 : tensor<4x8xf16>, tensor<4x1xi64> -> tensor<4x1xf16>
func.func @normalizations(%x: tensor<4x8xf16>, %w: tensor<8xf16>, %i: tensor<4x1xi64>) {
  %0 = aten.softmax %x dim = -1 : tensor<4x8xf16> -> tensor<4x8xf16>
  %1 = aten.log_softmax %x dim = 0 : tensor<4x8xf16> -> tensor<4x8xf32>
  %2 = aten.layer_norm %x, %w normalized_shape = [8] eps = 1.0e-05 : f64 : tensor<4x8xf16>, tensor<8xf16> -> tensor<4x8xf16>
  %3 = aten.layer_norm %x normalized_shape = [4, 8] eps = 1.0e-06 : f64 : tensor<4x8xf16> -> tensor<4x8xf16>
  %4 = aten.gather %x, %i dim = 1 : tensor<4x8xf16>, tensor<4x1xi64> -> tensor<4x1xf16>
  func.return
}

// -----

// Embedding lookups: rows of a 2-d table picked by i64 or i32 indices.
// CHECK-LABEL: func.func @lookups
// CHECK-SAME:    (%[[W:.*]]: tensor<100x32xf32>, %[[I:.*]]: tensor<2x8xi64>, %[[J:.*]]: tensor<5xi32>)
// CHECK-NEXT:    %{{.*}} = aten.embedding %[[W]], %[[I]] : tensor<100x32xf32>, tensor<2x8xi64> -> tensor<2x8x32xf32>
// CHECK-NEXT:    %{{.*}} = aten.embedding %[[W]], %[[J]] : tensor<100x32xf32>, tensor<5xi32> -> tensor<5x32xf32>
func.func @lookups(%w: tensor<100x32xf32>, %i: tensor<2x8xi64>, %j: tensor<5xi32>) {
  %0 = aten.embedding %w, %i : tensor<100x32xf32>, tensor<2x8xi64> -> tensor<2x8x32xf32>
  %1 = aten.embedding %w, %j : tensor<100x32xf32>, tensor<5xi32> -> tensor<5x32xf32>
  func.return
}

// -----

// Embedding tables' gradients: rows summed by index, padding row kept at 0.
// CHECK-LABEL: func.func @table_gradients
// CHECK-SAME:    (%[[D:.*]]: tensor<2x8x32xf32>, %[[I:.*]]: tensor<2x8xi64>, %[[J:.*]]: tensor<5xi32>, %[[E:.*]]: tensor<5x4xbf16>)
// CHECK-NEXT:    %{{.*}} = aten.embedding_dense_backward %[[D]], %[[I]] num_weights = 100 padding_idx = -1 : tensor<2x8x32xf32>, tensor<2x8xi64> -> tensor<100x32xf32>
// CHECK-NEXT:    %{{.*}} = aten.embedding_dense_backward %[[E]], %[[J]] num_weights = 7 padding_idx = 0 : tensor<5x4xbf16>, tensor<5xi32> -> tensor<7x4xbf16>
func.func @table_gradients(%d: tensor<2x8x32xf32>, %i: tensor<2x8xi64>, %j: tensor<5xi32>, %e: tensor<5x4xbf16>) {
  %0 = aten.embedding_dense_backward %d, %i num_weights = 100 padding_idx = -1 : tensor<2x8x32xf32>, tensor<2x8xi64> -> tensor<100x32xf32>
  %1 = aten.embedding_dense_backward %e, %j num_weights = 7 padding_idx = 0 : tensor<5x4xbf16>, tensor<5xi32> -> tensor<7x4xbf16>
  func.return
}
