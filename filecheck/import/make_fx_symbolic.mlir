// RUN: python %S/Inputs/aten_graphs.py make-fx-symbolic | filecheck %s
// RUN: python %S/Inputs/aten_graphs.py make-fx-symbolic | fusec-opt | filecheck %s
// RUN: python %S/Inputs/aten_graphs.py make-fx-symbolic | fusec-opt --fuse | filecheck %s --check-prefix=FUSED

// An ATen-level graph traced with symbolic sizes (make_fx, every dim a symbol):
// each symbolic size is a dynamic dim (`?`) of its type, never the 4 or 8 of the
// example; `x.size(0)` is `aten.sym_size`; the view to two symbolic sizes runs
// through PyTorch. The printed IR parses back through fusec-opt unchanged, and
// fuses as static IR does.

// CHECK-LABEL: func.func @scaled_softmax
// CHECK-SAME:    (%[[X:.*]]: tensor<?x?xf32>, %[[B:.*]]: tensor<?xf32>) -> (tensor<?x2x?xf32>, tensor<?x?xf32>)
// CHECK:         %[[ADD:.*]] = aten.add %[[X]], %[[B]] : tensor<?x?xf32>, tensor<?xf32> -> tensor<?x?xf32>
// CHECK:         %[[SIG:.*]] = aten.sigmoid %[[ADD]] : tensor<?x?xf32> -> tensor<?x?xf32>
// CHECK:         %[[N:.*]] = aten.sym_size %[[X]] dim = 0 : tensor<?x?xf32> -> i64
// CHECK:         %[[MUL:.*]] = aten.mul %[[SIG]], %[[N]] : tensor<?x?xf32>, i64 -> tensor<?x?xf32>
// CHECK:         %[[V:.*]] = aten.opaque "aten.view.default" node = "view"(%[[MUL]]) : (tensor<?x?xf32>) -> tensor<?x2x?xf32>
// CHECK:         %[[S:.*]] = aten.softmax %[[V]] dim = -1 : tensor<?x2x?xf32> -> tensor<?x2x?xf32>
// CHECK:         %[[C:.*]] = aten.cat %[[MUL]], %[[X]] dim = 0 : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
// CHECK:         func.return %[[S]], %[[C]] : tensor<?x2x?xf32>, tensor<?x?xf32>

// FUSED-LABEL: func.func @scaled_softmax
// FUSED:         %[[N:.*]] = aten.sym_size
// The cat is the group's exit, `%x` passed through into its second slice.
// FUSED:         %[[G:.*]], %[[C:.*]] = fusion.group (%[[A:.*]] = %[[N]], %[[XA:.*]] = %[[X:.*]], %{{.*}}) : (i64, tensor<?x?xf32>, tensor<?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>)
// FUSED:           %[[M:.*]] = aten.mul %{{.*}}, %[[A]] : tensor<?x?xf32>, i64 -> tensor<?x?xf32>
// FUSED:           aten.cat %[[M]], %[[XA]] dim = 0
// FUSED:         %[[V:.*]] = aten.opaque "aten.view.default"{{.*}}(%[[G]])
// FUSED:         fusion.group (%{{.*}} = %[[V]]) : (tensor<?x2x?xf32>) -> (tensor<?x2x?xf32>)
// FUSED:           aten.amax %{{.*}} dims = [2] keepdim = true : tensor<?x2x?xf32> -> tensor<?x2x1xf32>
// FUSED:           aten.sum
// FUSED:         func.return %{{.*}}, %[[C]]
