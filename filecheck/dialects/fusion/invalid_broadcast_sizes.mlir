// RUN: fusec-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Every verifier rule of fusion.broadcast_sizes.

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'fusion.broadcast_sizes' op the broadcast of sizes of ranks [2, 1] has rank 2, got !aten.size<1>
func.func @rank(%a: !aten.size<2>, %b: !aten.size<1>) -> !aten.size<1> {
  %s = fusion.broadcast_sizes %a, %b : !aten.size<2>, !aten.size<1> -> !aten.size<1>
  func.return %s : !aten.size<1>
}

// -----

// CHECK: {{.*}}.mlir:[[# @LINE + 2]]:3: error: 'fusion.broadcast_sizes' op needs at least one size
func.func @empty() -> !aten.size<0> {
  %s = "fusion.broadcast_sizes"() : () -> !aten.size<0>
  func.return %s : !aten.size<0>
}
