// RUN: not fusec-opt %s -p outline-groups,lower-group-to-loops 2>&1 | filecheck %s

// A cat whose result the group reads is not an exit: it is not of the group's
// index space, and no kernel is built for it.
// CHECK: aten.cat inside a group must be an exit (its result used only by fusion.yield)
func.func @used_inside(%a: tensor<4xf32>) -> tensor<8xf32> {
  %r = fusion.group (%x = %a) : (tensor<4xf32>) -> (tensor<8xf32>) {
    %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
    %1 = aten.cat %0, %x dim = 0 : tensor<4xf32>, tensor<4xf32> -> tensor<8xf32>
    %2 = aten.tanh %1 : tensor<8xf32> -> tensor<8xf32>
    fusion.yield %2 : tensor<8xf32>
  }
  func.return %r : tensor<8xf32>
}
