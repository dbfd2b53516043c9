// RUN: fusec-opt %s -p lower-group-to-loops --split-input-file --verify-diagnostics | filecheck %s

// Softmax: per kept index, one nest per stage carrying its accumulator (f32 for
// f16 data), then the epilogue nest writes the output.
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
  %m = aten.amax %x dims = [1] keepdim = true : tensor<4x8xf16> -> tensor<4x1xf16>
  %d = aten.sub %x, %m : tensor<4x8xf16>, tensor<4x1xf16> -> tensor<4x8xf16>
  %e = aten.exp %d : tensor<4x8xf16> -> tensor<4x8xf16>
  %s = aten.sum %e dims = [1] keepdim = true : tensor<4x8xf16> -> tensor<4x1xf16>
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

// A sum over the batch: the kept dim 1 is innermost, so neighbouring columns
// share one nest over dim 0 (an accumulator each), within the threads' [begin,
// end); row outputs are stored once per column, full outputs in the last nest.
// Where every tensor's columns are contiguous (stride 1 along dim 1, checked at
// run time) the lanes sit at constant distances (vector loads), in blocks of 16
// columns; otherwise blocks of 8 strided lanes. The columns left over run one at
// a time.
// CHECK-LABEL: func.func @bias_grad(
// CHECK-SAME:    %[[B:[0-9]+]]: index, %[[E:[0-9]+]]: index, %[[N0:[0-9]+]]: index, %[[N1:[0-9]+]]: index, %{{[0-9]+}}: memref<?xf32>, %{{[0-9]+}}: index, %[[GS:[0-9]+]]: index,
// CHECK:         arith.cmpi eq, %[[GS]], %{{.*}} : index
// CHECK:         scf.if %{{.*}} {
// CHECK:           scf.for %{{.*}} = %[[B]] to %[[MID16:.*]] step %{{.*}} {
// CHECK:             %[[G0:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK:             %[[K1:.*]] = arith.constant 1 : index
// CHECK-NEXT:        arith.addi %[[G0]], %[[K1]] : index
// CHECK:             %[[S16:[0-9]+]], {{.*}} = scf.for %{{.*}} = %{{.*}} to %[[N0]] step %{{.*}} iter_args({{.*}}) -> ({{(f32, )+}}f32) {
// CHECK:             memref.store %[[S16]]
// CHECK-COUNT-15:    memref.store
// CHECK:             scf.for %{{.*}} = %{{.*}} to %[[N0]]
// CHECK-COUNT-16:      memref.store
// CHECK:           scf.for %{{.*}} = %[[MID16]] to %[[E]] step %{{.*}} {
// CHECK:             scf.for %{{.*}} = %{{.*}} to %[[N0]] step %{{.*}} iter_args({{.*}}) -> (f32) {
// CHECK:         } else {
// CHECK:           scf.for %[[J:.*]] = %[[B]] to %[[MID:.*]] step %{{.*}} {
// CHECK:             %[[J1:.*]] = arith.addi %[[J]], %{{.*}} : index
// CHECK-NEXT:        arith.muli %[[J1]], %[[GS]] : index
// CHECK:             %[[S0:[0-9]+]], {{.*}} = scf.for %{{.*}} = %{{.*}} to %[[N0]] step %{{.*}} iter_args({{.*}}) -> ({{(f32, )+}}f32) {
// CHECK:             memref.store %[[S0]]
// CHECK-COUNT-7:     memref.store
// CHECK:             scf.for %{{.*}} = %{{.*}} to %[[N0]]
// CHECK-COUNT-8:       memref.store
// CHECK:           scf.for %{{.*}} = %[[MID]] to %[[E]] step %{{.*}} {
// CHECK:             %[[S:.*]] = scf.for %{{.*}} = %{{.*}} to %[[N0]] step %{{.*}} iter_args({{.*}}) -> (f32) {
// CHECK:             memref.store %[[S]]
func.func @bias_grad(%g: tensor<16x8xf32>, %y: tensor<16x8xf32>) -> (tensor<1x8xf32>, tensor<16x8xf32>) attributes {fusion.kernel} {
  %s = aten.sigmoid %y : tensor<16x8xf32> -> tensor<16x8xf32>
  %h = aten.mul %g, %s : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x8xf32>
  %db = aten.sum %h dims = [0] keepdim = true : tensor<16x8xf32> -> tensor<1x8xf32>
  func.return %db, %h : tensor<1x8xf32>, tensor<16x8xf32>
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
