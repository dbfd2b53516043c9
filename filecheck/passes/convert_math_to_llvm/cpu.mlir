// RUN: fusec-opt %s --split-input-file -p 'convert-math-to-llvm{target=cpu}' | filecheck %s

// exp: Cody-Waite reduction, Horner polynomial as contractable fmul/fadd, 2^n
// from exponent bits, overflow/underflow selects; no call of any kind.
// CHECK-LABEL: func.func @exp_f32
// CHECK-SAME:    (%[[X:.*]]: f32)
// CHECK-NOT:     math.exp
// CHECK-NOT:     llvm.call
// CHECK:         %[[HI:.*]] = llvm.mlir.constant(88.7228394 : f32) : f32
// CHECK:         llvm.fcmp "ogt" %[[X]], %[[HI]] : f32
// CHECK:         llvm.bitcast {{.*}} : f32 to i32
// CHECK:         llvm.fmul {{.*}} {fastmathFlags = #llvm.fastmath<contract>} : f32
// CHECK:         llvm.fadd {{.*}} {fastmathFlags = #llvm.fastmath<contract>} : f32
// CHECK:         llvm.fmul {{.*}} {fastmathFlags = #llvm.fastmath<contract>} : f32
// CHECK:         llvm.fadd {{.*}} {fastmathFlags = #llvm.fastmath<contract>} : f32
// CHECK:         llvm.bitcast {{.*}} : i32 to f32
// CHECK:         llvm.select {{.*}} : i1, f32
// CHECK-NOT:     llvm.call
// CHECK:         func.return %{{.*}} : f32
func.func @exp_f32(%x: f32) -> f32 {
  %y = math.exp %x : f32
  func.return %y : f32
}

// -----

// f64 uses 64-bit exponent arithmetic.
// CHECK-LABEL: func.func @log_f64
// CHECK-NOT:     llvm.call
// CHECK:         llvm.bitcast {{.*}} : f64 to i64
// CHECK:         llvm.ashr {{.*}} : i64
// CHECK:         llvm.sitofp {{.*}} : i64 to f64
// CHECK:         llvm.fcmp "ult"
// CHECK-NOT:     llvm.call
// CHECK:         func.return
func.func @log_f64(%x: f64) -> f64 {
  %y = math.log %x : f64
  func.return %y : f64
}

// -----

// CHECK-LABEL: func.func @intrinsics
// CHECK-SAME:    (%[[X:.*]]: f32, %[[Y:.*]]: f32)
// CHECK:         %[[S:.*]] = llvm.intr.sqrt(%[[X]]) : (f32) -> f32
// CHECK:         %[[A:.*]] = llvm.intr.fabs(%[[S]]) : (f32) -> f32
// CHECK:         %[[F:.*]] = llvm.intr.floor(%[[A]]) : (f32) -> f32
// CHECK:         %[[C:.*]] = llvm.intr.ceil(%[[F]]) : (f32) -> f32
// CHECK:         %[[CS:.*]] = llvm.intr.copysign(%[[C]], %[[Y]]) : (f32, f32) -> f32
// CHECK:         %[[ONE:.*]] = llvm.mlir.constant(1.000000e+00 : f32) : f32
// CHECK:         %[[R:.*]] = llvm.intr.sqrt(%[[CS]]) : (f32) -> f32
// CHECK:         %[[RS:.*]] = llvm.fdiv %[[ONE]], %[[R]] : f32
// CHECK:         func.return %[[RS]] : f32
func.func @intrinsics(%x: f32, %y: f32) -> f32 {
  %s = math.sqrt %x : f32
  %a = math.absf %s : f32
  %f = math.floor %a : f32
  %c = math.ceil %f : f32
  %cs = math.copysign %c, %y : f32
  %r = math.rsqrt %cs : f32
  func.return %r : f32
}

// -----

// Vectors are left to the loop vectorizer: the scalar expansion does not apply.
// CHECK-LABEL: func.func @vector_left_alone
// CHECK:         math.exp %{{.*}} : vector<4xf32>
func.func @vector_left_alone(%x: vector<4xf32>) -> vector<4xf32> {
  %y = math.exp %x : vector<4xf32>
  func.return %y : vector<4xf32>
}

// -----

// sin/cos marked fast (sincos-fast-path) reduce by Cody-Waite alone; in f32
// all in f32: q = rint(x/pi), pi in four parts, q's parity flips the sign bit,
// one odd polynomial. No 2/pi table, no chunk products, no f64; unmarked ones
// keep the exact reduction for every magnitude.
// CHECK-LABEL: func.func @sin_fast_f32
// CHECK-SAME:    (%[[X:.*]]: f32)
// CHECK-NOT:     llvm.call
// CHECK-NOT:     f64
// CHECK:         %[[INVPI:.*]] = llvm.mlir.constant(0.318309873 : f32) : f32
// CHECK:         llvm.fmul %[[X]], %[[INVPI]]
// CHECK:         %[[SIGN:.*]] = llvm.shl %{{.*}}, %{{.*}} : i32
// CHECK:         llvm.mlir.constant(3.140625 : f32) : f32
// CHECK:         llvm.mlir.constant(0.000967025757 : f32) : f32
// CHECK:         llvm.mlir.constant(6.27711415e-07 : f32) : f32
// CHECK:         llvm.mlir.constant(1.21542013e-10 : f32) : f32
// CHECK:         %[[D:.*]] = llvm.fsub
// CHECK:         %[[DB:.*]] = llvm.bitcast %[[D]] : f32 to i32
// CHECK:         llvm.xor %[[DB]], %[[SIGN]] : i32
// CHECK:         llvm.mlir.constant(-0.166666597 : f32) : f32
// CHECK:         %[[ZERO:.*]] = llvm.fcmp "oeq" %[[X]], %{{.*}} : f32
// CHECK:         %[[R:.*]] = llvm.select %[[ZERO]], %[[X]], %{{.*}} : i1, f32
// CHECK-NOT:     llvm.intr.floor
// CHECK-NOT:     f64
// CHECK:         func.return %[[R]] : f32
// CHECK-NOT:     __fusec_two_over_pi
func.func @sin_fast_f32(%x: f32) -> f32 {
  %y = math.sin %x {fusec.sincos_range = "fast"} : f32
  func.return %y : f32
}

// -----

// CHECK-LABEL: func.func @cos_full_f64
// CHECK:         llvm.mlir.addressof @__fusec_two_over_pi : !llvm.ptr
// CHECK:         func.return %{{.*}} : f64
// CHECK:         llvm.mlir.global private constant @__fusec_two_over_pi
func.func @cos_full_f64(%x: f64) -> f64 {
  %y = math.cos %x {fusec.sincos_range = "full"} : f64
  func.return %y : f64
}

// -----

// f32 erf in f32 (no fpext, no division): r = |x| rounded to 1/128 and
// d = |x| - r, erf(r) and its slope read as one i64 from the f32 table, Taylor
// terms to d^3; eager's 0.99999994 below |x| = 3.927734375 and +-1.0 from there.
// CHECK-LABEL: func.func @erf_f32
// CHECK-SAME:    (%[[X:.*]]: f32)
// CHECK:         %[[A:.*]] = llvm.intr.fabs(%[[X]]) : (f32) -> f32
// CHECK:         %[[SHIFT:.*]] = llvm.mlir.constant(6.553600e+04 : f32) : f32
// CHECK:         llvm.mlir.addressof @__fusec_erf_table_f32 : !llvm.ptr
// CHECK:         %[[W:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK:         %[[HIGH:.*]] = llvm.lshr %[[W]], %{{.*}} : i64
// CHECK:         %[[LO:.*]] = llvm.trunc %[[W]] : i64 to i32
// CHECK:         %[[ERF_R:.*]] = llvm.bitcast %[[LO]] : i32 to f32
// CHECK:         %[[HI:.*]] = llvm.trunc %[[HIGH]] : i64 to i32
// CHECK:         %[[SLOPE:.*]] = llvm.bitcast %[[HI]] : i32 to f32
// CHECK:         %[[R:.*]] = llvm.fsub %{{.*}}, %[[SHIFT]] : f32
// CHECK:         %[[D:.*]] = llvm.fsub %[[A]], %[[R]] : f32
// CHECK-NOT:     llvm.fpext
// CHECK-NOT:     llvm.fdiv
// CHECK:         llvm.fmul %[[SLOPE]], %{{.*}} : f32
// CHECK:         %[[Y:.*]] = llvm.fadd %[[ERF_R]], %{{.*}} : f32
// CHECK:         %[[BELOW:.*]] = llvm.mlir.constant(0.99999994 : f32) : f32
// CHECK:         llvm.select %{{.*}}, %[[BELOW]], %[[Y]] : i1, f32
// CHECK:         %[[FROM:.*]] = llvm.mlir.constant(3.92773438 : f32) : f32
// CHECK:         llvm.fcmp "oge" %[[A]], %[[FROM]] : f32
// CHECK:         %[[S:.*]] = llvm.intr.copysign(%{{.*}}, %[[X]]) : (f32, f32) -> f32
// CHECK-NOT:     llvm.call
// CHECK:         func.return %[[S]] : f32
// CHECK:         llvm.mlir.global private constant @__fusec_erf_table_f32(dense<"0x00000000BB6E903F
// CHECK-SAME:    !llvm.array<513 x i64>
// CHECK-NOT:     llvm.mlir.global
func.func @erf_f32(%x: f32) -> f32 {
  %y = math.erf %x : f32
  func.return %y : f32
}

// -----

// f64 erf reads erf(r) and its slope at r = |x| rounded to 1/128 from one
// module table (declared once for both erfs; its first pair is erf(0) = 0 and
// 2/sqrt(pi)), then Taylor terms in d = |x| - r: no exp, no division, no call.
// CHECK-LABEL: func.func @erf_f64
// CHECK-SAME:    (%[[X:.*]]: f64)
// CHECK:         %[[A:.*]] = llvm.intr.fabs(%[[X]]) : (f64) -> f64
// CHECK:         %[[MAX:.*]] = llvm.mlir.constant(5.9921875 : f64) : f64
// CHECK:         llvm.fcmp "ole" %[[A]], %[[MAX]] : f64
// CHECK:         llvm.mlir.addressof @__fusec_erf_table : !llvm.ptr
// CHECK:         llvm.load {{.*}} : !llvm.ptr -> f64
// CHECK:         llvm.load {{.*}} : !llvm.ptr -> f64
// CHECK-NOT:     llvm.fdiv
// CHECK-NOT:     llvm.call
// CHECK:         llvm.intr.copysign
// CHECK:         llvm.mlir.addressof @__fusec_erf_table : !llvm.ptr
// CHECK:         func.return %{{.*}} : f64
// CHECK:         llvm.mlir.global private constant @__fusec_erf_table(dense<"0x00000000000000006D9B4250D70DF23F
// CHECK-SAME:    !llvm.array<1538 x f64>
// CHECK-NOT:     llvm.mlir.global
func.func @erf_f64(%x: f64) -> f64 {
  %y = math.erf %x : f64
  %z = math.erf %y : f64
  func.return %z : f64
}

// -----

// tanh: 2|x| clamped once to 2 * 9.1 (where e/(e+2) is exactly 1), then expm1
// without its own range selects: one compare and select before the division.
// CHECK-LABEL: func.func @tanh_f32
// CHECK-SAME:    (%[[X:.*]]: f32)
// CHECK:         %[[A:.*]] = llvm.intr.fabs(%[[X]]) : (f32) -> f32
// CHECK:         %[[A2:.*]] = llvm.fadd %[[A]], %[[A]] : f32
// CHECK:         %[[BOUND:.*]] = llvm.mlir.constant(1.820000e+01 : f32) : f32
// CHECK:         %[[OVER:.*]] = llvm.fcmp "ogt" %[[A2]], %[[BOUND]] : f32
// CHECK:         %[[C:.*]] = llvm.select %[[OVER]], %[[BOUND]], %[[A2]] : i1, f32
// CHECK-NOT:     llvm.select
// CHECK:         %[[T:.*]] = llvm.fdiv %{{.*}}, %{{.*}} : f32
// CHECK-NOT:     llvm.select
// CHECK:         %[[Y:.*]] = llvm.intr.copysign(%[[T]], %[[X]]) : (f32, f32) -> f32
// CHECK:         func.return %[[Y]] : f32
func.func @tanh_f32(%x: f32) -> f32 {
  %y = math.tanh %x : f32
  func.return %y : f32
}

// -----

// exp marked {fusec.exp_range = "normal"} (sigmoid's): x clamped to
// [-86, 88.37], 2^n one exponent-bits constant (no ashr: no two-step scaling),
// one select (+inf past the clamp).
// CHECK-LABEL: func.func @exp_normal_f32
// CHECK-SAME:    (%[[X:.*]]: f32)
// CHECK:         %[[HI:.*]] = llvm.mlir.constant(8.837000e+01 : f32) : f32
// CHECK:         llvm.fcmp "ogt" %[[X]], %[[HI]] : f32
// CHECK:         llvm.mlir.constant(-8.600000e+01 : f32) : f32
// CHECK-NOT:     llvm.ashr
// CHECK:         %[[S:.*]] = llvm.bitcast %{{.*}} : i32 to f32
// CHECK-NEXT:    %[[E:.*]] = llvm.fmul %{{.*}}, %[[S]] : f32
// CHECK:         %[[OVER:.*]] = llvm.fcmp "ogt" %[[X]], %[[HI]] : f32
// CHECK:         %[[Y:.*]] = llvm.select %[[OVER]], %{{.*}}, %[[E]] : i1, f32
// CHECK-NEXT:    func.return %[[Y]] : f32
func.func @exp_normal_f32(%x: f32) -> f32 {
  %y = math.exp %x {fusec.exp_range = "normal"} : f32
  func.return %y : f32
}
