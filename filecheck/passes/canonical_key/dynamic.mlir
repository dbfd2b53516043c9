// RUN: fusec-opt %s -p print-canonical-keys | filecheck %s

// A group over dynamic dims has the key of the same group over any static
// non-1 sizes: the kernel takes its sizes at run time, so a symbolic graph and
// every first-call shape share one compiled kernel. A size-1 dim still differs.
// CHECK-LABEL: func.func @keys
// CHECK: fusion.group {{.*}} attributes {fusion.key = "[[K:[0-9a-f]+]]"}
// CHECK: fusion.group {{.*}} attributes {fusion.key = "[[K]]"}
// CHECK: fusion.group {{.*}} attributes {fusion.key = "[[K1:[0-9a-f]+]]"}
// CHECK-NOT: "[[K]]"
// CHECK: func.return
func.func @keys(%a: tensor<?x?xf32>, %b: tensor<5x7xf32>, %c: tensor<?x1xf32>) -> (tensor<?x?xf32>, tensor<5x7xf32>, tensor<?x1xf32>) {
  %0 = fusion.group (%x = %a) : (tensor<?x?xf32>) -> (tensor<?x?xf32>) {
    %c1 = aten.mul %x, %x : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
    %d1 = aten.sigmoid %c1 : tensor<?x?xf32> -> tensor<?x?xf32>
    fusion.yield %d1 : tensor<?x?xf32>
  }
  %1 = fusion.group (%y = %b) : (tensor<5x7xf32>) -> (tensor<5x7xf32>) {
    %c2 = aten.mul %y, %y : tensor<5x7xf32>, tensor<5x7xf32> -> tensor<5x7xf32>
    %d2 = aten.sigmoid %c2 : tensor<5x7xf32> -> tensor<5x7xf32>
    fusion.yield %d2 : tensor<5x7xf32>
  }
  %2 = fusion.group (%z = %c) : (tensor<?x1xf32>) -> (tensor<?x1xf32>) {
    %c3 = aten.mul %z, %z : tensor<?x1xf32>, tensor<?x1xf32> -> tensor<?x1xf32>
    %d3 = aten.sigmoid %c3 : tensor<?x1xf32> -> tensor<?x1xf32>
    fusion.yield %d3 : tensor<?x1xf32>
  }
  func.return %0, %1, %2 : tensor<?x?xf32>, tensor<5x7xf32>, tensor<?x1xf32>
}
