// RUN: fusec-opt %s --split-input-file -p sincos-fast-path | filecheck %s
// RUN: fusec-opt %s --split-input-file -p sincos-fast-path,sincos-fast-path | filecheck %s

// The loop computes sin with the fast reduction and or-reduces |x| > 39000 (f32; 1.6e6 in f64)
// (unordered: NaN too); the original loop, exact reduction, reruns under scf.if.
// CHECK-LABEL: func.func @sin_loop
// CHECK-SAME:    (%[[LB:.*]]: index, %[[UB:.*]]: index, %[[IN:.*]]: memref<?xf32>, %[[OUT:.*]]: memref<?xf32>)
// CHECK:         %[[C1:.*]] = arith.constant 1 : index
// CHECK:         %[[FALSE:.*]] = arith.constant false
// CHECK:         %[[MAX:.*]] = arith.constant 3.900000e+04 : f32
// CHECK:         %[[ANY:.*]] = scf.for %[[I:.*]] = %[[LB]] to %[[UB]] step %[[C1]] iter_args(%[[ACC:.*]] = %[[FALSE]]) -> (i1) {
// CHECK-NEXT:      %[[X:.*]] = memref.load %[[IN]][%[[I]]] : memref<?xf32>
// CHECK-NEXT:      %[[S:.*]] = math.sin %[[X]] {fusec.sincos_range = "fast"} : f32
// CHECK-NEXT:      memref.store %[[S]], %[[OUT]][%[[I]]] : memref<?xf32>
// CHECK-NEXT:      %[[A:.*]] = math.absf %[[X]] : f32
// CHECK-NEXT:      %[[BIG:.*]] = arith.cmpf ugt, %[[A]], %[[MAX]] : f32
// CHECK-NEXT:      %[[ACC1:.*]] = arith.ori %[[ACC]], %[[BIG]] : i1
// CHECK-NEXT:      scf.yield %[[ACC1]] : i1
// CHECK-NEXT:    }
// CHECK-NEXT:    scf.if %[[ANY]] {
// CHECK-NEXT:      scf.for %[[J:.*]] = %[[LB]] to %[[UB]] step %[[C1]] {
// CHECK-NEXT:        %[[Y:.*]] = memref.load %[[IN]][%[[J]]] : memref<?xf32>
// CHECK-NEXT:        %[[E:.*]] = math.sin %[[Y]] {fusec.sincos_range = "full"} : f32
// CHECK-NEXT:        memref.store %[[E]], %[[OUT]][%[[J]]] : memref<?xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @sin_loop(%lb: index, %ub: index, %in: memref<?xf32>, %out: memref<?xf32>) {
  %c1 = arith.constant 1 : index
  scf.for %i = %lb to %ub step %c1 {
    %x = memref.load %in[%i] : memref<?xf32>
    %s = math.sin %x : f32
    memref.store %s, %out[%i] : memref<?xf32>
  }
  func.return
}

// -----

// Only the innermost loop splits; each f64 cos argument adds to the flag.
// CHECK-LABEL: func.func @cos_nest
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           %[[MAX:.*]] = arith.constant 1.600000e+06 : f64
// CHECK:           %[[ANY:.*]] = scf.for {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (i1) {
// CHECK:             %[[C:.*]] = math.cos %[[X:.*]] {fusec.sincos_range = "fast"} : f64
// CHECK:             math.cos %[[C]] {fusec.sincos_range = "fast"} : f64
// CHECK:             arith.cmpf ugt, %{{.*}}, %[[MAX]] : f64
// CHECK:             %[[ACC1:.*]] = arith.ori %[[ACC]], %{{.*}} : i1
// CHECK:             arith.cmpf ugt, %{{.*}}, %[[MAX]] : f64
// CHECK:             %[[ACC2:.*]] = arith.ori %[[ACC1]], %{{.*}} : i1
// CHECK:             scf.yield %[[ACC2]] : i1
// CHECK:           scf.if %[[ANY]] {
// CHECK:             math.cos %{{.*}} {fusec.sincos_range = "full"} : f64
// CHECK:             math.cos %{{.*}} {fusec.sincos_range = "full"} : f64
func.func @cos_nest(%n: index, %in: memref<?xf64>, %out: memref<?xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      %x = memref.load %in[%j] : memref<?xf64>
      %c = math.cos %x : f64
      %d = math.cos %c : f64
      memref.store %d, %out[%j] : memref<?xf64>
    }
  }
  func.return
}

// -----

// A loop with loop-carried values (a reduction) keeps the exact reduction.
// CHECK-LABEL: func.func @sum_of_sin
// CHECK-NOT:     fusec.sincos_range
// CHECK-NOT:     scf.if
// CHECK:         math.sin %{{.*}} : f32
func.func @sum_of_sin(%n: index, %in: memref<?xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
    %x = memref.load %in[%i] : memref<?xf32>
    %s = math.sin %x : f32
    %a = arith.addf %acc, %s : f32
    scf.yield %a : f32
  }
  func.return %r : f32
}
