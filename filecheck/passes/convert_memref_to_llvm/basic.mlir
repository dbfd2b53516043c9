// RUN: fusec-opt %s -p convert-arith-to-llvm,convert-memref-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts | filecheck %s

// CHECK-LABEL: llvm.func @copy(
// CHECK-SAME:    %[[I:.*]]: i64, %[[A:.*]]: !llvm.ptr {llvm.noalias}, %[[B:.*]]: !llvm.ptr {llvm.noalias})
// CHECK:         %[[P:.*]] = llvm.getelementptr inbounds %[[A]][%[[I]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:         %[[L:.*]] = llvm.load %[[P]] : !llvm.ptr -> i8
// CHECK:         llvm.icmp "ne" %[[L]]
// CHECK:         %[[Q:.*]] = llvm.getelementptr inbounds %[[B]][%[[I]]]
// CHECK:         llvm.zext %{{.*}} : i1 to i8
// CHECK:         llvm.store
// CHECK:         llvm.return
func.func @copy(%i: index, %a: memref<?xi1>, %b: memref<?xi1>) {
  %v = memref.load %a[%i] : memref<?xi1>
  memref.store %v, %b[%i] : memref<?xi1>
  func.return
}

// A tile buffer (`memref.alloca` of a constant count) is a stack slot of its
// element type (bool: a byte), its alignment kept.
// CHECK-LABEL: llvm.func @buffer(
// CHECK-SAME:    %[[I:.*]]: i64, %[[A:.*]]: !llvm.ptr {llvm.noalias})
// CHECK:         %[[N:.*]] = llvm.mlir.constant(2048) : i64
// CHECK:         %[[BUF:.*]] = llvm.alloca %[[N]] x i8 {alignment = 64 : i64} : (i64) -> !llvm.ptr
// CHECK:         %[[P:.*]] = llvm.getelementptr inbounds %[[BUF]][%[[I]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:         llvm.store %{{.*}}, %[[P]]
func.func @buffer(%i: index, %a: memref<?xi1>) {
  %n = arith.constant 2048 : index
  %buf = memref.alloca(%n) {alignment = 64 : i64} : memref<?xi1>
  %v = memref.load %a[%i] : memref<?xi1>
  memref.store %v, %buf[%i] : memref<?xi1>
  func.return
}
