// RUN: fusec-opt %s -p 'lower-group-to-loops{target=nvptx}' | filecheck %s

// The GPU form: numel replaces [begin, end); one grid-stride loop over the
// flattened index, its start and step from the 32-bit special registers widened
// (unsigned) to 64-bit index math; each thread delinearizes its index.
// CHECK-LABEL: func.func @k(
// CHECK-SAME:    %[[NUMEL:[^:]*]]: index, %{{.*}}: index, %[[N1:[^:]*]]: index, %[[X:[^:]*]]: memref<?xf16>, %[[XS0:[^:]*]]: index, %[[XS1:[^:]*]]: index, %[[O:[^:]*]]: memref<?xf16>, %{{.*}}: index, %{{.*}}: index, %{{.*}}: f64)
// CHECK:         %[[TID32:.*]] = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
// CHECK-NEXT:    %[[TID64:.*]] = arith.extui %[[TID32]] : i32 to i64
// CHECK-NEXT:    %[[TID:.*]] = arith.index_cast %[[TID64]] : i64 to index
// CHECK:         "llvm.nvvm.read.ptx.sreg.ntid.x"
// CHECK:         "llvm.nvvm.read.ptx.sreg.ctaid.x"
// CHECK:         "llvm.nvvm.read.ptx.sreg.nctaid.x"
// CHECK:         %[[BASE:.*]] = arith.muli %[[CTAID:.*]], %[[NTID:.*]] : index
// CHECK-NEXT:    %[[START:.*]] = arith.addi %[[BASE]], %[[TID]] : index
// CHECK-NEXT:    %[[STEP:.*]] = arith.muli %[[NTID]], %[[NCTAID:.*]] : index
// CHECK-NEXT:    scf.for %[[I:.*]] = %[[START]] to %[[NUMEL]] step %[[STEP]] {
// CHECK-NEXT:      %[[I1:.*]] = arith.remui %[[I]], %[[N1]] : index
// CHECK-NEXT:      %[[I0:.*]] = arith.divui %[[I]], %[[N1]] : index
// CHECK-NEXT:      %[[A:.*]] = arith.muli %[[I0]], %[[XS0]] : index
// CHECK-NEXT:      %[[B:.*]] = arith.muli %[[I1]], %[[XS1]] : index
// CHECK-NEXT:      %[[OFF:.*]] = arith.addi %[[A]], %[[B]] : index
// CHECK:           %[[L:.*]] = memref.load %[[X]][%[[OFF]]] : memref<?xf16>
// CHECK-NEXT:      arith.extf %[[L]] : f16 to f32
// CHECK:           math.exp %{{.*}} : f32
// CHECK:           arith.truncf %{{.*}} : f32 to f16
// CHECK:           memref.store %{{.*}}, %[[O]]
// CHECK-NOT:     scf.for
func.func @k(%x: tensor<4x3xf16>, %s: f64) -> tensor<4x3xf16> attributes {fusion.kernel} {
  %0 = aten.exp %x : tensor<4x3xf16> -> tensor<4x3xf16>
  %1 = aten.mul %0, %s : tensor<4x3xf16>, f64 -> tensor<4x3xf16>
  func.return %1 : tensor<4x3xf16>
}
