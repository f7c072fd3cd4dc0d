// RUN: tessera-opt %s -split-input-file -verify-diagnostics

// Diagnostics of the control-flow and call ops: one case per message.

// cond: each region ends with tgraph.yield.
func.func @cond_no_yield(%p: tensor<i1>, %x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.cond' op the then region must end with tgraph.yield}}
  %0 = tgraph.cond %p -> tensor<4xf32> {
    %n = tgraph.neg %x : tensor<4xf32>
  } else {
    tgraph.yield %x : tensor<4xf32>
  }
  return
}

// -----

// cond: the else region ends with tgraph.yield too.
func.func @cond_else_no_yield(%p: tensor<i1>, %x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.cond' op the else region must end with tgraph.yield}}
  %0 = tgraph.cond %p -> tensor<4xf32> {
    tgraph.yield %x : tensor<4xf32>
  } else {
    %n = tgraph.neg %x : tensor<4xf32>
  }
  return
}

// -----

// cond: both branches yield the same number of values.
func.func @cond_yield_count(%p: tensor<i1>, %x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.cond' op the then region yields 2 values but the else region yields 3}}
  %0:2 = tgraph.cond %p -> tensor<4xf32>, tensor<4xf32> {
    tgraph.yield %x, %x : tensor<4xf32>, tensor<4xf32>
  } else {
    tgraph.yield %x, %x, %x : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
  return
}

// -----

// cond: the branches yield values of one element type and rank.
func.func @cond_yield_types(%p: tensor<i1>, %x: tensor<4xf32>, %y: tensor<4xf16>) {
  // expected-error @+1 {{'tgraph.cond' op the branches yield different types for result 0: tensor<4xf32> and tensor<4xf16>}}
  %0 = tgraph.cond %p -> tensor<4xf32> {
    tgraph.yield %x : tensor<4xf32>
  } else {
    tgraph.yield %y : tensor<4xf16>
  }
  return
}

// -----

// while: both regions take the carried values.
func.func @while_region_args(%n: tensor<i64>) {
  // expected-error @+1 {{'tgraph.while' op the cond and body regions must each take the 2 carried values as arguments}}
  %0:2 = tgraph.while (%n, %n) : tensor<i64>, tensor<i64> -> tensor<i64>, tensor<i64> cond {
  ^bb0(%it: tensor<i64>):
    %c = tgraph.compare lt, %it, %it : (tensor<i64>, tensor<i64>) -> tensor<i1>
    tgraph.yield %c : tensor<i1>
  } do {
  ^bb0(%it: tensor<i64>, %m: tensor<i64>):
    tgraph.yield %it, %m : tensor<i64>, tensor<i64>
  }
  return
}

// -----

// while: trip_count is not negative.
func.func @while_trip_count(%n: tensor<i64>) {
  // expected-error @+1 {{'tgraph.while' op trip_count must be >= 0, but is -1}}
  %0 = tgraph.while (%n) : tensor<i64> -> tensor<i64> attributes {trip_count = -1 : i64} cond {
  ^bb0(%it: tensor<i64>):
    %c = tgraph.compare lt, %it, %it : (tensor<i64>, tensor<i64>) -> tensor<i1>
    tgraph.yield %c : tensor<i1>
  } do {
  ^bb0(%it: tensor<i64>):
    tgraph.yield %it : tensor<i64>
  }
  return
}

// -----

// while: an init has the type of its carry (element type).
func.func @while_init_type(%n: tensor<i32>) {
  // expected-error @+1 {{'tgraph.while' op init/carry mismatch: init 0 has type tensor<i32> but carry 0 of the body has type tensor<i64>}}
  %0 = tgraph.while (%n) : tensor<i32> -> tensor<i64> cond {
  ^bb0(%it: tensor<i64>):
    %c = tgraph.compare lt, %it, %it : (tensor<i64>, tensor<i64>) -> tensor<i1>
    tgraph.yield %c : tensor<i1>
  } do {
  ^bb0(%it: tensor<i64>):
    tgraph.yield %it : tensor<i64>
  }
  return
}

// -----

// while: the cond region takes the carry types of the body.
func.func @while_cond_arg_type(%x: tensor<?xf32, #tgraph.dims<[N]>>) {
  // expected-error @+1 {{'tgraph.while' op cond argument 0 has type tensor<4xf32> but the body's carry has type tensor<?xf32, #tgraph.dims<[N]>>}}
  %0 = tgraph.while (%x) : tensor<?xf32, #tgraph.dims<[N]>> -> tensor<?xf32, #tgraph.dims<[N]>> cond {
  ^bb0(%it: tensor<4xf32>):
    %c = tgraph.constant dense<true> : tensor<i1>
    tgraph.yield %c : tensor<i1>
  } do {
  ^bb0(%it: tensor<?xf32, #tgraph.dims<[N]>>):
    tgraph.yield %it : tensor<?xf32, #tgraph.dims<[N]>>
  }
  return
}

// -----

// while: the cond region ends with tgraph.yield.
func.func @while_cond_no_yield(%n: tensor<i64>) {
  // expected-error @+1 {{'tgraph.while' op the cond region must end with tgraph.yield}}
  %0 = tgraph.while (%n) : tensor<i64> -> tensor<i64> cond {
  ^bb0(%it: tensor<i64>):
    %c = tgraph.compare lt, %it, %it : (tensor<i64>, tensor<i64>) -> tensor<i1>
  } do {
  ^bb0(%it: tensor<i64>):
    tgraph.yield %it : tensor<i64>
  }
  return
}

// -----

// while: the cond region yields one boolean scalar.
func.func @while_cond_yield(%n: tensor<i64>) {
  // expected-error @+1 {{'tgraph.while' op the cond region must yield one tensor<i1>}}
  %0 = tgraph.while (%n) : tensor<i64> -> tensor<i64> cond {
  ^bb0(%it: tensor<i64>):
    tgraph.yield %it : tensor<i64>
  } do {
  ^bb0(%it: tensor<i64>):
    tgraph.yield %it : tensor<i64>
  }
  return
}

// -----

// while: the body yields one value per carry.
func.func @while_body_yield_count(%n: tensor<i64>) {
  // expected-error @+1 {{'tgraph.while' op the body yields 3 values but the loop carries 2}}
  %0:2 = tgraph.while (%n, %n) : tensor<i64>, tensor<i64> -> tensor<i64>, tensor<i64> cond {
  ^bb0(%it: tensor<i64>, %m: tensor<i64>):
    %c = tgraph.compare lt, %it, %m : (tensor<i64>, tensor<i64>) -> tensor<i1>
    tgraph.yield %c : tensor<i1>
  } do {
  ^bb0(%it: tensor<i64>, %m: tensor<i64>):
    tgraph.yield %it, %m, %m : tensor<i64>, tensor<i64>, tensor<i64>
  }
  return
}

// -----

// while: the body keeps the carried shapes (dims that differ for every value).
func.func @while_body_changes_carry(%x: tensor<?xf32, #tgraph.dims<[N]>>) {
  // expected-error @+1 {{'tgraph.while' op the body changes a carried type: body result 0 dim 0 is N+1 but carry 0 dim 0 is N, which differ for every value of N}}
  %0 = tgraph.while (%x) : tensor<?xf32, #tgraph.dims<[N]>> -> tensor<?xf32, #tgraph.dims<[N]>> cond {
  ^bb0(%it: tensor<?xf32, #tgraph.dims<[N]>>):
    %c = tgraph.constant dense<true> : tensor<i1>
    tgraph.yield %c : tensor<i1>
  } do {
  ^bb0(%it: tensor<?xf32, #tgraph.dims<[N]>>):
    %one = tgraph.constant dense<1.0> : tensor<1xf32>
    %d = tgraph.concat %it, %one {dim = 0 : i64}
        : (tensor<?xf32, #tgraph.dims<[N]>>, tensor<1xf32>) -> tensor<?xf32, #tgraph.dims<["N+1"]>>
    tgraph.yield %d : tensor<?xf32, #tgraph.dims<["N+1"]>>
  }
  return
}

// -----

// scan: the body takes the carries and one slice of each xs.
func.func @scan_body_args(%h0: tensor<4xf32>, %xs: tensor<?x4xf32, #tgraph.dims<[T, 4]>>) {
  // expected-error @+1 {{'tgraph.scan' op the body must take the 2 carried values and one slice of each of the 2 xs as arguments}}
  %0:2 = tgraph.scan init(%h0, %h0 : tensor<4xf32>, tensor<4xf32>)
      over(%xs, %xs : tensor<?x4xf32, #tgraph.dims<[T, 4]>>, tensor<?x4xf32, #tgraph.dims<[T, 4]>>)
      -> (tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%h: tensor<4xf32>, %g: tensor<4xf32>, %x: tensor<4xf32>):
    tgraph.yield %h, %g : tensor<4xf32>, tensor<4xf32>
  }
  return
}

// -----

// scan: length is not negative.
func.func @scan_negative_length(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.scan' op length must be >= 0, but is -1}}
  %0 = tgraph.scan init() over() -> (tensor<0x4xf32>) attributes {length = -1 : i64} {
    tgraph.yield %x : tensor<4xf32>
  }
  return
}

// -----

// scan: xs have a leading dim.
func.func @scan_scalar_xs(%s: tensor<f32>) {
  // expected-error @+1 {{'tgraph.scan' op xs 0 (operand 0) must have a leading dim to scan over, but is a scalar}}
  %0 = tgraph.scan init() over(%s : tensor<f32>) -> (tensor<f32>) {
  ^bb0(%x: tensor<f32>):
    tgraph.yield
  }
  return
}

// -----

// scan: all xs have the scan length as leading dim.
func.func @scan_length_mismatch(%a: tensor<3x4xf32>, %b: tensor<5x4xf32>) {
  // expected-error @+1 {{'tgraph.scan' op scan length mismatch: the scan length is 3 but xs 1 (operand 1) dim 0 is 5}}
  %0 = tgraph.scan init() over(%a, %b : tensor<3x4xf32>, tensor<5x4xf32>) -> (tensor<3x4xf32>) {
  ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>):
    tgraph.yield %x : tensor<4xf32>
  }
  return
}

// -----

// scan: without xs the length comes from the attribute.
func.func @scan_no_length(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.scan' op a scan with no xs needs a length attribute}}
  %0 = tgraph.scan init() over() -> (tensor<3x4xf32>) {
    tgraph.yield %x : tensor<4xf32>
  }
  return
}

// -----

// scan: an init has the shape of its carry (rank).
func.func @scan_init_rank(%h0: tensor<4x4xf32>, %xs: tensor<?x4xf32, #tgraph.dims<[T, 4]>>) {
  // expected-error @+1 {{'tgraph.scan' op init/carry mismatch: init 0 has shape [4, 4] but carry 0 of the body has shape [4]}}
  %0:2 = tgraph.scan init(%h0 : tensor<4x4xf32>) over(%xs : tensor<?x4xf32, #tgraph.dims<[T, 4]>>)
      -> (tensor<4xf32>, tensor<?x4xf32, #tgraph.dims<[T, 4]>>) {
  ^bb0(%h: tensor<4xf32>, %x: tensor<4xf32>):
    tgraph.yield %h, %x : tensor<4xf32>, tensor<4xf32>
  }
  return
}

// -----

// scan: the body takes one slice of each xs.
func.func @scan_slice(%h0: tensor<4xf32>, %xs: tensor<?x4xf32, #tgraph.dims<[T, 4]>>) {
  // expected-error @+1 {{'tgraph.scan' op scan slice mismatch: body argument 1 dim 0 is 8 but a slice of xs 0 dim 0 is 4}}
  %0 = tgraph.scan init(%h0 : tensor<4xf32>) over(%xs : tensor<?x4xf32, #tgraph.dims<[T, 4]>>) -> (tensor<4xf32>) {
  ^bb0(%h: tensor<4xf32>, %x: tensor<8xf32>):
    tgraph.yield %h : tensor<4xf32>
  }
  return
}

// -----

// scan: the body yields at least the carries.
func.func @scan_yield_count(%h0: tensor<4xf32>, %xs: tensor<?x4xf32, #tgraph.dims<[T, 4]>>) {
  // expected-error @+1 {{'tgraph.scan' op the body yields 0 values but must yield at least the 2 carried values}}
  %0:2 = tgraph.scan init(%h0, %h0 : tensor<4xf32>, tensor<4xf32>) over(%xs : tensor<?x4xf32, #tgraph.dims<[T, 4]>>)
      -> (tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%h: tensor<4xf32>, %g: tensor<4xf32>, %x: tensor<4xf32>):
    tgraph.yield
  }
  return
}

// -----

// scan: stacked outputs are tensors.
func.func @scan_output_not_tensor(%xs: tensor<?x4xf32, #tgraph.dims<[T, 4]>>) {
  // expected-error @+1 {{'tgraph.scan' op scan output 0 must be a tensor to be stacked}}
  %0 = tgraph.scan init() over(%xs : tensor<?x4xf32, #tgraph.dims<[T, 4]>>) -> (!tgraph.key) {
  ^bb0(%x: tensor<4xf32>):
    %k = tgraph.rng.key {seed = 0 : i64}
    tgraph.yield %k : !tgraph.key
  }
  return
}

// -----

// fixed_point: the body takes x and the params.
func.func @fixed_point_args(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.fixed_point' op the body must take x and the 2 params as arguments}}
  %0 = tgraph.fixed_point %x params(%x, %x : tensor<4xf32>, tensor<4xf32>) : tensor<4xf32> -> tensor<4xf32> {
  ^bb0(%z: tensor<4xf32>):
    tgraph.yield %z : tensor<4xf32>
  }
  return
}

// -----

// fixed_point: the tolerance is positive.
func.func @fixed_point_tol(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.fixed_point' op tol must be positive, but is -1}}
  %0 = tgraph.fixed_point %x {tol = -1.0 : f64} : tensor<4xf32> -> tensor<4xf32> {
  ^bb0(%z: tensor<4xf32>):
    tgraph.yield %z : tensor<4xf32>
  }
  return
}

// -----

// solve: at least one iteration.
func.func @solve_max_iter(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.solve' op max_iter must be >= 1, but is 0}}
  %0 = tgraph.solve %x {max_iter = 0 : i64} : tensor<4xf32> -> tensor<4xf32> {
  ^bb0(%z: tensor<4xf32>):
    tgraph.yield %z : tensor<4xf32>
  }
  return
}

// -----

// fixed_point: the first body argument has the type of init.
func.func @fixed_point_init(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.fixed_point' op init/argument mismatch: init has type tensor<4xf32> but body argument 0 has type tensor<4xf64>}}
  %0 = tgraph.fixed_point %x : tensor<4xf32> -> tensor<4xf32> {
  ^bb0(%z: tensor<4xf64>):
    tgraph.yield %z : tensor<4xf64>
  }
  return
}

// -----

// solve: the other body arguments have the types of the params.
func.func @solve_param(%x: tensor<4xf32>, %a: tensor<?xf32, #tgraph.dims<[N]>>) {
  // expected-error @+1 {{'tgraph.solve' op param/argument mismatch: param 0 dim 0 is N but body argument 1 dim 0 is N+1, which differ for every value of N}}
  %0 = tgraph.solve %x params(%a : tensor<?xf32, #tgraph.dims<[N]>>) : tensor<4xf32> -> tensor<4xf32> {
  ^bb0(%z: tensor<4xf32>, %p: tensor<?xf32, #tgraph.dims<["N+1"]>>):
    tgraph.yield %z : tensor<4xf32>
  }
  return
}

// -----

// fixed_point: the body yields one value, F(x, params).
func.func @fixed_point_yield_count(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.fixed_point' op the body must yield one value (F(x, params)), but yields 2}}
  %0 = tgraph.fixed_point %x : tensor<4xf32> -> tensor<4xf32> {
  ^bb0(%z: tensor<4xf32>):
    tgraph.yield %z, %z : tensor<4xf32>, tensor<4xf32>
  }
  return
}

// -----

// solve: the body yields one value, the residual.
func.func @solve_yield_count(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.solve' op the body must yield one value (the residual F(x, params)), but yields 0}}
  %0 = tgraph.solve %x : tensor<4xf32> -> tensor<4xf32> {
  ^bb0(%z: tensor<4xf32>):
    tgraph.yield
  }
  return
}

// -----

// solve: the residual has the type of x.
func.func @solve_residual_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.solve' op the body changes the type of x: the residual F(x, params) dim 0 is 2 but init dim 0 is 4}}
  %0 = tgraph.solve %x : tensor<4xf32> -> tensor<4xf32> {
  ^bb0(%z: tensor<4xf32>):
    %r = tgraph.slice %z {start = #tgraph.dims<[0]>, limit = #tgraph.dims<[2]>, stride = array<i64: 1>} : tensor<4xf32> -> tensor<2xf32>
    tgraph.yield %r : tensor<2xf32>
  }
  return
}

// -----

// checkpoint: the body takes the operands.
func.func @checkpoint_args(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.checkpoint' op the body must take the 2 operands as arguments}}
  %0 = tgraph.checkpoint (%x, %x : tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
    %c = tgraph.constant dense<0.0> : tensor<4xf32>
    tgraph.yield %c : tensor<4xf32>
  }
  return
}

// -----

// checkpoint: body arguments have the operand types.
func.func @checkpoint_arg_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.checkpoint' op operand/argument mismatch: operand 0 has type tensor<4xf32> but body argument 0 has type tensor<4xbf16>}}
  %0 = tgraph.checkpoint (%x : tensor<4xf32>) -> tensor<4xbf16> {
  ^bb0(%a: tensor<4xbf16>):
    tgraph.yield %a : tensor<4xbf16>
  }
  return
}

// -----

// checkpoint: the body ends with tgraph.yield.
func.func @checkpoint_no_yield(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.checkpoint' op the body region must end with tgraph.yield}}
  %0 = tgraph.checkpoint (%x : tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %g = tgraph.gelu %a : tensor<4xf32>
  }
  return
}

// -----

// call: the callee is a func.func in scope.
func.func @call_missing(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.call' op callee 'missing' does not name a func.func in scope}}
  %0 = tgraph.call @missing(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func private @two_args(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32>

// call: one argument per callee parameter.
func.func @call_arg_count(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.call' op calling the callee: the callee takes 2 arguments but 3 are passed}}
  %0 = tgraph.call @two_args(%x, %x, %x) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func private @one_arg(%x: tensor<4xf32>) -> tensor<4xf32>

// call: arguments have the parameter types.
func.func @call_arg_type(%x: tensor<4xf16>) {
  // expected-error @+1 {{'tgraph.call' op calling the callee: operand 0 has type tensor<4xf16> but the callee's parameter 0 has type tensor<4xf32>}}
  %0 = tgraph.call @one_arg(%x) : (tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

func.func private @layer(%x: tensor<?x64xf32, #tgraph.dims<[N, 64]>>) -> tensor<?x64xf32, #tgraph.dims<[N, 64]>>

// call: arguments have the parameter ranks.
func.func @call_arg_rank(%x: tensor<64xf32>) {
  // expected-error @+1 {{'tgraph.call' op calling the callee: operand 0 has shape [64] but the callee's parameter 0 has rank 2 [N, 64]}}
  %0 = tgraph.call @layer(%x) : (tensor<64xf32>) -> tensor<?x64xf32>
  return
}

// -----

func.func private @pair(%a: tensor<?xf32, #tgraph.dims<[N]>>, %b: tensor<?xf32, #tgraph.dims<[N]>>) -> tensor<?xf32, #tgraph.dims<[N]>>

// call: a callee symbol bound by one argument must fit the others.
func.func @call_binding(%a: tensor<?xf32, #tgraph.dims<[B]>>, %b: tensor<?xf32, #tgraph.dims<["2*B+1"]>>) {
  // expected-error @+1 {{'tgraph.call' op calling the callee: argument shape mismatch: operand 1 dim 0 is 2*B+1 but the callee's parameter 1 dim 0 (N) is B, which differ for every value of B}}
  %0 = tgraph.call @pair(%a, %b) : (tensor<?xf32, #tgraph.dims<[B]>>, tensor<?xf32, #tgraph.dims<["2*B+1"]>>) -> tensor<?xf32, #tgraph.dims<[B]>>
  return
}

// -----

func.func private @two_results(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)

// call: one result per callee result.
func.func @call_result_count(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.call' op has 3 results but the callee returns 2}}
  %0:3 = tgraph.call @two_results(%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func private @layer(%x: tensor<?x64xf32, #tgraph.dims<[N, 64]>>) -> tensor<?x64xf32, #tgraph.dims<[N, 64]>>

// call: results are the callee's results with its symbols bound.
func.func @call_result_type(%x: tensor<?x64xf32, #tgraph.dims<[B, 64]>>) {
  // expected-error @+1 {{'tgraph.call' op result types do not match the callee's results after binding its shape symbols: expected 'tensor<?x64xf32, #tgraph.dims<[B, 64]>>'}}
  %0 = tgraph.call @layer(%x) : (tensor<?x64xf32, #tgraph.dims<[B, 64]>>) -> tensor<?x64xf32, #tgraph.dims<["B+1", 64]>>
  return
}

// -----

func.func private @clip(%x: tensor<4xf32>) -> tensor<4xf32>
func.func private @clip_bwd(%m: tensor<4xi1>, %g: tensor<4xf32>) -> tensor<4xf32>

// custom_vjp: fwd is a func.func in scope.
func.func @vjp_missing_fwd(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.custom_vjp' op fwd 'clip_fwd' does not name a func.func in scope}}
  %0 = tgraph.custom_vjp @clip(%x) fwd @clip_fwd bwd @clip_bwd : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func private @clip(%x: tensor<4xf32>) -> tensor<4xf32>
func.func private @clip_fwd(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>)

// custom_vjp: bwd is a func.func in scope.
func.func @vjp_missing_bwd(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.custom_vjp' op bwd 'clip_bwd' does not name a func.func in scope}}
  %0 = tgraph.custom_vjp @clip(%x) fwd @clip_fwd bwd @clip_bwd : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func private @clip(%x: tensor<4xf32>) -> tensor<4xf32>
func.func private @clip_fwd(%x: tensor<8xf32>) -> (tensor<4xf32>, tensor<4xi1>)
func.func private @clip_bwd(%m: tensor<4xi1>, %g: tensor<4xf32>) -> tensor<4xf32>

// custom_vjp: fwd takes the callee's arguments.
func.func @vjp_fwd_args(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.custom_vjp' op fwd must take the callee's arguments: expected 'tensor<4xf32>', got 'tensor<8xf32>'}}
  %0 = tgraph.custom_vjp @clip(%x) fwd @clip_fwd bwd @clip_bwd : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func private @clip(%x: tensor<4xf32>) -> tensor<4xf32>
func.func private @clip_fwd(%x: tensor<4xf32>) -> (tensor<4xf16>, tensor<4xi1>)
func.func private @clip_bwd(%m: tensor<4xi1>, %g: tensor<4xf32>) -> tensor<4xf32>

// custom_vjp: fwd returns the callee's results first.
func.func @vjp_fwd_results(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.custom_vjp' op fwd must return the callee's results first: expected 'tensor<4xf32>', got 'tensor<4xf16>'}}
  %0 = tgraph.custom_vjp @clip(%x) fwd @clip_fwd bwd @clip_bwd : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func private @clip(%x: tensor<4xf32>) -> tensor<4xf32>
func.func private @clip_fwd(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>)
func.func private @clip_bwd(%g: tensor<4xf32>, %m: tensor<4xi1>) -> tensor<4xf32>

// custom_vjp: bwd takes the residuals, then the cotangents.
func.func @vjp_bwd_args(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.custom_vjp' op bwd must take fwd's residuals then one cotangent per result: expected 'tensor<4xi1>', 'tensor<4xf32>', got 'tensor<4xf32>', 'tensor<4xi1>'}}
  %0 = tgraph.custom_vjp @clip(%x) fwd @clip_fwd bwd @clip_bwd : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func private @clip(%x: tensor<4xf32>) -> tensor<4xf32>
func.func private @clip_fwd(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>)
func.func private @clip_bwd(%m: tensor<4xi1>, %g: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)

// custom_vjp: bwd returns one cotangent per argument.
func.func @vjp_bwd_results(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.custom_vjp' op bwd must return one cotangent per argument: expected 'tensor<4xf32>', got 'tensor<4xf32>', 'tensor<4xf32>'}}
  %0 = tgraph.custom_vjp @clip(%x) fwd @clip_fwd bwd @clip_bwd : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func private @softplus(%x: tensor<4xf32>) -> tensor<4xf32>

// custom_jvp: jvp is a func.func in scope.
func.func @jvp_missing(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.custom_jvp' op jvp 'softplus_jvp' does not name a func.func in scope}}
  %0 = tgraph.custom_jvp @softplus(%x) jvp @softplus_jvp : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func private @softplus(%x: tensor<4xf32>) -> tensor<4xf32>
func.func private @softplus_jvp(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)

// custom_jvp: jvp takes the arguments, then one tangent per argument.
func.func @jvp_args(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.custom_jvp' op jvp must take the arguments then one tangent per argument: expected 'tensor<4xf32>', 'tensor<4xf32>', got 'tensor<4xf32>'}}
  %0 = tgraph.custom_jvp @softplus(%x) jvp @softplus_jvp : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func private @softplus(%x: tensor<4xf32>) -> tensor<4xf32>
func.func private @softplus_jvp(%x: tensor<4xf32>, %t: tensor<4xf32>) -> tensor<4xf32>

// custom_jvp: jvp returns the results, then one tangent per result.
func.func @jvp_results(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.custom_jvp' op jvp must return the results then one tangent per result: expected 'tensor<4xf32>', 'tensor<4xf32>', got 'tensor<4xf32>'}}
  %0 = tgraph.custom_jvp @softplus(%x) jvp @softplus_jvp : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// custom_vjp: fwd must return at least the callee's results.
func.func private @clip(tensor<4xf32>) -> tensor<4xf32>
func.func private @clip_fwd(tensor<4xf32>) -> ()
func.func private @clip_bwd(tensor<4xf32>) -> tensor<4xf32>
func.func @custom_vjp_fwd_too_few_results(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tgraph.custom_vjp' op fwd must return the callee's results first: expected 'tensor<4xf32>', got}}
  %0 = tgraph.custom_vjp @clip(%x) fwd @clip_fwd bwd @clip_bwd : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// call: a non-tensor argument keeps the operand numbering of the messages.
func.func private @keyed(!tgraph.key, tensor<4xf32>) -> tensor<4xf32>
func.func @call_names_operand_after_key(%k: !tgraph.key, %x: tensor<5xf32>) {
  // expected-error @+1 {{'tgraph.call' op calling the callee: argument shape mismatch: operand 1 dim 0 is 5 but the callee's parameter 1 dim 0 (4) is 4}}
  %0 = tgraph.call @keyed(%k, %x) : (!tgraph.key, tensor<5xf32>) -> tensor<4xf32>
  return
}

// -----

// cond: a branch yields a size that contradicts the declared result.
func.func @cond_branch_contradicts_result(%p: tensor<i1>, %a: tensor<4xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'tgraph.cond' op branch/result mismatch: the else branch's result 0 dim 0 is 8 but result 0 dim 0 is 4}}
  %r = tgraph.cond %p -> tensor<4xf32> {
    tgraph.yield %a : tensor<4xf32>
  } else {
    tgraph.yield %b : tensor<8xf32>
  }
  return
}
