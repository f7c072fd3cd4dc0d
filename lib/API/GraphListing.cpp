//===- GraphListing.cpp - Optimized Graph IR as plain data ---------------===//
//
// Module::listGraph: a public function after the graph-level part of the
// pipeline, with every value numbered and every attribute converted to
// plain values, for back ends that are not MLIR passes.
//
//===----------------------------------------------------------------------===//

#include "ModuleState.h"

#include "tessera/Dialect/TGraph/IR/TGraph.h"
#include "tessera/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace tgraph = mlir::tessera::tgraph;

namespace tessera {
namespace {

std::string printed(Attribute attr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os);
  return text;
}

std::string locationOf(Location loc) {
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (std::string s = locationOf(inner); !s.empty())
        return s;
  if (auto named = dyn_cast<NameLoc>(loc))
    return locationOf(named.getChildLoc());
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return (file.getFilename().str() + ":" + std::to_string(file.getLine()) +
            ":" + std::to_string(file.getColumn()));
  return "";
}

GraphAttr convert(StringRef name, Attribute attr) {
  GraphAttr out;
  out.name = name.str();
  if (auto i = dyn_cast<IntegerAttr>(attr)) {
    if (i.getType().isInteger(1)) {
      out.kind = GraphAttr::Kind::Bool;
      out.i = i.getValue().getBoolValue();
    } else {
      out.kind = GraphAttr::Kind::Int;
      out.i = i.getValue().getSExtValue();
    }
  } else if (auto f = dyn_cast<FloatAttr>(attr)) {
    out.kind = GraphAttr::Kind::Float;
    out.f = f.getValueAsDouble();
  } else if (isa<UnitAttr>(attr)) {
    out.kind = GraphAttr::Kind::Bool;
    out.i = 1;
  } else if (auto b = dyn_cast<BoolAttr>(attr)) {
    out.kind = GraphAttr::Kind::Bool;
    out.i = b.getValue();
  } else if (auto s = dyn_cast<StringAttr>(attr)) {
    out.kind = GraphAttr::Kind::String;
    out.s = s.str();
  } else if (auto a = dyn_cast<DenseI64ArrayAttr>(attr)) {
    out.kind = GraphAttr::Kind::Ints;
    out.ints.assign(a.asArrayRef().begin(), a.asArrayRef().end());
  } else if (auto a = dyn_cast<DenseI32ArrayAttr>(attr)) {
    out.kind = GraphAttr::Kind::Ints;
    out.ints.assign(a.asArrayRef().begin(), a.asArrayRef().end());
  } else if (auto a = dyn_cast<DenseBoolArrayAttr>(attr)) {
    out.kind = GraphAttr::Kind::Ints;
    out.ints.assign(a.asArrayRef().begin(), a.asArrayRef().end());
  } else if (auto a = dyn_cast<DenseF64ArrayAttr>(attr)) {
    out.kind = GraphAttr::Kind::Floats;
    out.floats.assign(a.asArrayRef().begin(), a.asArrayRef().end());
  } else if (auto a = dyn_cast<DenseF32ArrayAttr>(attr)) {
    out.kind = GraphAttr::Kind::Floats;
    out.floats.assign(a.asArrayRef().begin(), a.asArrayRef().end());
  } else if (auto dims = dyn_cast<tgraph::DimsAttr>(attr)) {
    out.kind = GraphAttr::Kind::Ints;
    for (const shape::DimExpr &d : dims.getDims()) {
      std::optional<int64_t> c = d.getConstant();
      if (!c) {
        out.kind = GraphAttr::Kind::Other;
        out.ints.clear();
        out.s = printed(attr);
        break;
      }
      out.ints.push_back(*c);
    }
  } else if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    auto type = cast<ShapedType>(dense.getType());
    std::optional<DType> dt = detail::dtypeOf(type.getElementType());
    if (!dt) {
      out.s = printed(attr);
      return out;
    }
    out.kind = GraphAttr::Kind::Dense;
    out.dtype = *dt;
    out.shape.assign(type.getShape().begin(), type.getShape().end());
    out.splat = dense.isSplat();
    if (type.getElementType().isInteger(1)) {
      // i1 is stored packed; hand out one byte per element.
      for (bool v : dense.getValues<bool>()) {
        out.s.push_back(char(v));
        if (out.splat)
          break;
      }
    } else {
      ArrayRef<char> raw = dense.getRawData();
      out.s.assign(raw.begin(), raw.end());
    }
  } else {
    out.s = printed(attr);
  }
  return out;
}

} // namespace

Result<GraphListing> Module::listGraph(const std::string &name,
                                       bool gpuAttention) const {
  if (tracing())
    return Error{"the Module cannot be listed while a trace is running"};
  if (state->firstError)
    return *state->firstError;
  OwningOpRef<ModuleOp> copy = state->getModule().clone();
  PassManager pm(state->getContext());
  mlir::tessera::buildCPUPipeline(pm, mlir::tessera::CPUStage::GraphOptimized,
                                  gpuAttention);
  state->clearDiagnostics();
  if (failed(pm.run(*copy)))
    return Error{state->takeDiagnostics("the graph pipeline failed")};
  auto fn = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      *copy, StringAttr::get(state->getContext(), name));
  if (!fn || fn.isExternal())
    return Error{"no function @" + name + " in this Module"};

  GraphListing out;
  out.name = name;
  llvm::DenseMap<Value, int64_t> ids;
  auto number = [&](Value v) {
    auto [it, inserted] = ids.try_emplace(v, int64_t(out.shapes.size()));
    if (!inserted)
      return it->second;
    std::vector<int64_t> shape;
    DType dtype = DType::i32;
    bool key = isa<tgraph::KeyType>(v.getType());
    if (key) {
      shape = {2};
    } else if (auto t = dyn_cast<RankedTensorType>(v.getType())) {
      for (int64_t d : t.getShape())
        shape.push_back(ShapedType::isDynamic(d) ? -1 : d);
      dtype = detail::dtypeOf(t.getElementType()).value_or(DType::f32);
    }
    out.shapes.push_back(std::move(shape));
    out.dtypes.push_back(dtype);
    out.isKey.push_back(key);
    return it->second;
  };
  Block &body = fn.getBody().front();
  for (BlockArgument arg : body.getArguments())
    out.arguments.push_back(number(arg));
  for (Operation &op : body) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (Value v : ret.getOperands())
        out.results.push_back(number(v));
      continue;
    }
    GraphOp g;
    g.name = op.getName().getStringRef().str();
    for (Value v : op.getOperands())
      g.operands.push_back(number(v));
    for (Value v : op.getResults())
      g.results.push_back(number(v));
    for (NamedAttribute a : op.getAttrs())
      g.attrs.push_back(convert(a.getName(), a.getValue()));
    g.location = locationOf(op.getLoc());
    g.regions = op.getNumRegions();
    out.ops.push_back(std::move(g));
  }
  return out;
}

} // namespace tessera
