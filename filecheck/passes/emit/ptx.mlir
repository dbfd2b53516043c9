// REQUIRES: cuda-toolchain
// RUN: fusec-opt %s --split-input-file --fuse --emit=ptx | filecheck %s
// RUN: fusec-opt %s --split-input-file --fuse --emit=ptx -t 'ptx{arch=sm_90}' | filecheck %s --check-prefix=SM90
// RUN: fusec-opt %s --split-input-file --fuse --emit=ptx | filecheck %s --check-prefix=LINKED

// libdevice is linked and inlined everywhere: no math call, no external function.
// LINKED-NOT: __nv_
// LINKED-NOT: call
// LINKED-NOT: .extern

// One `.entry` per group; a grid-stride loop over the flattened index, in
// 32-bit math (a size divides as a multiply and shift) when numel and every
// last offset are below 2^30, else in 64-bit; in 32-bit math with 4 elements
// per trip, loaded and stored as 128-bit vectors, when every innermost run is
// an aligned vector (unit innermost strides, 16-byte aligned addresses: the
// address test's ptrtoint is why loads are `ld.global`, not `ld.global.nc`);
// libdevice's expf inlined (its ex2.approx core), no call left.
// CHECK:       .target sm_80
// CHECK:       .address_size 64
// CHECK-LABEL: .visible .entry f_group0(
// CHECK:       setp.gt.s64 %[[WIDE:p[0-9]+]], %{{rd[0-9]+}}, 1073741823;
// CHECK-NEXT:  @%[[WIDE]] bra [[WIDE_LOOP:\$L__BB0_[0-9]+]];
// CHECK-NEXT:  setp.ne.b64 %{{p[0-9]+}}, %{{rd[0-9]+}}, 1;
// CHECK:       and.b64 %{{rd[0-9]+}}, %{{rd[0-9]+}}, 15;
// CHECK:       [[WIDE_LOOP]]:
// CHECK:       mov.u32 %[[NTID:r[0-9]+]], %ntid.x;
// CHECK:       mov.u32 %[[CTAID:r[0-9]+]], %ctaid.x;
// CHECK:       mul.wide.u32 %{{rd[0-9]+}}, %[[CTAID]], %[[NTID]];
// CHECK:       mov.u32 %[[NCTAID:r[0-9]+]], %nctaid.x;
// CHECK:       mul.wide.u32 %[[STEP:rd[0-9]+]], %[[NTID]], %[[NCTAID]];
// CHECK:       ld.global.b32
// CHECK:       ex2.approx
// CHECK:       st.global.b32
// CHECK:       add.s64 %[[I:rd[0-9]+]], %[[I]], %[[STEP]];
// CHECK-NEXT:  setp.lt.s64 %{{p[0-9]+}}, %[[I]],
// CHECK:       mul.lo.s64 %[[P:rd[0-9]+]], %{{rd[0-9]+}}, %{{rd[0-9]+}};
// CHECK-NEXT:  shr.u64 %{{rd[0-9]+}}, %[[P]], %{{r[0-9]+}};
// CHECK:       ld.global.v4.b32 {%[[A0:r[0-9]+]], %{{r[0-9]+}}, %{{r[0-9]+}}, %{{r[0-9]+}}}, [%{{rd[0-9]+}}];
// CHECK:       ld.global.v4.b32 {%[[B0:r[0-9]+]], %{{r[0-9]+}}, %{{r[0-9]+}}, %{{r[0-9]+}}}, [%{{rd[0-9]+}}];
// CHECK:       ex2.approx
// CHECK:       mul.rn.f32 %[[Y0:r[0-9]+]], %[[B0]], %{{r[0-9]+}};
// CHECK:       ex2.approx
// CHECK:       ex2.approx
// CHECK:       ex2.approx
// CHECK:       st.global.v4.b32 [%{{rd[0-9]+}}], {%[[Y0]], %{{r[0-9]+}}, %{{r[0-9]+}}, %{{r[0-9]+}}};
// CHECK:       add.s32 %[[V:r[0-9]+]], %[[V]], %{{r[0-9]+}};
// CHECK:       setp.lt.s32 %{{p[0-9]+}}, %[[V]],
// CHECK:       mul.wide.s32
// CHECK:       ld.global.b32
// CHECK:       ex2.approx
// CHECK:       st.global.b32
// CHECK:       add.s32 %[[J:r[0-9]+]], %[[J]], %{{r[0-9]+}};
// CHECK-NEXT:  setp.lt.s32 %{{p[0-9]+}}, %[[J]],
// CHECK:       ret;
// SM90:        .target sm_90
// SM90:        .visible .entry f_group0(
func.func @f(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = aten.exp %a : tensor<4x8xf32> -> tensor<4x8xf32>
  %1 = aten.mul %0, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  func.return %1 : tensor<4x8xf32>
}

// -----

// Half types are loaded as 16 bits (4 lanes: a 64-bit vector), computed in
// f32 and rounded once at the store.
// CHECK-LABEL: .visible .entry h_group0(
// CHECK:       ld.global.v4.b16 {%[[H:rs[0-9]+]], %{{rs[0-9]+}}, %{{rs[0-9]+}}, %{{rs[0-9]+}}}
// CHECK:       cvt.f32.f16 %{{r[0-9]+}}, %[[H]];
// CHECK:       ex2.approx
// CHECK:       cvt.rn.f16.f32 %{{rs[0-9]+}},
// CHECK:       st.global.v4.b16 [%{{rd[0-9]+}}], {%{{rs[0-9]+}}, %{{rs[0-9]+}}, %{{rs[0-9]+}}, %{{rs[0-9]+}}};
// CHECK:       ld.global.b16 %[[H1:rs[0-9]+]]
// CHECK:       cvt.f32.f16 %{{r[0-9]+}}, %[[H1]];
// CHECK:       st.global.b16 [%{{rd[0-9]+}}], %{{rs[0-9]+}};
// SM90-LABEL:  .visible .entry h_group0(
func.func @h(%a: tensor<16xf16>) -> tensor<16xf16> {
  %0 = aten.tanh %a : tensor<16xf16> -> tensor<16xf16>
  %1 = aten.neg %0 : tensor<16xf16> -> tensor<16xf16>
  func.return %1 : tensor<16xf16>
}

// -----

// One module using an intrinsic (floor) at f32 and f64: each call is declared
// with its mangled type (xDSL's translation alone would declare one `llvm.floor`).
// CHECK-DAG:   .visible .entry two_group0(
// CHECK-DAG:   .visible .entry two_group1(
// CHECK-DAG:   cvt.rmi.f32.f32
// CHECK-DAG:   cvt.rmi.f64.f64
func.func @two(%a: tensor<4xf32>, %b: tensor<4xf64>) -> (tensor<4xf32>, tensor<4xf64>) {
  %0 = aten.div %a, %a rounding_mode = "floor" : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = aten.exp %0 : tensor<4xf32> -> tensor<4xf32>
  %2 = aten.div %b, %b rounding_mode = "floor" : tensor<4xf64>, tensor<4xf64> -> tensor<4xf64>
  %3 = aten.exp %2 : tensor<4xf64> -> tensor<4xf64>
  func.return %1, %3 : tensor<4xf32>, tensor<4xf64>
}
