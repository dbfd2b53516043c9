// RUN: fusec-opt %s -p convert-arith-to-llvm,convert-memref-to-llvm,convert-vector-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts --split-input-file | filecheck %s

// A block transpose's vector loads and stores address the flat memref as
// scalar ones do, aligned to one element (a block starts anywhere); the store
// goes through a pointer typed as the vector. Shuffles keep their mask.
// CHECK-LABEL: llvm.func @swap(
// CHECK-SAME:    %[[I:.*]]: i64, %[[J:.*]]: i64, %[[A:.*]]: !llvm.ptr {llvm.noalias}, %[[B:.*]]: !llvm.ptr {llvm.noalias})
// CHECK:         %[[P:.*]] = llvm.getelementptr inbounds %[[A]][%[[I]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %[[X:.*]] = llvm.load %[[P]] {alignment = 4 : i64} : !llvm.ptr -> vector<4xf32>
// CHECK:         %[[Q:.*]] = llvm.getelementptr inbounds %[[A]][%[[J]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %[[Y:.*]] = llvm.load %[[Q]] {alignment = 4 : i64} : !llvm.ptr -> vector<4xf32>
// CHECK-NEXT:    %[[S:.*]] = llvm.shufflevector %[[X]], %[[Y]] [0, 4, 2, 6] : vector<4xf32>
// CHECK-NEXT:    %[[R:.*]] = llvm.getelementptr inbounds %[[B]][%[[I]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %[[RV:.*]] = llvm.getelementptr %[[R]][0] : (!llvm.ptr) -> !llvm.ptr, vector<4xf32>
// CHECK-NEXT:    llvm.store %[[S]], %[[RV]] {alignment = 4 : i64} : vector<4xf32>, !llvm.ptr
func.func @swap(%i: index, %j: index, %a: memref<?xf32>, %b: memref<?xf32>) {
  %x = vector.load %a[%i] : memref<?xf32>, vector<4xf32>
  %y = vector.load %a[%j] : memref<?xf32>, vector<4xf32>
  %s = vector.shuffle %x, %y [0, 4, 2, 6] : vector<4xf32>, vector<4xf32>
  vector.store %s, %b[%i] : memref<?xf32>, vector<4xf32>
  func.return
}

// -----

// bf16 vectors are vectors of i16, as bf16 scalars are; f64 aligns to 8.
// CHECK-LABEL: llvm.func @halves(
// CHECK:         llvm.getelementptr inbounds %{{.*}} : (!llvm.ptr, i64) -> !llvm.ptr, i16
// CHECK-NEXT:    %[[H:.*]] = llvm.load %{{.*}} {alignment = 2 : i64} : !llvm.ptr -> vector<8xi16>
// CHECK-NEXT:    %[[S:.*]] = llvm.shufflevector %[[H]], %[[H]] [1, 0, 3, 2, 5, 4, 7, 6] : vector<8xi16>
// CHECK:         llvm.store %[[S]], %{{.*}} {alignment = 2 : i64} : vector<8xi16>, !llvm.ptr
// CHECK:         llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr -> vector<4xf64>
func.func @halves(%i: index, %a: memref<?xbf16>, %d: memref<?xf64>) {
  %x = vector.load %a[%i] : memref<?xbf16>, vector<8xbf16>
  %s = vector.shuffle %x, %x [1, 0, 3, 2, 5, 4, 7, 6] : vector<8xbf16>, vector<8xbf16>
  vector.store %s, %a[%i] : memref<?xbf16>, vector<8xbf16>
  %y = vector.load %d[%i] : memref<?xf64>, vector<4xf64>
  vector.store %y, %d[%i] : memref<?xf64>, vector<4xf64>
  func.return
}
