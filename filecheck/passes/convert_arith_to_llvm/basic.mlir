// RUN: fusec-opt %s -p convert-arith-to-llvm --split-input-file | filecheck %s

// CHECK-LABEL: func.func @float
// CHECK:         %[[S:.*]] = llvm.fadd %[[A:.*]], %[[B:.*]] : f32
// CHECK:         %[[GT:.*]] = llvm.fcmp "ogt" %[[S]], %[[B]] : f32
// CHECK:         %[[P:.*]] = llvm.select %[[GT]], %[[S]], %[[B]]
// CHECK:         %[[NAN:.*]] = llvm.fcmp "uno" %[[S]], %[[B]]
// CHECK:         llvm.select %[[NAN]], %{{.*}}, %[[P]]
func.func @float(%a: f32, %b: f32) -> f32 {
  %0 = arith.addf %a, %b : f32
  %1 = arith.maximumf %0, %b : f32
  func.return %1 : f32
}

// -----

// CHECK-LABEL: func.func @casts
// CHECK:         llvm.call_intrinsic "llvm.fptosi.sat.i32.f32"
// CHECK:         llvm.zext %{{.*}} : i16 to i32
// CHECK:         llvm.shl
// CHECK:         llvm.bitcast %{{.*}} : i32 to f32
func.func @casts(%a: f32, %h: bf16) -> (i32, f32) {
  %0 = arith.fptosi %a : f32 to i32
  %1 = arith.extf %h : bf16 to f32
  func.return %0, %1 : i32, f32
}

// -----

// index values cross into i64 through unrealized casts.
// CHECK-LABEL: func.func @index
// CHECK:         %[[X:.*]] = builtin.unrealized_conversion_cast %{{.*}} : index to i64
// CHECK:         %[[Y:.*]] = builtin.unrealized_conversion_cast %{{.*}} : index to i64
// CHECK:         %[[M:.*]] = llvm.mul %[[X]], %[[Y]] : i64
// CHECK:         builtin.unrealized_conversion_cast %[[M]] : i64 to index
func.func @index(%i: index) -> index {
  %0 = arith.muli %i, %i : index
  func.return %0 : index
}
