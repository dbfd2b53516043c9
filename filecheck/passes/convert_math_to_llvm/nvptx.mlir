// RUN: fusec-opt %s --split-input-file -p 'convert-math-to-llvm{target=nvptx}' | filecheck %s

// CHECK-LABEL: func.func @exp_tanh
// CHECK-SAME:    (%[[X:.*]]: f32, %[[D:.*]]: f64)
// CHECK:         %[[E:.*]] = llvm.call @__nv_expf(%[[X]]) : (f32) -> f32
// CHECK:         %[[T:.*]] = llvm.call @__nv_tanhf(%[[E]]) : (f32) -> f32
// CHECK:         %[[ED:.*]] = llvm.call @__nv_exp(%[[D]]) : (f64) -> f64
// CHECK:         %[[P:.*]] = llvm.call @__nv_powf(%[[T]], %[[T]]) : (f32, f32) -> f32
// CHECK:         %[[S:.*]] = llvm.intr.sqrt(%[[P]]) : (f32) -> f32
// CHECK:         func.return %[[S]], %[[ED]] : f32, f64
// One declaration per function, however many uses:
// CHECK-DAG:   llvm.func @__nv_expf(f32) -> f32
// CHECK-DAG:   llvm.func @__nv_tanhf(f32) -> f32
// CHECK-DAG:   llvm.func @__nv_exp(f64) -> f64
// CHECK-DAG:   llvm.func @__nv_powf(f32, f32) -> f32
// CHECK-NOT:   llvm.func @__nv_expf
func.func @exp_tanh(%x: f32, %d: f64) -> (f32, f64) {
  %e = math.exp %x : f32
  %t = math.tanh %e : f32
  %ed = math.exp %d : f64
  %p = math.powf %t, %t : f32
  %s = math.sqrt %p : f32
  func.return %s, %ed : f32, f64
}

// -----

// An existing declaration is reused.
// CHECK-LABEL: llvm.func @__nv_erff(f32) -> f32
// CHECK-LABEL: func.func @erf
// CHECK:         llvm.call @__nv_erff(%{{.*}}) : (f32) -> f32
// CHECK-NOT:   llvm.func @__nv_erff
llvm.func @__nv_erff(f32) -> f32
func.func @erf(%x: f32) -> f32 {
  %y = math.erf %x : f32
  func.return %y : f32
}

// -----

// A function in a nested module gets its declaration in that module, the
// symbol table its call resolves in (not the outer one: the verifier would
// reject the call).
// CHECK:      builtin.module {
// CHECK-NEXT:   builtin.module {
// CHECK-NEXT:     func.func @nested
// CHECK-NEXT:       llvm.call @__nv_expf
// CHECK-NEXT:       func.return
// CHECK-NEXT:     }
// CHECK-NEXT:     llvm.func @__nv_expf(f32) -> f32
// CHECK-NEXT:   }
// CHECK-NEXT: }
builtin.module {
  builtin.module {
    func.func @nested(%x: f32) -> f32 {
      %e = math.exp %x : f32
      func.return %e : f32
    }
  }
}
