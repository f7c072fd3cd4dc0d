// RUN: tessera-opt %s -split-input-file -verify-diagnostics

// Diagnostics of the layout, indexing and dimension ops: one case per message.

// transpose: the permutation needs one entry per operand dim.
func.func @transpose_permutation_size(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>) {
  // expected-error @+1 {{'tgraph.transpose' op permutation has 3 entries but the operand has rank 2}}
  %0 = tgraph.transpose %x {permutation = array<i64: 1, 0, 2>}
      : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x?xf32, #tgraph.dims<[S, B]>>
  return
}

// -----

// transpose: permutation entries must be operand dims.
func.func @transpose_permutation_range(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>) {
  // expected-error @+1 {{'tgraph.transpose' op permutation entry 2 is out of range for an operand of rank 2}}
  %0 = tgraph.transpose %x {permutation = array<i64: 2, 0>}
      : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x?xf32, #tgraph.dims<[S, B]>>
  return
}

// -----

// transpose: a permutation names each dim once.
func.func @transpose_permutation_duplicate(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>) {
  // expected-error @+1 {{'tgraph.transpose' op permutation names dimension 0 twice}}
  %0 = tgraph.transpose %x {permutation = array<i64: 0, 0>}
      : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x?xf32, #tgraph.dims<[B, B]>>
  return
}

// -----

// reshape: the element type is kept.
func.func @reshape_element_type(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>) {
  // expected-error @+1 {{'tgraph.reshape' op reshape keeps the element type f32, but the result has f16}}
  %0 = tgraph.reshape %x
      : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?xf16, #tgraph.dims<["B*S"]>>
  return
}

// -----

// reshape: at most one result dim is solved from the element count.
func.func @reshape_two_unknown(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>) {
  // expected-error @+1 {{'tgraph.reshape' op the result may have at most one '?' dimension, but dims 0 and 2 are both '?'}}
  %0 = tgraph.reshape %x
      : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x4x?xf32>
  return
}

// -----

// reshape: a '?' next to a zero-sized dim cannot be solved.
func.func @reshape_unsolvable(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>) {
  // expected-error @+1 {{'tgraph.reshape' op cannot solve the '?' dimension: the other result dims have zero elements}}
  %0 = tgraph.reshape %x
      : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<0x?xf32>
  return
}

// -----

// reshape: element counts that differ for every value of the symbols (B*S
// and 2*B*S agree when either is 0: that would be a run-time check).
func.func @reshape_count(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>) {
  // expected-error @+1 {{'tgraph.reshape' op reshape must preserve the element count: operand 0 element count is B*S but result element count is 2*B*S+2, which differ for every value of B and S}}
  %0 = tgraph.reshape %x
      : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x2xf32, #tgraph.dims<["B*S+1", 2]>>
  return
}

// -----

// broadcast_in_dim: the element type is kept.
func.func @broadcast_element_type(%v: tensor<64xf32>) {
  // expected-error @+1 {{'tgraph.broadcast_in_dim' op broadcast_in_dim keeps the element type f32, but the result has bf16}}
  %0 = tgraph.broadcast_in_dim %v {broadcast_dimensions = array<i64: 1>}
      : tensor<64xf32> -> tensor<?x64xbf16, #tgraph.dims<[B, 64]>>
  return
}

// -----

// broadcast_in_dim: one broadcast dimension per operand dim.
func.func @broadcast_dims_size(%v: tensor<64xf32>) {
  // expected-error @+1 {{'tgraph.broadcast_in_dim' op broadcast_dimensions has 2 entries but the operand has rank 1}}
  %0 = tgraph.broadcast_in_dim %v {broadcast_dimensions = array<i64: 0, 1>}
      : tensor<64xf32> -> tensor<?x64xf32, #tgraph.dims<[B, 64]>>
  return
}

// -----

// broadcast_in_dim: two operand dims cannot map to one result dim.
func.func @broadcast_dims_duplicate(%x: tensor<64x64xf32>) {
  // expected-error @+1 {{'tgraph.broadcast_in_dim' op broadcast_dimensions names dimension 1 twice}}
  %0 = tgraph.broadcast_in_dim %x {broadcast_dimensions = array<i64: 1, 1>}
      : tensor<64x64xf32> -> tensor<?x64xf32, #tgraph.dims<[B, 64]>>
  return
}

// -----

// broadcast_in_dim: an operand dim that is not 1 must equal its result dim.
// (D against 2*D is allowed: D may be 1, which a run-time check decides.)
func.func @broadcast_dim_mismatch(%v: tensor<3xf32>) {
  // expected-error @+1 {{'tgraph.broadcast_in_dim' op broadcast_in_dim needs each operand dim to be 1 or equal to its result dim: operand 0 dim 0 is 3 but result dim 1 is 4}}
  %0 = tgraph.broadcast_in_dim %v {broadcast_dimensions = array<i64: 1>}
      : tensor<3xf32> -> tensor<?x4xf32, #tgraph.dims<[B, 4]>>
  return
}

// -----

// broadcast_in_dim: "D+2" is never 1 and never 2*D+3.
func.func @broadcast_dim_never(%v: tensor<?xf32, #tgraph.dims<["D+2"]>>) {
  // expected-error @+1 {{'tgraph.broadcast_in_dim' op broadcast_in_dim needs each operand dim to be 1 or equal to its result dim: operand 0 dim 0 is D+2 but result dim 0 is 2*D+3, which differ for every value of D}}
  %0 = tgraph.broadcast_in_dim %v {broadcast_dimensions = array<i64: 0>}
      : tensor<?xf32, #tgraph.dims<["D+2"]>> -> tensor<?xf32, #tgraph.dims<["2*D+3"]>>
  return
}

// -----

// broadcast_in_dim: a new result dim must be given by the result type.
func.func @broadcast_unknown_new_dim(%v: tensor<64xf32>) {
  // expected-error @+1 {{'tgraph.broadcast_in_dim' op result dim 0 is '?' and no operand dim determines it}}
  %0 = tgraph.broadcast_in_dim %v {broadcast_dimensions = array<i64: 1>}
      : tensor<64xf32> -> tensor<?x64xf32>
  return
}

// -----

// slice: start, limit and stride need one entry per operand dim.
func.func @slice_sizes(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>) {
  // expected-error @+1 {{'tgraph.slice' op start, limit and stride need one entry per operand dim (2), but have 1, 2 and 2}}
  %0 = tgraph.slice %x {start = #tgraph.dims<[0]>, limit = #tgraph.dims<[B, S]>, stride = array<i64: 1, 1>}
      : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x?xf32, #tgraph.dims<[B, S]>>
  return
}

// -----

// slice: bounds must be known.
func.func @slice_unknown_bound(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>) {
  // expected-error @+1 {{'tgraph.slice' op start and limit of dim 1 must be known}}
  %0 = tgraph.slice %x {start = #tgraph.dims<[0, 0]>, limit = #tgraph.dims<[B, ?]>, stride = array<i64: 1, 1>}
      : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x?xf32, #tgraph.dims<[B, S]>>
  return
}

// -----

// slice: strides are positive.
func.func @slice_stride(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>) {
  // expected-error @+1 {{'tgraph.slice' op stride of dim 0 must be >= 1, but is 0}}
  %0 = tgraph.slice %x {start = #tgraph.dims<[0, 0]>, limit = #tgraph.dims<[B, S]>, stride = array<i64: 0, 1>}
      : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x?xf32, #tgraph.dims<[B, S]>>
  return
}

// -----

// slice: a constant start is not negative.
func.func @slice_negative_start(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>) {
  // expected-error @+1 {{'tgraph.slice' op start of dim 1 is negative (-1)}}
  %0 = tgraph.slice %x {start = #tgraph.dims<[0, -1]>, limit = #tgraph.dims<[B, S]>, stride = array<i64: 1, 1>}
      : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x?xf32, #tgraph.dims<[B, "S+1"]>>
  return
}

// -----

// slice: the limit is not below the start.
func.func @slice_limit_below_start(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>) {
  // expected-error @+1 {{'tgraph.slice' op limit of dim 1 (S-1) is below its start (S)}}
  %0 = tgraph.slice %x {start = #tgraph.dims<[0, S]>, limit = #tgraph.dims<[B, "S-1"]>, stride = array<i64: 1, 1>}
      : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x0xf32, #tgraph.dims<[B, 0]>>
  return
}

// -----

// slice: the limit is not past the end of the operand dim.
func.func @slice_limit_past_end(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>) {
  // expected-error @+1 {{'tgraph.slice' op limit of dim 1 (S+1) is past the end of operand 0 dim 1 (S)}}
  %0 = tgraph.slice %x {start = #tgraph.dims<[0, 0]>, limit = #tgraph.dims<[B, "S+1"]>, stride = array<i64: 1, 1>}
      : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x?xf32, #tgraph.dims<[B, "S+1"]>>
  return
}

// -----

// dynamic_slice: one start index per operand dim.
func.func @dynamic_slice_starts(%x: tensor<?x?xf32, #tgraph.dims<[N, D]>>, %i: tensor<i64>) {
  // expected-error @+1 {{'tgraph.dynamic_slice' op expected one start index per operand dim (2), but got 1}}
  %0 = tgraph.dynamic_slice %x[%i] {sizes = #tgraph.dims<[1, D]>}
      : (tensor<?x?xf32, #tgraph.dims<[N, D]>>, tensor<i64>) -> tensor<1x?xf32, #tgraph.dims<[1, D]>>
  return
}

// -----

// dynamic_slice: one size per operand dim.
func.func @dynamic_slice_sizes(%x: tensor<?x?xf32, #tgraph.dims<[N, D]>>, %i: tensor<i64>) {
  // expected-error @+1 {{'tgraph.dynamic_slice' op sizes has 3 entries but the operand has rank 2}}
  %0 = tgraph.dynamic_slice %x[%i, %i] {sizes = #tgraph.dims<[1, D, 1]>}
      : (tensor<?x?xf32, #tgraph.dims<[N, D]>>, tensor<i64>, tensor<i64>) -> tensor<1x?xf32, #tgraph.dims<[1, D]>>
  return
}

// -----

// dynamic_slice: sizes must be known.
func.func @dynamic_slice_unknown_size(%x: tensor<?x?xf32, #tgraph.dims<[N, D]>>, %i: tensor<i64>) {
  // expected-error @+1 {{'tgraph.dynamic_slice' op size of dim 0 must be known}}
  %0 = tgraph.dynamic_slice %x[%i, %i] {sizes = #tgraph.dims<[?, D]>}
      : (tensor<?x?xf32, #tgraph.dims<[N, D]>>, tensor<i64>, tensor<i64>) -> tensor<?x?xf32, #tgraph.dims<[?, D]>>
  return
}

// -----

// dynamic_slice: a size that may be negative.
func.func @dynamic_slice_negative_size(%x: tensor<?x?xf32, #tgraph.dims<[N, D]>>, %i: tensor<i64>) {
  // expected-error @+1 {{'tgraph.dynamic_slice' op size of dim 1 (D-2) may be negative}}
  %0 = tgraph.dynamic_slice %x[%i, %i] {sizes = #tgraph.dims<[1, "D-2"]>}
      : (tensor<?x?xf32, #tgraph.dims<[N, D]>>, tensor<i64>, tensor<i64>) -> tensor<1x?xf32, #tgraph.dims<[1, "D-2"]>>
  return
}

// -----

// dynamic_slice: the box must fit in the operand.
func.func @dynamic_slice_too_large(%x: tensor<?x?xf32, #tgraph.dims<[N, D]>>, %i: tensor<i64>) {
  // expected-error @+1 {{'tgraph.dynamic_slice' op size of dim 1 (2*D+1) exceeds operand 0 dim 1 (D)}}
  %0 = tgraph.dynamic_slice %x[%i, %i] {sizes = #tgraph.dims<[1, "2*D+1"]>}
      : (tensor<?x?xf32, #tgraph.dims<[N, D]>>, tensor<i64>, tensor<i64>) -> tensor<1x?xf32, #tgraph.dims<[1, "2*D+1"]>>
  return
}

// -----

// concat: the concatenated dim is an operand dim.
func.func @concat_dim_range(%a: tensor<?x4xf32, #tgraph.dims<[N, 4]>>) {
  // expected-error @+1 {{'tgraph.concat' op dim 2 is out of range for an operand of rank 2 (expected 0..1)}}
  %0 = tgraph.concat %a, %a {dim = 2 : i64}
      : (tensor<?x4xf32, #tgraph.dims<[N, 4]>>, tensor<?x4xf32, #tgraph.dims<[N, 4]>>) -> tensor<?x4xf32, #tgraph.dims<[N, 4]>>
  return
}

// -----

// concat: all operands have one rank.
func.func @concat_rank(%a: tensor<?x4xf32, #tgraph.dims<[N, 4]>>, %b: tensor<?xf32, #tgraph.dims<[M]>>) {
  // expected-error @+1 {{'tgraph.concat' op operand 1 has rank 1 but operand 0 has rank 2}}
  %0 = tgraph.concat %a, %b {dim = 0 : i64}
      : (tensor<?x4xf32, #tgraph.dims<[N, 4]>>, tensor<?xf32, #tgraph.dims<[M]>>) -> tensor<?x4xf32, #tgraph.dims<[N, 4]>>
  return
}

// -----

// concat: dims other than the concatenated one must agree.
func.func @concat_dim_mismatch(%a: tensor<?x?xf32, #tgraph.dims<[N, D]>>, %b: tensor<?x?xf32, #tgraph.dims<[M, "2*D+1"]>>) {
  // expected-error @+1 {{'tgraph.concat' op non-concatenated dimension mismatch: operand 0 dim 1 is D but operand 1 dim 1 is 2*D+1, which differ for every value of D}}
  %0 = tgraph.concat %a, %b {dim = 0 : i64}
      : (tensor<?x?xf32, #tgraph.dims<[N, D]>>, tensor<?x?xf32, #tgraph.dims<[M, "2*D+1"]>>) -> tensor<?x?xf32, #tgraph.dims<["M+N", D]>>
  return
}

// -----

// pad: the padding value has the element type.
func.func @pad_value_type(%x: tensor<?x8xf32, #tgraph.dims<[B, 8]>>) {
  // expected-error @+1 {{'tgraph.pad' op padding value has type f64 but the operand's element type is f32}}
  %0 = tgraph.pad %x {low = array<i64: 0, 1>, high = array<i64: 0, 1>, interior = array<i64: 0, 0>, value = 0.0 : f64}
      : tensor<?x8xf32, #tgraph.dims<[B, 8]>> -> tensor<?x10xf32, #tgraph.dims<[B, 10]>>
  return
}

// -----

// pad: low, high and interior need one entry per operand dim.
func.func @pad_sizes(%x: tensor<?x8xf32, #tgraph.dims<[B, 8]>>) {
  // expected-error @+1 {{'tgraph.pad' op low, high and interior need one entry per operand dim (2), but have 2, 1 and 2}}
  %0 = tgraph.pad %x {low = array<i64: 0, 1>, high = array<i64: 1>, interior = array<i64: 0, 0>, value = 0.0 : f32}
      : tensor<?x8xf32, #tgraph.dims<[B, 8]>> -> tensor<?x10xf32, #tgraph.dims<[B, 10]>>
  return
}

// -----

// pad: interior padding is not negative.
func.func @pad_interior(%x: tensor<?x8xf32, #tgraph.dims<[B, 8]>>) {
  // expected-error @+1 {{'tgraph.pad' op interior padding of dim 1 must be >= 0, but is -1}}
  %0 = tgraph.pad %x {low = array<i64: 0, 0>, high = array<i64: 0, 0>, interior = array<i64: 0, -1>, value = 0.0 : f32}
      : tensor<?x8xf32, #tgraph.dims<[B, 8]>> -> tensor<?x1xf32, #tgraph.dims<[B, 1]>>
  return
}

// -----

// pad: cropping cannot make a dim negative.
func.func @pad_negative(%x: tensor<?x8xf32, #tgraph.dims<[B, 8]>>) {
  // expected-error @+1 {{'tgraph.pad' op padding makes dim 1 negative (-2)}}
  %0 = tgraph.pad %x {low = array<i64: 0, -5>, high = array<i64: 0, -5>, interior = array<i64: 0, 0>, value = 0.0 : f32}
      : tensor<?x8xf32, #tgraph.dims<[B, 8]>> -> tensor<?x0xf32, #tgraph.dims<[B, 0]>>
  return
}

// -----

// gather: the gathered dim is an operand dim.
func.func @gather_dim_range(%x: tensor<?x64xf32, #tgraph.dims<[V, 64]>>, %idx: tensor<?xi32, #tgraph.dims<[N]>>) {
  // expected-error @+1 {{'tgraph.gather' op dim 2 is out of range for an operand of rank 2 (expected 0..1)}}
  %0 = tgraph.gather %x, %idx {dim = 2 : i64}
      : (tensor<?x64xf32, #tgraph.dims<[V, 64]>>, tensor<?xi32, #tgraph.dims<[N]>>) -> tensor<?x64xf32, #tgraph.dims<[N, 64]>>
  return
}

// -----

// scatter_add: operand and updates have one element type.
func.func @scatter_element_type(%t: tensor<1000x64xf32>, %ids: tensor<?xi32, #tgraph.dims<[N]>>,
                                %upd: tensor<?x64xf16, #tgraph.dims<[N, 64]>>) {
  // expected-error @+1 {{'tgraph.scatter_add' op x (operand 0) has element type f32 but updates (operand 2) has f16; tensor dtypes do not promote: cast one of them (tgraph.cast, op.cast)}}
  %0 = tgraph.scatter_add %t, %ids, %upd {dim = 0 : i64}
      : (tensor<1000x64xf32>, tensor<?xi32, #tgraph.dims<[N]>>, tensor<?x64xf16, #tgraph.dims<[N, 64]>>) -> tensor<1000x64xf32>
  return
}

// -----

// scatter_add: updates have the rank of the gather result.
func.func @scatter_updates_rank(%t: tensor<1000x64xf32>, %ids: tensor<?xi32, #tgraph.dims<[N]>>,
                                %upd: tensor<?xf32, #tgraph.dims<[N]>>) {
  // expected-error @+1 {{'tgraph.scatter_add' op updates (operand 2) must have shape [N, 64] (operand dims around dim 0 with the index shape inside), but has shape [N]}}
  %0 = tgraph.scatter_add %t, %ids, %upd {dim = 0 : i64}
      : (tensor<1000x64xf32>, tensor<?xi32, #tgraph.dims<[N]>>, tensor<?xf32, #tgraph.dims<[N]>>) -> tensor<1000x64xf32>
  return
}

// -----

// scatter_add: updates dims match the index and operand dims.
func.func @scatter_updates_dim(%t: tensor<1000x64xf32>, %ids: tensor<?xi32, #tgraph.dims<[N]>>,
                               %upd: tensor<?x32xf32, #tgraph.dims<[N, 32]>>) {
  // expected-error @+1 {{'tgraph.scatter_add' op updates dimension mismatch: x (operand 0) dim 1 is 64 but updates (operand 2) dim 1 is 32}}
  %0 = tgraph.scatter_add %t, %ids, %upd {dim = 0 : i64}
      : (tensor<1000x64xf32>, tensor<?xi32, #tgraph.dims<[N]>>, tensor<?x32xf32, #tgraph.dims<[N, 32]>>) -> tensor<1000x64xf32>
  return
}

// -----

// embedding: the table is [vocab, dim].
func.func @embedding_table_rank(%t: tensor<10x20x30xf32>, %ids: tensor<?xi32, #tgraph.dims<[N]>>) {
  // expected-error @+1 {{'tgraph.embedding' op table (operand 0) must have rank 2 ([vocab, dim]), but has shape [10, 20, 30]}}
  %0 = tgraph.embedding %t, %ids
      : (tensor<10x20x30xf32>, tensor<?xi32, #tgraph.dims<[N]>>) -> tensor<?x30xf32, #tgraph.dims<[N, 30]>>
  return
}

// -----

// one_hot: at least one class.
func.func @one_hot_classes(%y: tensor<?xi64, #tgraph.dims<[B]>>) {
  // expected-error @+1 {{'tgraph.one_hot' op num_classes must be >= 1, but is 0}}
  %0 = tgraph.one_hot %y {num_classes = 0 : i64}
      : tensor<?xi64, #tgraph.dims<[B]>> -> tensor<?x0xf32, #tgraph.dims<[B, 0]>>
  return
}

// -----

// dim: the index is an operand dim.
func.func @dim_index(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>) {
  // expected-error @+1 {{'tgraph.dim' op index 2 is out of range for an operand of rank 2}}
  %0 = tgraph.dim %x, 2 : tensor<?x?xf32, #tgraph.dims<[B, S]>>
  return
}

// -----

// dim_size: the dim is an operand dim.
func.func @dim_size_dim(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>) {
  // expected-error @+1 {{'tgraph.dim_size' op dim -1 is out of range for an operand of rank 2}}
  %0 = tgraph.dim_size %x {dim = -1 : i64} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<f32>
  return
}

// -----

// broadcast_in_dim: the mapping indexes the result's dims.
func.func @broadcast_in_dim_out_of_result(%v: tensor<64xf32>) {
  // expected-error @+1 {{'tgraph.broadcast_in_dim' op broadcast_dimensions entry 2 is out of range for the result of rank 2}}
  %0 = tgraph.broadcast_in_dim %v {broadcast_dimensions = array<i64: 2>} : tensor<64xf32> -> tensor<?x64xf32, #tgraph.dims<[B, 64]>>
  return
}

// -----

// slice: a start that is negative for every value of S.
func.func @slice_negative_symbolic_start(%x: tensor<?x?xf32, #tgraph.dims<[B, S]>>) {
  // expected-error @+1 {{'tgraph.slice' op start of dim 1 is negative (-S-1)}}
  %0 = tgraph.slice %x {start = #tgraph.dims<[0, "-S-1"]>, limit = #tgraph.dims<[B, 0]>, stride = array<i64: 1, 1>} : tensor<?x?xf32, #tgraph.dims<[B, S]>> -> tensor<?x?xf32, #tgraph.dims<[B, S]>>
  return
}

// -----

// slice: a limit below the start for every value of S.
func.func @slice_limit_below_start(%x: tensor<?xf32, #tgraph.dims<[S]>>) {
  // expected-error @+1 {{'tgraph.slice' op limit of dim 0 (S) is below its start (S+1)}}
  %0 = tgraph.slice %x {start = #tgraph.dims<["S+1"]>, limit = #tgraph.dims<[S]>, stride = array<i64: 1>} : tensor<?xf32, #tgraph.dims<[S]>> -> tensor<?xf32>
  return
}

// -----

// dim_size: narrow integer results cannot hold sizes.
func.func @dim_size_narrow(%x: tensor<300xf32>) {
  // expected-error @+1 {{'tgraph.dim_size' op result element type i8 cannot hold dimension sizes; use i32, i64 or a float type}}
  %n = tgraph.dim_size %x {dim = 0 : i64} : tensor<300xf32> -> tensor<i8>
  return
}

// -----

// pad: padding that overflows 64-bit sizes.
func.func @pad_overflow(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.pad' op padding of dim 0 overflows 64-bit sizes}}
  %0 = tgraph.pad %x {low = array<i64: 9223372036854775807>, high = array<i64: 9223372036854775807>, interior = array<i64: 0>, value = 0.0 : f32} : tensor<4xf32> -> tensor<6xf32>
  return
}
