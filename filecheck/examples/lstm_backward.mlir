// RUN: fusec-opt --fuse %s | filecheck %s
// The pointwise backward of an LSTM cell (the seeds' fuser-concat-and-backward):
// the four gate gradients end in a `cat`, which joins the group as its exit, so
// the whole backward is one group returning the cat and dcx, and the parts are
// never tensors of their own.

// CHECK-LABEL: func.func @lstm_backward
// CHECK-NEXT:    %[[DCX:.*]], %[[DG:.*]] = fusion.group ({{.*}}) : ({{.*}}) -> (tensor<8x16xf32>, tensor<8x64xf32>) {
// CHECK-NOT:       fusion.group
// CHECK:           %[[CAT:.*]] = aten.cat %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} dim = 1 : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x64xf32>
// CHECK:           fusion.yield %{{.*}}, %[[CAT]] : tensor<8x16xf32>, tensor<8x64xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[DG]], %[[DCX]]
func.func @lstm_backward(%ig: tensor<8x16xf32>, %fg: tensor<8x16xf32>, %gg: tensor<8x16xf32>, %og: tensor<8x16xf32>, %cx: tensor<8x16xf32>, %cy: tensor<8x16xf32>, %dhy: tensor<8x16xf32>, %dcy: tensor<8x16xf32>) -> (tensor<8x64xf32>, tensor<8x16xf32>) {
  %one = arith.constant 1 : i64
  %t = aten.tanh %cy : tensor<8x16xf32> -> tensor<8x16xf32>
  %t2 = aten.mul %t, %t : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %dt = aten.sub %one, %t2 : i64, tensor<8x16xf32> -> tensor<8x16xf32>
  %ho = aten.mul %dhy, %og : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %hot = aten.mul %ho, %dt : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %dc = aten.add %hot, %dcy : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %ht = aten.mul %dhy, %t : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %hto = aten.mul %ht, %og : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %omo = aten.sub %one, %og : i64, tensor<8x16xf32> -> tensor<8x16xf32>
  %do = aten.mul %hto, %omo : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %dcg = aten.mul %dc, %gg : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %dcgi = aten.mul %dcg, %ig : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %omi = aten.sub %one, %ig : i64, tensor<8x16xf32> -> tensor<8x16xf32>
  %di = aten.mul %dcgi, %omi : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %dcc = aten.mul %dc, %cx : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %dccf = aten.mul %dcc, %fg : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %omf = aten.sub %one, %fg : i64, tensor<8x16xf32> -> tensor<8x16xf32>
  %df = aten.mul %dccf, %omf : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %dci = aten.mul %dc, %ig : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %g2 = aten.mul %gg, %gg : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %omg = aten.sub %one, %g2 : i64, tensor<8x16xf32> -> tensor<8x16xf32>
  %dg = aten.mul %dci, %omg : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %grads = aten.cat %di, %df, %dg, %do dim = 1 : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x64xf32>
  %dcx = aten.mul %dc, %fg : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  func.return %grads, %dcx : tensor<8x64xf32>, tensor<8x16xf32>
}
