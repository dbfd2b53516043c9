// RUN: fusec-opt %s --split-input-file | filecheck %s
// RUN: fusec-opt %s --split-input-file --print-op-generic | fusec-opt --split-input-file | filecheck %s

// The aten view and layout ops (trait ShapeOp).

// CHECK-LABEL: func.func @expand
// CHECK-SAME: (%[[X:.*]]: tensor<1x3xf32>, %[[Z:.*]]: tensor<f32>)
// CHECK: %[[A:.*]] = aten.expand %[[X]] size = [4, -1] : tensor<1x3xf32> -> tensor<4x3xf32>
// CHECK-NEXT: %[[B:.*]] = aten.expand %[[X]] size = [2, 5, 3] : tensor<1x3xf32> -> tensor<2x5x3xf32>
// CHECK-NEXT: %[[C:.*]] = aten.expand %[[Z]] size = [7] : tensor<f32> -> tensor<7xf32>
// CHECK-NEXT: func.return %[[A]], %[[B]], %[[C]] : tensor<4x3xf32>, tensor<2x5x3xf32>, tensor<7xf32>
func.func @expand(%x: tensor<1x3xf32>, %z: tensor<f32>) -> (tensor<4x3xf32>, tensor<2x5x3xf32>, tensor<7xf32>) {
  %a = aten.expand %x size = [4, -1] : tensor<1x3xf32> -> tensor<4x3xf32>
  %b = aten.expand %x size = [2, 5, 3] : tensor<1x3xf32> -> tensor<2x5x3xf32>
  %c = aten.expand %z size = [7] : tensor<f32> -> tensor<7xf32>
  func.return %a, %b, %c : tensor<4x3xf32>, tensor<2x5x3xf32>, tensor<7xf32>
}

// -----

// CHECK-LABEL: func.func @view_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32>)
// CHECK: %[[A:.*]] = aten.view %[[X]] : tensor<4x4xf32> -> tensor<16xf32>
// CHECK-NEXT: %[[B:.*]] = aten.reshape %[[X]] : tensor<4x4xf32> -> tensor<2x8xf32>
// CHECK-NEXT: %[[C:.*]] = aten.reshape %[[X]] : tensor<4x4xf32> -> tensor<?x4xf32>
// CHECK-NEXT: func.return %[[A]], %[[B]], %[[C]] : tensor<16xf32>, tensor<2x8xf32>, tensor<?x4xf32>
func.func @view_reshape(%x: tensor<4x4xf32>) -> (tensor<16xf32>, tensor<2x8xf32>, tensor<?x4xf32>) {
  %a = aten.view %x : tensor<4x4xf32> -> tensor<16xf32>
  %b = aten.reshape %x : tensor<4x4xf32> -> tensor<2x8xf32>
  %c = aten.reshape %x : tensor<4x4xf32> -> tensor<?x4xf32>
  func.return %a, %b, %c : tensor<16xf32>, tensor<2x8xf32>, tensor<?x4xf32>
}

// -----

// CHECK-LABEL: func.func @unsqueeze
// CHECK-SAME: (%[[X:.*]]: tensor<3xf32>, %[[Z:.*]]: tensor<i1>)
// CHECK: %[[A:.*]] = aten.unsqueeze %[[X]] dim = 0 : tensor<3xf32> -> tensor<1x3xf32>
// CHECK-NEXT: %[[B:.*]] = aten.unsqueeze %[[X]] dim = -1 : tensor<3xf32> -> tensor<3x1xf32>
// CHECK-NEXT: %[[C:.*]] = aten.unsqueeze %[[Z]] dim = 0 : tensor<i1> -> tensor<1xi1>
// CHECK-NEXT: func.return %[[A]], %[[B]], %[[C]] : tensor<1x3xf32>, tensor<3x1xf32>, tensor<1xi1>
func.func @unsqueeze(%x: tensor<3xf32>, %z: tensor<i1>) -> (tensor<1x3xf32>, tensor<3x1xf32>, tensor<1xi1>) {
  %a = aten.unsqueeze %x dim = 0 : tensor<3xf32> -> tensor<1x3xf32>
  %b = aten.unsqueeze %x dim = -1 : tensor<3xf32> -> tensor<3x1xf32>
  %c = aten.unsqueeze %z dim = 0 : tensor<i1> -> tensor<1xi1>
  func.return %a, %b, %c : tensor<1x3xf32>, tensor<3x1xf32>, tensor<1xi1>
}

// -----

// Without dim every size-1 dim goes; with dim only that one, if it is size 1.
// CHECK-LABEL: func.func @squeeze
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x1xf32>)
// CHECK: %[[A:.*]] = aten.squeeze %[[X]] : tensor<1x3x1xf32> -> tensor<3xf32>
// CHECK-NEXT: %[[B:.*]] = aten.squeeze %[[X]] dim = 0 : tensor<1x3x1xf32> -> tensor<3x1xf32>
// CHECK-NEXT: %[[C:.*]] = aten.squeeze %[[X]] dim = 1 : tensor<1x3x1xf32> -> tensor<1x3x1xf32>
// CHECK-NEXT: func.return %[[A]], %[[B]], %[[C]] : tensor<3xf32>, tensor<3x1xf32>, tensor<1x3x1xf32>
func.func @squeeze(%x: tensor<1x3x1xf32>) -> (tensor<3xf32>, tensor<3x1xf32>, tensor<1x3x1xf32>) {
  %a = aten.squeeze %x : tensor<1x3x1xf32> -> tensor<3xf32>
  %b = aten.squeeze %x dim = 0 : tensor<1x3x1xf32> -> tensor<3x1xf32>
  %c = aten.squeeze %x dim = 1 : tensor<1x3x1xf32> -> tensor<1x3x1xf32>
  func.return %a, %b, %c : tensor<3xf32>, tensor<3x1xf32>, tensor<1x3x1xf32>
}

// -----

// CHECK-LABEL: func.func @permute_transpose
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK: %[[A:.*]] = aten.permute %[[X]] dims = [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
// CHECK-NEXT: %[[B:.*]] = aten.transpose %[[X]] dim0 = 0 dim1 = -1 : tensor<2x3x4xf32> -> tensor<4x3x2xf32>
// CHECK-NEXT: func.return %[[A]], %[[B]] : tensor<4x2x3xf32>, tensor<4x3x2xf32>
func.func @permute_transpose(%x: tensor<2x3x4xf32>) -> (tensor<4x2x3xf32>, tensor<4x3x2xf32>) {
  %a = aten.permute %x dims = [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %b = aten.transpose %x dim0 = 0 dim1 = -1 : tensor<2x3x4xf32> -> tensor<4x3x2xf32>
  func.return %a, %b : tensor<4x2x3xf32>, tensor<4x3x2xf32>
}

// -----

// The last chunk may be smaller.
// CHECK-LABEL: func.func @chunk
// CHECK-SAME: (%[[X:.*]]: tensor<3x8xf32>, %[[Y:.*]]: tensor<5xi64>)
// CHECK: %[[A:.*]], %[[B:.*]] = aten.chunk %[[X]] chunks = 2 dim = 1 : tensor<3x8xf32> -> tensor<3x4xf32>, tensor<3x4xf32>
// CHECK-NEXT: %[[C:.*]], %[[D:.*]], %[[E:.*]] = aten.chunk %[[Y]] chunks = 3 dim = 0 : tensor<5xi64> -> tensor<2xi64>, tensor<2xi64>, tensor<1xi64>
// CHECK-NEXT: func.return %[[A]], %[[B]], %[[E]] : tensor<3x4xf32>, tensor<3x4xf32>, tensor<1xi64>
func.func @chunk(%x: tensor<3x8xf32>, %y: tensor<5xi64>) -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<1xi64>) {
  %a, %b = aten.chunk %x chunks = 2 dim = 1 : tensor<3x8xf32> -> tensor<3x4xf32>, tensor<3x4xf32>
  %c, %d, %e = aten.chunk %y chunks = 3 dim = 0 : tensor<5xi64> -> tensor<2xi64>, tensor<2xi64>, tensor<1xi64>
  func.return %a, %b, %e : tensor<3x4xf32>, tensor<3x4xf32>, tensor<1xi64>
}

// -----

// split_size or explicit sizes.
// CHECK-LABEL: func.func @split
// CHECK-SAME: (%[[X:.*]]: tensor<3x8xf32>)
// CHECK: %[[A:.*]], %[[B:.*]], %[[C:.*]] = aten.split %[[X]] split_size = 3 dim = 1 : tensor<3x8xf32> -> tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x2xf32>
// CHECK-NEXT: %[[D:.*]], %[[E:.*]] = aten.split %[[X]] sizes = [1, 7] dim = -1 : tensor<3x8xf32> -> tensor<3x1xf32>, tensor<3x7xf32>
// CHECK-NEXT: func.return %[[C]], %[[E]] : tensor<3x2xf32>, tensor<3x7xf32>
func.func @split(%x: tensor<3x8xf32>) -> (tensor<3x2xf32>, tensor<3x7xf32>) {
  %a, %b, %c = aten.split %x split_size = 3 dim = 1 : tensor<3x8xf32> -> tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x2xf32>
  %d, %e = aten.split %x sizes = [1, 7] dim = -1 : tensor<3x8xf32> -> tensor<3x1xf32>, tensor<3x7xf32>
  func.return %c, %e : tensor<3x2xf32>, tensor<3x7xf32>
}

// -----

// dtypes promote as torch.cat does.
// CHECK-LABEL: func.func @cat
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[Y:.*]]: tensor<2x5xf16>)
// CHECK: %[[A:.*]] = aten.cat %[[X]], %[[Y]] dim = 1 : tensor<2x3xf32>, tensor<2x5xf16> -> tensor<2x8xf32>
// CHECK-NEXT: %[[B:.*]] = aten.cat %[[X]], %[[X]] dim = 0 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<4x3xf32>
// CHECK-NEXT: %[[C:.*]] = aten.cat %[[X]] dim = -1 : tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT: func.return %[[A]], %[[B]], %[[C]] : tensor<2x8xf32>, tensor<4x3xf32>, tensor<2x3xf32>
func.func @cat(%x: tensor<2x3xf32>, %y: tensor<2x5xf16>) -> (tensor<2x8xf32>, tensor<4x3xf32>, tensor<2x3xf32>) {
  %a = aten.cat %x, %y dim = 1 : tensor<2x3xf32>, tensor<2x5xf16> -> tensor<2x8xf32>
  %b = aten.cat %x, %x dim = 0 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<4x3xf32>
  %c = aten.cat %x dim = -1 : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %a, %b, %c : tensor<2x8xf32>, tensor<4x3xf32>, tensor<2x3xf32>
}

// -----

// Slice bounds clip as in Python.
// CHECK-LABEL: func.func @narrow_slice
// CHECK-SAME: (%[[X:.*]]: tensor<4x6xf32>)
// CHECK: %[[A:.*]] = aten.narrow %[[X]] dim = 1 start = 2 length = 3 : tensor<4x6xf32> -> tensor<4x3xf32>
// CHECK-NEXT: %[[B:.*]] = aten.narrow %[[X]] dim = 0 start = -2 length = 2 : tensor<4x6xf32> -> tensor<2x6xf32>
// CHECK-NEXT: %[[C:.*]] = aten.slice %[[X]] dim = 1 start = 1 end = 6 step = 2 : tensor<4x6xf32> -> tensor<4x3xf32>
// CHECK-NEXT: %[[D:.*]] = aten.slice %[[X]] dim = 0 start = -3 end = 9223372036854775807 step = 1 : tensor<4x6xf32> -> tensor<3x6xf32>
// CHECK-NEXT: func.return %[[A]], %[[B]], %[[C]], %[[D]] : tensor<4x3xf32>, tensor<2x6xf32>, tensor<4x3xf32>, tensor<3x6xf32>
func.func @narrow_slice(%x: tensor<4x6xf32>) -> (tensor<4x3xf32>, tensor<2x6xf32>, tensor<4x3xf32>, tensor<3x6xf32>) {
  %a = aten.narrow %x dim = 1 start = 2 length = 3 : tensor<4x6xf32> -> tensor<4x3xf32>
  %b = aten.narrow %x dim = 0 start = -2 length = 2 : tensor<4x6xf32> -> tensor<2x6xf32>
  %c = aten.slice %x dim = 1 start = 1 end = 6 step = 2 : tensor<4x6xf32> -> tensor<4x3xf32>
  %d = aten.slice %x dim = 0 start = -3 end = 9223372036854775807 step = 1 : tensor<4x6xf32> -> tensor<3x6xf32>
  func.return %a, %b, %c, %d : tensor<4x3xf32>, tensor<2x6xf32>, tensor<4x3xf32>, tensor<3x6xf32>
}
