// RUN: fusec-opt %s -p convert-scf-to-cf,convert-arith-to-llvm,convert-memref-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts | filecheck %s

// CHECK-LABEL: llvm.func @loop(
// CHECK-SAME:    %[[B:.*]]: i64, %[[E:.*]]: i64, %[[M:.*]]: !llvm.ptr {llvm.noalias})
// CHECK:         llvm.br ^[[H:.*]](%[[B]] : i64)
// CHECK:       ^[[H]](%[[I:.*]]: i64):
// CHECK:         %[[C:.*]] = llvm.icmp "slt" %[[I]], %[[E]]
// CHECK:         llvm.cond_br %[[C]]
// CHECK-NOT:     unrealized_conversion_cast
// CHECK:         llvm.return
func.func @loop(%b: index, %e: index, %m: memref<?xf32>) {
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  scf.for %i = %b to %e step %c1 {
    memref.store %z, %m[%i] : memref<?xf32>
  }
  func.return
}
