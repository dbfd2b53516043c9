// RUN: fusec-opt %s --fuse | filecheck %s

// In `--fuse`: the bias add of a flattened matmul and the GELU after the view
// back to [b, t, c] are one group; the views stay outside.
// CHECK-LABEL: func.func @bias_gelu
// CHECK:         %[[G:.*]] = fusion.group
// CHECK-NEXT:      aten.add
// CHECK-NEXT:      aten.gelu
// CHECK-NEXT:      fusion.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[V:.*]] = aten.view %[[G]] : tensor<16x128xf32> -> tensor<2x8x128xf32>
// CHECK-NEXT:    %[[F:.*]] = aten.view %[[V]] : tensor<2x8x128xf32> -> tensor<16x128xf32>
// CHECK-NEXT:    func.return %[[F]]
func.func @bias_gelu(%m: tensor<16x128xf32>, %b: tensor<128xf32>) -> tensor<16x128xf32> {
  %a = aten.add %b, %m : tensor<128xf32>, tensor<16x128xf32> -> tensor<16x128xf32>
  %v = aten.view %a : tensor<16x128xf32> -> tensor<2x8x128xf32>
  %g = aten.gelu %v approximate = "tanh" : tensor<2x8x128xf32> -> tensor<2x8x128xf32>
  %f = aten.view %g : tensor<2x8x128xf32> -> tensor<16x128xf32>
  func.return %f : tensor<16x128xf32>
}
