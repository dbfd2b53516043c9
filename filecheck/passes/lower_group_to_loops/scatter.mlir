// RUN: fusec-opt %s -p lower-group-to-loops --split-input-file --verify-diagnostics | filecheck %s
// RUN: fusec-opt %s -p 'lower-group-to-loops{target=nvptx}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=GPU

// A tied table's gradient: the index space is ids x rows x columns (2x8x100x32),
// the ids' dims reduced. The call's rows [begin, end) start at zero, every id
// in order adds its gradient row to its table row when that row is the call's
// and not padding, then the other gradient is added to the call's rows.
// CHECK-LABEL: func.func @tied_table(
// CHECK-SAME:    %[[B:.*]]: index, %[[E:.*]]: index, %[[N0:.*]]: index, %[[N1:.*]]: index, %{{.*}}: index, %[[N3:.*]]: index, %[[D:.*]]: memref<?xf32>, {{.*}}, %[[I:.*]]: memref<?xi64>, {{.*}}, %[[T:.*]]: memref<?xf32>, {{.*}}, %[[O:.*]]: memref<?xf32>, {{.*}})
// CHECK:         scf.for %{{.*}} = %[[B]] to %[[E]]
// CHECK:           scf.for %{{.*}} = %{{.*}} to %[[N3]]
// CHECK:             %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:             memref.store %[[Z]], %[[O]]
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[N0]]
// CHECK:           scf.for %{{.*}} = %{{.*}} to %[[N1]]
// CHECK:             %[[ID:.*]] = memref.load %[[I]]
// CHECK:             %[[LO:.*]] = arith.index_cast %[[B]] : index to i64
// CHECK:             %[[HI:.*]] = arith.index_cast %[[E]] : index to i64
// CHECK:             %[[GE:.*]] = arith.cmpi sge, %[[ID]], %[[LO]] : i64
// CHECK:             %[[LT:.*]] = arith.cmpi slt, %[[ID]], %[[HI]] : i64
// CHECK:             %[[OWN:.*]] = arith.andi %[[GE]], %[[LT]] : i1
// CHECK:             %[[PAD:.*]] = arith.constant -1 : i64
// CHECK:             %[[NP:.*]] = arith.cmpi ne, %[[ID]], %[[PAD]] : i64
// CHECK:             %[[MINE:.*]] = arith.andi %[[OWN]], %[[NP]] : i1
// CHECK:             scf.if %[[MINE]] {
// CHECK:               scf.for %{{.*}} = %{{.*}} to %[[N3]]
// CHECK:                 %[[ACC:.*]] = memref.load %[[O]]
// CHECK:                 %[[GV:.*]] = memref.load %[[D]]
// CHECK:                 %[[SUM:.*]] = arith.addf %[[ACC]], %[[GV]] : f32
// CHECK:                 memref.store %[[SUM]], %[[O]]
// CHECK:         scf.for %{{.*}} = %[[B]] to %[[E]]
// CHECK:           scf.for %{{.*}} = %{{.*}} to %[[N3]]
// CHECK:             %[[TV:.*]] = memref.load %[[T]]
// CHECK:             %[[OV:.*]] = memref.load %[[O]]
// CHECK:             %[[NEW:.*]] = arith.addf %[[TV]], %[[OV]] : f32
// CHECK:             memref.store %[[NEW]], %[[O]]
// CHECK:         func.return
// GPU: lower-group-to-loops: aten.embedding_dense_backward in a kernel is CPU-only
func.func @tied_table(%d: tensor<2x8x32xf32>, %ids: tensor<2x8xi64>, %mm: tensor<100x32xf32>) -> tensor<100x32xf32> attributes {fusion.kernel} {
  %g = aten.embedding_dense_backward %d, %ids num_weights = 100 padding_idx = -1 : tensor<2x8x32xf32>, tensor<2x8xi64> -> tensor<100x32xf32>
  %s = aten.add %mm, %g : tensor<100x32xf32>, tensor<100x32xf32> -> tensor<100x32xf32>
  func.return %s : tensor<100x32xf32>
}

// -----

// A table of its own, bf16 with i32 ids and a padding row: the rows start at
// zero, ids widen to i64, and each sum is rounded to bf16 as eager's adds are.
// CHECK-LABEL: func.func @own_table(
// CHECK:         %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         arith.truncf %[[Z]] : f32 to bf16
// CHECK:         %[[ID:.*]] = memref.load %{{.*}} : memref<?xi32>
// CHECK:         arith.extsi %[[ID]] : i32 to i64
// CHECK:         arith.constant 0 : i64
// CHECK:         arith.addf %{{.*}}, %{{.*}} : f32
// CHECK:         arith.truncf %{{.*}} : f32 to bf16
// GPU: lower-group-to-loops: aten.embedding_dense_backward in a kernel is CPU-only
func.func @own_table(%d: tensor<16x32xbf16>, %ids: tensor<16xi32>) -> tensor<50x32xbf16> attributes {fusion.kernel} {
  %g = aten.embedding_dense_backward %d, %ids num_weights = 50 padding_idx = 0 : tensor<16x32xbf16>, tensor<16xi32> -> tensor<50x32xbf16>
  func.return %g : tensor<50x32xbf16>
}
