// RUN: fusec-opt %s -p 'lower-group-to-loops{target=nvptx}' | filecheck %s

// The GPU form: numel replaces [begin, end); a grid-stride loop over the
// flattened index, its start and step from the 32-bit special registers; each
// thread delinearizes its index. Three versions of the loop: in i32 when numel
// and every memref's last offset, sum((n_d - 1) * s_d), are below 2^30 (its
// division by a size a multiply by a per-thread magic number and a shift),
// else in 64-bit index math (the registers widened unsigned); in the i32 one,
// 4 elements per trip (f16: 8-byte vectors) when the innermost size is a
// multiple of 4 and each memref has innermost stride 1, other strides
// multiples of 4 and an 8-byte aligned address: every lane's load first (lane
// 0's marked aligned, so LLVM merges them into one vector load), then the
// lanes' bodies, then every lane's store.
// CHECK-LABEL: func.func @k(
// CHECK-SAME:    %[[NUMEL:[^:]*]]: index, %[[N0:[^:]*]]: index, %[[N1:[^:]*]]: index, %[[X:[^:]*]]: memref<?xf16>, %[[XS0:[^:]*]]: index, %[[XS1:[^:]*]]: index, %[[O:[^:]*]]: memref<?xf16>, %[[OS0:[^:]*]]: index, %[[OS1:[^:]*]]: index, %{{.*}}: f64)
// CHECK:         %[[LIMIT:.*]] = arith.constant 1073741824 : index
// CHECK:         %[[SMALL:.*]] = arith.cmpi slt, %[[NUMEL]], %[[LIMIT]] : index
// CHECK-NEXT:    %[[L0:.*]] = arith.subi %[[N0]], %{{.*}} : index
// CHECK-NEXT:    %[[L1:.*]] = arith.subi %[[N1]], %{{.*}} : index
// CHECK-NEXT:    %[[XA:.*]] = arith.muli %[[L0]], %[[XS0]] : index
// CHECK-NEXT:    %[[XB:.*]] = arith.muli %[[L1]], %[[XS1]] : index
// CHECK-NEXT:    %[[XLAST:.*]] = arith.addi %[[XA]], %[[XB]] : index
// CHECK-NEXT:    %[[XFITS:.*]] = arith.cmpi slt, %[[XLAST]], %[[LIMIT]] : index
// CHECK-NEXT:    %[[F1:.*]] = arith.andi %[[SMALL]], %[[XFITS]] : i1
// CHECK:         %[[OFITS:.*]] = arith.cmpi slt, %{{.*}}, %[[LIMIT]] : index
// CHECK-NEXT:    %[[FITS:.*]] = arith.andi %[[F1]], %[[OFITS]] : i1
// CHECK-NEXT:    scf.if %[[FITS]] {
// CHECK:           %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:      %[[N1R:.*]] = arith.remui %[[N1]], %[[C4]] : index
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:      %[[L1:.*]] = arith.cmpi eq, %[[N1R]], %[[ZERO]] : index
// CHECK-NEXT:      %[[XUNIT:.*]] = arith.cmpi eq, %[[XS1]], %{{.*}} : index
// CHECK-NEXT:      %[[L2:.*]] = arith.andi %[[L1]], %[[XUNIT]] : i1
// CHECK-NEXT:      %[[XS0R:.*]] = arith.remui %[[XS0]], %[[C4]] : index
// CHECK:           %[[XADDR:.*]] = "memref.extract_aligned_pointer_as_index"(%[[X]]) : (memref<?xf16>) -> index
// CHECK-NEXT:      %[[C8:.*]] = arith.constant 8 : index
// CHECK-NEXT:      arith.remui %[[XADDR]], %[[C8]] : index
// CHECK:           "memref.extract_aligned_pointer_as_index"(%[[O]])
// CHECK:           %[[LANES:.*]] = arith.andi %{{.*}}, %{{.*}} : i1
// CHECK-NEXT:      scf.if %[[LANES]] {
// CHECK-NEXT:        %[[V4:.*]] = arith.constant 4 : index
// CHECK-NEXT:        %[[VN1:.*]] = arith.divui %[[N1]], %[[V4]] : index
// CHECK-NEXT:        %[[VNUMEL:.*]] = arith.divui %[[NUMEL]], %[[V4]] : index
// CHECK:             %[[VNUMEL32:.*]] = arith.index_cast %[[VNUMEL]] : index to i32
// CHECK:             %[[VN132:.*]] = arith.index_cast %[[VN1]] : index to i32
// CHECK:             scf.for %[[V:.*]] = %{{.*}} to %[[VNUMEL32]] step %{{.*}} : i32 {
// CHECK:               %[[V0:.*]] = arith.trunci %{{.*}} : i64 to i32
// CHECK-NEXT:          %[[VR:.*]] = arith.muli %[[V0]], %[[VN132]] : i32
// CHECK-NEXT:          %[[VQ:.*]] = arith.subi %[[V]], %[[VR]] : i32
// CHECK-NEXT:          %[[L4:.*]] = arith.constant 4 : i32
// CHECK-NEXT:          %[[V1:.*]] = arith.muli %[[VQ]], %[[L4]] : i32
// CHECK-NEXT:          arith.muli %[[V0]], %{{.*}} : i32
// CHECK-NEXT:          arith.muli %[[V1]], %{{.*}} : i32
// CHECK-NEXT:          arith.addi
// CHECK-NEXT:          %[[XOFF:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK:               %[[OOFF:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK-NEXT:          %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:          %[[XOFF1:.*]] = arith.addi %[[XOFF]], %[[ONE]] : index
// CHECK-NEXT:          %[[OOFF1:.*]] = arith.addi %[[OOFF]], %[[ONE]] : index
// CHECK:               %[[THREE:.*]] = arith.constant 3 : index
// CHECK-NEXT:          %[[XOFF3:.*]] = arith.addi %[[XOFF]], %[[THREE]] : index
// CHECK-NEXT:          %[[OOFF3:.*]] = arith.addi %[[OOFF]], %[[THREE]] : index
// CHECK-NEXT:          %[[X0:.*]] = memref.load %[[X]][%[[XOFF]]] {alignment = 8 : i64} : memref<?xf16>
// CHECK-NEXT:          %[[X1:.*]] = memref.load %[[X]][%[[XOFF1]]] : memref<?xf16>
// CHECK-NEXT:          memref.load %[[X]]
// CHECK-NEXT:          %[[X3:.*]] = memref.load %[[X]][%[[XOFF3]]] : memref<?xf16>
// CHECK-NEXT:          arith.extf %[[X0]] : f16 to f32
// CHECK:               arith.extf %[[X1]] : f16 to f32
// CHECK:               arith.extf %[[X3]] : f16 to f32
// CHECK:               memref.store %{{.*}}, %[[O]][%[[OOFF]]] {alignment = 8 : i64} : memref<?xf16>
// CHECK-NEXT:          memref.store %{{.*}}, %[[O]][%[[OOFF1]]] : memref<?xf16>
// CHECK-NEXT:          memref.store
// CHECK-NEXT:          memref.store %{{.*}}, %[[O]][%[[OOFF3]]] : memref<?xf16>
// CHECK-NEXT:        }
// CHECK:           } else {
// CHECK-NEXT:      %[[TID:.*]] = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
// CHECK-NEXT:      %[[NTID:.*]] = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.ntid.x"() : () -> i32
// CHECK-NEXT:      %[[CTAID:.*]] = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.ctaid.x"() : () -> i32
// CHECK-NEXT:      %[[NCTAID:.*]] = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.nctaid.x"() : () -> i32
// CHECK-NEXT:      %[[BASE:.*]] = arith.muli %[[CTAID]], %[[NTID]] : i32
// CHECK-NEXT:      %[[START:.*]] = arith.addi %[[BASE]], %[[TID]] : i32
// CHECK-NEXT:      %[[STEP:.*]] = arith.muli %[[NTID]], %[[NCTAID]] : i32
// CHECK-NEXT:      %[[NUMEL32:.*]] = arith.index_cast %[[NUMEL]] : index to i32
// CHECK:           %[[N132:.*]] = arith.index_cast %[[N1]] : index to i32
// CHECK-NEXT:      %[[N164:.*]] = arith.extui %[[N132]] : i32 to i64
// CHECK:           %[[SHIFT:.*]] = arith.addi %{{.*}}, %{{.*}} : i64
// CHECK:           %[[MAGIC:.*]] = arith.divui %{{.*}}, %[[N164]] : i64
// CHECK-NEXT:      %[[XS032:.*]] = arith.index_cast %[[XS0]] : index to i32
// CHECK-NEXT:      %[[XS132:.*]] = arith.index_cast %[[XS1]] : index to i32
// CHECK:           scf.for %[[I:.*]] = %[[START]] to %[[NUMEL32]] step %[[STEP]] : i32 {
// CHECK-NEXT:        %[[IW:.*]] = arith.extui %[[I]] : i32 to i64
// CHECK-NEXT:        %[[P:.*]] = arith.muli %[[IW]], %[[MAGIC]] : i64
// CHECK-NEXT:        %[[QW:.*]] = arith.shrui %[[P]], %[[SHIFT]] : i64
// CHECK-NEXT:        %[[I0:.*]] = arith.trunci %[[QW]] : i64 to i32
// CHECK-NEXT:        %[[R:.*]] = arith.muli %[[I0]], %[[N132]] : i32
// CHECK-NEXT:        %[[I1:.*]] = arith.subi %[[I]], %[[R]] : i32
// CHECK-NEXT:        %[[A:.*]] = arith.muli %[[I0]], %[[XS032]] : i32
// CHECK-NEXT:        %[[B:.*]] = arith.muli %[[I1]], %[[XS132]] : i32
// CHECK-NEXT:        %[[OFF32:.*]] = arith.addi %[[A]], %[[B]] : i32
// CHECK-NEXT:        %[[OFF:.*]] = arith.index_cast %[[OFF32]] : i32 to index
// CHECK:             %[[L:.*]] = memref.load %[[X]][%[[OFF]]] : memref<?xf16>
// CHECK-NEXT:        arith.extf %[[L]] : f16 to f32
// CHECK:             math.exp %{{.*}} : f32
// CHECK:             arith.truncf %{{.*}} : f32 to f16
// CHECK:             memref.store %{{.*}}, %[[O]]
// CHECK:         } else {
// CHECK-NEXT:      %[[WTID32:.*]] = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
// CHECK-NEXT:      %[[WTID64:.*]] = arith.extui %[[WTID32]] : i32 to i64
// CHECK-NEXT:      %[[WTID:.*]] = arith.index_cast %[[WTID64]] : i64 to index
// CHECK:           "llvm.nvvm.read.ptx.sreg.ntid.x"
// CHECK:           "llvm.nvvm.read.ptx.sreg.ctaid.x"
// CHECK:           "llvm.nvvm.read.ptx.sreg.nctaid.x"
// CHECK:           %[[WBASE:.*]] = arith.muli %[[WCTAID:.*]], %[[WNTID:.*]] : index
// CHECK-NEXT:      %[[WSTART:.*]] = arith.addi %[[WBASE]], %[[WTID]] : index
// CHECK-NEXT:      %[[WSTEP:.*]] = arith.muli %[[WNTID]], %[[WNCTAID:.*]] : index
// CHECK-NEXT:      scf.for %[[J:.*]] = %[[WSTART]] to %[[NUMEL]] step %[[WSTEP]] {
// CHECK-NEXT:        %[[J1:.*]] = arith.remui %[[J]], %[[N1]] : index
// CHECK-NEXT:        %[[J0:.*]] = arith.divui %[[J]], %[[N1]] : index
// CHECK-NEXT:        %[[WA:.*]] = arith.muli %[[J0]], %[[XS0]] : index
// CHECK-NEXT:        %[[WB:.*]] = arith.muli %[[J1]], %[[XS1]] : index
// CHECK-NEXT:        %[[WOFF:.*]] = arith.addi %[[WA]], %[[WB]] : index
// CHECK:             memref.load %[[X]][%[[WOFF]]] : memref<?xf16>
// CHECK:             memref.store %{{.*}}, %[[O]]
// CHECK:         func.return
func.func @k(%x: tensor<4x3xf16>, %s: f64) -> tensor<4x3xf16> attributes {fusion.kernel} {
  %0 = aten.exp %x : tensor<4x3xf16> -> tensor<4x3xf16>
  %1 = aten.mul %0, %s : tensor<4x3xf16>, f64 -> tensor<4x3xf16>
  func.return %1 : tensor<4x3xf16>
}
