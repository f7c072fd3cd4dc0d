// RUN: tessera-opt %s | FileCheck %s

// A fuzzer find: dividing a coefficient near the 64-bit minimum by a
// constant overflowed while splitting it into quotient and remainder.
// CHECK-LABEL: func.func @floordiv_min_coefficient
// CHECK-SAME: #tgraph.dims<["14*S/21-439208192231179801*S"]>
func.func @floordiv_min_coefficient(
    %x: tensor<?xf32, #tgraph.dims<["(-9223372036854775807*S)/(21)"]>>) {
  return
}
