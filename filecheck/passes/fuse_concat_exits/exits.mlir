// RUN: fusec-opt %s --split-input-file -p fuse-concat-exits | filecheck %s

// The cat joins the group as its exit; its dim is normalized, the parts stop
// being outputs of their own.
// CHECK-LABEL: func.func @exit
// CHECK-SAME:    (%[[A:.*]]: tensor<4x3xf32>)
// CHECK-NEXT:    %[[C:.*]] = fusion.group (%[[X:.*]] = %[[A]]) : (tensor<4x3xf32>) -> (tensor<4x6xf32>) {
// CHECK-NEXT:      %[[E:.*]] = aten.exp %[[X]]
// CHECK-NEXT:      %[[N:.*]] = aten.neg %[[X]]
// CHECK-NEXT:      %[[CAT:.*]] = aten.cat %[[E]], %[[N]] dim = 1 : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x6xf32>
// CHECK-NEXT:      fusion.yield %[[CAT]] : tensor<4x6xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[C]]
func.func @exit(%a: tensor<4x3xf32>) -> tensor<4x6xf32> {
  %r:2 = fusion.group (%x = %a) : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
    %0 = aten.exp %x : tensor<4x3xf32> -> tensor<4x3xf32>
    %1 = aten.neg %x : tensor<4x3xf32> -> tensor<4x3xf32>
    fusion.yield %0, %1 : tensor<4x3xf32>, tensor<4x3xf32>
  }
  %c = aten.cat %r#0, %r#1 dim = -1 : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x6xf32>
  func.return %c : tensor<4x6xf32>
}

// -----

// A part with users besides the cat stays an output (before the cat), and so
// does an output the cat does not read; the group keeps its place, ahead of a
// user that sat between it and the cat.
// CHECK-LABEL: func.func @part_used_elsewhere
// CHECK-NEXT:    %[[N:.*]], %[[ABS:.*]], %[[C:.*]] = fusion.group
// CHECK-SAME:      -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x9xf32>)
// CHECK:           %[[CAT:.*]] = aten.cat %{{.*}}, %{{.*}}, %{{.*}} dim = 1
// CHECK-NEXT:      fusion.yield %{{.*}}, %{{.*}}, %[[CAT]]
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[K:.*]] = aten.relu %[[N]]
// CHECK-NEXT:    func.return %[[C]], %[[ABS]], %[[K]]
func.func @part_used_elsewhere(%a: tensor<4x3xf32>) -> (tensor<4x9xf32>, tensor<4x3xf32>, tensor<4x3xf32>) {
  %r:3 = fusion.group (%x = %a) : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>) {
    %0 = aten.exp %x : tensor<4x3xf32> -> tensor<4x3xf32>
    %1 = aten.neg %x : tensor<4x3xf32> -> tensor<4x3xf32>
    %2 = aten.abs %x : tensor<4x3xf32> -> tensor<4x3xf32>
    fusion.yield %0, %1, %2 : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>
  }
  %k = aten.relu %r#1 : tensor<4x3xf32> -> tensor<4x3xf32>
  %c = aten.cat %r#0, %r#1, %r#0 dim = 1 : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x9xf32>
  func.return %c, %r#2, %k : tensor<4x9xf32>, tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// Parts of different dtypes: the exit's dtype is the promoted one.
// CHECK-LABEL: func.func @promote
// CHECK:         aten.cat %{{.*}}, %{{.*}} dim = 0 : tensor<4xf32>, tensor<4xi1> -> tensor<8xf32>
// CHECK-NEXT:    fusion.yield %{{.*}} : tensor<8xf32>
func.func @promote(%a: tensor<4xf32>) -> tensor<8xf32> {
  %r:2 = fusion.group (%x = %a) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>) {
    %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
    %1 = aten.gt %x, %0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xi1>
    fusion.yield %0, %1 : tensor<4xf32>, tensor<4xi1>
  }
  %c = aten.cat %r#0, %r#1 dim = 0 : tensor<4xf32>, tensor<4xi1> -> tensor<8xf32>
  func.return %c : tensor<8xf32>
}

// -----

// Parts from two sibling groups: the groups merge (at the later one's place,
// their common input read once) and the cat becomes the merged group's exit.
// CHECK-LABEL: func.func @two_groups
// CHECK-SAME:    (%[[A:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[C:.*]] = fusion.group (%[[X:.*]] = %[[A]]) : (tensor<4xf32>) -> (tensor<8xf32>) {
// CHECK-NEXT:      %[[E:.*]] = aten.exp %[[X]]
// CHECK-NEXT:      %[[N:.*]] = aten.neg %[[X]]
// CHECK-NEXT:      %[[CAT:.*]] = aten.cat %[[E]], %[[N]] dim = 0
// CHECK-NEXT:      fusion.yield %[[CAT]] : tensor<8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[C]]
func.func @two_groups(%a: tensor<4xf32>) -> tensor<8xf32> {
  %p = fusion.group (%x = %a) : (tensor<4xf32>) -> (tensor<4xf32>) {
    %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
    fusion.yield %0 : tensor<4xf32>
  }
  %q = fusion.group (%x = %a) : (tensor<4xf32>) -> (tensor<4xf32>) {
    %0 = aten.neg %x : tensor<4xf32> -> tensor<4xf32>
    fusion.yield %0 : tensor<4xf32>
  }
  %c = aten.cat %p, %q dim = 0 : tensor<4xf32>, tensor<4xf32> -> tensor<8xf32>
  func.return %c : tensor<8xf32>
}

// -----

// A lone pointwise op computing a part joins the group too; a part the merged
// group still yields for another user stays an output.
// CHECK-LABEL: func.func @lone_pointwise_part
// CHECK-SAME:    (%[[A:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[E:.*]], %[[C:.*]] = fusion.group (%[[Y:.*]] = %[[B]], %[[X:.*]] = %[[A]])
// CHECK-SAME:      -> (tensor<4xf32>, tensor<8xf32>)
// CHECK-NEXT:      %[[EX:.*]] = aten.exp %[[X]]
// CHECK-NEXT:      %[[NEG:.*]] = aten.neg %[[Y]]
// CHECK-NEXT:      %[[CAT:.*]] = aten.cat %[[NEG]], %[[EX]] dim = 0
// CHECK-NEXT:      fusion.yield %[[EX]], %[[CAT]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[C]], %[[E]]
func.func @lone_pointwise_part(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<8xf32>, tensor<4xf32>) {
  %p = fusion.group (%x = %a) : (tensor<4xf32>) -> (tensor<4xf32>) {
    %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
    fusion.yield %0 : tensor<4xf32>
  }
  %q = aten.neg %b : tensor<4xf32> -> tensor<4xf32>
  %c = aten.cat %q, %p dim = 0 : tensor<4xf32>, tensor<4xf32> -> tensor<8xf32>
  func.return %c, %p : tensor<8xf32>, tensor<4xf32>
}

// -----

// Negative: an op between the groups reads the earlier one, and the later group
// reads that op: merging would put the earlier group after its user (a cycle).
// CHECK-LABEL: func.func @user_between
// CHECK:         %[[P:.*]] = fusion.group
// CHECK:         %[[S:.*]] = aten.sum %[[P]]
// CHECK:         %[[Q:.*]] = fusion.group
// CHECK:         %[[C:.*]] = aten.cat %[[P]], %[[Q]] dim = 0
// CHECK-NEXT:    func.return %[[C]]
func.func @user_between(%a: tensor<4xf32>) -> tensor<8xf32> {
  %p = fusion.group (%x = %a) : (tensor<4xf32>) -> (tensor<4xf32>) {
    %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
    fusion.yield %0 : tensor<4xf32>
  }
  %s = aten.sum %p dims = [0] keepdim = true : tensor<4xf32> -> tensor<1xf32>
  %q = fusion.group (%x = %a, %y = %s) : (tensor<4xf32>, tensor<1xf32>) -> (tensor<4xf32>) {
    %0 = aten.mul %x, %y : tensor<4xf32>, tensor<1xf32> -> tensor<4xf32>
    fusion.yield %0 : tensor<4xf32>
  }
  %c = aten.cat %p, %q dim = 0 : tensor<4xf32>, tensor<4xf32> -> tensor<8xf32>
  func.return %c : tensor<8xf32>
}

// -----

// Negative: a group with an output of another shape has another index space.
// CHECK-LABEL: func.func @other_index_space
// CHECK:         fusion.group
// CHECK:         fusion.group
// CHECK:         %[[C:.*]] = aten.cat
// CHECK-NEXT:    func.return %[[C]]
func.func @other_index_space(%a: tensor<4xf32>, %b: tensor<1xf32>) -> (tensor<8xf32>, tensor<1xf32>) {
  %p:2 = fusion.group (%x = %a, %y = %b) : (tensor<4xf32>, tensor<1xf32>) -> (tensor<4xf32>, tensor<1xf32>) {
    %0 = aten.exp %y : tensor<1xf32> -> tensor<1xf32>
    %1 = aten.mul %x, %0 : tensor<4xf32>, tensor<1xf32> -> tensor<4xf32>
    fusion.yield %1, %0 : tensor<4xf32>, tensor<1xf32>
  }
  %q = fusion.group (%x = %a) : (tensor<4xf32>) -> (tensor<4xf32>) {
    %0 = aten.neg %x : tensor<4xf32> -> tensor<4xf32>
    fusion.yield %0 : tensor<4xf32>
  }
  %c = aten.cat %p#0, %q dim = 0 : tensor<4xf32>, tensor<4xf32> -> tensor<8xf32>
  func.return %c, %p#1 : tensor<8xf32>, tensor<1xf32>
}

// -----

// Negative: parts of different shapes are not one index space.
// CHECK-LABEL: func.func @different_shapes
// CHECK:         fusion.yield %{{.*}}, %{{.*}} : tensor<4x1xf32>, tensor<4x3xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[C:.*]] = aten.cat
// CHECK-NEXT:    func.return %[[C]]
func.func @different_shapes(%a: tensor<4x1xf32>, %b: tensor<4x3xf32>) -> tensor<4x4xf32> {
  %r:2 = fusion.group (%x = %a, %y = %b) : (tensor<4x1xf32>, tensor<4x3xf32>) -> (tensor<4x1xf32>, tensor<4x3xf32>) {
    %0 = aten.exp %x : tensor<4x1xf32> -> tensor<4x1xf32>
    %1 = aten.mul %0, %y : tensor<4x1xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
    fusion.yield %0, %1 : tensor<4x1xf32>, tensor<4x3xf32>
  }
  %c = aten.cat %r#0, %r#1 dim = 1 : tensor<4x1xf32>, tensor<4x3xf32> -> tensor<4x4xf32>
  func.return %c : tensor<4x4xf32>
}

// -----

// A part no group computes (an argument) is passed through: it becomes an
// input of the group, which copies it into its slice.
// CHECK-LABEL: func.func @passed_through_part
// CHECK-SAME:    (%[[A:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[C:.*]] = fusion.group (%[[X:.*]] = %[[A]], %[[Y:.*]] = %[[B]]) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<8xf32>) {
// CHECK-NEXT:      %[[E:.*]] = aten.exp %[[X]]
// CHECK-NEXT:      %[[CAT:.*]] = aten.cat %[[E]], %[[Y]] dim = 0
// CHECK-NEXT:      fusion.yield %[[CAT]] : tensor<8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[C]]
func.func @passed_through_part(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<8xf32> {
  %p = fusion.group (%x = %a) : (tensor<4xf32>) -> (tensor<4xf32>) {
    %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
    fusion.yield %0 : tensor<4xf32>
  }
  %c = aten.cat %p, %b dim = 0 : tensor<4xf32>, tensor<4xf32> -> tensor<8xf32>
  func.return %c : tensor<8xf32>
}

// -----

// Rotary embeddings' `rotate_half`, `cat((-x2, x1))`: the lone `neg` becomes a
// group whose exit is the cat, `x1` passed through; a part that is already an
// input of the group is read through the same argument.
// CHECK-LABEL: func.func @rotate_half
// CHECK-SAME:    (%[[Q:.*]]: tensor<2x8xf32>)
// CHECK-NEXT:    %[[X1:.*]] = aten.slice %[[Q]] dim = 1 start = 0 end = 4
// CHECK-NEXT:    %[[X2:.*]] = aten.slice %[[Q]] dim = 1 start = 4 end = 8
// CHECK-NEXT:    %[[C:.*]] = fusion.group (%[[A:.*]] = %[[X2]], %[[B:.*]] = %[[X1]]) : (tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x12xf32>) {
// CHECK-NEXT:      %[[N:.*]] = aten.neg %[[A]]
// CHECK-NEXT:      %[[CAT:.*]] = aten.cat %[[N]], %[[B]], %[[A]] dim = 1
// CHECK-NEXT:      fusion.yield %[[CAT]] : tensor<2x12xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[C]]
func.func @rotate_half(%q: tensor<2x8xf32>) -> tensor<2x12xf32> {
  %x1 = aten.slice %q dim = 1 start = 0 end = 4 step = 1 : tensor<2x8xf32> -> tensor<2x4xf32>
  %x2 = aten.slice %q dim = 1 start = 4 end = 8 step = 1 : tensor<2x8xf32> -> tensor<2x4xf32>
  %n = aten.neg %x2 : tensor<2x4xf32> -> tensor<2x4xf32>
  %c = aten.cat %n, %x1, %x2 dim = -1 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x12xf32>
  func.return %c : tensor<2x12xf32>
}

// -----

// Dynamo's order, `cat((-q[..., h:], q[..., :h]))`: the passed-through part is
// sliced after the `neg`; the slice moves up to the group's place.
// CHECK-LABEL: func.func @part_sliced_after_the_group
// CHECK-SAME:    (%[[Q:.*]]: tensor<2x8xf32>)
// CHECK-NEXT:    %[[X2:.*]] = aten.slice %[[Q]] dim = 1 start = 4 end = 8
// CHECK-NEXT:    %[[X1:.*]] = aten.slice %[[Q]] dim = 1 start = 0 end = 4
// CHECK-NEXT:    %[[C:.*]] = fusion.group (%[[A:.*]] = %[[X2]], %[[B:.*]] = %[[X1]])
// CHECK-NEXT:      %[[N:.*]] = aten.neg %[[A]]
// CHECK-NEXT:      %[[CAT:.*]] = aten.cat %[[N]], %[[B]] dim = 1
// CHECK-NEXT:      fusion.yield %[[CAT]] : tensor<2x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[C]]
func.func @part_sliced_after_the_group(%q: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %x2 = aten.slice %q dim = 1 start = 4 end = 8 step = 1 : tensor<2x8xf32> -> tensor<2x4xf32>
  %n = aten.neg %x2 : tensor<2x4xf32> -> tensor<2x4xf32>
  %x1 = aten.slice %q dim = 1 start = 0 end = 4 step = 1 : tensor<2x8xf32> -> tensor<2x4xf32>
  %c = aten.cat %n, %x1 dim = -1 : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x8xf32>
  func.return %c : tensor<2x8xf32>
}

// -----

// A cat of one part no group computes is a copy kernel of its own (a KV
// cache's `cat((past, k))` whose empty past the import dropped); one of
// several such parts stays PyTorch's.
// CHECK-LABEL: func.func @only_passed_through_parts
// CHECK-SAME:    (%[[A:.*]]: tensor<2x3xf32>)
// CHECK-NEXT:    %[[T:.*]] = aten.transpose %[[A]]
// CHECK-NEXT:    %[[C:.*]] = fusion.group (%[[X:.*]] = %[[T]]) : (tensor<3x2xf32>) -> (tensor<3x2xf32>) {
// CHECK-NEXT:      %[[CAT:.*]] = aten.cat %[[X]] dim = 0
// CHECK-NEXT:      fusion.yield %[[CAT]] : tensor<3x2xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[D:.*]] = aten.cat %[[A]], %[[A]] dim = 0
// CHECK-NEXT:    func.return %[[C]], %[[D]]
func.func @only_passed_through_parts(%a: tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<4x3xf32>) {
  %t = aten.transpose %a dim0 = 0 dim1 = 1 : tensor<2x3xf32> -> tensor<3x2xf32>
  %c = aten.cat %t dim = 0 : tensor<3x2xf32> -> tensor<3x2xf32>
  %d = aten.cat %a, %a dim = 0 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<4x3xf32>
  func.return %c, %d : tensor<3x2xf32>, tensor<4x3xf32>
}

// -----

// Negative: a part computed after the group (by an op fusec runs through
// PyTorch) is not there yet where the group writes the cat.
// CHECK-LABEL: func.func @part_computed_after_the_group
// CHECK:         }
// CHECK-NEXT:    %[[M:.*]] = aten.mm
// CHECK-NEXT:    %[[C:.*]] = aten.cat %{{.*}}, %[[M]] dim = 0
// CHECK-NEXT:    func.return %[[C]]
func.func @part_computed_after_the_group(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<8x4xf32> {
  %p = fusion.group (%x = %a) : (tensor<4x4xf32>) -> (tensor<4x4xf32>) {
    %0 = aten.exp %x : tensor<4x4xf32> -> tensor<4x4xf32>
    fusion.yield %0 : tensor<4x4xf32>
  }
  %m = aten.mm %a, %b : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %c = aten.cat %p, %m dim = 0 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<8x4xf32>
  func.return %c : tensor<8x4xf32>
}

// -----

// Negative: a cat already inside a group, whose result the group uses, is left
// alone (`lower-group-to-loops` rejects it, see invalid.mlir).
// CHECK-LABEL: func.func @used_inside
// CHECK:         %[[CAT:.*]] = aten.cat
// CHECK-NEXT:    %[[T:.*]] = aten.tanh %[[CAT]]
// CHECK-NEXT:    fusion.yield %[[T]]
func.func @used_inside(%a: tensor<4xf32>) -> tensor<8xf32> {
  %r = fusion.group (%x = %a) : (tensor<4xf32>) -> (tensor<8xf32>) {
    %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
    %1 = aten.cat %0, %x dim = 0 : tensor<4xf32>, tensor<4xf32> -> tensor<8xf32>
    %2 = aten.tanh %1 : tensor<8xf32> -> tensor<8xf32>
    fusion.yield %2 : tensor<8xf32>
  }
  func.return %r : tensor<8xf32>
}

// -----

// A write to a part (here through a view of it) between the group and the cat
// keeps the cat where it is: as an exit it would write the part unwritten.
// CHECK-LABEL: func.func @part_written_before_cat
// CHECK-NEXT:    %[[E:.*]], %[[N:.*]] = fusion.group
// CHECK-NOT:       aten.cat
// CHECK:         %[[V:.*]] = aten.view %[[N]]
// CHECK-NEXT:    aten.copy_ %[[V]], %{{.*}}
// CHECK-NEXT:    %[[C:.*]] = aten.cat %[[E]], %[[N]] dim = -1
// CHECK-NEXT:    func.return %[[C]]
func.func @part_written_before_cat(%a: tensor<4x3xf32>, %t: tensor<12xf32>) -> tensor<4x6xf32> {
  %r:2 = fusion.group (%x = %a) : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
    %0 = aten.exp %x : tensor<4x3xf32> -> tensor<4x3xf32>
    %1 = aten.neg %x : tensor<4x3xf32> -> tensor<4x3xf32>
    fusion.yield %0, %1 : tensor<4x3xf32>, tensor<4x3xf32>
  }
  %v = aten.view %r#1 : tensor<4x3xf32> -> tensor<12xf32>
  aten.copy_ %v, %t : tensor<12xf32>, tensor<12xf32>
  %c = aten.cat %r#0, %r#1 dim = -1 : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x6xf32>
  func.return %c : tensor<4x6xf32>
}

// -----

// A write to another tensor between them does not stop the exit.
// CHECK-LABEL: func.func @other_tensor_written_before_cat
// CHECK:         %[[C:.*]] = fusion.group
// CHECK:           aten.cat
// CHECK:         aten.copy_ %{{.*}}, %{{.*}} : tensor<4x3xf32>, tensor<4x3xf32>
// CHECK-NEXT:    func.return %[[C]]
func.func @other_tensor_written_before_cat(%a: tensor<4x3xf32>, %b: tensor<4x3xf32>) -> tensor<4x6xf32> {
  %r:2 = fusion.group (%x = %a) : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
    %0 = aten.exp %x : tensor<4x3xf32> -> tensor<4x3xf32>
    %1 = aten.neg %x : tensor<4x3xf32> -> tensor<4x3xf32>
    fusion.yield %0, %1 : tensor<4x3xf32>, tensor<4x3xf32>
  }
  aten.copy_ %b, %a : tensor<4x3xf32>, tensor<4x3xf32>
  %c = aten.cat %r#0, %r#1 dim = -1 : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x6xf32>
  func.return %c : tensor<4x6xf32>
}
