// RUN: fusec-opt %s --fuse -p guard | filecheck %s
// RUN: fusec-opt %s --fuse -p guard --emit=llvm | filecheck %s --check-prefix=LLVM

// A group over dynamic dims is guarded like any other: a `?` dim is not a
// size-1 dim (a runtime size of 1 fails the guard and runs the fallback, since
// the kernel would not broadcast it), a static 1 is. Guarded IR with `?` dims
// lowers all the way: one kernel for every batch.
// CHECK-LABEL: func.func @scaled_tail
// CHECK-SAME: (%[[X:.*]]: tensor<?x16xf32>, %[[B:.*]]: tensor<1x16xf32>, %[[N:.*]]: i64)
// CHECK-NEXT: %[[OK:.*]] = fusion.guard (%[[X]] : tensor<?x16xf32> <ones = [], layout = any, device = "cpu">, %[[B]] : tensor<1x16xf32> <ones = [0], layout = any, device = "cpu">)
// CHECK-NEXT: %[[R:.*]] = scf.if %[[OK]] -> (tensor<?x16xf32>) {
// CHECK-NEXT: fusion.group
// CHECK: } else {
// CHECK-NEXT: aten.add %[[X]], %[[B]] : tensor<?x16xf32>, tensor<1x16xf32> -> tensor<?x16xf32>
// CHECK: func.return %[[R]] : tensor<?x16xf32>

// LLVM-LABEL: func.func @scaled_tail
// LLVM: fusion.launch @scaled_tail_group0(%{{.*}}) : (i64, tensor<?x16xf32>, tensor<1x16xf32>) -> tensor<?x16xf32>
// LLVM: llvm.func @scaled_tail_group0(
func.func @scaled_tail(%x: tensor<?x16xf32>, %b: tensor<1x16xf32>, %n: i64) -> tensor<?x16xf32> {
  %a = aten.add %x, %b : tensor<?x16xf32>, tensor<1x16xf32> -> tensor<?x16xf32>
  %s = aten.sigmoid %a : tensor<?x16xf32> -> tensor<?x16xf32>
  %m = aten.mul %s, %n : tensor<?x16xf32>, i64 -> tensor<?x16xf32>
  func.return %m : tensor<?x16xf32>
}
