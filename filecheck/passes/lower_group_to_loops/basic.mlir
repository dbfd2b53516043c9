// RUN: fusec-opt %s -p lower-group-to-loops --split-input-file | filecheck %s

// Sizes and strides are arguments; the outer loop runs over [begin, end).
// Half math is f32, each op's result rounded to f16 as eager rounds it; the
// scalar second operand of a mul is a float32, not rounded to f16 (op math).
// CHECK-LABEL: func.func @k(
// CHECK-SAME:    %[[B:.*]]: index, %[[E:.*]]: index, %[[N0:.*]]: index, %[[N1:.*]]: index, %[[X:.*]]: memref<?xf16>, %[[XS0:.*]]: index, %[[XS1:.*]]: index, %[[O:.*]]: memref<?xf16>, %{{.*}}: index, %{{.*}}: index, %[[S:.*]]: f64)
// CHECK:         scf.for %[[I0:.*]] = %[[B]] to %[[E]]
// CHECK:           arith.muli %[[I0]], %[[XS0]]
// CHECK:           scf.for %[[I1:.*]] = %{{.*}} to %[[N1]]
// CHECK:             %[[L:.*]] = memref.load %[[X]]
// CHECK:             %[[F:.*]] = arith.extf %[[L]] : f16 to f32
// CHECK:             %[[EXP:.*]] = math.exp %[[F]] : f32
// CHECK-NEXT:        %[[EXPH:.*]] = arith.truncf %[[EXP]] : f32 to f16
// CHECK-NEXT:        %[[EXPR:.*]] = arith.extf %[[EXPH]] : f16 to f32
// CHECK-NEXT:        %[[SF:.*]] = arith.truncf %[[S]] : f64 to f32
// CHECK-NEXT:        arith.mulf %[[EXPR]], %[[SF]] : f32
// CHECK:             arith.truncf %{{.*}} : f32 to f16
// CHECK:             memref.store %{{.*}}, %[[O]]
func.func @k(%x: tensor<4x3xf16>, %s: f64) -> tensor<4x3xf16> attributes {fusion.kernel} {
  %0 = aten.exp %x : tensor<4x3xf16> -> tensor<4x3xf16>
  %1 = aten.mul %0, %s : tensor<4x3xf16>, f64 -> tensor<4x3xf16>
  func.return %1 : tensor<4x3xf16>
}

// -----

// A chunk of an input is a view: the kernel reads it as its own strided operand.
// CHECK-LABEL: func.func @chunk(
// CHECK-SAME:    %{{.*}}: memref<?xf32>, %{{.*}}: index, %{{.*}}: memref<?xf32>, %{{.*}}: index, %{{.*}}: memref<?xf32>, %{{.*}}: index)
// CHECK-NOT:     aten.
// CHECK:         arith.addf
func.func @chunk(%x: tensor<8xf32>) -> tensor<4xf32> attributes {fusion.kernel} {
  %a, %b = aten.chunk %x chunks = 2 dim = 0 : tensor<8xf32> -> tensor<4xf32>, tensor<4xf32>
  %0 = aten.add %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// NaN-propagating maximum that keeps the first operand on ties (0.0 vs -0.0),
// floor division of integers by a divisor that cannot trap: a zero divisor sets
// the flag byte (the last argument), which the host turns into eager's error.
// CHECK-LABEL: func.func @ops(
// CHECK-SAME:    %[[FLAG:[^:]*]]: memref<?xi8>) attributes {fusion.kernel}
// CHECK:         %[[LT:.*]] = arith.cmpf olt, %[[A:.*]], %[[B:.*]] : f32
// CHECK:         %[[MAX:.*]] = arith.select %[[LT]], %[[B]], %[[A]] : f32
// CHECK:         %[[NAN:.*]] = arith.cmpf uno, %[[A]], %[[B]] : f32
// CHECK:         arith.select %[[NAN]], %{{.*}}, %[[MAX]] : f32
// CHECK:         %[[ZERO:.*]] = arith.cmpi eq, %[[D:.*]], %{{.*}} : i32
// CHECK:         %[[SAFE:.*]] = arith.select %{{.*}}, %{{.*}}, %[[D]] : i32
// CHECK:         arith.divsi %{{.*}}, %[[SAFE]]
// CHECK:         arith.remsi %{{.*}}, %[[SAFE]]
// CHECK:         scf.if %[[ZERO]] {
// CHECK-NEXT:      memref.store %{{.*}}, %[[FLAG]]
func.func @ops(%x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xi32>) attributes {fusion.kernel} {
  %0 = aten.maximum %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = aten.div %i, %i rounding_mode = "floor" : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  func.return %0, %1 : tensor<4xf32>, tensor<4xi32>
}

// -----

// uint8 is stored as i8 and computed in i32: loads zero-extend, an operand is
// wrapped to uint8 (`& 255`: a scalar as PyTorch converts it, `x + -3` adds
// 253; a loaded one already is, which LLVM folds), so is each uint8 result,
// and the store truncates.
// CHECK-LABEL: func.func @u8(
// CHECK-SAME:    %[[X:[^:]*]]: memref<?xi8>, %{{.*}}: index, %[[O:[^:]*]]: memref<?xi8>, %{{.*}}: index, %[[S:[^:]*]]: i64)
// CHECK:         %[[L:.*]] = memref.load %[[X]]
// CHECK:         %[[W:.*]] = arith.extui %[[L]] : i8 to i32
// CHECK:         %[[WW:.*]] = arith.andi %[[W]], %{{.*}} : i32
// CHECK:         %[[ST:.*]] = arith.trunci %[[S]] : i64 to i32
// CHECK:         %[[SW:.*]] = arith.andi %[[ST]], %{{.*}} : i32
// CHECK:         %[[SUM:.*]] = arith.addi %[[WW]], %[[SW]] : i32
// CHECK:         %[[R:.*]] = arith.andi %[[SUM]], %{{.*}} : i32
// CHECK:         %[[T:.*]] = arith.trunci %[[R]] : i32 to i8
// CHECK:         memref.store %[[T]], %[[O]]
func.func @u8(%x: tensor<5xui8>, %s: i64) -> tensor<5xui8> attributes {fusion.kernel} {
  %0 = aten.add %x, %s : tensor<5xui8>, i64 -> tensor<5xui8>
  func.return %0 : tensor<5xui8>
}

// -----

// sigmoid is 1 / (1 + exp(-x)); its exp is marked for normal results only
// (`convert-math-to-llvm` then expands it with one scaling multiply).
// CHECK-LABEL: func.func @sigmoid(
// CHECK:         %[[L:.*]] = memref.load
// CHECK:         %[[N:.*]] = arith.negf %[[L]] : f32
// CHECK-NEXT:    %[[E:.*]] = math.exp %[[N]] {fusec.exp_range = "normal"} : f32
// CHECK-NEXT:    %[[D:.*]] = arith.addf %{{.*}}, %[[E]] : f32
// CHECK-NEXT:    arith.divf %{{.*}}, %[[D]] : f32
func.func @sigmoid(%x: tensor<8xf32>) -> tensor<8xf32> attributes {fusion.kernel} {
  %0 = aten.sigmoid %x : tensor<8xf32> -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}
