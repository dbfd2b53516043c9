// RUN: fusec-opt %s -p lower-group-to-loops --split-input-file | filecheck %s

// An operand contiguous along dim 0 and strided along dim 1 (a transposed one,
// which the host puts there) sends the launch to the tiled nest: 16 x 128 tiles,
// the operand's tile copied column by column (inner loop along its stride-1 dim)
// into a stack buffer, and the body reading the buffer at strides (128, 1).
// Every other launch runs the plain nest in the `else`.
// CHECK-LABEL: func.func @exp(
// CHECK-SAME:    %[[B:[0-9]+]]: index, %[[E:[0-9]+]]: index, %{{[0-9]+}}: index, %[[N1:[0-9]+]]: index, %[[A:[0-9]+]]: memref<?xf32>, %[[AS0:[0-9]+]]: index, %[[AS1:[0-9]+]]: index, %[[O:[0-9]+]]: memref<?xf32>
// CHECK:         %[[C1:.*]] = arith.constant 1 : index
// CHECK:         %[[UNIT:.*]] = arith.cmpi eq, %[[AS0]], %[[C1]] : index
// CHECK:         %[[STRIDED:.*]] = arith.cmpi sgt, %[[AS1]], %[[C1]] : index
// CHECK:         %[[AT:.*]] = arith.andi %[[UNIT]], %[[STRIDED]] : i1
// CHECK:         %[[ABUF:.*]] = memref.alloca(%{{.*}}) {alignment = 64 : i64} : memref<?xf32>
// CHECK:         %[[T:.*]] = arith.constant 16 : index
// CHECK:         %[[U:.*]] = arith.constant 128 : index
// CHECK:         scf.if %[[AT]] {
// CHECK-NEXT:      scf.for %[[T0:.*]] = %[[B]] to %[[E]] step %[[T]] {
// CHECK:             %[[T1:.*]] = arith.minsi %{{.*}}, %[[E]] : index
// CHECK:             scf.for %[[U0:.*]] = %{{.*}} to %[[N1]] step %[[U]] {
// CHECK:               %[[U1:.*]] = arith.minsi %{{.*}}, %[[N1]] : index
// CHECK:               scf.if %[[AT]] {
// CHECK-NEXT:            scf.for %[[J:.*]] = %[[U0]] to %[[U1]] step %[[C1]] {
// CHECK:                   arith.muli %[[J]], %[[AS1]] : index
// CHECK:                   scf.for %[[I:.*]] = %[[T0]] to %[[T1]] step %[[C1]] {
// CHECK:                     %[[V:.*]] = memref.load %[[A]]
// CHECK-NEXT:                memref.store %[[V]], %[[ABUF]]
// CHECK:               %[[AREF:.*]] = arith.select %[[AT]], %[[ABUF]], %[[A]] : memref<?xf32>
// CHECK:               %[[AS0T:.*]] = arith.select %[[AT]], %[[U]], %[[AS0]] : index
// CHECK:               %[[AS1T:.*]] = arith.select %[[AT]], %[[C1]], %[[AS1]] : index
// CHECK:               scf.for %[[I2:.*]] = %[[T0]] to %[[T1]] step %[[C1]] {
// CHECK:                 arith.muli %[[I2]], %[[AS0T]] : index
// CHECK:                 scf.for %[[J2:.*]] = %[[U0]] to %[[U1]] step %[[C1]] {
// CHECK:                   arith.muli %[[J2]], %[[AS1T]] : index
// CHECK:                   memref.load %[[AREF]]
// CHECK:                   math.exp
// CHECK:                   memref.store %{{.*}}, %[[O]]
// CHECK:         } else {
// CHECK-NEXT:      scf.for %{{.*}} = %[[B]] to %[[E]] step %[[C1]] {
// CHECK:             memref.load %[[A]]
func.func @exp(%a: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {fusion.kernel} {
  %0 = aten.exp %a : tensor<?x?xf32> -> tensor<?x?xf32>
  func.return %0 : tensor<?x?xf32>
}

// -----

// An operand broadcast along the inner dim by its type (a constant 0 stride) is
// never transposed, and a 1-D kernel has nothing to tile: the plain nest only.
// CHECK-LABEL: func.func @bias(
// CHECK-NOT:     memref.alloca
// CHECK-NOT:     scf.if
// CHECK:         scf.for
// CHECK-LABEL: func.func @flat(
// CHECK-NOT:     memref.alloca
// CHECK-NOT:     scf.if
// CHECK:         scf.for
func.func @bias(%x: tensor<8x1xf32>, %b: tensor<1x4xf32>) -> tensor<8x4xf32> attributes {fusion.kernel} {
  %0 = aten.add %x, %b : tensor<8x1xf32>, tensor<1x4xf32> -> tensor<8x4xf32>
  func.return %0 : tensor<8x4xf32>
}
func.func @flat(%x: tensor<8xf32>) -> tensor<8xf32> attributes {fusion.kernel} {
  %0 = aten.exp %x : tensor<8xf32> -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}
