// RUN: fusec-opt %s -p 'lower-group-to-loops{tile=true}' --split-input-file | filecheck %s
// RUN: fusec-opt %s -p 'lower-group-to-loops{tile=true vector_bits=512}' --split-input-file | filecheck %s --check-prefix=WIDE

// A transposed operand's blocks are as wide as a register holds of its
// element type, at most 8: 256-bit registers take 8 x 8 f32 and 4 x 4 f64
// blocks, 512-bit ones 8 x 8 of both; 16-bit types stop at 8.
// CHECK-LABEL: func.func @widths(
// CHECK:         vector.load %{{.*}} : memref<?xf32>, vector<8xf32>
// CHECK:         vector.load %{{.*}} : memref<?xf64>, vector<4xf64>
// CHECK:         vector.load %{{.*}} : memref<?xbf16>, vector<8xbf16>
// WIDE-LABEL:  func.func @widths(
// WIDE:          vector.load %{{.*}} : memref<?xf32>, vector<8xf32>
// WIDE:          vector.load %{{.*}} : memref<?xf64>, vector<8xf64>
// WIDE:          vector.load %{{.*}} : memref<?xbf16>, vector<8xbf16>
func.func @widths(%x: tensor<?x?xf32>, %y: tensor<?x?xf64>, %z: tensor<?x?xbf16>) -> tensor<?x?xf64> attributes {fusion.kernel} {
  %0 = aten.add %x, %y : tensor<?x?xf32>, tensor<?x?xf64> -> tensor<?x?xf64>
  %1 = aten.add %0, %z : tensor<?x?xf64>, tensor<?x?xbf16> -> tensor<?x?xf64>
  func.return %1 : tensor<?x?xf64>
}

// -----

// bool (a byte in memory, i1 in registers) is copied element by element.
// CHECK-LABEL: func.func @flags(
// CHECK-NOT:     vector.load
// CHECK:         func.return
// WIDE-LABEL:  func.func @flags(
// WIDE-NOT:      vector.load
// WIDE:          func.return
func.func @flags(%x: tensor<?x?xi1>, %y: tensor<?x?xi1>) -> tensor<?x?xi1> attributes {fusion.kernel} {
  %0 = aten.logical_and %x, %y : tensor<?x?xi1>, tensor<?x?xi1> -> tensor<?x?xi1>
  func.return %0 : tensor<?x?xi1>
}
