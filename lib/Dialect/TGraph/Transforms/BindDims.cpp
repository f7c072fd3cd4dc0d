//===- BindDims.cpp - Give symbolic dims fixed sizes ----------------------===//
//
// Replaces bound symbols in every type and #tgraph.dims attribute of the
// module (through an AttrTypeReplacer, so function types, block arguments
// and types nested in other types and attributes are all covered), then
// folds the dim queries that became constants and decides the run-time
// shape checks they fed.
//
//===----------------------------------------------------------------------===//

#include "tessera/Dialect/TGraph/IR/TGraph.h"
#include "tessera/Dialect/TGraph/IR/TypeInference.h"
#include "tessera/Dialect/TGraph/Transforms/Passes.h"

#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringExtras.h"

#include <set>

namespace mlir::tessera::tgraph {
#define GEN_PASS_DEF_TGRAPHBINDDIMS
#include "tessera/Dialect/TGraph/Transforms/Passes.h.inc"
} // namespace mlir::tessera::tgraph

using namespace mlir;
using namespace mlir::tessera::tgraph;

namespace {

struct BindDimsPass
    : public mlir::tessera::tgraph::impl::TGraphBindDimsBase<BindDimsPass> {
  using TGraphBindDimsBase::TGraphBindDimsBase;

  void runOnOperation() override;

private:
  /// `dims` with the bound symbols replaced; an error (once) when one
  /// becomes negative.
  std::optional<std::vector<shape::DimExpr>>
  bind(const std::vector<shape::DimExpr> &dims);

  llvm::StringMap<int64_t> sizes;
  llvm::StringMap<shape::DimExpr> values;
  std::set<std::string> seen;
  std::string negative;
};

std::optional<std::vector<shape::DimExpr>>
BindDimsPass::bind(const std::vector<shape::DimExpr> &dims) {
  std::vector<shape::DimExpr> out;
  out.reserve(dims.size());
  for (const shape::DimExpr &d : dims) {
    std::set<std::string> symbols;
    d.collectSymbols(symbols);
    seen.insert(symbols.begin(), symbols.end());
    if (std::optional<int64_t> v = d.evaluate(sizes)) {
      if (*v < 0) {
        if (negative.empty())
          negative = d.str() + " is " + std::to_string(*v);
        return std::nullopt;
      }
      out.push_back(shape::DimExpr::constant(*v));
    } else {
      out.push_back(d.isUnknown() ? d : d.substitute(values));
    }
  }
  return out;
}

void BindDimsPass::runOnOperation() {
  ModuleOp module = getOperation();
  for (const std::string &binding : dims) {
    auto [name, text] = StringRef(binding).split('=');
    name = name.trim();
    int64_t size = -1;
    if (!shape::isValidSymbolName(name) || text.trim().getAsInteger(10, size) ||
        size < 0) {
      module.emitError() << "-tessera-tgraph-bind-dims: expected NAME=SIZE "
                            "with a size >= 0, found '"
                         << binding << "'";
      return signalPassFailure();
    }
    if (sizes.count(name) && sizes[name] != size) {
      module.emitError() << "-tessera-tgraph-bind-dims: " << name
                         << " is bound twice, to " << sizes[name] << " and "
                         << size;
      return signalPassFailure();
    }
    sizes[name] = size;
    values.insert_or_assign(name, shape::DimExpr::constant(size));
  }
  if (sizes.empty())
    return;

  bool failedBinding = false;
  AttrTypeReplacer replacer;
  replacer.addReplacement(
      [&](DimsAttr attr) -> std::optional<std::pair<Attribute, WalkResult>> {
        auto bound = bind(attr.getDims());
        if (!bound) {
          failedBinding = true;
          return std::make_pair(Attribute(attr), WalkResult::skip());
        }
        return std::make_pair(Attribute(DimsAttr::get(attr.getContext(),
                                                      *bound)),
                              WalkResult::skip());
      });
  replacer.addReplacement(
      [&](RankedTensorType type)
          -> std::optional<std::pair<Type, WalkResult>> {
        if (!isa_and_nonnull<DimsAttr>(type.getEncoding()))
          return std::nullopt;
        auto bound = bind(getShape(type).dims);
        if (!bound) {
          failedBinding = true;
          return std::make_pair(Type(type), WalkResult::skip());
        }
        // Element types hold no dims; the encoding is rebuilt here.
        return std::make_pair(
            Type(getTensorType(shape::TensorShape(*bound),
                               type.getElementType())),
            WalkResult::skip());
      });
  replacer.recursivelyReplaceElementsIn(module, /*replaceAttrs=*/true,
                                        /*replaceLocs=*/false,
                                        /*replaceTypes=*/true);
  if (failedBinding) {
    module.emitError() << "-tessera-tgraph-bind-dims: with "
                       << llvm::join(dims, ", ") << ", the dim " << negative
                       << "; sizes cannot be negative";
    return signalPassFailure();
  }
  for (const auto &entry : sizes) {
    if (seen.count(entry.getKey().str()))
      continue;
    std::string known = seen.empty() ? std::string("none")
                                     : llvm::join(seen, ", ");
    module.emitError() << "-tessera-tgraph-bind-dims: no dim of the module "
                          "is named '"
                       << entry.getKey() << "' (its symbols: " << known << ")";
    return signalPassFailure();
  }

  // Dim queries of static dims fold; the checks they fed are decided.
  RewritePatternSet patterns(&getContext());
  AssertDimOp::getCanonicalizationPatterns(patterns, &getContext());
  if (failed(applyPatternsGreedily(module, std::move(patterns))))
    return signalPassFailure();
  WalkResult walk = module.walk([&](AssertDimOp check) {
    APInt l, r;
    if (!matchPattern(check.getLhs(), m_ConstantInt(&l)) ||
        !matchPattern(check.getRhs(), m_ConstantInt(&r)))
      return WalkResult::advance();
    // Checks that hold were dropped above.
    check.emitError() << "fails for " << llvm::join(dims, ", ") << ": "
                      << check.getMessage();
    return WalkResult::interrupt();
  });
  if (walk.wasInterrupted())
    signalPassFailure();
}

} // namespace
