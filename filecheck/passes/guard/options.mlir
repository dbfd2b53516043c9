// RUN: fusec-opt %s -p 'guard{device=cuda layout=contiguous}' | filecheck %s
// RUN: fusec-opt %s -p 'guard{device=cuda layout=contiguous},guard' | filecheck %s --check-prefix=TWICE

// `device` and `layout` go into every input spec; a second `guard` leaves guarded
// groups alone.
// CHECK-LABEL: func.func @f
// CHECK-NEXT: %[[OK:.*]] = fusion.guard (%{{.*}} : tensor<8x1xf32> <ones = [1], layout = contiguous, device = "cuda">)
// CHECK-NEXT: scf.if %[[OK]]

// TWICE-COUNT-1: fusion.guard
// TWICE-NOT: fusion.guard
func.func @f(%a: tensor<8x1xf32>) -> tensor<8x1xf32> {
  %r = fusion.group (%x = %a) : (tensor<8x1xf32>) -> (tensor<8x1xf32>) {
    %0 = aten.exp %x : tensor<8x1xf32> -> tensor<8x1xf32>
    fusion.yield %0 : tensor<8x1xf32>
  }
  func.return %r : tensor<8x1xf32>
}
