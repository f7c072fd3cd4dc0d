// RUN: tessera-opt %s -split-input-file --tessera-tgraph-lower-to-linalg --canonicalize --cse -verify-diagnostics | FileCheck %s

// cond: the predicate is read out of its 0-d tensor; each region becomes a
// branch of scf.if.
// CHECK-LABEL: func.func @cond
// CHECK-SAME: (%[[P:[^:]+]]: tensor<i1> {bufferization.writable = false}, %[[A:[^:]+]]: tensor<?xf32> {bufferization.writable = false})
// CHECK: %[[C:.+]] = tensor.extract %[[P]][] : tensor<i1>
// CHECK: scf.if %[[C]] -> (tensor<?xf32>) {
// CHECK: math.exp
// CHECK: scf.yield
// CHECK: } else {
// CHECK: arith.negf
// CHECK: scf.yield
func.func @cond(%p: tensor<i1>, %a: tensor<?xf32, #tgraph.dims<[N]>>) -> tensor<?xf32, #tgraph.dims<[N]>> {
  %r = tgraph.cond %p -> tensor<?xf32, #tgraph.dims<[N]>> {
    %e = tgraph.exp %a : tensor<?xf32, #tgraph.dims<[N]>>
    tgraph.yield %e : tensor<?xf32, #tgraph.dims<[N]>>
  } else {
    %n = tgraph.neg %a : tensor<?xf32, #tgraph.dims<[N]>>
    tgraph.yield %n : tensor<?xf32, #tgraph.dims<[N]>>
  }
  return %r : tensor<?xf32, #tgraph.dims<[N]>>
}

// -----

// while: the cond region computes the flag for scf.condition; the body
// yields the next carried values.
// CHECK-LABEL: func.func @count
// CHECK: scf.while (%[[IT:.+]] = %{{.+}}) : (tensor<i64>) -> tensor<i64> {
// CHECK: arith.cmpi slt
// CHECK: %[[F:.+]] = tensor.extract %{{.+}}[] : tensor<i1>
// CHECK: scf.condition(%[[F]]) %[[IT]] : tensor<i64>
// CHECK: } do {
// CHECK: arith.addi
// CHECK: scf.yield
func.func @count(%ten: tensor<i64>) -> tensor<i64> {
  %zero = tgraph.constant dense<0> : tensor<i64>
  %one = tgraph.constant dense<1> : tensor<i64>
  %r = tgraph.while (%zero) : tensor<i64> -> tensor<i64> cond {
  ^bb0(%it: tensor<i64>):
    %c = tgraph.compare lt, %it, %ten : (tensor<i64>, tensor<i64>) -> tensor<i1>
    tgraph.yield %c : tensor<i1>
  } do {
  ^bb0(%it: tensor<i64>):
    %n = tgraph.add %it, %one : tensor<i64>
    tgraph.yield %n : tensor<i64>
  }
  return %r : tensor<i64>
}

// -----

// scan: an scf.for over T that slices the input and inserts each output
// step into a tensor sized from the symbol.
// CHECK-LABEL: func.func @scan
// CHECK-SAME: (%[[H:[^:]+]]: tensor<4xf32> {bufferization.writable = false}, %[[XS:[^:]+]]: tensor<?x4xf32> {bufferization.writable = false})
// CHECK: %[[T:.+]] = tensor.dim %[[XS]], %{{.+}} : tensor<?x4xf32>
// CHECK: %[[YS:.+]] = tensor.empty(%[[T]]) : tensor<?x4xf32>
// CHECK: scf.for %[[I:.+]] = %{{.+}} to %[[T]] step %{{.+}} iter_args(%[[C:.+]] = %[[H]], %[[ACC:.+]] = %[[YS]])
// CHECK: tensor.extract_slice %[[XS]][%[[I]], 0] [1, 4] [1, 1] : tensor<?x4xf32> to tensor<4xf32>
// CHECK: arith.addf
// CHECK: %[[INS:.+]] = tensor.insert_slice %{{.+}} into %[[ACC]][%[[I]], 0] [1, 4] [1, 1]
// CHECK: scf.yield %{{.+}}, %[[INS]]
func.func @scan(%h0: tensor<4xf32>, %xs: tensor<?x4xf32, #tgraph.dims<[T, 4]>>)
    -> (tensor<4xf32>, tensor<?x4xf32, #tgraph.dims<[T, 4]>>) {
  %h, %ys = tgraph.scan init(%h0 : tensor<4xf32>) over(%xs : tensor<?x4xf32, #tgraph.dims<[T, 4]>>)
      -> (tensor<4xf32>, tensor<?x4xf32, #tgraph.dims<[T, 4]>>) {
  ^bb0(%c: tensor<4xf32>, %x: tensor<4xf32>):
    %n = tgraph.add %c, %x : tensor<4xf32>
    tgraph.yield %n, %n : tensor<4xf32>, tensor<4xf32>
  }
  return %h, %ys : tensor<4xf32>, tensor<?x4xf32, #tgraph.dims<[T, 4]>>
}

// -----

// fixed_point: an scf.while carrying x, the iteration count, the converged
// flag and the last change; not converging calls the runtime hook.
// CHECK: llvm.func @tessera_not_converged(!llvm.ptr, i64, f64)
// CHECK-LABEL: func.func @deq
// CHECK: %[[R:.+]]:4 = scf.while ({{.+}}) : (tensor<8xf64>, index, i1, f64) -> (tensor<8xf64>, index, i1, f64)
// CHECK: arith.cmpi ult
// CHECK: scf.condition
// CHECK: math.tanh
// CHECK: math.absf
// CHECK: arith.maximumf
// CHECK: arith.cmpf ole
// CHECK: scf.yield
// CHECK: scf.if
// CHECK: llvm.call @tessera_not_converged
// CHECK: return %[[R]]#0
func.func @deq(%x0: tensor<8xf64>, %t: tensor<8xf64>) -> tensor<8xf64> {
  %x = tgraph.fixed_point %x0 params(%t : tensor<8xf64>) {tol = 1.0e-10 : f64}
      : tensor<8xf64> -> tensor<8xf64> {
  ^bb0(%x: tensor<8xf64>, %th: tensor<8xf64>):
    %s = tgraph.add %x, %th : tensor<8xf64>
    %n = tgraph.tanh %s : tensor<8xf64>
    tgraph.yield %n : tensor<8xf64>
  }
  return %x : tensor<8xf64>
}

// -----

// call: a func.call of the callee, with casts between the call site's
// static types and the callee's symbolic ones.
// CHECK-LABEL: func.func @caller
// CHECK: %[[A:.+]] = tensor.cast %{{.+}} : tensor<3x4xf32> to tensor<?x4xf32>
// CHECK: %[[R:.+]] = call @layer(%[[A]]) : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK: tensor.cast %[[R]] : tensor<?x4xf32> to tensor<3x4xf32>
func.func private @layer(%x: tensor<?x4xf32, #tgraph.dims<[B, 4]>>) -> tensor<?x4xf32, #tgraph.dims<[B, 4]>> {
  %y = tgraph.tanh %x : tensor<?x4xf32, #tgraph.dims<[B, 4]>>
  return %y : tensor<?x4xf32, #tgraph.dims<[B, 4]>>
}
func.func @caller(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %y = tgraph.call @layer(%x) : (tensor<3x4xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}

// -----

// solve: Newton steps in an scf.while that carries x, the step count, the
// converged flag, the residual norm and an out-of-steps flag; a step builds
// the Jacobian column by column (a loop over the 4 unknowns with the body
// inside), transposes it, eliminates and substitutes back.
// CHECK-LABEL: func.func @solve
// CHECK: scf.while ({{.+}}) : (tensor<4xf64>, index, i1, f64, i1) -> (tensor<4xf64>, index, i1, f64
// CHECK: arith.cmpf ole
// CHECK: scf.if %{{.+}} -> (tensor<4xf64>)
// CHECK: scf.for %{{.+}} = %{{.+}} to %c4 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (tensor<4x4xf64>)
// CHECK: arith.mulf
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[%{{.+}}, 0] [1, 4] [1, 1] : tensor<4xf64> into tensor<4x4xf64>
// CHECK: linalg.transpose
// CHECK: llvm.call @tessera_not_converged
func.func @solve(%x0: tensor<4xf64>, %a: tensor<4xf64>) -> tensor<4xf64> {
  %x = tgraph.solve %x0 params(%a : tensor<4xf64>) : tensor<4xf64> -> tensor<4xf64> {
  ^bb0(%x: tensor<4xf64>, %p: tensor<4xf64>):
    %sq = tgraph.mul %x, %x : tensor<4xf64>
    %r = tgraph.sub %sq, %p : tensor<4xf64>
    tgraph.yield %r : tensor<4xf64>
  }
  return %x : tensor<4xf64>
}

// -----

func.func @all_reduce(%g: tensor<16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{'tgraph.all_reduce' op runs over 8 devices, but a CPU executable runs on one; only group_size = 1 can run here}}
  %r = tgraph.all_reduce %g {reduction = #tgraph<reduction sum>, axis_name = "data", group_size = 8 : i64} : tensor<16xf32>
  return %r : tensor<16xf32>
}

// -----

func.func @permute(%x: tensor<16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{'tgraph.permute' op sends from device 0 to device 1, but a CPU executable runs on one device}}
  %r = tgraph.permute %x {pairs = [array<i64: 0, 1>, array<i64: 1, 0>], axis_name = "pipe"} : tensor<16xf32>
  return %r : tensor<16xf32>
}
