// RUN: fusec-opt %s --split-input-file -p batch-argument-writes | filecheck %s

// AOTAutograd's batch norm epilogue: running statistics copied back (each
// through the importer's same-type `aten.to`), `num_batches_tracked += 1`
// computed early and written last, a view of a fresh value in between.
// CHECK-LABEL: func.func @buffer_updates
// CHECK-SAME: (%[[RM:.*]]: tensor<8xf32>, %[[RV:.*]]: tensor<8xf32>, %[[NBT:.*]]: tensor<i64>, %[[X:.*]]: tensor<4x8xf32>)
// CHECK-NOT:  aten.add
// CHECK:      %[[M:.*]] = aten.mean %[[X]]
// CHECK:      %[[V:.*]] = aten.neg %[[M]]
// CHECK-NOT:  aten.to
// CHECK:      %[[MF:.*]] = aten.reshape %[[M]]
// CHECK-NEXT: %[[VF:.*]] = aten.reshape %[[V]]
// CHECK-NEXT: aten.foreach_copy_(%[[RM]], %[[RV]]), (%[[MF]], %[[VF]]) : (tensor<8xf32>, tensor<8xf32>), (tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT: aten.foreach_add_(%[[NBT]]) value = 1 : i64 : (tensor<i64>)
// CHECK-NEXT: func.return %[[M]]
func.func @buffer_updates(%rm: tensor<8xf32>, %rv: tensor<8xf32>, %nbt: tensor<i64>, %x: tensor<4x8xf32>) -> tensor<1x8xf32> {
  %c1 = arith.constant 1 : i64
  %n = aten.add %nbt, %c1 : tensor<i64>, i64 -> tensor<i64>
  %m = aten.mean %x dims = [0] keepdim = true : tensor<4x8xf32> -> tensor<1x8xf32>
  %v = aten.neg %m : tensor<1x8xf32> -> tensor<1x8xf32>
  %mf = aten.reshape %m : tensor<1x8xf32> -> tensor<8xf32>
  %t = aten.to %mf : tensor<8xf32> -> tensor<8xf32>
  aten.copy_ %rm, %t : tensor<8xf32>, tensor<8xf32>
  %vf = aten.reshape %v : tensor<1x8xf32> -> tensor<8xf32>
  %u = aten.to %vf : tensor<8xf32> -> tensor<8xf32>
  aten.copy_ %rv, %u : tensor<8xf32>, tensor<8xf32>
  %n2 = aten.to %n : tensor<i64> -> tensor<i64>
  aten.copy_ %nbt, %n2 : tensor<i64>, tensor<i64>
  func.return %m : tensor<1x8xf32>
}

// -----

// A write the function reads an argument after stays where it is, and so
// does everything before it; one trailing write alone is left as it is.
// CHECK-LABEL: func.func @read_after_write
// CHECK:      aten.copy_ %{{.*}}, %{{.*}} : tensor<8xf32>, tensor<8xf32>
// CHECK-NEXT: aten.neg %{{.*}}
// CHECK-NEXT: aten.copy_
// CHECK-NOT:  aten.foreach_copy_
func.func @read_after_write(%a: tensor<8xf32>, %b: tensor<8xf32>, %c: tensor<8xf32>, %x: tensor<8xf32>) -> tensor<8xf32> {
  %e = aten.exp %x : tensor<8xf32> -> tensor<8xf32>
  aten.copy_ %a, %e : tensor<8xf32>, tensor<8xf32>
  %y = aten.neg %b : tensor<8xf32> -> tensor<8xf32>
  aten.copy_ %c, %y : tensor<8xf32>, tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// -----

// Not batched: two writes into one argument, a source that is an argument, a
// source of another type (the copy casts) and a write into a view, each the
// last write of its function.
// CHECK-LABEL: func.func @same_argument
// CHECK-NOT: aten.foreach
func.func @same_argument(%a: tensor<8xf32>, %x: tensor<8xf32>) {
  %e = aten.exp %x : tensor<8xf32> -> tensor<8xf32>
  %f = aten.neg %x : tensor<8xf32> -> tensor<8xf32>
  aten.copy_ %a, %e : tensor<8xf32>, tensor<8xf32>
  aten.copy_ %a, %f : tensor<8xf32>, tensor<8xf32>
  func.return
}

// -----

// CHECK-LABEL: func.func @argument_source
// CHECK-NOT: aten.foreach
func.func @argument_source(%a: tensor<8xf32>, %b: tensor<8xf32>, %x: tensor<8xf32>) {
  %e = aten.exp %x : tensor<8xf32> -> tensor<8xf32>
  aten.copy_ %a, %e : tensor<8xf32>, tensor<8xf32>
  aten.copy_ %b, %x : tensor<8xf32>, tensor<8xf32>
  func.return
}

// -----

// CHECK-LABEL: func.func @casting_copy
// CHECK-NOT: aten.foreach
func.func @casting_copy(%a: tensor<8xf32>, %h: tensor<8xf16>, %x: tensor<8xf32>) {
  %e = aten.exp %x : tensor<8xf32> -> tensor<8xf32>
  aten.copy_ %a, %e : tensor<8xf32>, tensor<8xf32>
  aten.copy_ %h, %e : tensor<8xf16>, tensor<8xf32>
  func.return
}

// -----

// CHECK-LABEL: func.func @view_destination
// CHECK-NOT: aten.foreach
func.func @view_destination(%a: tensor<8xf32>, %b: tensor<8xf32>, %x: tensor<8xf32>) {
  %e = aten.exp %x : tensor<8xf32> -> tensor<8xf32>
  aten.copy_ %a, %e : tensor<8xf32>, tensor<8xf32>
  %v = aten.narrow %b dim = 0 start = 0 length = 4 : tensor<8xf32> -> tensor<4xf32>
  %s = aten.narrow %e dim = 0 start = 0 length = 4 : tensor<8xf32> -> tensor<4xf32>
  aten.copy_ %v, %s : tensor<4xf32>, tensor<4xf32>
  func.return
}

// -----

// An increment whose argument is written between the add and its write-back
// reads the written value in eager: it stays a copy of the add's result.
// CHECK-LABEL: func.func @written_before_increment
// CHECK: aten.add
// CHECK: aten.foreach_copy_
// CHECK-NOT: aten.foreach_add_
func.func @written_before_increment(%n: tensor<i64>, %a: tensor<i64>, %v: tensor<2xi64>, %x: tensor<i64>) {
  %c1 = arith.constant 1 : i64
  %inc = aten.add %n, %c1 : tensor<i64>, i64 -> tensor<i64>
  %w = aten.narrow %v dim = 0 start = 0 length = 1 : tensor<2xi64> -> tensor<1xi64>
  %e = aten.neg %x : tensor<i64> -> tensor<i64>
  aten.copy_ %n, %e : tensor<i64>, tensor<i64>
  %f = aten.abs %x : tensor<i64> -> tensor<i64>
  aten.copy_ %a, %f : tensor<i64>, tensor<i64>
  aten.copy_ %n, %inc : tensor<i64>, tensor<i64>
  func.return
}
