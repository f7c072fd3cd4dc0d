//===- TGraphDialect.cpp - Graph IR dialect -------------------------------===//

#include "tessera/Dialect/TGraph/IR/TGraph.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Transforms/InliningUtils.h"

using namespace mlir;
using namespace mlir::tessera::tgraph;

#include "tessera/Dialect/TGraph/IR/TGraphOpsDialect.cpp.inc"
#include "tessera/Dialect/TGraph/IR/TGraphInterfaces.cpp.inc"

namespace {
/// Graph IR ops have no hidden state, so calls into `tgraph` code inline.
struct TGraphInlinerInterface : public DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Operation *, bool) const final {
    return true;
  }
  bool isLegalToInline(Region *, Region *, bool, IRMapping &) const final {
    return true;
  }
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final {
    return true;
  }
};
} // namespace

void TGraphDialect::initialize() {
  registerAttributes();
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "tessera/Dialect/TGraph/IR/TGraphOps.cpp.inc"
      >();
  addInterfaces<TGraphInlinerInterface>();
}

Operation *TGraphDialect::materializeConstant(OpBuilder &builder,
                                              Attribute value, Type type,
                                              Location loc) {
  if (isa<IndexType>(type))
    return arith::ConstantOp::create(builder, loc, type,
                                     cast<TypedAttr>(value));
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}
