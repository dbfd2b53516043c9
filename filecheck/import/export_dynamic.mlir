// RUN: python %S/Inputs/aten_graphs.py export-dynamic | filecheck %s
// RUN: python %S/Inputs/aten_graphs.py export-dynamic | fusec-opt | filecheck %s
// RUN: python %S/Inputs/aten_graphs.py export-dynamic | fusec-opt --fuse | filecheck %s --check-prefix=FUSED

// A program exported with a symbolic batch size: the batch is a dynamic dim (`?`)
// of every type and `aten.sym_size`, a runtime i64, never the 4 of the example;
// the static sizes stay static. The view to one symbolic size is `aten.reshape`
// (its `?` size is inferred at run time, as a -1); the sigmoid and the scale by
// the batch fuse after it, with the batch as a scalar input of the group (the
// view of an argument stays in front: `sink-views` moves only what can fuse
// with the view's source).

// CHECK-LABEL: func.func @forward
// CHECK-SAME:    (%[[X:.*]]: tensor<?x3x2xf32>) -> tensor<?x6xf32>
// CHECK:         %[[N:.*]] = aten.sym_size %[[X]] dim = 0 : tensor<?x3x2xf32> -> i64
// CHECK:         %[[V:.*]] = aten.reshape %[[X]] : tensor<?x3x2xf32> -> tensor<?x6xf32>
// CHECK:         %[[S:.*]] = aten.sigmoid %[[V]] : tensor<?x6xf32> -> tensor<?x6xf32>
// CHECK:         aten.mul %[[S]], %[[N]] : tensor<?x6xf32>, i64 -> tensor<?x6xf32>

// FUSED-LABEL: func.func @forward
// FUSED-SAME:    (%[[X:.*]]: tensor<?x3x2xf32>)
// FUSED:         %[[N:.*]] = aten.sym_size
// FUSED:         %[[V:.*]] = aten.reshape %[[X]] : tensor<?x3x2xf32> -> tensor<?x6xf32>
// FUSED:         %[[G:.*]] = fusion.group (%[[A:.*]] = %[[N]], %[[B:.*]] = %[[V]]) : (i64, tensor<?x6xf32>) -> (tensor<?x6xf32>)
// FUSED:           aten.sigmoid %[[B]]
// FUSED:           aten.mul %{{.*}}, %[[A]]
// FUSED:         func.return %[[G]] : tensor<?x6xf32>
