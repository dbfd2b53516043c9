// RUN: fusec-opt %s --split-input-file -p fuse-concat-exits | filecheck %s --check-prefix=DEFAULT
// RUN: fusec-opt %s --split-input-file -p 'fuse-concat-exits{lone-copies=true}' | filecheck %s --check-prefix=COPIES

// The q, k, v gradients of a fused projection (attention's backward results,
// which no group computes) stacked back: with lone-copies the cat is a copy
// kernel; by default a `torch.cat`.
// DEFAULT-LABEL: func.func @stacked_gradients
// DEFAULT-NOT: fusion.group
// DEFAULT: aten.cat
// COPIES-LABEL: func.func @stacked_gradients
// COPIES-SAME: (%[[Q:.*]]: tensor<8x16xf32>, %[[K:.*]]: tensor<8x16xf32>, %[[V:.*]]: tensor<8x16xf32>)
// COPIES-NEXT: %[[C:.*]] = fusion.group (%[[A:.*]] = %[[Q]], %[[B:.*]] = %[[K]], %[[D:.*]] = %[[V]])
// COPIES-NEXT: %[[R:.*]] = aten.cat %[[A]], %[[B]], %[[D]] dim = 1
// COPIES-NEXT: fusion.yield %[[R]]
func.func @stacked_gradients(%q: tensor<8x16xf32>, %k: tensor<8x16xf32>, %v: tensor<8x16xf32>) -> tensor<8x48xf32> {
  %c = aten.cat %q, %k, %v dim = 1 : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x48xf32>
  func.return %c : tensor<8x48xf32>
}

// -----

// Parts of different shapes are not one index space: the cat stays.
// COPIES-LABEL: func.func @uneven_parts
// COPIES-NOT: fusion.group
// COPIES: aten.cat
func.func @uneven_parts(%a: tensor<8x16xf32>, %b: tensor<8x8xf32>) -> tensor<8x24xf32> {
  %c = aten.cat %a, %b dim = 1 : tensor<8x16xf32>, tensor<8x8xf32> -> tensor<8x24xf32>
  func.return %c : tensor<8x24xf32>
}
