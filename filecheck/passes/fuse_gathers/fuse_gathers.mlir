// RUN: fusec-opt %s --split-input-file -p fuse-gathers | filecheck %s

// GPT-2's first kernel: token rows plus positions. The lookup joins the group,
// which takes the table and the ids instead of the rows.
// CHECK-LABEL: func.func @token_rows
// CHECK-SAME: (%[[W:.*]]: tensor<100x32xf32>, %[[IDS:.*]]: tensor<2x8xi64>, %[[P:.*]]: tensor<1x8x32xf32>)
// CHECK-NEXT: %[[R:.*]] = fusion.group (%[[B:.*]] = %[[P]], %[[T:.*]] = %[[W]], %[[I:.*]] = %[[IDS]]) : (tensor<1x8x32xf32>, tensor<100x32xf32>, tensor<2x8xi64>) -> (tensor<2x8x32xf32>) {
// CHECK-NEXT:   %[[E:.*]] = aten.embedding %[[T]], %[[I]] : tensor<100x32xf32>, tensor<2x8xi64> -> tensor<2x8x32xf32>
// CHECK-NEXT:   %[[S:.*]] = aten.add %[[E]], %[[B]]
// CHECK-NEXT:   fusion.yield %[[S]] : tensor<2x8x32xf32>
// CHECK-NEXT: }
// CHECK-NEXT: func.return %[[R]]
func.func @token_rows(%w: tensor<100x32xf32>, %ids: tensor<2x8xi64>, %p: tensor<1x8x32xf32>) -> tensor<2x8x32xf32> {
  %e = aten.embedding %w, %ids : tensor<100x32xf32>, tensor<2x8xi64> -> tensor<2x8x32xf32>
  %r = fusion.group (%a = %e, %b = %p) : (tensor<2x8x32xf32>, tensor<1x8x32xf32>) -> (tensor<2x8x32xf32>) {
    %s = aten.add %a, %b : tensor<2x8x32xf32>, tensor<1x8x32xf32> -> tensor<2x8x32xf32>
    fusion.yield %s : tensor<2x8x32xf32>
  }
  func.return %r : tensor<2x8x32xf32>
}

// -----

// Llama saves the rows for the norm's backward: a reader after the group gets
// them as an extra output of it.
// CHECK-LABEL: func.func @rows_also_returned
// CHECK: %[[R:.*]], %[[E:.*]] = fusion.group
// CHECK: %[[IN:.*]] = aten.embedding
// CHECK: fusion.yield %{{.*}}, %[[IN]] : tensor<2x8x32xf32>, tensor<2x8x32xf32>
// CHECK: func.return %[[R]], %[[E]]
func.func @rows_also_returned(%w: tensor<100x32xf32>, %ids: tensor<2x8xi64>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>) {
  %e = aten.embedding %w, %ids : tensor<100x32xf32>, tensor<2x8xi64> -> tensor<2x8x32xf32>
  %r = fusion.group (%a = %e) : (tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>) {
    %s = aten.neg %a : tensor<2x8x32xf32> -> tensor<2x8x32xf32>
    fusion.yield %s : tensor<2x8x32xf32>
  }
  func.return %r, %e : tensor<2x8x32xf32>, tensor<2x8x32xf32>
}

// -----

// Left alone: rows read before the group (by a product), and no group at all.
// CHECK-LABEL: func.func @left_alone
// CHECK-NEXT: %[[E:.*]] = aten.embedding
// CHECK-NEXT: aten.mm %[[E]]
// CHECK: fusion.group (%{{.*}} = %[[E]])
// CHECK: %[[F:.*]] = aten.embedding
// CHECK-NEXT: func.return
func.func @left_alone(%w: tensor<100x32xf32>, %ids: tensor<8xi64>, %m: tensor<32x32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>) {
  %e = aten.embedding %w, %ids : tensor<100x32xf32>, tensor<8xi64> -> tensor<8x32xf32>
  %p = aten.mm %e, %m : tensor<8x32xf32>, tensor<32x32xf32> -> tensor<8x32xf32>
  %r = fusion.group (%a = %e) : (tensor<8x32xf32>) -> (tensor<8x32xf32>) {
    %s = aten.neg %a : tensor<8x32xf32> -> tensor<8x32xf32>
    fusion.yield %s : tensor<8x32xf32>
  }
  %f = aten.embedding %w, %ids : tensor<100x32xf32>, tensor<8xi64> -> tensor<8x32xf32>
  func.return %p, %r, %f : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>
}

// -----

// Left alone: the table is written (an in-place update kept as `aten.copy_`)
// between the lookup and the group; in the group the lookup would read the
// new rows.
// CHECK-LABEL: func.func @table_written_between
// CHECK-NEXT: %[[E:.*]] = aten.embedding
// CHECK-NEXT: aten.copy_
// CHECK-NEXT: fusion.group (%{{.*}} = %[[E]])
func.func @table_written_between(%w: tensor<100x32xf32>, %ids: tensor<8xi64>, %n: tensor<100x32xf32>) -> tensor<8x32xf32> {
  %e = aten.embedding %w, %ids : tensor<100x32xf32>, tensor<8xi64> -> tensor<8x32xf32>
  aten.copy_ %w, %n : tensor<100x32xf32>, tensor<100x32xf32>
  %r = fusion.group (%a = %e) : (tensor<8x32xf32>) -> (tensor<8x32xf32>) {
    %s = aten.neg %a : tensor<8x32xf32> -> tensor<8x32xf32>
    fusion.yield %s : tensor<8x32xf32>
  }
  func.return %r : tensor<8x32xf32>
}
