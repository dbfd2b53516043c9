// RUN: fusec-opt %s -p 'lower-group-to-loops{tile=true}' --split-input-file | filecheck %s
// RUN: fusec-opt %s -p lower-group-to-loops --split-input-file | filecheck %s --check-prefix=PLAIN

// The tiled variant (`tile=true`, what the runtime builds for a launch with a
// transposed or expanded operand). Once per launch: is the operand transposed
// (stride 1 on dim 0, above 1 on dim 1) or expanded (a runtime 0 stride on dim
// 1, which is wider than 1)? Either sends the launch to 64 x 128 tiles, where
// the operand's tile is first copied into a stack buffer (a transposed one by
// 8 x 8 blocks: 8 vector loads along its stride-1 dim, three rounds of
// shuffles, 8 vector stores along buffer rows; an expanded one by filling
// rows; any other row by row) and the body reads it from there at
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
// CHECK-NEXT:              %[[L:.*]] = arith.constant 8 : index
// CHECK:                   %[[TR:.*]] = arith.remui %{{.*}}, %[[L]] : index
// CHECK-NEXT:              %[[TF:.*]] = arith.subi %[[T1]], %[[TR]] : index
// CHECK:                   %[[UR:.*]] = arith.remui %{{.*}}, %[[L]] : index
// CHECK-NEXT:              %[[UF:.*]] = arith.subi %[[U1]], %[[UR]] : index
// CHECK-NEXT:              scf.for %[[JB:.*]] = %[[U0]] to %[[UF]] step %[[L]] {
// CHECK-NEXT:                scf.for %[[IB:.*]] = %[[T0]] to %[[TF]] step %[[L]] {
// CHECK-NEXT:                  %[[JS:.*]] = arith.muli %[[JB]], %[[AS1]] : index
// CHECK-NEXT:                  %[[JO:.*]] = arith.addi %{{.*}}, %[[JS]] : index
// CHECK-NEXT:                  %[[AT0:.*]] = arith.addi %[[JO]], %[[IB]] : index
// CHECK-NEXT:                  %[[V0:.*]] = vector.load %[[A]][%[[AT0]]] : memref<?xf32>, vector<8xf32>
// CHECK-NEXT:                  %[[AT1:.*]] = arith.addi %[[AT0]], %[[AS1]] : index
// CHECK-NEXT:                  %[[V1:.*]] = vector.load %[[A]][%[[AT1]]] : memref<?xf32>, vector<8xf32>
// CHECK-COUNT-6:               vector.load %[[A]]
// CHECK-NEXT:                  %[[S0:.*]] = vector.shuffle %[[V0]], %[[V1]] [0, 8, 2, 10, 4, 12, 6, 14] : vector<8xf32>, vector<8xf32>
// CHECK-NEXT:                  vector.shuffle %[[V0]], %[[V1]] [1, 9, 3, 11, 5, 13, 7, 15]
// CHECK-COUNT-6:               vector.shuffle
// CHECK-NEXT:                  vector.shuffle {{.*}} [0, 1, 8, 9, 4, 5, 12, 13]
// CHECK-COUNT-7:               vector.shuffle
// CHECK-NEXT:                  %[[R0:.*]] = vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3, 8, 9, 10, 11]
// CHECK-COUNT-7:               vector.shuffle
// CHECK:                       %[[ROW0:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK-NEXT:                  %[[W:.*]] = arith.constant 128 : index
// CHECK-NEXT:                  vector.store %[[R0]], %[[ABUF]][%[[ROW0]]] : memref<?xf32>, vector<8xf32>
// CHECK-NEXT:                  %[[ROW1:.*]] = arith.addi %[[ROW0]], %[[W]] : index
// CHECK-NEXT:                  vector.store %{{.*}}, %[[ABUF]][%[[ROW1]]] : memref<?xf32>, vector<8xf32>
// CHECK-COUNT-6:               vector.store
// CHECK-NEXT:                }
// CHECK-NEXT:              }
// Rows left over (t in [tf, t1)) under the whole blocks' columns, then the
// columns left over, element by element along the operand's contiguous dim.
// CHECK-NEXT:              scf.for %{{.*}} = %[[U0]] to %[[UF]] step %[[C1]] {
// CHECK:                     scf.for %{{.*}} = %[[TF]] to %[[T1]] step %[[C1]] {
// CHECK:                       %[[W1:.*]] = memref.load %[[A]]
// CHECK-NEXT:                  memref.store %[[W1]], %[[ABUF]]
// CHECK:                   scf.for %{{.*}} = %[[UF]] to %[[U1]] step %[[C1]] {
// CHECK:                     scf.for %{{.*}} = %[[T0]] to %[[T1]] step %[[C1]] {
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
