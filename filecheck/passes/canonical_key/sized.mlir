// RUN: fusec-opt %s -p 'print-canonical-keys{text=true}' | filecheck %s

// A lookup bakes its table's rows and row length into the kernel (the range
// check, the row offset): groups over tables of other sizes get other keys,
// where the rest of the group still prints its sizes as `?`.
// CHECK-LABEL: func.func @tables
// CHECK: fusion.group {{.*}}fusion.key = "[[K:[0-9a-f]+]]"
// CHECK-SAME: aten.embedding(%a0, %a1) {} : (tensor<100x32xf32>, tensor<?x?xi64>) -> (tensor<?x?x?xf32>)
// CHECK-SAME: aten.neg(%0) {} : (tensor<?x?x?xf32>) -> (tensor<?x?x?xf32>)
// CHECK: fusion.group {{.*}}fusion.key = "[[K]]"
// CHECK: fusion.group {{.*}}fusion.key = "[[K1:[0-9a-f]+]]"
// CHECK-NOT: "[[K]]"
// CHECK-SAME: (tensor<1000x128xf32>, tensor<?x?xi64>) -> (tensor<?x?x?xf32>)
// CHECK: func.return
func.func @tables(%t: tensor<100x32xf32>, %u: tensor<1000x128xf32>, %i: tensor<2x8xi64>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x128xf32>) {
  %0 = fusion.group (%w = %t, %x = %i) : (tensor<100x32xf32>, tensor<2x8xi64>) -> (tensor<2x8x32xf32>) {
    %e = aten.embedding %w, %x : tensor<100x32xf32>, tensor<2x8xi64> -> tensor<2x8x32xf32>
    %n = aten.neg %e : tensor<2x8x32xf32> -> tensor<2x8x32xf32>
    fusion.yield %n : tensor<2x8x32xf32>
  }
  %1 = fusion.group (%w = %t, %x = %i) : (tensor<100x32xf32>, tensor<2x8xi64>) -> (tensor<2x8x32xf32>) {
    %e = aten.embedding %w, %x : tensor<100x32xf32>, tensor<2x8xi64> -> tensor<2x8x32xf32>
    %n = aten.neg %e : tensor<2x8x32xf32> -> tensor<2x8x32xf32>
    fusion.yield %n : tensor<2x8x32xf32>
  }
  %2 = fusion.group (%w = %u, %x = %i) : (tensor<1000x128xf32>, tensor<2x8xi64>) -> (tensor<2x8x128xf32>) {
    %e = aten.embedding %w, %x : tensor<1000x128xf32>, tensor<2x8xi64> -> tensor<2x8x128xf32>
    %n = aten.neg %e : tensor<2x8x128xf32> -> tensor<2x8x128xf32>
    fusion.yield %n : tensor<2x8x128xf32>
  }
  func.return %0, %1, %2 : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x128xf32>
}
