//===- InferShapes.cpp - Refine shapes and insert run-time checks ---------===//
//
// Walks each function in program order. For every op with a shape function
// it refines the declared result types with the inferred ones (a `?` takes
// the inferred dim), and turns each equality the shape function could not
// decide (S vs T) into a `tgraph.assert_dim` right before the op. Region
// arguments are refined from the operands before the region is walked, and
// function results from what `func.return` returns.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/TGraph/IR/DimValues.h"
#include "tessera/Dialect/TGraph/IR/TGraph.h"
#include "tessera/Dialect/TGraph/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::tessera::tgraph {
#define GEN_PASS_DEF_TGRAPHINFERSHAPES
#include "tessera/Dialect/TGraph/Transforms/Passes.h.inc"
} // namespace mlir::tessera::tgraph

using namespace mlir;
using namespace mlir::tessera::tgraph;

//===----------------------------------------------------------------------===//
// Type refinement
//===----------------------------------------------------------------------===//

/// Combines a declared type with the inferred one: `?` dims take the
/// inferred dim; two known dims that may differ stay as declared and their
/// equality is added to `checks`.
static Type refineType(Type declared, Type inferred, unsigned resultIdx,
                       std::vector<shape::DimConstraint> &checks) {
  auto d = dyn_cast<RankedTensorType>(declared);
  auto n = dyn_cast<RankedTensorType>(inferred);
  if (!d || !n || d.getRank() != n.getRank())
    return declared;
  shape::TensorShape ds = getShape(d), ns = getShape(n), out;
  for (size_t k = 0; k < ds.rank(); ++k) {
    const shape::DimExpr &a = ds.dims[k], &b = ns.dims[k];
    if (a.isUnknown() || shape::decideEqual(a, b) == shape::Truth::Always) {
      out.dims.push_back(b);
      continue;
    }
    out.dims.push_back(a);
    if (!b.isUnknown()) {
      shape::DimConstraint c;
      c.lhs = a;
      c.rhs = b;
      c.message = "result " + std::to_string(resultIdx) + " dim " +
                  std::to_string(k) + " is declared as " + a.str() +
                  " but the op produces " + b.str();
      checks.push_back(std::move(c));
    }
  }
  return getTensorType(out, d.getElementType());
}

static DimRelation relationOf(shape::DimRelation r) {
  switch (r) {
  case shape::DimRelation::Equal:
    return DimRelation::eq;
  case shape::DimRelation::EqualOrOne:
    return DimRelation::eq_or_one;
  case shape::DimRelation::Divisible:
    return DimRelation::divisible;
  case shape::DimRelation::LessEqual:
    return DimRelation::le;
  }
  llvm_unreachable("unknown relation");
}

namespace {

/// Materializes dimension expressions as `index` values before an op.
class DimMaterializer {
public:
  DimMaterializer(Operation *op) : op(op), builder(op) {}

  /// The run-time value of one side of a constraint, or failure with an
  /// error naming the unbound symbol.
  FailureOr<Value> side(const shape::DimExpr &expr,
                        ArrayRef<shape::DimRef> refs, int64_t factor) {
    if (!refs.empty()) {
      Value product = factor != 1 ? constant(factor) : Value();
      for (const shape::DimRef &r : refs) {
        Value operand = op->getOperand(r.operand);
        auto size = getShape(operand.getType()).dims[r.dim].getConstant();
        Value d = size ? constant(*size) : dimOf(operand, r.dim);
        product = product
                      ? arith::MulIOp::create(builder, op->getLoc(), product, d)
                      : d;
      }
      return product;
    }
    return expression(expr);
  }

private:
  Operation *op;
  OpBuilder builder;
  llvm::DenseMap<std::pair<Value, int64_t>, Value> dims;

  /// `tgraph.dim %tensor, dim`, created once per (tensor, dim).
  Value dimOf(Value tensor, int64_t dim) {
    Value &v = dims[{tensor, dim}];
    if (!v)
      v = DimOp::create(builder, op->getLoc(), tensor, dim);
    return v;
  }

  Value constant(int64_t v) {
    return arith::ConstantIndexOp::create(builder, op->getLoc(), v);
  }

  /// The innermost enclosing region whose parent is isolated from above.
  Region *isolatedScope() {
    for (Region *r = op->getParentRegion(); r; r = r->getParentRegion())
      if (r->getParentOp()->hasTrait<OpTrait::IsIsolatedFromAbove>())
        return r;
    return nullptr;
  }

  /// A value carrying symbol `name`: a dim of an operand, or of an argument
  /// of the nearest region that values cannot cross into (the function, or
  /// an isolated region such as a checkpoint body), that is exactly that
  /// symbol.
  FailureOr<Value> symbol(StringRef name) {
    SmallVector<Value> candidates(op->getOperands());
    if (Region *scope = isolatedScope())
      candidates.append(scope->getArguments().begin(),
                        scope->getArguments().end());
    for (Value c : candidates) {
      if (!isa<RankedTensorType>(c.getType()))
        continue;
      for (auto [i, d] : llvm::enumerate(getShape(c.getType()).dims))
        if (d.getSymbolName() == name.str())
          return dimOf(c, i);
    }
    return op->emitOpError()
           << "cannot check a shape at run time: symbol " << name
           << " is not a dim of any operand or function argument";
  }

  FailureOr<Value> expression(const shape::DimExpr &e) {
    if (e.isUnknown())
      return op->emitOpError("cannot check an unknown dim at run time");
    return buildDimExpr(builder, op->getLoc(), e,
                        [&](StringRef name) { return symbol(name); });
  }
};

class ShapeRefiner {
public:
  explicit ShapeRefiner(bool allowRuntimeChecks)
      : allowRuntimeChecks(allowRuntimeChecks) {}

  /// Refines `module`; sets `changedSignature` when a function's result
  /// types changed (callers may then refine further).
  LogicalResult run(ModuleOp module, bool &changedSignature) {
    changedSignature = false;
    SymbolTableCollection symbols;
    this->symbols = &symbols;
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (fn.isExternal())
        continue;
      if (failed(refineRegion(fn.getBody())))
        return failure();
      changedSignature |= refineSignature(fn, module);
    }
    return success();
  }

private:
  bool allowRuntimeChecks;
  SymbolTableCollection *symbols = nullptr;

  LogicalResult refineRegion(Region &region) {
    for (Block &block : region)
      for (Operation &op : llvm::make_early_inc_range(block))
        if (failed(refineOp(&op)))
          return failure();
    return success();
  }

  LogicalResult refineOp(Operation *op) {
    refineRegionArguments(op);
    for (Region &r : op->getRegions())
      if (failed(refineRegion(r)))
        return failure();
    TypeInference ti(op->getContext(), op->getLoc(),
                     op->getName().getStringRef(), op->getResultTypes());
    LogicalResult inferred = inferResults(op, ti);
    if (failed(inferred) && !ti.diag().failed())
      return success(); // not an op with a shape rule
    if (failed(inferred) || ti.diag().failed())
      return op->emitOpError() << ti.message();
    std::vector<shape::DimConstraint> checks = ti.diag().constraints();
    for (auto [i, result] : llvm::enumerate(op->getResults()))
      if (i < ti.getResults().size())
        result.setType(
            refineType(result.getType(), ti.getResults()[i], i, checks));
    return insertChecks(op, checks);
  }

  /// Runs the op's shape rule; failure without a diag error means "none".
  LogicalResult inferResults(Operation *op, TypeInference &ti) {
    if (auto shaped = dyn_cast<ShapeInferenceOpInterface>(op))
      return shaped.inferResultTypes(ti);
    FlatSymbolRefAttr callee =
        TypeSwitch<Operation *, FlatSymbolRefAttr>(op)
            .Case<CallOp, CustomVjpOp, CustomJvpOp>(
                [](auto c) { return c.getCalleeAttr(); })
            .Default([](Operation *) { return FlatSymbolRefAttr(); });
    if (!callee)
      return failure();
    auto fn = symbols->lookupNearestSymbolFrom<func::FuncOp>(op, callee);
    if (!fn)
      return failure(); // the verifier reports it
    return inferCallResults(ti, fn.getFunctionType(), op->getOperandTypes());
  }

  /// Region arguments take the (refined) types of the values they receive.
  /// Loop carries (scan, while) also receive what the body yields, so they
  /// keep their declared types.
  void refineRegionArguments(Operation *op) {
    auto refine = [](Block &block, unsigned first, TypeRange types) {
      for (auto [i, t] : llvm::enumerate(types)) {
        BlockArgument arg = block.getArgument(first + i);
        std::vector<shape::DimConstraint> unused;
        arg.setType(refineType(arg.getType(), t, i, unused));
      }
    };
    TypeSwitch<Operation *>(op)
        .Case<CheckpointOp>([&](auto c) {
          refine(c.getBody().front(), 0, c.getArgs().getTypes());
        })
        .Case<FixedPointOp, SolveOp>([&](auto s) {
          refine(s.getBody().front(), 0, s.getInit().getType());
          refine(s.getBody().front(), 1, s.getParams().getTypes());
        })
        .Case<ScanOp>([&](ScanOp s) {
          size_t n = s.getInits().size();
          SmallVector<Type> slices;
          for (Value x : s.getXs()) {
            shape::TensorShape sh = getShape(x.getType());
            sh.dims.erase(sh.dims.begin());
            slices.push_back(
                getTensorType(sh, getElementTypeOrSelf(x.getType())));
          }
          refine(s.getBody().front(), n, slices);
        });
  }

  LogicalResult insertChecks(Operation *op,
                             ArrayRef<shape::DimConstraint> checks) {
    if (checks.empty())
      return success();
    std::string prefix = describeOp(op) + ": ";
    if (!allowRuntimeChecks)
      return op->emitOpError()
             << "cannot prove at compile time that " << checks.front().message
             << " (run-time checks are disabled)";
    DimMaterializer dims(op);
    for (const shape::DimConstraint &c : checks) {
      std::string message = prefix + c.message;
      if (hasCheckBefore(op, message))
        continue;
      FailureOr<Value> lhs = dims.side(c.lhs, c.lhsRefs, c.lhsFactor);
      FailureOr<Value> rhs = dims.side(c.rhs, c.rhsRefs, c.rhsFactor);
      if (failed(lhs) || failed(rhs))
        return failure();
      OpBuilder builder(op);
      AssertDimOp::create(builder, op->getLoc(), relationOf(c.relation), *lhs,
                          *rhs, message);
    }
    return success();
  }

  /// True if a check with `message` already guards `op` (the pass is
  /// idempotent).
  static bool hasCheckBefore(Operation *op, StringRef message) {
    for (Operation *prev = op->getPrevNode(); prev;
         prev = prev->getPrevNode()) {
      if (auto check = dyn_cast<AssertDimOp>(prev)) {
        if (check.getMessage() == message)
          return true;
        continue;
      }
      if (!isa<DimOp, arith::ConstantOp, arith::AddIOp, arith::SubIOp,
               arith::MulIOp, arith::FloorDivSIOp, arith::CmpIOp,
               arith::SelectOp>(prev))
        return false;
    }
    return false;
  }

  /// Updates a function's result types to what it returns, and the result
  /// types of func.call ops calling it.
  static bool refineSignature(func::FuncOp fn, ModuleOp module) {
    SmallVector<Type> results;
    bool found = false;
    fn.walk([&](func::ReturnOp ret) {
      if (ret->getParentOp() != fn)
        return;
      if (!found) {
        results.assign(ret.getOperandTypes().begin(),
                       ret.getOperandTypes().end());
        found = true;
        return;
      }
      for (auto [i, t] : llvm::enumerate(ret.getOperandTypes()))
        if (i < results.size() && results[i] != t)
          results[i] = fn.getFunctionType().getResult(i);
    });
    if (!found || TypeRange(results) == fn.getFunctionType().getResults())
      return false;
    fn.setFunctionType(FunctionType::get(
        fn.getContext(), fn.getFunctionType().getInputs(), results));
    if (auto uses = SymbolTable::getSymbolUses(fn, module))
      for (const SymbolTable::SymbolUse &use : *uses)
        if (auto call = dyn_cast<func::CallOp>(use.getUser()))
          for (auto [r, t] : llvm::zip(call.getResults(), results))
            r.setType(t);
    return true;
  }
};

struct TGraphInferShapesPass
    : public mlir::tessera::tgraph::impl::TGraphInferShapesBase<
          TGraphInferShapesPass> {
  using Base::Base;
  void runOnOperation() override {
    if (failed(inferShapes(getOperation(), allowRuntimeChecks)))
      signalPassFailure();
  }
};

} // namespace

LogicalResult mlir::tessera::tgraph::inferShapes(ModuleOp module,
                                                 bool allowRuntimeChecks) {
  // A refined function signature can refine its callers: iterate until
  // nothing changes. Each round refines at least one more signature, so
  // there are at most as many rounds as functions.
  ShapeRefiner refiner(allowRuntimeChecks);
  size_t functions = llvm::range_size(module.getOps<func::FuncOp>());
  for (size_t round = 0; round <= functions; ++round) {
    bool changed = false;
    if (failed(refiner.run(module, changed)))
      return failure();
    if (!changed)
      break;
  }
  return success();
}
