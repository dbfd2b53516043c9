// RUN: fusec-opt %s -p lower-group-to-loops --split-input-file --verify-diagnostics | filecheck %s

// Softmax: per kept index, one nest per stage carrying its accumulator (f32 for
// f16 data), then the epilogue nest writes the output. Its steps (as
// decompose-reductions marks them) stay in f32: only the result is rounded.
// CHECK-LABEL: func.func @softmax(
// CHECK-SAME:    %[[B:.*]]: index, %[[E:.*]]: index, %[[N0:.*]]: index, %[[N1:.*]]: index, %[[X:.*]]: memref<?xf16>, %{{.*}}: index, %{{.*}}: index, %[[O:.*]]: memref<?xf16>, %{{.*}}: index, %{{.*}}: index)
// CHECK:         scf.for %{{.*}} = %[[B]] to %[[E]]
// CHECK:           %[[NEG:.*]] = arith.constant 0xff800000 : f32
// CHECK:           %[[FALSE:.*]] = arith.constant false
// CHECK:           %[[MX:.*]], %[[NF:.*]] = scf.for %{{.*}} = %{{.*}} to %[[N1]] step %{{.*}} iter_args(%[[MA:.*]] = %[[NEG]], %[[NA:.*]] = %[[FALSE]]) -> (f32, i1) {
// CHECK:             %[[XV:.*]] = arith.extf
// CHECK:             llvm.call_intrinsic "llvm.maximum.f32"(%[[MA]], %[[XV]]) : (f32, f32) -> f32
// CHECK-NEXT:        %[[ISNAN:.*]] = arith.cmpf uno, %[[XV]], %[[XV]] : f32
// CHECK-NEXT:        arith.ori %[[NA]], %[[ISNAN]] : i1
// The NaN flag (a second use of x that keeps LLVM from turning a masked max
// into a select it cannot vectorize) picks NaN, as maximum already would.
// CHECK:           %[[NAN:.*]] = arith.constant 0x7fc00000 : f32
// CHECK-NEXT:      %[[M:.*]] = arith.select %[[NF]], %[[NAN]], %[[MX]] : f32
// CHECK:           %[[S:.*]] = scf.for %{{.*}} = %{{.*}} to %[[N1]] step %{{.*}} iter_args(%[[SA:.*]] = %{{.*}}) -> (f32) {
// CHECK:             %[[D:.*]] = arith.subf %{{.*}}, %[[M]] : f32
// CHECK:             %[[EX:.*]] = math.exp %[[D]] : f32
// CHECK:             arith.addf %[[SA]], %[[EX]] fastmath<reassoc> : f32
// CHECK:           scf.for %{{.*}} = %{{.*}} to %[[N1]]
// CHECK:             arith.divf %{{.*}}, %[[S]] : f32
// CHECK:             arith.truncf %{{.*}} : f32 to f16
// CHECK:             memref.store %{{.*}}, %[[O]]
func.func @softmax(%x: tensor<4x8xf16>) -> tensor<4x8xf16> attributes {fusion.kernel} {
  %m = aten.amax %x dims = [1] keepdim = true {fusion.opmath_step} : tensor<4x8xf16> -> tensor<4x1xf16>
  %d = aten.sub %x, %m {fusion.opmath_step} : tensor<4x8xf16>, tensor<4x1xf16> -> tensor<4x8xf16>
  %e = aten.exp %d {fusion.opmath_step} : tensor<4x8xf16> -> tensor<4x8xf16>
  %s = aten.sum %e dims = [1] keepdim = true {fusion.opmath_step} : tensor<4x8xf16> -> tensor<4x1xf16>
  %r = aten.div %e, %s : tensor<4x8xf16>, tensor<4x1xf16> -> tensor<4x8xf16>
  func.return %r : tensor<4x8xf16>
}

// -----

// An f32 softmax: the sum's nest also stores exp(x - max) into the output (it
// computes in the output's type, nothing rounds), and the last nest reads it back
// and scales it by the row's reciprocal: one exp and no division per element.
// (The f16 softmax above keeps recomputing: a stored f16 would round twice.)
// CHECK-LABEL: func.func @softmax_stashed(
// CHECK-SAME:    %[[X:[0-9]+]]: memref<?xf32>, %{{[0-9]+}}: index, %{{[0-9]+}}: index, %[[O:[0-9]+]]: memref<?xf32>, %{{[0-9]+}}: index, %{{[0-9]+}}: index)
// CHECK:             llvm.call_intrinsic "llvm.maximum.f32"
// CHECK-NOT:         memref.store
// CHECK:           %[[S:.*]] = scf.for %{{.*}} iter_args(%[[SA:.*]] = %{{.*}}) -> (f32) {
// CHECK:             %[[EX:.*]] = math.exp %{{.*}} : f32
// CHECK-NEXT:        memref.store %[[EX]], %[[O]][%[[OI:.*]]] : memref<?xf32>
// CHECK-NEXT:        arith.addf %[[SA]], %[[EX]] fastmath<reassoc> : f32
// CHECK:           %[[INV:.*]] = arith.divf %{{.*}}, %[[S]] : f32
// CHECK-NEXT:      scf.for
// CHECK-NOT:         math.exp
// CHECK:             %[[L:.*]] = memref.load %[[O]][%[[I:.*]]] : memref<?xf32>
// CHECK-NEXT:        %[[P:.*]] = arith.mulf %[[L]], %[[INV]] : f32
// CHECK-NEXT:        memref.store %[[P]], %[[O]][%[[I]]] : memref<?xf32>
func.func @softmax_stashed(%x: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {fusion.kernel} {
  %m = aten.amax %x dims = [1] keepdim = true : tensor<4x8xf32> -> tensor<4x1xf32>
  %d = aten.sub %x, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %e = aten.exp %d : tensor<4x8xf32> -> tensor<4x8xf32>
  %s = aten.sum %e dims = [1] keepdim = true : tensor<4x8xf32> -> tensor<4x1xf32>
  %i = aten.reciprocal %s : tensor<4x1xf32> -> tensor<4x1xf32>
  %r = aten.mul %e, %i : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// -----

// An output that reads the reduced value and another full value (here the input
// itself) is not stashed: the last nest computes exp again.
// CHECK-LABEL: func.func @not_stashed(
// CHECK-SAME:    %[[X:[0-9]+]]: memref<?xf32>, %{{[0-9]+}}: index, %{{[0-9]+}}: index, %[[O:[0-9]+]]: memref<?xf32>, %{{[0-9]+}}: index, %{{[0-9]+}}: index)
// CHECK:           scf.for %{{.*}} iter_args(%[[SA:.*]] = %{{.*}}) -> (f32) {
// CHECK:             %[[EX:.*]] = math.exp %{{.*}} : f32
// CHECK-NEXT:        arith.addf %[[SA]], %[[EX]] fastmath<reassoc> : f32
// CHECK:           scf.for
// CHECK-NOT:         memref.load %[[O]]
// CHECK:             math.exp
// CHECK:             memref.store %{{.*}}, %[[O]]
func.func @not_stashed(%x: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {fusion.kernel} {
  %e = aten.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %s = aten.sum %e dims = [1] keepdim = true : tensor<4x8xf32> -> tensor<4x1xf32>
  %p = aten.mul %e, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %r = aten.div %p, %s : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// -----

// A sum over the batch: the kept dim 1 is innermost. One stage whose full
// outputs read no reduced value: tiles of columns within the threads'
// [begin, end), as wide as 64 KiB of accumulators allow (16384 f32 sums: a
// whole row, so the rows are read end to end), their accumulators in a stack
// buffer (allocated once, in the entry block); per tile the buffer is
// initialized, every row adds its run of columns into it (a loop over
// contiguous columns, vectorizable) while the full output is stored, and the
// tile's sums are stored once. Where every tensor's columns are contiguous
// (stride 1 along dim 1, checked at run time) a column's offsets are the
// tile's plus j; otherwise j times each stride.
// CHECK-LABEL: func.func @bias_grad(
// CHECK-SAME:    %[[B:[0-9]+]]: index, %[[E:[0-9]+]]: index, %[[N0:[0-9]+]]: index, %[[N1:[0-9]+]]: index, %[[Y:[0-9]+]]: memref<?xf32>, %[[YS0:[0-9]+]]: index, %[[YS:[0-9]+]]: index, %[[G:[0-9]+]]: memref<?xf32>, %{{[0-9]+}}: index, %{{[0-9]+}}: index, %[[DB:[0-9]+]]: memref<?xf32>, %{{[0-9]+}}: index, %{{[0-9]+}}: index, %[[H:[0-9]+]]: memref<?xf32>,
// CHECK:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[TILE:.*]] = arith.constant 16384 : index
// CHECK-NEXT:    %[[ACC:.*]] = memref.alloca(%[[TILE]]) {alignment = 64 : i64} : memref<?xf32>
// CHECK:         arith.cmpi eq, %[[YS]], %{{.*}} : index
// CHECK:         scf.if %{{.*}} {
// CHECK-NEXT:      scf.for %[[C:.*]] = %[[B]] to %[[E]] step %[[TILE]] {
// CHECK-NEXT:        %[[LEFT:.*]] = arith.subi %[[E]], %[[C]] : index
// CHECK-NEXT:        %[[W:.*]] = arith.minsi %[[TILE]], %[[LEFT]] : index
// CHECK:             scf.for %[[J:.*]] = %{{.*}} to %[[W]] step %{{.*}} {
// CHECK:               memref.store %[[ZERO]], %[[ACC]][%[[J]]] : memref<?xf32>
// CHECK:             scf.for %[[R:.*]] = %{{.*}} to %[[N0]] step %{{.*}} {
// CHECK:               arith.muli %[[R]], %[[YS0]] : index
// CHECK:               scf.for %[[K:.*]] = %{{.*}} to %[[W]] step %{{.*}} {
// CHECK-NEXT:            %[[YOFF:.*]] = arith.addi %{{.*}}, %[[K]] : index
// CHECK:                 memref.load %[[Y]][%[[YOFF]]] : memref<?xf32>
// CHECK:                 math.exp
// CHECK:                 %[[X:.*]] = arith.mulf
// CHECK-NEXT:            %[[A:.*]] = memref.load %[[ACC]][%[[K]]] : memref<?xf32>
// CHECK-NEXT:            %[[S:.*]] = arith.addf %[[A]], %[[X]] fastmath<reassoc> : f32
// CHECK-NEXT:            memref.store %[[S]], %[[ACC]][%[[K]]] : memref<?xf32>
// CHECK-NEXT:            memref.store %[[X]], %[[H]][%{{.*}}] : memref<?xf32>
// CHECK:             scf.for %[[J2:.*]] = %{{.*}} to %[[W]] step %{{.*}} {
// CHECK:               %[[SUM:.*]] = memref.load %[[ACC]][%[[J2]]] : memref<?xf32>
// CHECK-NEXT:          memref.store %[[SUM]], %[[DB]][%{{.*}}] : memref<?xf32>
// CHECK:         } else {
// CHECK-NEXT:      scf.for %{{.*}} = %[[B]] to %[[E]] step %[[TILE]] {
// CHECK:             scf.for %{{.*}} = %{{.*}} to %[[N0]] step %{{.*}} {
// CHECK:               scf.for %[[K2:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:            %[[STRIDED:.*]] = arith.muli %[[K2]], %[[YS]] : index
// CHECK-NEXT:            arith.addi %{{.*}}, %[[STRIDED]] : index
func.func @bias_grad(%g: tensor<16x8xf32>, %y: tensor<16x8xf32>) -> (tensor<1x8xf32>, tensor<16x8xf32>) attributes {fusion.kernel} {
  %s = aten.sigmoid %y : tensor<16x8xf32> -> tensor<16x8xf32>
  %h = aten.mul %g, %s : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x8xf32>
  %db = aten.sum %h dims = [0] keepdim = true : tensor<16x8xf32> -> tensor<1x8xf32>
  func.return %db, %h : tensor<1x8xf32>, tensor<16x8xf32>
}

// -----

// The tile narrows as the stage's accumulators grow: Welford's three f64
// accumulators (24 bytes a column) beside an f64 sum (8) take 2048 columns.
// CHECK-LABEL: func.func @wide_accumulators(
// CHECK:         %[[TILE:.*]] = arith.constant 2048 : index
// CHECK-COUNT-4: memref.alloca(%[[TILE]]) {alignment = 64 : i64} : memref<?xf64>
// CHECK-NOT:     memref.alloca
func.func @wide_accumulators(%x: tensor<16x8xf64>) -> (tensor<1x8xf64>, tensor<1x8xf64>) attributes {fusion.kernel} {
  %v = aten.var %x dims = [0] keepdim = true : tensor<16x8xf64> -> tensor<1x8xf64>
  %s = aten.sum %x dims = [0] keepdim = true : tensor<16x8xf64> -> tensor<1x8xf64>
  func.return %v, %s : tensor<1x8xf64>, tensor<1x8xf64>
}

// -----

// A full output that reads the reduced value (the gradient minus its column
// mean) needs the rows twice: blocks of neighbouring columns share one nest
// over dim 0 (an accumulator each, carried in registers), 16 where every
// tensor's columns are contiguous, 8 strided ones otherwise, the rest one by
// one; the full output in a second nest per block.
// CHECK-LABEL: func.func @centered(
// CHECK-NOT:     memref.alloca
// CHECK:         scf.if %{{.*}} {
// CHECK:           scf.for %{{.*}} iter_args({{.*}}) -> ({{(f32, )+}}f32) {
// CHECK:           scf.for
// CHECK-COUNT-16:    memref.store
// CHECK:         } else {
// CHECK:           scf.for %{{.*}} iter_args({{.*}}) -> ({{(f32, )+}}f32) {
func.func @centered(%g: tensor<16x8xf32>) -> tensor<16x8xf32> attributes {fusion.kernel} {
  %m = aten.mean %g dims = [0] keepdim = true : tensor<16x8xf32> -> tensor<1x8xf32>
  %c = aten.sub %g, %m : tensor<16x8xf32>, tensor<1x8xf32> -> tensor<16x8xf32>
  func.return %c : tensor<16x8xf32>
}

// -----

// var: Welford's update carries (count, mean, M2) through the nest.
// CHECK-LABEL: func.func @var(
// CHECK:         %{{.*}}, %{{.*}}, %[[M2:.*]] = scf.for {{.*}} -> (f32, f32, f32) {
// CHECK:           arith.divf
// CHECK:         arith.divf %[[M2]]
// CHECK:         math.sqrt
func.func @var(%x: tensor<4x8xf32>) -> tensor<4x1xf32> attributes {fusion.kernel} {
  %v = aten.std %x dims = [1] keepdim = true : tensor<4x8xf32> -> tensor<4x1xf32>
  func.return %v : tensor<4x1xf32>
}

// -----

// A group the fuser never forms (two domains) is a clear error, not a wrong kernel.
// CHECK: lower-group-to-loops: the reductions of one group must reduce the same dims of the same shape
func.func @two_domains(%x: tensor<4x8xf32>) -> (tensor<4x1xf32>, tensor<1x8xf32>) attributes {fusion.kernel} {
  %a = aten.sum %x dims = [1] keepdim = true : tensor<4x8xf32> -> tensor<4x1xf32>
  %b = aten.sum %x dims = [0] keepdim = true : tensor<4x8xf32> -> tensor<1x8xf32>
  func.return %a, %b : tensor<4x1xf32>, tensor<1x8xf32>
}
