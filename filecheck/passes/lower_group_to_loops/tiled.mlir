// RUN: fusec-opt %s -p 'lower-group-to-loops{tile=true}' --split-input-file | filecheck %s
// RUN: fusec-opt %s -p lower-group-to-loops --split-input-file | filecheck %s --check-prefix=PLAIN

// The tiled variant (`tile=true`, what the runtime builds for a launch with a
// transposed or expanded operand). Once per launch: is the operand transposed
// (stride 1 on dim 0, above 1 on dim 1) or expanded (a runtime 0 stride on dim
// 1, which is wider than 1)? Either sends the launch to 64 x 128 tiles, where
// the operand's tile is first copied into a stack buffer (a transposed one
// column by column, its inner loop along its stride-1 dim; an expanded one by
// filling rows; any other row by row) and the body reads it from there at
// strides (128, 1). Every other launch runs the plain nest in the `else`.
// CHECK-LABEL: func.func @exp(
// CHECK-SAME:    %[[B:[0-9]+]]: index, %[[E:[0-9]+]]: index, %{{[0-9]+}}: index, %[[N1:[0-9]+]]: index, %[[A:[0-9]+]]: memref<?xf32>, %[[AS0:[0-9]+]]: index, %[[AS1:[0-9]+]]: index, %[[O:[0-9]+]]: memref<?xf32>
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK:         %[[C1:.*]] = arith.constant 1 : index
// CHECK:         %[[WIDE:.*]] = arith.cmpi sgt, %[[N1]], %[[C1]] : index
// CHECK:         %[[ZERO:.*]] = arith.cmpi eq, %[[AS1]], %[[C0]] : index
// CHECK:         %[[EXPANDED:.*]] = arith.andi %[[ZERO]], %[[WIDE]] : i1
// CHECK:         %[[UNIT:.*]] = arith.cmpi eq, %[[AS0]], %[[C1]] : index
// CHECK:         %[[STRIDED:.*]] = arith.cmpi sgt, %[[AS1]], %[[C1]] : index
// CHECK:         %[[TRANSPOSED:.*]] = arith.andi %[[UNIT]], %[[STRIDED]] : i1
// CHECK:         %[[TILED:.*]] = arith.ori %[[TRANSPOSED]], %[[EXPANDED]] : i1
// CHECK:         %[[ABUF:.*]] = memref.alloca(%{{.*}}) {alignment = 64 : i64} : memref<?xf32>
// CHECK:         %[[T:.*]] = arith.constant 64 : index
// CHECK:         %[[U:.*]] = arith.constant 128 : index
// CHECK:         scf.if %[[TILED]] {
// CHECK-NEXT:      scf.for %[[T0:.*]] = %[[B]] to %[[E]] step %[[T]] {
// CHECK:             %[[T1:.*]] = arith.minsi %{{.*}}, %[[E]] : index
// CHECK:             scf.for %[[U0:.*]] = %[[C0]] to %[[N1]] step %[[U]] {
// CHECK:               %[[U1:.*]] = arith.minsi %{{.*}}, %[[N1]] : index
// CHECK:               %[[START:.*]] = arith.subi %[[C0]], %{{.*}} : index
// CHECK:               scf.if %[[EXPANDED]] {
// CHECK-NEXT:            scf.for %{{.*}} = %[[T0]] to %[[T1]] step %[[C1]] {
// CHECK:                   %[[V:.*]] = memref.load %[[A]]
// CHECK-NEXT:              scf.for %{{.*}} = %[[U0]] to %[[U1]] step %[[C1]] {
// CHECK:                     memref.store %[[V]], %[[ABUF]]
// CHECK:               } else {
// CHECK-NEXT:            scf.if %[[TRANSPOSED]] {
// CHECK-NEXT:              scf.for %[[J:.*]] = %[[U0]] to %[[U1]] step %[[C1]] {
// CHECK:                     arith.muli %[[J]], %[[AS1]] : index
// CHECK:                     %[[FULL:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : index
// CHECK-NEXT:                scf.if %[[FULL]] {
// CHECK-NEXT:                  scf.for %{{.*}} = %[[C0]] to %{{.*}} step %[[C1]] {
// CHECK:                         %[[W:.*]] = memref.load %[[A]]
// CHECK-NEXT:                    memref.store %[[W]], %[[ABUF]]
// CHECK:                     } else {
// CHECK-NEXT:                  scf.for %{{.*}} = %[[T0]] to %[[T1]] step %[[C1]] {
// CHECK:                   } else {
// CHECK-NEXT:              scf.for %{{.*}} = %[[T0]] to %[[T1]] step %[[C1]] {
// CHECK:                     scf.for %{{.*}} = %[[U0]] to %[[U1]] step %[[C1]] {
// CHECK:               scf.for %[[I2:.*]] = %[[T0]] to %[[T1]] step %[[C1]] {
// CHECK-NEXT:            %[[R:.*]] = arith.muli %[[I2]], %[[U]] : index
// CHECK-NEXT:            %[[ROW:.*]] = arith.addi %[[START]], %[[R]] : index
// CHECK:                 scf.for %[[J2:.*]] = %[[U0]] to %[[U1]] step %[[C1]] {
// CHECK-NEXT:              %[[COL:.*]] = arith.muli %[[J2]], %[[C1]] : index
// CHECK-NEXT:              %[[AT:.*]] = arith.addi %[[ROW]], %[[COL]] : index
// CHECK:                   memref.load %[[ABUF]][%[[AT]]]
// CHECK:                   math.exp
// CHECK:                   memref.store %{{.*}}, %[[O]]
// CHECK:         } else {
// CHECK-NEXT:      scf.for %{{.*}} = %[[B]] to %[[E]] step %[[C1]] {
// CHECK:             memref.load %[[A]]

// Without `tile` (the kernel every group gets first): the plain nest only.
// PLAIN-LABEL: func.func @exp(
// PLAIN-NOT:     memref.alloca
// PLAIN-NOT:     scf.if
// PLAIN:         scf.for
func.func @exp(%a: tensor<?x?xf32>) -> tensor<?x?xf32> attributes {fusion.kernel} {
  %0 = aten.exp %a : tensor<?x?xf32> -> tensor<?x?xf32>
  func.return %0 : tensor<?x?xf32>
}

// -----

// Operands whose inner stride is the constant 0 (their type is 1 there) are
// read in place (hoisted); with no other operand there is no tiled nest at all.
// A 1-D kernel has nothing to tile.
// CHECK-LABEL: func.func @column(
// CHECK-NOT:     memref.alloca
// CHECK-NOT:     scf.if
// CHECK:         scf.for
// CHECK-LABEL: func.func @flat(
// CHECK-NOT:     memref.alloca
// CHECK-NOT:     scf.if
// CHECK:         scf.for
// PLAIN-LABEL: func.func @column(
// PLAIN-LABEL: func.func @flat(
func.func @column(%x: tensor<8x1xf32>, %y: tensor<8x1xf32>) -> tensor<8x1xf32> attributes {fusion.kernel} {
  %0 = aten.mul %x, %y : tensor<8x1xf32>, tensor<8x1xf32> -> tensor<8x1xf32>
  func.return %0 : tensor<8x1xf32>
}
func.func @flat(%x: tensor<8xf32>) -> tensor<8xf32> attributes {fusion.kernel} {
  %0 = aten.exp %x : tensor<8xf32> -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}
