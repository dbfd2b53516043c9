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

// An access's `alignment` attribute (lane 0 of a GPU kernel's vector of
// lanes) becomes the llvm access's; a memref's address is a `ptrtoint`.
// CHECK-LABEL: llvm.func @aligned(
// CHECK-SAME:    %[[I:.*]]: i64, %[[A:.*]]: !llvm.ptr {llvm.noalias}, %[[B:.*]]: !llvm.ptr {llvm.noalias})
// CHECK:         %[[ADDR:.*]] = llvm.ptrtoint %[[A]] : !llvm.ptr to i64
// CHECK:         %[[P:.*]] = llvm.getelementptr inbounds %[[A]][%[[I]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:         %[[L:.*]] = llvm.load %[[P]] {alignment = 16 : i64} : !llvm.ptr -> f32
// CHECK:         %[[Q:.*]] = llvm.getelementptr inbounds %[[B]][%[[I]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:         llvm.store %[[L]], %[[Q]] {alignment = 16 : i64} : f32, !llvm.ptr
// CHECK:         %[[Q1:.*]] = llvm.getelementptr inbounds %[[B]][%[[ADDR]]]
// CHECK:         llvm.store %[[L]], %[[Q1]] : f32, !llvm.ptr
func.func @aligned(%i: index, %a: memref<?xf32>, %b: memref<?xf32>) {
  %addr = "memref.extract_aligned_pointer_as_index"(%a) : (memref<?xf32>) -> index
  %v = memref.load %a[%i] {alignment = 16 : i64} : memref<?xf32>
  memref.store %v, %b[%i] {alignment = 16 : i64} : memref<?xf32>
  memref.store %v, %b[%addr] : memref<?xf32>
  func.return
}
