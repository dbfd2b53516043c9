// RUN: fusec-opt %s --fuse --view-fusion-graph=%t.html | filecheck %s --check-prefix=IR
// RUN: filecheck %s --input-file=%t.html
// `--view-fusion-graph` writes the groups as boxes and the ops as nodes, with
// the fuse pass's reason on each op left outside a group; the IR still prints.

// IR-LABEL: func.func @mlp_tail
// IR: fusion.group

// CHECK: <!DOCTYPE html>
// CHECK: <svg {{.*}}data-graph="mlp_tail"
// CHECK: <g class="group" id="g0-group_0" data-group="group_0" data-ops="op1 op2"
// CHECK-DAG: <g class="op unfused" id="g0-op0" data-op="aten.mm" data-id="op0" data-node="" data-src="" data-remark="barrier">
// CHECK-DAG: <g class="op fused" id="g0-op1" data-op="aten.add" data-id="op1" data-node="" data-src="" data-group="group_0">
// CHECK-DAG: <g class="op fused" id="g0-op2" data-op="aten.tanh" data-id="op2" data-node="" data-src="" data-group="group_0">
// CHECK: <td>matrix product (aten.mm), runs through PyTorch</td><td>barrier</td>
// CHECK-NOT: <script src
func.func @mlp_tail(%x: tensor<4x8xf32>, %w: tensor<8x3xf32>, %b: tensor<3xf32>) -> tensor<4x3xf32> {
  %0 = aten.mm %x, %w : tensor<4x8xf32>, tensor<8x3xf32> -> tensor<4x3xf32>
  %1 = aten.add %0, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %2 = aten.tanh %1 : tensor<4x3xf32> -> tensor<4x3xf32>
  func.return %2 : tensor<4x3xf32>
}
