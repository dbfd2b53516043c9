// RUN: fusec-opt %s --emit=loops | filecheck %s --check-prefix=LOOPS
// RUN: fusec-opt %s --emit=llvm | filecheck %s --check-prefix=LLVM
// RUN: fusec-opt %s --emit=llvmir | filecheck %s --check-prefix=IR

// LOOPS-LABEL: func.func @f_group0(
// LOOPS:         scf.for
// LLVM-LABEL:  llvm.func @f_group0(
// LLVM-NOT:      math.
// IR-LABEL:    define void @"f_group0"(
// IR:            fmul float
func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %r = fusion.group (%x = %a, %y = %b) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>) {
    %0 = aten.tanh %x : tensor<4xf32> -> tensor<4xf32>
    %1 = aten.mul %0, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    fusion.yield %1 : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}
