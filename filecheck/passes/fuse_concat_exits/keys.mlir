// RUN: fusec-opt %s -p 'fuse-concat-exits,print-canonical-keys{text=true}' | filecheck %s

// The cat and its dim are part of the canonical key: groups that differ only in
// the cat's dim (or its parts' order) get different kernels.
// CHECK-LABEL: func.func @dim0
// CHECK:         fusion.key = "[[K0:[0-9a-f]+]]"
// CHECK-SAME:    fusion.key_text = "{{.*}}aten.cat(%{{[0-9]+}}, %{{[0-9]+}}) {dim = 0 : i64}
// CHECK-LABEL: func.func @dim1
// CHECK-NOT:     fusion.key = "[[K0]]"
// CHECK:         fusion.key = "[[K1:[0-9a-f]+]]"
// CHECK-SAME:    aten.cat(%{{[0-9]+}}, %{{[0-9]+}}) {dim = 1 : i64}
// CHECK-LABEL: func.func @swapped
// CHECK-NOT:     fusion.key = "[[K0]]"
// CHECK:         fusion.key = "
// CHECK-SAME:    aten.cat
func.func @dim0(%a: tensor<4x3xf32>) -> tensor<8x3xf32> {
  %r:2 = fusion.group (%x = %a) : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
    %0 = aten.exp %x : tensor<4x3xf32> -> tensor<4x3xf32>
    %1 = aten.neg %x : tensor<4x3xf32> -> tensor<4x3xf32>
    fusion.yield %0, %1 : tensor<4x3xf32>, tensor<4x3xf32>
  }
  %c = aten.cat %r#0, %r#1 dim = 0 : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  func.return %c : tensor<8x3xf32>
}
func.func @dim1(%a: tensor<4x3xf32>) -> tensor<4x6xf32> {
  %r:2 = fusion.group (%x = %a) : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
    %0 = aten.exp %x : tensor<4x3xf32> -> tensor<4x3xf32>
    %1 = aten.neg %x : tensor<4x3xf32> -> tensor<4x3xf32>
    fusion.yield %0, %1 : tensor<4x3xf32>, tensor<4x3xf32>
  }
  %c = aten.cat %r#0, %r#1 dim = 1 : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x6xf32>
  func.return %c : tensor<4x6xf32>
}
func.func @swapped(%a: tensor<4x3xf32>) -> tensor<8x3xf32> {
  %r:2 = fusion.group (%x = %a) : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
    %0 = aten.exp %x : tensor<4x3xf32> -> tensor<4x3xf32>
    %1 = aten.neg %x : tensor<4x3xf32> -> tensor<4x3xf32>
    fusion.yield %0, %1 : tensor<4x3xf32>, tensor<4x3xf32>
  }
  %c = aten.cat %r#1, %r#0 dim = 0 : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  func.return %c : tensor<8x3xf32>
}
