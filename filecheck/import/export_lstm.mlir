// RUN: python %S/Inputs/aten_graphs.py export-lstm | filecheck %s
// RUN: python %S/Inputs/aten_graphs.py export-lstm | fusec-opt | filecheck %s
// RUN: python %S/Inputs/aten_graphs.py export-lstm | fusec-opt --fuse | filecheck %s --check-prefix=FUSED

// A torch.export program after core-ATen decompositions: parameters are arguments,
// `permute`/`mm`/`add` import as their aten ops, and `split_with_sizes` into equal
// pieces is `aten.chunk`, so the whole gate tail fuses into one group.

// CHECK-LABEL: func.func @forward
// CHECK-SAME:    (%[[WIH:.*]]: tensor<16x4xf32>, %[[WHH:.*]]: tensor<16x4xf32>, %[[B:.*]]: tensor<16xf32>, %[[X:.*]]: tensor<2x4xf32>, %[[HX:.*]]: tensor<2x4xf32>, %[[CX:.*]]: tensor<2x4xf32>)
// CHECK:         %[[P:.*]] = aten.permute %[[WIH]] dims = [1, 0]
// CHECK:         %[[MM:.*]] = aten.mm %[[X]], %[[P]]
// CHECK:         %[[G:.*]] = aten.add %{{.*}}, %[[B]]
// CHECK:         %[[I:.*]], %[[F:.*]], %[[GG:.*]], %[[O:.*]] = aten.chunk %[[G]] chunks = 4 dim = 1
// CHECK:         aten.sigmoid %[[F]]
// CHECK:         aten.tanh %[[GG]]
// CHECK:         func.return

// FUSED-LABEL: func.func @forward
// FUSED:         aten.mm
// FUSED:         aten.mm
// FUSED:         fusion.group
// FUSED:           aten.chunk
// FUSED:           aten.sigmoid
// FUSED:           aten.tanh
// FUSED:           fusion.yield
// FUSED-NOT:     fusion.group
// FUSED:         func.return
