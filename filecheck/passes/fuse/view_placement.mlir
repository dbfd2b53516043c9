// RUN: fusec-opt %s --split-input-file -p fuse | filecheck %s

// A view taken as soon as its source exists (saved for the backward, returned)
// moves down to its first use, so the chain on both sides of it is one group
// (GPT-2's tanh GELU: two kernels when the view stayed in the way).
// CHECK-LABEL: func.func @view_in_the_way
// CHECK-SAME:    (%[[B:.*]]: tensor<128xf32>, %[[M:.*]]: tensor<16x128xf32>)
// CHECK-NEXT:    %[[R:.*]], %[[T:.*]] = fusion.group (%{{.*}} = %[[B]], %{{.*}} = %[[M]])
// CHECK:           aten.tanh
// CHECK:           aten.mul
// CHECK:           fusion.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[V:.*]] = aten.view %[[T]] : tensor<16x128xf32> -> tensor<2x8x128xf32>
// CHECK-NEXT:    func.return %[[R]], %[[V]]
// CHECK-NOT:     fusion.group
func.func @view_in_the_way(%b: tensor<128xf32>, %m: tensor<16x128xf32>) -> (tensor<16x128xf32>, tensor<2x8x128xf32>) {
  %x = aten.add %b, %m : tensor<128xf32>, tensor<16x128xf32> -> tensor<16x128xf32>
  %c = arith.constant 5.000000e-01 : f64
  %h = aten.mul %x, %c : tensor<16x128xf32>, f64 -> tensor<16x128xf32>
  %t = aten.tanh %x : tensor<16x128xf32> -> tensor<16x128xf32>
  %tv = aten.view %t : tensor<16x128xf32> -> tensor<2x8x128xf32>
  %one = arith.constant 1.000000e+00 : f64
  %a = aten.add %t, %one : tensor<16x128xf32>, f64 -> tensor<16x128xf32>
  %r = aten.mul %h, %a : tensor<16x128xf32>, tensor<16x128xf32> -> tensor<16x128xf32>
  func.return %r, %tv : tensor<16x128xf32>, tensor<2x8x128xf32>
}

// -----

// A chain of views moves as one, each before its first use.
// CHECK-LABEL: func.func @view_chain
// CHECK:         %[[E:.*]] = fusion.group
// CHECK:           aten.exp
// CHECK:           aten.neg
// CHECK:           fusion.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[V1:.*]] = aten.view %{{.*}} : tensor<4x4xf32> -> tensor<16xf32>
// CHECK-NEXT:    %[[V2:.*]] = aten.unsqueeze %[[V1]] dim = 0 : tensor<16xf32> -> tensor<1x16xf32>
// CHECK-NEXT:    func.return
func.func @view_chain(%x: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<1x16xf32>) {
  %e = aten.exp %x : tensor<4x4xf32> -> tensor<4x4xf32>
  %v1 = aten.view %e : tensor<4x4xf32> -> tensor<16xf32>
  %v2 = aten.unsqueeze %v1 dim = 0 : tensor<16xf32> -> tensor<1x16xf32>
  %n = aten.neg %e : tensor<4x4xf32> -> tensor<4x4xf32>
  func.return %n, %v2 : tensor<4x4xf32>, tensor<1x16xf32>
}

// -----

// `aten.reshape` copies a strided input, so it reads its source where it
// stands: it does not move past an `aten.copy_` that may write that source,
// and the chain stays cut there.
// CHECK-LABEL: func.func @reshape_stays_before_a_write
// CHECK:         %[[E:.*]] = fusion.group
// CHECK:           aten.exp
// CHECK:           aten.sin
// CHECK:         aten.reshape %[[E]]
// CHECK-NEXT:    aten.copy_ %[[E]]
// CHECK-NEXT:    fusion.group (%{{.*}} = %[[E]])
// CHECK:           aten.neg
// CHECK:           aten.cos
func.func @reshape_stays_before_a_write(%x: tensor<4x4xf32>, %y: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<16xf32>) {
  %a = aten.exp %x : tensor<4x4xf32> -> tensor<4x4xf32>
  %e = aten.sin %a : tensor<4x4xf32> -> tensor<4x4xf32>
  %v = aten.reshape %e : tensor<4x4xf32> -> tensor<16xf32>
  aten.copy_ %e, %y : tensor<4x4xf32>, tensor<4x4xf32>
  %n = aten.neg %e : tensor<4x4xf32> -> tensor<4x4xf32>
  %c = aten.cos %n : tensor<4x4xf32> -> tensor<4x4xf32>
  func.return %c, %v : tensor<4x4xf32>, tensor<16xf32>
}
