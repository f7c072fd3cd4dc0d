// RUN: tessera-opt %s --split-input-file --verify-diagnostics | FileCheck %s

// A group prints and parses back.
// CHECK-LABEL: func.func @round_trip
// CHECK: %[[G:.+]]:2 = tsched.group row [2, 3] (%arg0, %arg1) : (tensor<2x3xf32>, tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x1xf32>) {
// CHECK: tsched.yield %{{.+}}, %{{.+}} : tensor<2x3xf32>, tensor<2x1xf32>
// CHECK: tsched.group attention (%arg2)
func.func @round_trip(%x: tensor<2x3xf32>, %c: tensor<3xf32>, %q: tensor<1x64x64xbf16>)
    -> (tensor<2x3xf32>, tensor<2x1xf32>, tensor<1x64x64xbf16>) {
  %0:2 = tsched.group row [2, 3] (%x, %c) : (tensor<2x3xf32>, tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x1xf32>) {
  ^bb0(%a: tensor<2x3xf32>, %b: tensor<3xf32>):
    %m = tgraph.mul %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %s = tgraph.reduce_sum %m {dims = array<i64: 1>, keepdims} : tensor<2x3xf32> -> tensor<2x1xf32>
    tsched.yield %m, %s : tensor<2x3xf32>, tensor<2x1xf32>
  }
  %1 = tsched.group attention (%q) : (tensor<1x64x64xbf16>) -> tensor<1x64x64xbf16> {
  ^bb0(%a: tensor<1x64x64xbf16>):
    %o = tgraph.attention %a, %a, %a : tensor<1x64x64xbf16>
    tsched.yield %o : tensor<1x64x64xbf16>
  }
  return %0#0, %0#1, %1 : tensor<2x3xf32>, tensor<2x1xf32>, tensor<1x64x64xbf16>
}

// -----

func.func @yield_types(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'tsched.group' op yields 1 values of types 'tensor<2x3xf16>' but the group's results are 'tensor<2x3xf32>'}}
  %0 = tsched.group row [2, 3] (%x) : (tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%a: tensor<2x3xf32>):
    %c = tgraph.cast %a : tensor<2x3xf32> -> tensor<2x3xf16>
    tsched.yield %c : tensor<2x3xf16>
  }
  return %0 : tensor<2x3xf32>
}

// -----

func.func @argument_types(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'tsched.group' op input 0 is 'tensor<2x3xf32>' but body argument 0 is 'tensor<3x2xf32>'}}
  %0 = tsched.group row [2, 3] (%x) : (tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%a: tensor<3x2xf32>):
    tsched.yield %x : tensor<2x3xf32>
  }
  return %0 : tensor<2x3xf32>
}

// -----

func.func @row_needs_layout(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'tsched.group' op a row group needs its [R, C] layout}}
  %0 = tsched.group row (%x) : (tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%a: tensor<2x3xf32>):
    tsched.yield %a : tensor<2x3xf32>
  }
  return %0 : tensor<2x3xf32>
}

// -----

func.func @layout_of_attention(%q: tensor<1x64x64xbf16>) -> tensor<1x64x64xbf16> {
  // expected-error @+1 {{'tsched.group' op a attention group has no [R, C] layout}}
  %0 = tsched.group attention [64, 64] (%q) : (tensor<1x64x64xbf16>) -> tensor<1x64x64xbf16> {
  ^bb0(%a: tensor<1x64x64xbf16>):
    tsched.yield %a : tensor<1x64x64xbf16>
  }
  return %0 : tensor<1x64x64xbf16>
}

// -----

func.func @bad_layout(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'tsched.group' op layout must be [R, C] with R, C >= 0, got [2, 3, 1]}}
  %0 = tsched.group row [2, 3, 1] (%x) : (tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%a: tensor<2x3xf32>):
    tsched.yield %a : tensor<2x3xf32>
  }
  return %0 : tensor<2x3xf32>
}

// -----

func.func @isolated(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-note @+1 {{required by region isolation constraints}}
  %0 = tsched.group row [2, 3] () : () -> tensor<2x3xf32> {
    // expected-error @+1 {{using value defined outside the region}}
    %e = tgraph.exp %x : tensor<2x3xf32>
    tsched.yield %e : tensor<2x3xf32>
  }
  return %0 : tensor<2x3xf32>
}

// -----

func.func @nothing(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'tsched.group' op computes nothing}}
  tsched.group single (%x) : (tensor<2x3xf32>) -> () {
  ^bb0(%a: tensor<2x3xf32>):
    tsched.yield
  }
  return
}
