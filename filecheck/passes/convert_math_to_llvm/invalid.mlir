// RUN: not fusec-opt %s -p 'convert-math-to-llvm{target=amdgpu}' 2>&1 | filecheck %s

// CHECK: unknown target 'amdgpu' (expected cpu or nvptx)
func.func @f(%x: f32) -> f32 {
  %y = math.exp %x : f32
  func.return %y : f32
}
