//===- GradCheck.h - Derivatives against finite differences -----*- C++ -*-===//
//
// checkGradients compiles a function's generated derivatives (tgraph.jvp,
// tgraph.adjoint, and for order 2 the JVP of the adjoint) and compares them
// with float64 central differences along random directions, as the autodiff
// tests do: the JVP J v against (f(x + h v) - f(x - h v)) / 2h, the VJP
// through <w, J v> = <g, v> for a random seed w, and for order 2 the JVP of
// the VJP against differences of the VJP.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_EXECUTION_GRADCHECK_H
#define TESSERA_EXECUTION_GRADCHECK_H

#include "tessera/Execution/CPUCompiler.h"
#include "tessera/Runtime/Runtime.h"

#include <string>
#include <vector>

namespace mlir::tessera {

struct GradCheckOptions {
  /// 1: first derivatives; 2: also the JVP of the VJP.
  unsigned order = 1;
  bool forward = true; ///< check the JVP
  bool reverse = true; ///< check the VJP
  unsigned directions = 3;
  double step = 1e-6;
  /// Largest relative error accepted (errors relative to the norm of the
  /// difference quotient, or to 1 where that is smaller).
  double tolerance = 1e-6;
  uint64_t seed = 0;
  CPUCompileOptions compile;
};

struct GradCheckResult {
  bool passed = true;
  double worstError = 0;
  /// One line per comparison: what was compared, direction, error.
  std::vector<std::string> lines;
};

/// Checks the derivatives of `fn` in `module` with respect to the
/// arguments `wrt` (float64 tensors) at `args`. Errors (a wrong argument,
/// an op without a rule, compile failures) are diagnostics on `module`.
FailureOr<GradCheckResult>
checkGradients(ModuleOp module, StringRef fn, ArrayRef<unsigned> wrt,
               const std::vector<::tessera::runtime::HostBuffer> &args,
               const GradCheckOptions &options = {});

} // namespace mlir::tessera

#endif // TESSERA_EXECUTION_GRADCHECK_H
