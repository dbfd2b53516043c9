// RUN: fusec-opt %s --split-input-file --fuse | filecheck %s

// Softmax: both reductions, the prologue and the epilogue share one group.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT:    %[[G:.*]] = fusion.group (%[[A:.*]] = %[[X]]) : (tensor<4x8xf32>) -> (tensor<4x8xf32>) {
// CHECK-NEXT:      %[[M:.*]] = aten.amax %[[A]] dims = [1] keepdim = true
// CHECK-NEXT:      %[[D:.*]] = aten.sub %[[A]], %[[M]]
// CHECK-NEXT:      %[[E:.*]] = aten.exp %[[D]]
// CHECK-NEXT:      %[[S:.*]] = aten.sum %[[E]] dims = [1] keepdim = true
// CHECK-NEXT:      %[[I:.*]] = aten.reciprocal %[[S]]
// CHECK-NEXT:      %[[R:.*]] = aten.mul %[[E]], %[[I]]
// CHECK-NEXT:      fusion.yield %[[R]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[G]]
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = aten.softmax %x dim = -1 : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @log_softmax
// CHECK-NEXT:    %[[G:.*]] = fusion.group
// CHECK:           aten.amax
// CHECK:           aten.sum
// CHECK:           aten.log
// CHECK:           fusion.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[G]]
func.func @log_softmax(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %r = aten.log_softmax %x dim = 1 : tensor<4x8xf16> -> tensor<4x8xf16>
  func.return %r : tensor<4x8xf16>
}

// -----

// layer_norm: two means (two passes), scale and shift read the weight and bias.
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME:    (%[[X:.*]]: tensor<2x4x8xf32>, %[[W:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK-NEXT:    %[[G:.*]] = fusion.group ({{.*}}) : (tensor<8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>) {
// CHECK-COUNT-2:   aten.mean %{{.*}} dims = [2] keepdim = true
// CHECK:           aten.rsqrt
// CHECK:           fusion.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[G]]
func.func @layer_norm(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %r = aten.layer_norm %x, %w, %b normalized_shape = [8] eps = 1.0e-05 : f64 : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
  func.return %r : tensor<2x4x8xf32>
}

// -----

// RMSNorm written out, with a mean that drops its dim and an unsqueeze that puts
// it back: still one group (and the square is a product).
// CHECK-LABEL: func.func @rms_norm
// CHECK-NEXT:    %[[G:.*]] = fusion.group
// CHECK:           %[[SQ:.*]] = aten.mul %[[X:.*]], %[[X]]
// CHECK-NEXT:      %[[M:.*]] = aten.mean %[[SQ]] dims = [1] keepdim = true : tensor<4x8xf32> -> tensor<4x1xf32>
// CHECK:           aten.rsqrt
// CHECK:           fusion.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[G]]
func.func @rms_norm(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> tensor<4x8xf32> {
  %two = arith.constant 2.0 : f64
  %p = aten.pow %x, %two : tensor<4x8xf32>, f64 -> tensor<4x8xf32>
  %m = aten.mean %p dims = [-1] : tensor<4x8xf32> -> tensor<4xf32>
  %u = aten.unsqueeze %m dim = -1 : tensor<4xf32> -> tensor<4x1xf32>
  %eps = arith.constant 1.0e-06 : f64
  %a = aten.add %u, %eps : tensor<4x1xf32>, f64 -> tensor<4x1xf32>
  %r = aten.rsqrt %a : tensor<4x1xf32> -> tensor<4x1xf32>
  %y = aten.mul %x, %r : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %z = aten.mul %y, %w : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  func.return %z : tensor<4x8xf32>
}

// -----

// A bias gradient: the sum over the batch is an extra output of the group that
// computes the pointwise gradient; the squeeze to [8] is a view outside.
// CHECK-LABEL: func.func @bias_grad
// CHECK-NEXT:    %[[DB:.*]], %[[H:.*]] = fusion.group ({{.*}}) : (tensor<16x8xf32>, tensor<16x8xf32>) -> (tensor<1x8xf32>, tensor<16x8xf32>) {
// CHECK:           %[[HI:.*]] = aten.mul
// CHECK-NEXT:      %[[S:.*]] = aten.sum %[[HI]] dims = [0] keepdim = true
// CHECK-NEXT:      fusion.yield %[[S]], %[[HI]]
// CHECK:         %[[SQ:.*]] = aten.squeeze %[[DB]] dim = 0 : tensor<1x8xf32> -> tensor<8xf32>
// CHECK-NEXT:    func.return %[[H]], %[[SQ]]
func.func @bias_grad(%g: tensor<16x8xf32>, %y: tensor<16x8xf32>) -> (tensor<16x8xf32>, tensor<8xf32>) {
  %s = aten.sigmoid %y : tensor<16x8xf32> -> tensor<16x8xf32>
  %h = aten.mul %g, %s : tensor<16x8xf32>, tensor<16x8xf32> -> tensor<16x8xf32>
  %db = aten.sum %h dims = [0] : tensor<16x8xf32> -> tensor<8xf32>
  func.return %h, %db : tensor<16x8xf32>, tensor<8xf32>
}

// -----

// Reductions over different dims need different loop nests: two groups.
// CHECK-LABEL: func.func @two_domains
// CHECK:         %[[G1:.*]] = fusion.group
// CHECK:           aten.sum %{{.*}} dims = [1] keepdim = true
// CHECK:         fusion.group
// CHECK-NOT:       aten.sum %{{.*}} dims = [1]
// CHECK:           aten.sum %{{.*}} dims = [0] keepdim = true
func.func @two_domains(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = aten.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %a = aten.sum %e dims = [1] keepdim = true : tensor<4x8xf32> -> tensor<4x1xf32>
  %b = aten.div %e, %a : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %c = aten.sum %b dims = [0] keepdim = true : tensor<4x8xf32> -> tensor<1x8xf32>
  %d = aten.mul %b, %c : tensor<4x8xf32>, tensor<1x8xf32> -> tensor<4x8xf32>
  func.return %d : tensor<4x8xf32>
}

// -----

// An epilogue that would grow the index space past the reduction's input does not join.
// CHECK-LABEL: func.func @larger_epilogue
// CHECK:         %[[G:.*]] = fusion.group
// CHECK:           aten.sum
// CHECK:           fusion.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %{{.*}} = aten.mul %[[G]], %{{.*}} : tensor<4x1xf32>, tensor<4x5xf32> -> tensor<4x5xf32>
func.func @larger_epilogue(%x: tensor<4x8xf32>, %y: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %e = aten.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %a = aten.sum %e dims = [1] keepdim = true : tensor<4x8xf32> -> tensor<4x1xf32>
  %b = aten.mul %a, %y : tensor<4x1xf32>, tensor<4x5xf32> -> tensor<4x5xf32>
  func.return %b : tensor<4x5xf32>
}

// -----

// A reduction of a tensor no fusible op produces (an argument here, a matmul's
// result in a backward) moves up into a group that reads the same tensor and
// reduces over the same domain: a layer norm's bias gradient joins its weight
// gradient's group, so no sum runs outside a kernel.
// CHECK-LABEL: func.func @bias_beside_weight_grad
// CHECK-SAME:    (%[[G:.*]]: tensor<4x37x192xf32>, %[[H:.*]]: tensor<4x37x192xf32>)
// CHECK-NEXT:    %[[GW:.*]], %[[GB:.*]] = fusion.group (%[[A:.*]] = %[[G]], %[[B:.*]] = %[[H]])
// CHECK-NEXT:      %[[S:.*]] = aten.sum %[[A]] dims = [0, 1] keepdim = true
// CHECK-NEXT:      %[[P:.*]] = aten.mul %[[A]], %[[B]]
// CHECK-NEXT:      %[[W:.*]] = aten.sum %[[P]] dims = [0, 1] keepdim = true
// CHECK-NEXT:      fusion.yield %[[W]], %[[S]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[GW]], %[[GB]]
func.func @bias_beside_weight_grad(%g: tensor<4x37x192xf32>, %h: tensor<4x37x192xf32>) -> (tensor<1x1x192xf32>, tensor<1x1x192xf32>) {
  %p = aten.mul %g, %h : tensor<4x37x192xf32>, tensor<4x37x192xf32> -> tensor<4x37x192xf32>
  %gw = aten.sum %p dims = [0, 1] keepdim = true : tensor<4x37x192xf32> -> tensor<1x1x192xf32>
  %gb = aten.sum %g dims = [0, 1] keepdim = true : tensor<4x37x192xf32> -> tensor<1x1x192xf32>
  func.return %gw, %gb : tensor<1x1x192xf32>, tensor<1x1x192xf32>
}

// -----

// It stays out of a group over another domain (a row reduction of the same
// tensor), and out of one across a write that may change what it reads: each
// such sum is then a group of its own (`lone-reductions`), where it was.
// CHECK-LABEL: func.func @sibling_reduction_refused
// CHECK:         fusion.group
// CHECK:           aten.amax %{{.*}} dims = [2]
// CHECK:         fusion.yield
// CHECK:         fusion.group (%{{.*}} = %[[G:[^)]*]])
// CHECK-NEXT:      aten.sum %{{.*}} dims = [0, 1] keepdim = true
// CHECK-NEXT:      fusion.yield
// CHECK:         fusion.group
// CHECK:           aten.mul
// CHECK-NEXT:      aten.sum %{{.*}} dims = [0, 1] keepdim = true
// CHECK-NEXT:      fusion.yield
// CHECK:         aten.copy_
// CHECK-NEXT:    fusion.group
// CHECK-NEXT:      aten.sum %{{.*}} dims = [0, 1] keepdim = true
// CHECK-NEXT:      fusion.yield
func.func @sibling_reduction_refused(%g: tensor<4x37x192xf32>, %h: tensor<4x37x192xf32>) -> (tensor<4x37x1xf32>, tensor<1x1x192xf32>, tensor<1x1x192xf32>, tensor<1x1x192xf32>) {
  %e = aten.exp %g : tensor<4x37x192xf32> -> tensor<4x37x192xf32>
  %m = aten.amax %e dims = [2] keepdim = true : tensor<4x37x192xf32> -> tensor<4x37x1xf32>
  %s = aten.sum %g dims = [0, 1] keepdim = true : tensor<4x37x192xf32> -> tensor<1x1x192xf32>
  %p = aten.mul %h, %h : tensor<4x37x192xf32>, tensor<4x37x192xf32> -> tensor<4x37x192xf32>
  %w = aten.sum %p dims = [0, 1] keepdim = true : tensor<4x37x192xf32> -> tensor<1x1x192xf32>
  aten.copy_ %h, %g : tensor<4x37x192xf32>, tensor<4x37x192xf32>
  %b = aten.sum %h dims = [0, 1] keepdim = true : tensor<4x37x192xf32> -> tensor<1x1x192xf32>
  func.return %m, %s, %w, %b : tensor<4x37x1xf32>, tensor<1x1x192xf32>, tensor<1x1x192xf32>, tensor<1x1x192xf32>
}

// -----

// A reduction that fuses with nothing and keeps some dims is a group of its own
// (a bias gradient: the column sum of a matmul's result); a sum to one value
// stays PyTorch's, which splits it over threads.
// CHECK-LABEL: func.func @lone_reductions
// CHECK-SAME:    (%[[A:.*]]: tensor<148x192xf32>, %[[B:.*]]: tensor<192x192xf32>)
// CHECK:         %[[MM:.*]] = aten.mm %[[A]], %[[B]]
// CHECK-NEXT:    %[[GB:.*]] = fusion.group (%[[X:.*]] = %[[MM]]) : (tensor<148x192xf32>) -> (tensor<1x192xf32>) {
// CHECK-NEXT:      %[[S:.*]] = aten.sum %[[X]] dims = [0] keepdim = true
// CHECK-NEXT:      fusion.yield %[[S]]
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[SQ:.*]] = aten.squeeze %[[GB]] dim = 0
// CHECK-NEXT:    %[[ALL:.*]] = aten.sum %[[MM]] dims = [0, 1] keepdim = true
// CHECK-NOT:     fusion.group
// CHECK:         func.return %[[SQ]]
func.func @lone_reductions(%a: tensor<148x192xf32>, %b: tensor<192x192xf32>) -> (tensor<192xf32>, tensor<f32>) {
  %mm = aten.mm %a, %b : tensor<148x192xf32>, tensor<192x192xf32> -> tensor<148x192xf32>
  %db = aten.sum %mm dims = [0] : tensor<148x192xf32> -> tensor<192xf32>
  %all = aten.sum %mm dims = [0, 1] : tensor<148x192xf32> -> tensor<f32>
  func.return %db, %all : tensor<192xf32>, tensor<f32>
}
