// RUN: python %S/Inputs/aten_graphs.py export-dynamic | filecheck %s
// RUN: python %S/Inputs/aten_graphs.py export-dynamic | fusec-opt | filecheck %s
// RUN: python %S/Inputs/aten_graphs.py export-dynamic | fusec-opt --fuse | filecheck %s --check-prefix=FUSED

// A program exported with a symbolic batch size: the batch is a dynamic dim (`?`)
// of every type and `aten.sym_size`, a runtime i64, never the 4 of the example;
// the static sizes stay static. The view to one symbolic size is `aten.reshape`
// (its `?` size is inferred at run time, as a -1); `sink-views` moves it below
// the sigmoid and the scale by the batch, which fuse with the batch as a scalar
// input of the group.

// CHECK-LABEL: func.func @forward
// CHECK-SAME:    (%[[X:.*]]: tensor<?x3x2xf32>) -> tensor<?x6xf32>
// CHECK:         %[[N:.*]] = aten.sym_size %[[X]] dim = 0 : tensor<?x3x2xf32> -> i64
// CHECK:         %[[V:.*]] = aten.reshape %[[X]] : tensor<?x3x2xf32> -> tensor<?x6xf32>
// CHECK:         %[[S:.*]] = aten.sigmoid %[[V]] : tensor<?x6xf32> -> tensor<?x6xf32>
// CHECK:         aten.mul %[[S]], %[[N]] : tensor<?x6xf32>, i64 -> tensor<?x6xf32>

// FUSED-LABEL: func.func @forward
// FUSED-SAME:    (%[[X:.*]]: tensor<?x3x2xf32>)
// FUSED:         %[[N:.*]] = aten.sym_size
// FUSED:         %[[G:.*]] = fusion.group (%[[A:.*]] = %[[N]], %[[B:.*]] = %[[X]]) : (i64, tensor<?x3x2xf32>) -> (tensor<?x3x2xf32>)
// FUSED:           aten.sigmoid %[[B]]
// FUSED:           aten.mul %{{.*}}, %[[A]]
// FUSED:         %[[V:.*]] = aten.view %[[G]] : tensor<?x3x2xf32> -> tensor<?x6xf32>
// FUSED:         func.return %[[V]] : tensor<?x6xf32>
