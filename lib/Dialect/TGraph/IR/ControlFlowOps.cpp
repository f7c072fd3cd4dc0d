//===- ControlFlowOps.cpp - structured control flow and calls -------------===//
//
// Shape functions and verifiers of TGraphControlFlowOps.td. Region ops infer
// their results from what the regions yield; calls bind the callee's shape
// symbols to the argument dims.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/TGraph/IR/TGraph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::tessera::tgraph;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// The values yielded by the single block of `region`, or failure.
static FailureOr<OperandRange> getYielded(TypeInference &ti, Region &region,
                                          StringRef name) {
  if (region.empty() || region.front().empty()) {
    (void)ti.fail("the " + name + " region must end with tgraph.yield");
    return failure();
  }
  auto yield = dyn_cast<YieldOp>(region.front().back());
  if (!yield) {
    (void)ti.fail("the " + name + " region must end with tgraph.yield");
    return failure();
  }
  return yield.getValues();
}

/// Requires `actual` (described by `actualLabel`) to be usable where
/// `expected` is: same type, or tensors of one element type and rank whose
/// dims may be equal (differences that depend on symbols become run-time
/// checks).
static LogicalResult requireCompatible(TypeInference &ti, Type expected,
                                       const std::string &expectedLabel,
                                       Type actual,
                                       const std::string &actualLabel,
                                       const std::string &what) {
  auto e = dyn_cast<RankedTensorType>(expected);
  auto a = dyn_cast<RankedTensorType>(actual);
  if (!e || !a || e.getElementType() != a.getElementType()) {
    if (expected == actual)
      return success();
    return ti.fail(what + ": " + actualLabel + " has type " +
                   typeName(actual) + " but " + expectedLabel + " has type " +
                   typeName(expected));
  }
  return success(shape::requireSameShape(ti.diag(), getShape(e),
                                         expectedLabel, getShape(a),
                                         actualLabel, what));
}

/// The join of two branch types: equal dims stay, others become `?`.
static FailureOr<Type> joinTypes(TypeInference &ti, Type a, Type b,
                                 unsigned i) {
  auto ta = dyn_cast<RankedTensorType>(a);
  auto tb = dyn_cast<RankedTensorType>(b);
  if (!ta || !tb || ta.getElementType() != tb.getElementType() ||
      ta.getRank() != tb.getRank()) {
    if (a == b)
      return a;
    (void)ti.fail("the branches yield different types for result " +
                  std::to_string(i) + ": " + typeName(a) + " and " +
                  typeName(b));
    return failure();
  }
  shape::TensorShape sa = getShape(ta), sb = getShape(tb), joined;
  for (size_t d = 0; d < sa.rank(); ++d)
    joined.dims.push_back(shape::decideEqual(sa.dims[d], sb.dims[d]) ==
                                  shape::Truth::Always
                              ? sa.dims[d]
                              : shape::DimExpr::unknown());
  return Type(getTensorType(joined, ta.getElementType()));
}

//===----------------------------------------------------------------------===//
// cond
//===----------------------------------------------------------------------===//

LogicalResult CondOp::inferTypes(TypeInference &ti, Adaptor a) {
  auto thenVals = getYielded(ti, a.getThenRegion(), "then");
  if (failed(thenVals))
    return failure();
  auto elseVals = getYielded(ti, a.getElseRegion(), "else");
  if (failed(elseVals))
    return failure();
  if (thenVals->size() != elseVals->size())
    return ti.fail("the then region yields " +
                   std::to_string(thenVals->size()) +
                   " values but the else region yields " +
                   std::to_string(elseVals->size()));
  for (auto [i, pair] : llvm::enumerate(llvm::zip(*thenVals, *elseVals))) {
    Type thenType = std::get<0>(pair).getType();
    Type elseType = std::get<1>(pair).getType();
    auto joined = joinTypes(ti, thenType, elseType, i);
    if (failed(joined))
      return failure();
    // Each branch must fit the declared result: 4 against 8 is an error,
    // S against T a run-time check.
    if (Type declared = ti.declared(i)) {
      std::string result = "result " + std::to_string(i);
      if (failed(requireCompatible(ti, declared, result, thenType,
                                   "the then branch's " + result,
                                   "branch/result mismatch")) ||
          failed(requireCompatible(ti, declared, result, elseType,
                                   "the else branch's " + result,
                                   "branch/result mismatch")))
        return failure();
    }
    ti.addResult(*joined);
  }
  return success();
}

void CondOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                         MLIRContext *context) {
  // cond(constant) -> the taken region, inlined.
  results.add(+[](CondOp op, PatternRewriter &rewriter) {
    DenseElementsAttr pred;
    if (!matchPattern(op.getPred(), m_Constant(&pred)))
      return failure();
    Region &taken = pred.getSplatValue<bool>() ? op.getThenRegion()
                                               : op.getElseRegion();
    Block &block = taken.front();
    auto yield = cast<YieldOp>(block.getTerminator());
    for (auto [r, v] : llvm::zip(op.getResults(), yield.getValues()))
      if (r.getType() != v.getType())
        return failure(); // the join was less precise; keep the op
    SmallVector<Value> values(yield.getValues());
    rewriter.inlineBlockBefore(&block, op);
    rewriter.eraseOp(yield);
    rewriter.replaceOp(op, values);
    return success();
  });
}

//===----------------------------------------------------------------------===//
// while
//===----------------------------------------------------------------------===//

LogicalResult WhileOp::inferTypes(TypeInference &ti, Adaptor a) {
  size_t n = a.getInits().size();
  Region &cond = a.getCondRegion(), &body = a.getBodyRegion();
  if (body.empty() || body.front().getNumArguments() != n ||
      cond.empty() || cond.front().getNumArguments() != n)
    return ti.fail("the cond and body regions must each take the " +
                   std::to_string(n) + " carried values as arguments");
  if (auto trip = a.getTripCountAttr(); trip && trip.getInt() < 0)
    return ti.fail("trip_count must be >= 0, but is " +
                   std::to_string(trip.getInt()));
  for (size_t i = 0; i < n; ++i) {
    Type carry = body.getArgument(i).getType();
    std::string label = "carry " + std::to_string(i);
    if (failed(requireCompatible(ti, carry, label + " of the body",
                                 a.getInits()[i].getType(),
                                 "init " + std::to_string(i),
                                 "init/carry mismatch")))
      return failure();
    if (cond.getArgument(i).getType() != carry)
      return ti.fail("cond argument " + std::to_string(i) + " has type " +
                     typeName(cond.getArgument(i).getType()) +
                     " but the body's carry has type " + typeName(carry));
  }
  auto pred = getYielded(ti, cond, "cond");
  if (failed(pred))
    return failure();
  if (pred->size() != 1 ||
      (*pred)[0].getType() !=
          RankedTensorType::get({}, IntegerType::get(ti.getContext(), 1)))
    return ti.fail("the cond region must yield one tensor<i1>");
  auto next = getYielded(ti, body, "body");
  if (failed(next))
    return failure();
  if (next->size() != n)
    return ti.fail("the body yields " + std::to_string(next->size()) +
                   " values but the loop carries " + std::to_string(n));
  for (size_t i = 0; i < n; ++i) {
    Type carry = body.getArgument(i).getType();
    if (failed(requireCompatible(ti, carry, "carry " + std::to_string(i),
                                 (*next)[i].getType(),
                                 "body result " + std::to_string(i),
                                 "the body changes a carried type")))
      return failure();
    ti.addResult(carry);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// scan
//===----------------------------------------------------------------------===//

/// The scan length: the leading dim shared by all xs, or `length`.
static std::optional<shape::DimExpr> scanLength(TypeInference &ti,
                                                ScanOp::Adaptor a) {
  std::optional<shape::DimExpr> length;
  if (auto attr = a.getLengthAttr()) {
    if (attr.getInt() < 0) {
      ti.diag().error("length must be >= 0, but is " +
                      std::to_string(attr.getInt()));
      return std::nullopt;
    }
    length = shape::DimExpr::constant(attr.getInt());
  }
  size_t n = a.getInits().size();
  for (auto [j, x] : llvm::enumerate(a.getXs())) {
    shape::TensorShape s = getShape(x.getType());
    std::string label = "xs " + std::to_string(j) + " (operand " +
                        std::to_string(n + j) + ")";
    if (s.rank() == 0) {
      ti.diag().error(label + " must have a leading dim to scan over, but "
                              "is a scalar");
      return std::nullopt;
    }
    if (!length) {
      length = s.dims[0];
      continue;
    }
    length = ti.diag().unify(*length, "the scan length", {}, s.dims[0],
                             label + " dim 0", {{int(n + j), 0}},
                             "scan length mismatch");
    if (!length)
      return std::nullopt;
  }
  if (!length)
    ti.diag().error("a scan with no xs needs a length attribute");
  return length;
}

LogicalResult ScanOp::inferTypes(TypeInference &ti, Adaptor a) {
  size_t n = a.getInits().size(), m = a.getXs().size();
  Region &body = a.getBody();
  if (body.empty() || body.front().getNumArguments() != n + m)
    return ti.fail("the body must take the " + std::to_string(n) +
                   " carried values and one slice of each of the " +
                   std::to_string(m) + " xs as arguments");
  auto length = scanLength(ti, a);
  if (!length)
    return failure();
  for (size_t i = 0; i < n; ++i)
    if (failed(requireCompatible(ti, body.getArgument(i).getType(),
                                 "carry " + std::to_string(i) + " of the body",
                                 a.getInits()[i].getType(),
                                 "init " + std::to_string(i),
                                 "init/carry mismatch")))
      return failure();
  for (size_t j = 0; j < m; ++j) {
    shape::TensorShape s = getShape(a.getXs()[j].getType());
    s.dims.erase(s.dims.begin());
    Type slice = getTensorType(s, getElementTypeOrSelf(a.getXs()[j].getType()));
    if (failed(requireCompatible(ti, slice,
                                 "a slice of xs " + std::to_string(j),
                                 body.getArgument(n + j).getType(),
                                 "body argument " + std::to_string(n + j),
                                 "scan slice mismatch")))
      return failure();
  }
  auto yielded = getYielded(ti, body, "body");
  if (failed(yielded))
    return failure();
  if (yielded->size() < n)
    return ti.fail("the body yields " + std::to_string(yielded->size()) +
                   " values but must yield at least the " +
                   std::to_string(n) + " carried values");
  for (size_t i = 0; i < n; ++i) {
    Type carry = body.getArgument(i).getType();
    if (failed(requireCompatible(ti, carry, "carry " + std::to_string(i),
                                 (*yielded)[i].getType(),
                                 "body result " + std::to_string(i),
                                 "the body changes a carried type")))
      return failure();
    ti.addResult(carry);
  }
  for (size_t k = n; k < yielded->size(); ++k) {
    auto y = dyn_cast<RankedTensorType>((*yielded)[k].getType());
    if (!y)
      return ti.fail("scan output " + std::to_string(k - n) +
                     " must be a tensor to be stacked");
    shape::TensorShape s = getShape(y);
    s.dims.insert(s.dims.begin(), *length);
    ti.addResult(s, y.getElementType());
  }
  return success();
}

//===----------------------------------------------------------------------===//
// fixed_point, solve, checkpoint
//===----------------------------------------------------------------------===//

/// Common checks of fixed_point and solve: the body takes x then the params
/// and yields one value of x's type.
template <typename AdaptorT>
static LogicalResult inferIterative(TypeInference &ti, AdaptorT a,
                                    StringRef yieldedName) {
  Region &body = a.getBody();
  size_t np = a.getParams().size();
  if (body.empty() || body.front().getNumArguments() != 1 + np)
    return ti.fail("the body must take x and the " + std::to_string(np) +
                   " params as arguments");
  if (!(a.getTol().convertToDouble() > 0))
    return ti.fail("tol must be positive, but is " +
                   shape::formatNumber(a.getTol().convertToDouble()));
  int64_t maxIter = a.getMaxIter();
  if (maxIter < 1)
    return ti.fail("max_iter must be >= 1, but is " + std::to_string(maxIter));
  Type x = a.getInit().getType();
  if (failed(requireCompatible(ti, body.getArgument(0).getType(),
                               "body argument 0", x, "init",
                               "init/argument mismatch")))
    return failure();
  for (size_t i = 0; i < np; ++i)
    if (failed(requireCompatible(
            ti, body.getArgument(1 + i).getType(),
            "body argument " + std::to_string(1 + i), a.getParams()[i].getType(),
            "param " + std::to_string(i), "param/argument mismatch")))
      return failure();
  auto yielded = getYielded(ti, body, "body");
  if (failed(yielded))
    return failure();
  if (yielded->size() != 1)
    return ti.fail("the body must yield one value (" + yieldedName.str() +
                   "), but yields " + std::to_string(yielded->size()));
  if (failed(requireCompatible(ti, x, "init", (*yielded)[0].getType(),
                               yieldedName.str(),
                               "the body changes the type of x")))
    return failure();
  ti.addResult(x);
  return success();
}

LogicalResult FixedPointOp::inferTypes(TypeInference &ti, Adaptor a) {
  return inferIterative(ti, a, "F(x, params)");
}

LogicalResult SolveOp::inferTypes(TypeInference &ti, Adaptor a) {
  return inferIterative(ti, a, "the residual F(x, params)");
}

LogicalResult CheckpointOp::inferTypes(TypeInference &ti, Adaptor a) {
  Region &body = a.getBody();
  size_t n = a.getArgs().size();
  if (body.empty() || body.front().getNumArguments() != n)
    return ti.fail("the body must take the " + std::to_string(n) +
                   " operands as arguments");
  for (size_t i = 0; i < n; ++i)
    if (failed(requireCompatible(ti, body.getArgument(i).getType(),
                                 "body argument " + std::to_string(i),
                                 a.getArgs()[i].getType(),
                                 "operand " + std::to_string(i),
                                 "operand/argument mismatch")))
      return failure();
  auto yielded = getYielded(ti, body, "body");
  if (failed(yielded))
    return failure();
  for (Value v : *yielded)
    ti.addResult(v.getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Calls
//===----------------------------------------------------------------------===//

LogicalResult mlir::tessera::tgraph::inferCallResults(TypeInference &ti,
                                                      FunctionType callee,
                                                      TypeRange args) {
  if (callee.getNumInputs() != args.size())
    return ti.fail("the callee takes " + std::to_string(callee.getNumInputs()) +
                   " arguments but " + std::to_string(args.size()) +
                   " are passed");
  // One shape per argument, so messages name the right operand; non-tensor
  // arguments (keys, caches) must match exactly and contribute no dims.
  std::vector<shape::TensorShape> params, actual;
  for (auto [i, pair] : llvm::enumerate(llvm::zip(callee.getInputs(), args))) {
    auto [p, a] = pair;
    auto pt = dyn_cast<RankedTensorType>(p);
    auto at = dyn_cast<RankedTensorType>(a);
    if (!pt || !at || pt.getElementType() != at.getElementType()) {
      if (p != a)
        return ti.fail(ti.diag().operandLabel(i) + " has type " +
                       typeName(a) + " but the callee's parameter " +
                       std::to_string(i) + " has type " + typeName(p));
      params.emplace_back();
      actual.emplace_back();
      continue;
    }
    params.push_back(getShape(pt));
    actual.push_back(getShape(at));
  }
  llvm::StringMap<shape::DimExpr> bindings;
  if (!shape::bindSymbols(ti.diag(), params, actual, bindings))
    return failure();
  for (Type r : callee.getResults()) {
    auto rt = dyn_cast<RankedTensorType>(r);
    if (!rt) {
      ti.addResult(r);
      continue;
    }
    // A result dim using a symbol the arguments do not bind says nothing
    // about the caller's symbols of the same name: it is unknown here.
    shape::TensorShape s = shape::substitute(getShape(rt), bindings);
    shape::TensorShape declared = getShape(rt);
    for (size_t d = 0; d < s.rank(); ++d) {
      std::set<std::string> syms;
      declared.dims[d].collectSymbols(syms);
      if (llvm::any_of(syms, [&](const std::string &n) {
            return !bindings.count(n);
          }))
        s.dims[d] = shape::DimExpr::unknown();
    }
    ti.addResult(s, rt.getElementType());
  }
  return success();
}

/// Looks up a func.func callee for a symbol user.
static FailureOr<func::FuncOp> lookupFunc(Operation *op,
                                          SymbolTableCollection &symbols,
                                          FlatSymbolRefAttr ref,
                                          StringRef role) {
  auto fn = symbols.lookupNearestSymbolFrom<func::FuncOp>(op, ref);
  if (!fn)
    return op->emitOpError() << role << " '" << ref.getValue()
                             << "' does not name a func.func in scope";
  return fn;
}

/// Runs inferCallResults for `op` calling `fn` and compares the results.
static LogicalResult verifyCallTypes(Operation *op, FunctionType fnType,
                                     ValueRange args, StringRef role) {
  TypeInference ti(op->getContext(), op->getLoc(),
                   op->getName().getStringRef(), op->getResultTypes());
  if (failed(inferCallResults(ti, fnType, args.getTypes())) ||
      ti.diag().failed())
    return op->emitOpError() << "calling " << role << ": " << ti.message();
  if (ti.getResults().size() != op->getNumResults())
    return op->emitOpError() << "has " << op->getNumResults()
                             << " results but " << role << " returns "
                             << ti.getResults().size();
  if (!areCompatibleTypes(op->getResultTypes(), ti.getResults()))
    return op->emitOpError()
           << "result types do not match " << role
           << "'s results after binding its shape symbols: expected "
           << TypeRange(ti.getResults());
  return success();
}

LogicalResult CallOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto fn = lookupFunc(*this, symbols, getCalleeAttr(), "callee");
  if (failed(fn))
    return failure();
  return verifyCallTypes(*this, fn->getFunctionType(), getArgs(), "the callee");
}

/// Requires `types` to equal `expected` (compatible tensors), naming `what`.
static LogicalResult requireTypes(Operation *op, TypeRange types,
                                  TypeRange expected, const Twine &what) {
  if (types.size() != expected.size() || !areCompatibleTypes(types, expected))
    return op->emitOpError() << what << ": expected " << expected << ", got "
                             << types;
  return success();
}

LogicalResult CustomVjpOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto f = lookupFunc(*this, symbols, getCalleeAttr(), "callee");
  auto fwd = lookupFunc(*this, symbols, getFwdAttr(), "fwd");
  auto bwd = lookupFunc(*this, symbols, getBwdAttr(), "bwd");
  if (failed(f) || failed(fwd) || failed(bwd))
    return failure();
  FunctionType ft = f->getFunctionType(), fwdT = fwd->getFunctionType(),
               bwdT = bwd->getFunctionType();
  if (failed(verifyCallTypes(*this, ft, getArgs(), "the callee")))
    return failure();
  if (failed(requireTypes(*this, fwdT.getInputs(), ft.getInputs(),
                          "fwd must take the callee's arguments")))
    return failure();
  size_t nr = ft.getNumResults();
  TypeRange fwdLead = fwdT.getResults().take_front(
      std::min<size_t>(nr, fwdT.getNumResults()));
  if (failed(requireTypes(*this, fwdLead, ft.getResults(),
                          "fwd must return the callee's results first")))
    return failure();
  TypeRange residuals = fwdT.getResults().drop_front(nr);
  SmallVector<Type> bwdInputs(residuals.begin(), residuals.end());
  bwdInputs.append(ft.getResults().begin(), ft.getResults().end());
  if (failed(requireTypes(*this, bwdT.getInputs(), bwdInputs,
                          "bwd must take fwd's residuals then one cotangent "
                          "per result")))
    return failure();
  return requireTypes(*this, bwdT.getResults(), ft.getInputs(),
                      "bwd must return one cotangent per argument");
}

LogicalResult CustomJvpOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto f = lookupFunc(*this, symbols, getCalleeAttr(), "callee");
  auto jvp = lookupFunc(*this, symbols, getJvpAttr(), "jvp");
  if (failed(f) || failed(jvp))
    return failure();
  FunctionType ft = f->getFunctionType(), jt = jvp->getFunctionType();
  if (failed(verifyCallTypes(*this, ft, getArgs(), "the callee")))
    return failure();
  SmallVector<Type> inputs(ft.getInputs()), outputs(ft.getResults());
  inputs.append(ft.getInputs().begin(), ft.getInputs().end());
  outputs.append(ft.getResults().begin(), ft.getResults().end());
  if (failed(requireTypes(*this, jt.getInputs(), inputs,
                          "jvp must take the arguments then one tangent per "
                          "argument")))
    return failure();
  return requireTypes(*this, jt.getResults(), outputs,
                      "jvp must return the results then one tangent per "
                      "result");
}
