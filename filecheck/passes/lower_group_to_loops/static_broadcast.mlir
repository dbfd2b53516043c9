// RUN: fusec-opt %s -p lower-group-to-loops --split-input-file | filecheck %s

// A dim that is 1 in an operand's type has stride 0: the offset of %x does not
// move in the inner loop (its load is loop-invariant), that of %y does not move
// in the outer one (it is rank 1, so its dim 0 is a broadcast dim too).
// CHECK-LABEL: func.func @bias(
// CHECK-SAME:    %[[B:.*]]: index, %[[E:.*]]: index, %{{.*}}: index, %[[N1:.*]]: index, %[[X:.*]]: memref<?xf32>, %[[XS0:.*]]: index, %[[XS1:.*]]: index, %[[Y:.*]]: memref<?xf32>, %[[YS0:.*]]: index, %[[YS1:.*]]: index, %[[O:.*]]: memref<?xf32>, %[[OS0:.*]]: index, %[[OS1:.*]]: index)
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK:         scf.for %[[I0:.*]] = %[[B]] to %[[E]]
// CHECK-NEXT:      %[[XR:.*]] = arith.muli %[[I0]], %[[XS0]]
// CHECK-NEXT:      %[[XO:.*]] = arith.addi %[[C0]], %[[XR]]
// CHECK-NEXT:      %[[OR:.*]] = arith.muli %[[I0]], %[[OS0]]
// CHECK-NEXT:      %[[OO:.*]] = arith.addi %[[C0]], %[[OR]]
// CHECK-NEXT:      scf.for %[[I1:.*]] = %[[C0]] to %[[N1]]
// CHECK-NEXT:        %[[YR:.*]] = arith.muli %[[I1]], %[[YS1]]
// CHECK-NEXT:        %[[YO:.*]] = arith.addi %[[C0]], %[[YR]]
// CHECK-NEXT:        %[[OR1:.*]] = arith.muli %[[I1]], %[[OS1]]
// CHECK-NEXT:        %[[OO1:.*]] = arith.addi %[[OO]], %[[OR1]]
// CHECK-NEXT:        memref.load %[[X]][%[[XO]]]
// CHECK-NEXT:        memref.load %[[Y]][%[[YO]]]
// CHECK:             memref.store %{{.*}}, %[[O]][%[[OO1]]]
func.func @bias(%x: tensor<4x1xf32>, %y: tensor<3xf32>) -> tensor<4x3xf32> attributes {fusion.kernel} {
  %0 = aten.add %x, %y : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}
