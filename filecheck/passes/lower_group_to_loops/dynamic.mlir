// RUN: fusec-opt %s -p lower-group-to-loops --split-input-file | filecheck %s

// Dynamic dims lower as static ones do: sizes and strides are kernel arguments,
// never constants of the type, so one kernel serves every size.
// CHECK-LABEL: func.func @k(
// CHECK-SAME:    %[[B:[0-9]+]]: index, %[[E:[0-9]+]]: index, %[[N0:[0-9]+]]: index, %[[N1:[0-9]+]]: index, %[[X:[0-9]+]]: memref<?xf32>, %{{[0-9]+}}: index, %{{[0-9]+}}: index, %[[Y:[0-9]+]]: memref<?xf32>, %{{[0-9]+}}: index, %{{[0-9]+}}: index, %[[O:[0-9]+]]: memref<?xf32>, %{{[0-9]+}}: index, %{{[0-9]+}}: index)
// CHECK-NOT:     arith.constant 16 : index
// CHECK:         scf.for %[[I0:.*]] = %[[B]] to %[[E]]
// CHECK:           scf.for %[[I1:.*]] = %{{.*}} to %[[N1]]
// CHECK:             memref.load %[[X]]
// CHECK:             memref.load %[[Y]]
// CHECK:             arith.addf
// CHECK:             memref.store %{{.*}}, %[[O]]
func.func @k(%x: tensor<?x16xf32>, %y: tensor<16xf32>) -> tensor<?x16xf32> attributes {fusion.kernel} {
  %0 = aten.add %x, %y : tensor<?x16xf32>, tensor<16xf32> -> tensor<?x16xf32>
  %1 = aten.sigmoid %0 : tensor<?x16xf32> -> tensor<?x16xf32>
  func.return %1 : tensor<?x16xf32>
}

// -----

// A row reduction over a dynamic dim: its extent is the size argument too.
// CHECK-LABEL: func.func @row_sum(
// CHECK-SAME:    %{{[0-9]+}}: index, %{{[0-9]+}}: index, %{{[0-9]+}}: index, %[[N1:[0-9]+]]: index, %[[X:[0-9]+]]: memref<?xf32>
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[N1]] step %{{.*}} iter_args
// CHECK:           memref.load %[[X]]
// CHECK:           math.exp
// CHECK:           arith.addf
func.func @row_sum(%x: tensor<?x?xf32>) -> tensor<?x1xf32> attributes {fusion.kernel} {
  %0 = aten.exp %x : tensor<?x?xf32> -> tensor<?x?xf32>
  %1 = aten.sum %0 dims = [1] keepdim = true : tensor<?x?xf32> -> tensor<?x1xf32>
  func.return %1 : tensor<?x1xf32>
}
