// RUN: python %S/Inputs/aten_graphs.py aot-mlp-backward | filecheck %s
// RUN: python %S/Inputs/aten_graphs.py aot-mlp-backward | fusec-opt | filecheck %s

// AOTAutograd's backward graph, imported from its placeholders' FakeTensors:
// `sigmoid_backward` and `tanh_backward` become pointwise aten ops (so they fuse),
// the bias gradients are `aten.sum` over the batch, `t` is a transpose.

// CHECK-LABEL: func.func @backward
// CHECK-SAME:    %[[TANGENTS:[a-z_0-9]+]]: tensor<2x4xf32>)
// CHECK:         %[[ONE:.*]] = arith.constant 1.000000e+00 : f64
// CHECK:         %[[D:.*]] = aten.sub %[[ONE]], %[[Y:.*]] : f64, tensor<2x4xf32> -> tensor<2x4xf32>
// CHECK:         %[[DY:.*]] = aten.mul %[[D]], %[[Y]]
// CHECK:         %[[SB:.*]] = aten.mul %[[TANGENTS]], %[[DY]]
// CHECK:         aten.transpose
// CHECK:         aten.sum %[[SB]] dims = [0] keepdim = true : tensor<2x4xf32> -> tensor<1x4xf32>
// CHECK:         %[[SQ:.*]] = aten.mul %[[T:.*]], %[[T]] : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
// CHECK:         %[[D2:.*]] = aten.sub %{{.*}}, %[[SQ]] : f64, tensor<2x8xf32> -> tensor<2x8xf32>
// CHECK:         %[[TB:.*]] = aten.mul %{{.*}}, %[[D2]]
// CHECK:         aten.sum %[[TB]] dims = [0]
// CHECK-NOT:     aten.opaque
// CHECK:         func.return
