// RUN: fusec-opt %s -p print-canonical-keys | filecheck %s

// Groups that differ only in value names and non-1 sizes share a key; a size-1
// (broadcast) dim or another op gives another key.
// CHECK-LABEL: func.func @keys
// CHECK: fusion.group {{.*}} attributes {fusion.key = "[[K:[0-9a-f]+]]"}
// CHECK: fusion.group {{.*}} attributes {fusion.key = "[[K]]"}
// CHECK: fusion.group {{.*}} attributes {fusion.key = "[[K1:[0-9a-f]+]]"}
// CHECK-NOT: "[[K]]"
// CHECK: fusion.group {{.*}} attributes {fusion.key = "[[K2:[0-9a-f]+]]"}
// CHECK-NOT: "[[K]]"
// CHECK-NOT: "[[K1]]"
// CHECK: func.return
func.func @keys(%a: tensor<2x3xf32>, %b: tensor<5x7xf32>, %c: tensor<5x1xf32>) -> (tensor<2x3xf32>, tensor<5x7xf32>, tensor<5x1xf32>, tensor<2x3xf32>) {
  %0 = fusion.group (%x = %a) : (tensor<2x3xf32>) -> (tensor<2x3xf32>) {
    %c1 = aten.mul %x, %x : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
    %d1 = aten.mul %c1, %x : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
    fusion.yield %d1 : tensor<2x3xf32>
  }
  %1 = fusion.group (%y = %b) : (tensor<5x7xf32>) -> (tensor<5x7xf32>) {
    %c2 = aten.mul %y, %y : tensor<5x7xf32>, tensor<5x7xf32> -> tensor<5x7xf32>
    %d2 = aten.mul %c2, %y : tensor<5x7xf32>, tensor<5x7xf32> -> tensor<5x7xf32>
    fusion.yield %d2 : tensor<5x7xf32>
  }
  %2 = fusion.group (%z = %c) : (tensor<5x1xf32>) -> (tensor<5x1xf32>) {
    %c3 = aten.mul %z, %z : tensor<5x1xf32>, tensor<5x1xf32> -> tensor<5x1xf32>
    %d3 = aten.mul %c3, %z : tensor<5x1xf32>, tensor<5x1xf32> -> tensor<5x1xf32>
    fusion.yield %d3 : tensor<5x1xf32>
  }
  %3 = fusion.group (%w = %a) : (tensor<2x3xf32>) -> (tensor<2x3xf32>) {
    %c4 = aten.mul %w, %w : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
    %d4 = aten.add %c4, %w : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
    fusion.yield %d4 : tensor<2x3xf32>
  }
  func.return %0, %1, %2, %3 : tensor<2x3xf32>, tensor<5x7xf32>, tensor<5x1xf32>, tensor<2x3xf32>
}
