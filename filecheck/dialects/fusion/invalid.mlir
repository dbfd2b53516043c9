// RUN: fusec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Every verifier rule of fusion.group and fusion.yield.

// The generic form can give the body a different number of arguments.
// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'fusion.group' op fusion.group has 1 inputs but its body takes 2 arguments
func.func @arity(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = "fusion.group"(%a) ({
  ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>):
    "fusion.yield"(%x) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'fusion.group' op fusion.group input #0 has type tensor<4xf32> but body argument #0 has type tensor<4xf16>
func.func @arg_type(%a: tensor<4xf32>) -> tensor<4xf16> {
  %r = "fusion.group"(%a) ({
  ^bb0(%x: tensor<4xf16>):
    "fusion.yield"(%x) : (tensor<4xf16>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf16>
  func.return %r : tensor<4xf16>
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'fusion.group' op fusion.yield gives (tensor<4xf32>) but the group returns (tensor<4xf32>, tensor<4xf32>)
func.func @yield_arity(%a: tensor<4xf32>) {
  %r, %s = fusion.group (%x = %a) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    fusion.yield %x : tensor<4xf32>
  }
  func.return
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'fusion.group' op fusion.yield gives (tensor<4xf32>) but the group returns (tensor<4xf16>)
func.func @yield_type(%a: tensor<4xf32>) {
  %r = fusion.group (%x = %a) : (tensor<4xf32>) -> (tensor<4xf16>) {
    fusion.yield %x : tensor<4xf32>
  }
  func.return
}

// -----

// A body must end with fusion.yield (here the block is empty).
// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'fusion.group' op fusion.group body must end with fusion.yield
func.func @missing_yield(%a: tensor<4xf32>) {
  "fusion.group"(%a) ({
  ^bb0(%x: tensor<4xf32>):
  }) : (tensor<4xf32>) -> ()
  func.return
}

// -----

// fusion.yield only ends a fusion.group.
// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'fusion.yield' op 'fusion.yield' expects parent op 'fusion.group'
func.func @yield_outside(%a: tensor<4xf32>) {
  fusion.yield %a : tensor<4xf32>
}

// -----

// A verifier error inside a group points at the inner op.
// CHECK: {{.*}}.mlir:[[# @LINE + 3]]:5: error: 'aten.add' op shapes [4] and [3] cannot be broadcast (dimension 0 is 4 and 3)
func.func @inner_error(%a: tensor<4xf32>, %b: tensor<3xf32>) {
  fusion.group (%x = %a, %y = %b) : (tensor<4xf32>, tensor<3xf32>) -> () {
    %0 = aten.add %x, %y : tensor<4xf32>, tensor<3xf32> -> tensor<4xf32>
    fusion.yield
  }
  func.return
}

// -----

// The group is isolated from above: its body sees only its block arguments.
// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'fusion.group' op Operation using value defined out of its IsolatedFromAbove parent: NegOp
func.func @not_isolated(%a: tensor<4xf32>) {
  fusion.group () : () -> () {
    %0 = aten.neg %a : tensor<4xf32> -> tensor<4xf32>
    fusion.yield
  }
  func.return
}

// -----

// The header binds as many values as it lists types.
// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:16: error: fusion.group binds 2 inputs but lists 1 types
func.func @header_types(%a: tensor<4xf32>) {
  fusion.group (%x = %a, %y = %a) : (tensor<4xf32>) -> () {
    fusion.yield
  }
  func.return
}

// -----

// A group's operand cannot be its own result (MLIR's dominance rule).
// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'fusion.group' op operand #0 is used before it is defined
func.func @own_result(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = fusion.group (%x = %0) : (tensor<4xf32>) -> (tensor<4xf32>) {
    fusion.yield %x : tensor<4xf32>
  }
  func.return %0 : tensor<4xf32>
}

// -----

// Nor the result of a later op of its block.
// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'fusion.group' op operand #1 is used before it is defined
func.func @later_result(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = fusion.group (%x = %a, %y = %1) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>) {
    fusion.yield %x : tensor<4xf32>
  }
  %1 = aten.neg %a : tensor<4xf32> -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
