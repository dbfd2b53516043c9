// RUN: python %S/Inputs/aten_graphs.py export-dynamic | filecheck %s
// RUN: python %S/Inputs/aten_graphs.py export-dynamic | fusec-opt --fuse | filecheck %s --check-prefix=FUSED

// A program exported with a symbolic batch size: the batch is `aten.sym_size`, a
// runtime i64, never the 4 of the example; the view that takes it runs through
// PyTorch (its sizes are runtime values) and the scale by the batch fuses as a
// scalar input of the group.

// CHECK-LABEL: func.func @forward
// CHECK-SAME:    (%[[X:.*]]: tensor<4x3x2xf32>)
// CHECK:         %[[N:.*]] = aten.sym_size %[[X]] dim = 0 : tensor<4x3x2xf32> -> i64
// CHECK:         %[[V:.*]] = aten.opaque "aten.view.default" node = "view"(%[[X]], %[[N]]) : (tensor<4x3x2xf32>, i64) -> tensor<4x6xf32>
// CHECK:         %[[S:.*]] = aten.sigmoid %[[V]]
// CHECK:         aten.mul %[[S]], %[[N]] : tensor<4x6xf32>, i64 -> tensor<4x6xf32>

// FUSED-LABEL: func.func @forward
// FUSED:         %[[N:.*]] = aten.sym_size
// FUSED:         %[[V:.*]] = aten.opaque "aten.view.default"
// FUSED:         fusion.group (%[[A:.*]] = %[[N]], %[[B:.*]] = %[[V]]) : (i64, tensor<4x6xf32>) -> (tensor<4x6xf32>)
// FUSED:           aten.sigmoid %[[B]]
// FUSED:           aten.mul %{{.*}}, %[[A]]
