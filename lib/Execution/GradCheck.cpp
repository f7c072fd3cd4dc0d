//===- GradCheck.cpp - Derivatives against finite differences -------------===//

#include "tessera/Execution/GradCheck.h"

#include "tessera/Dialect/TGraph/IR/TGraph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <random>

using namespace mlir;
using namespace mlir::tessera;
namespace rt = ::tessera::runtime;

namespace {

using Buffers = std::vector<rt::HostBuffer>;

double dot(const rt::HostBuffer &a, const rt::HostBuffer &b) {
  double s = 0;
  for (int64_t i = 0, n = a.numElements(); i < n; ++i)
    s += a.as<double>()[i] * b.as<double>()[i];
  return s;
}

/// ||a - b|| / max(||b||, 1).
double relativeError(const Buffers &a, const Buffers &b) {
  double diff = 0, norm = 0;
  for (auto [x, y] : llvm::zip(a, b))
    for (int64_t i = 0, n = x.numElements(); i < n; ++i) {
      double d = x.as<double>()[i] - y.as<double>()[i];
      diff += d * d;
      norm += y.as<double>()[i] * y.as<double>()[i];
    }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1.0);
}

rt::HostBuffer normalLike(const rt::HostBuffer &like, std::mt19937_64 &rng) {
  std::normal_distribution<double> normal;
  auto b = rt::HostBuffer::allocate(rt::DType::f64, like.shape());
  for (int64_t i = 0, n = b->numElements(); i < n; ++i)
    b->as<double>()[i] = normal(rng);
  return std::move(*b);
}

/// x + s * v (a copy).
rt::HostBuffer axpy(const rt::HostBuffer &x, double s,
                    const rt::HostBuffer &v) {
  auto b = x.clone();
  for (int64_t i = 0, n = b->numElements(); i < n; ++i)
    b->as<double>()[i] += s * v.as<double>()[i];
  return std::move(*b);
}

/// (plus - minus) / 2h, elementwise, over float64 buffers.
Buffers quotient(const Buffers &plus, const Buffers &minus, double h) {
  Buffers out;
  for (auto [p, m] : llvm::zip(plus, minus)) {
    auto b = p.clone();
    for (int64_t i = 0, n = b->numElements(); i < n; ++i)
      b->as<double>()[i] = (p.as<double>()[i] - m.as<double>()[i]) / (2 * h);
    out.push_back(std::move(*b));
  }
  return out;
}

} // namespace

FailureOr<GradCheckResult>
mlir::tessera::checkGradients(ModuleOp module, StringRef fnName,
                              ArrayRef<unsigned> wrt, const Buffers &args,
                              const GradCheckOptions &options) {
  auto fn = module.lookupSymbol<func::FuncOp>(fnName);
  if (!fn || fn.isExternal())
    return module.emitError()
           << "gradient check: no function @" << fnName << " with a body";
  if (args.size() != fn.getNumArguments())
    return module.emitError()
           << "gradient check: @" << fnName << " takes " << fn.getNumArguments()
           << " arguments, " << args.size() << " given";
  if (wrt.empty())
    return module.emitError("gradient check: no arguments to differentiate");
  for (unsigned i : wrt)
    if (i >= args.size() || args[i].dtype() != rt::DType::f64)
      return module.emitError()
             << "gradient check: argument " << i
             << " must be a float64 tensor (differences need float64)";
  // Output positions that carry derivatives (float64 results).
  SmallVector<unsigned> floats;
  for (auto [i, t] : llvm::enumerate(fn.getResultTypes()))
    if (auto rt = dyn_cast<RankedTensorType>(t);
        rt && rt.getElementType().isF64())
      floats.push_back(i);
  if (floats.size() != fn.getNumResults())
    return module.emitError() << "gradient check: every result of @" << fnName
                              << " must be a float64 tensor";
  bool scalarSeed =
      fn.getNumResults() == 1 &&
      cast<RankedTensorType>(fn.getResultTypes()[0]).getRank() == 0;

  // The declarations, on a copy.
  OwningOpRef<ModuleOp> copy = module.clone();
  OpBuilder b = OpBuilder::atBlockEnd(copy->getBody());
  SmallVector<Attribute> names;
  for (unsigned i : wrt)
    names.push_back(b.getStringAttr(tgraph::argumentName(fn, i)));
  ArrayAttr wrtAttr = b.getArrayAttr(names);
  std::string vjp = (fnName + "__gradcheck_vjp").str();
  std::string jvp = (fnName + "__gradcheck_jvp").str();
  std::string vjpJvp = (fnName + "__gradcheck_vjp_jvp").str();
  Location loc = fn.getLoc();
  auto ref = [&](StringRef name) {
    return FlatSymbolRefAttr::get(b.getContext(), name);
  };
  tgraph::AdjointOp::create(b, loc, ref(fnName), wrtAttr, b.getStringAttr(vjp));
  tgraph::JvpOp::create(b, loc, ref(fnName), wrtAttr, b.getStringAttr(jvp));
  if (options.order >= 2)
    tgraph::JvpOp::create(b, loc, ref(vjp), wrtAttr, b.getStringAttr(vjpJvp));
  auto compiled = compileForCPU(*copy, options.compile);
  if (failed(compiled))
    return failure();
  auto function = [&](const std::string &name) -> FailureOr<rt::Function> {
    auto f = compiled->executable->function(name);
    if (!f)
      return module.emitError() << "gradient check: " << f.error().message;
    return *f;
  };
  auto call = [&](rt::Function &f, const Buffers &in) -> FailureOr<Buffers> {
    auto out = f.call(in);
    if (!out)
      return module.emitError() << "gradient check: " << out.error().message;
    return std::move(*out);
  };
  auto f = function(std::string(fnName));
  auto fJvp = function(jvp);
  auto fVjp = function(vjp);
  if (failed(f) || failed(fJvp) || failed(fVjp))
    return failure();
  FailureOr<rt::Function> fVjpJvp = failure();
  if (options.order >= 2 && failed(fVjpJvp = function(vjpJvp)))
    return failure();

  GradCheckResult result;
  auto record = [&](const std::string &what, unsigned direction, double err) {
    result.worstError = std::max(result.worstError, err);
    bool ok = err <= options.tolerance;
    result.passed &= ok;
    result.lines.push_back(
        llvm::formatv("{0} direction {1}: relative error {2:e2}{3}", what,
                      direction, err, ok ? "" : " (FAILED)")
            .str());
  };
  std::mt19937_64 rng(options.seed);
  double h = options.step;
  for (unsigned d = 0; d < options.directions; ++d) {
    Buffers v, plus, minus;
    for (unsigned i : wrt)
      v.push_back(normalLike(args[i], rng));
    for (auto &a : args) {
      plus.push_back(*a.clone());
      minus.push_back(*a.clone());
    }
    for (auto [k, i] : llvm::enumerate(wrt)) {
      plus[i] = axpy(args[i], h, v[k]);
      minus[i] = axpy(args[i], -h, v[k]);
    }
    auto yPlus = call(*f, plus), yMinus = call(*f, minus);
    if (failed(yPlus) || failed(yMinus))
      return failure();
    Buffers fd = quotient(*yPlus, *yMinus, h);
    // Seeds for reverse mode (none for a scalar result).
    Buffers seeds;
    if (!scalarSeed)
      for (auto &y : fd)
        seeds.push_back(normalLike(y, rng));
    Buffers vjpArgs;
    for (auto &a : args)
      vjpArgs.push_back(*a.clone());
    for (auto &s : seeds)
      vjpArgs.push_back(*s.clone());
    if (options.forward) {
      Buffers in;
      for (auto &a : args)
        in.push_back(*a.clone());
      for (auto &t : v)
        in.push_back(*t.clone());
      auto out = call(*fJvp, in);
      if (failed(out))
        return failure();
      Buffers tangents;
      for (size_t i = fn.getNumResults(); i < out->size(); ++i)
        tangents.push_back(std::move((*out)[i]));
      record("JVP", d, relativeError(tangents, fd));
    }
    if (options.reverse) {
      auto grads = call(*fVjp, vjpArgs);
      if (failed(grads))
        return failure();
      double lhs = 0, rhs = 0;
      for (size_t i = 0; i < fd.size(); ++i)
        lhs += scalarSeed ? fd[i].as<double>()[0] : dot(seeds[i], fd[i]);
      for (auto [g, t] : llvm::zip(*grads, v))
        rhs += dot(g, t);
      record("VJP", d, std::abs(lhs - rhs) / std::max(std::abs(lhs), 1.0));
    }
    if (options.order >= 2) {
      // d/dx of the VJP along v, against differences of the VJP.
      Buffers in, pIn, mIn;
      for (auto &a : vjpArgs) {
        in.push_back(*a.clone());
        pIn.push_back(*a.clone());
        mIn.push_back(*a.clone());
      }
      for (auto [k, i] : llvm::enumerate(wrt)) {
        pIn[i] = axpy(args[i], h, v[k]);
        mIn[i] = axpy(args[i], -h, v[k]);
      }
      for (auto &t : v)
        in.push_back(*t.clone());
      auto out = call(*fVjpJvp, in);
      auto gPlus = call(*fVjp, pIn), gMinus = call(*fVjp, mIn);
      if (failed(out) || failed(gPlus) || failed(gMinus))
        return failure();
      Buffers second;
      for (size_t i = wrt.size(); i < out->size(); ++i)
        second.push_back(std::move((*out)[i]));
      record("JVP of VJP", d,
             relativeError(second, quotient(*gPlus, *gMinus, h)));
    }
  }
  return result;
}
