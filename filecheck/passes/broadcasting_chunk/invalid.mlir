// RUN: fusec-opt %s --split-input-file --verify-diagnostics

func.func @wrong_piece_type(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{result #1 has type tensor<8x16xf32>, but the piece is tensor<8x32xf32>}}
  %a, %b = fusion.broadcasting_chunk %x chunks = 2 dim = -1 : tensor<8x64xf32> -> tensor<8x32xf32>, tensor<8x16xf32>
  func.return
}

// -----

func.func @wrong_result_count(%x: tensor<8x64xf32>, %b: tensor<64xf32>) {
  // expected-error @+1 {{2 inputs in 2 pieces need 4 results, but there are 2}}
  %a, %c = fusion.broadcasting_chunk %x, %b chunks = 2 dim = -1 : tensor<8x64xf32>, tensor<64xf32> -> tensor<8x32xf32>, tensor<8x32xf32>
  func.return
}

// -----

func.func @broadcast_input_is_whole(%x: tensor<8x64xf32>, %c: tensor<8x1xf32>) {
  // expected-error @+1 {{result #2 has type tensor<8x0xf32>, but the piece is tensor<8x1xf32>}}
  %r:4 = fusion.broadcasting_chunk %x, %c chunks = 2 dim = -1 : tensor<8x64xf32>, tensor<8x1xf32> -> tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x0xf32>, tensor<8x0xf32>
  func.return
}

// -----

func.func @not_broadcastable(%x: tensor<8x64xf32>, %y: tensor<32xf32>) {
  // expected-error @+1 {{cannot be broadcast}}
  %r:4 = fusion.broadcasting_chunk %x, %y chunks = 2 dim = -1 : tensor<8x64xf32>, tensor<32xf32> -> tensor<8x32xf32>, tensor<8x32xf32>, tensor<16xf32>, tensor<16xf32>
  func.return
}

// -----

func.func @dim_out_of_range(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{dimension -3 is out of range for a tensor of rank 2}}
  %a, %b = fusion.broadcasting_chunk %x chunks = 2 dim = -3 : tensor<8x64xf32> -> tensor<8x32xf32>, tensor<8x32xf32>
  func.return
}

// -----

func.func @zero_chunks(%x: tensor<8x64xf32>) {
  // expected-error @+1 {{chunks must be positive, got 0}}
  %a = fusion.broadcasting_chunk %x chunks = 0 dim = -1 : tensor<8x64xf32> -> tensor<8x64xf32>
  func.return
}

// -----

func.func @dynamic_dim(%x: tensor<8x?xf32>) {
  // expected-error @+1 {{dim -1 of the broadcast shape must be static}}
  %a = fusion.broadcasting_chunk %x chunks = 1 dim = -1 : tensor<8x?xf32> -> tensor<8x?xf32>
  func.return
}

// -----

func.func @no_inputs() {
  // expected-error @+1 {{needs at least one input}}
  fusion.broadcasting_chunk chunks = 2 dim = -1 : -> 
  func.return
}
