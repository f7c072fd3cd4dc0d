//===- ModuleState.cpp - Tracing into a Graph IR module -------------------===//

#include "ModuleState.h"

#include "tessera/Dialect/TGraph/IR/Autodiff.h"
#include "tessera/Dialect/TGraph/IR/TGraph.h"
#include "tessera/Dialect/TGraph/IR/TypeInference.h"
#include "tessera/Dialect/TGraph/Transforms/Passes.h"
#include "tessera/InitAllDialects.h"
#include "tessera/Shape/DimExpr.h"

#include "mlir/IR/SymbolTable.h"
#include "mlir/Parser/Parser.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

using namespace mlir;
namespace tg = mlir::tessera::tgraph;
namespace shape = ::tessera::shape;

namespace tessera::detail {

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

Type elementType(MLIRContext *ctx, DType dtype) {
  Builder b(ctx);
  switch (dtype) {
  case DType::f64:
    return b.getF64Type();
  case DType::f32:
    return b.getF32Type();
  case DType::f16:
    return b.getF16Type();
  case DType::bf16:
    return b.getBF16Type();
  case DType::f8E4M3FN:
    return b.getType<Float8E4M3FNType>();
  case DType::f8E5M2:
    return b.getType<Float8E5M2Type>();
  case DType::i64:
    return b.getI64Type();
  case DType::i32:
    return b.getI32Type();
  case DType::i16:
    return b.getI16Type();
  case DType::i8:
    return b.getI8Type();
  case DType::i1:
    return b.getI1Type();
  case DType::i4:
    return b.getIntegerType(4);
  }
  return {};
}

std::optional<DType> dtypeOf(Type element) {
  return runtime::parseDType(tg::typeName(element));
}

static DialectRegistry &registry() {
  static DialectRegistry *all = [] {
    auto *r = new DialectRegistry;
    mlir::registerAllDialects(*r);
    mlir::registerAllExtensions(*r);
    // The GPU pipeline serializes its kernels through LLVM IR.
    mlir::registerAllToLLVMIRTranslations(*r);
    mlir::tessera::registerAllDialects(*r);
    return r;
  }();
  return *all;
}

thread_local ModuleState *activeState = nullptr;

//===----------------------------------------------------------------------===//
// Construction
//===----------------------------------------------------------------------===//

ModuleState::ModuleState()
    : context(registry()), b(&context), current(UnknownLoc::get(&context)) {
  context.loadDialect<tg::TGraphDialect, func::FuncDialect>();
  module = ModuleOp::create(current);
  handler = std::make_unique<ScopedDiagnosticHandler>(
      &context, [this](Diagnostic &diag) {
        if (diag.getSeverity() != DiagnosticSeverity::Error)
          return success();
        if (!pendingDiagnostic.empty())
          pendingDiagnostic += "\n";
        pendingDiagnostic +=
            tg::describeLocation(diag.getLocation()) + ": error: " + diag.str();
        for (Diagnostic &note : diag.getNotes())
          pendingDiagnostic += "\n" + tg::describeLocation(note.getLocation()) +
                               ": note: " + note.str();
        return success();
      });
}

ModuleState::~ModuleState() = default;

bool ModuleState::loadModule(llvm::StringRef text) {
  OwningOpRef<ModuleOp> parsed = parseSourceString<ModuleOp>(text, &context);
  if (!parsed)
    return false;
  module = std::move(parsed);
  return true;
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

Tensor ModuleState::wrap(Value value) {
  values.push_back(value);
  return Tensor(this, int(values.size() - 1));
}

static func::FuncOp enclosingFunction(Value v) {
  Operation *parent = v.getParentBlock()->getParentOp();
  if (auto fn = dyn_cast<func::FuncOp>(parent))
    return fn;
  return parent->getParentOfType<func::FuncOp>();
}

Value ModuleState::use(const Tensor &t) {
  if (!isLive(t.getId())) {
    fail("a tensor of an aborted trace (or of a failed op) was used");
    return {};
  }
  Value v = values[t.getId()];
  func::FuncOp owner = enclosingFunction(v);
  for (size_t i = frames.size(); i-- > 0;)
    if (frames[i].fn == owner)
      return i + 1 == frames.size() ? v : lift(v, i + 1);
  fail("a tensor of a finished trace was used in another trace; pass it as "
       "an argument or return it instead");
  return {};
}

/// `v` (a value of frame `from - 1`) as an argument of frame `from` and of
/// every frame inside it.
Value ModuleState::lift(Value v, size_t from) {
  for (size_t k = from; k < frames.size(); ++k) {
    Frame &f = frames[k];
    auto it = f.captured.find(v);
    if (it != f.captured.end()) {
      v = it->second;
      continue;
    }
    Block &entry = f.fn.getBody().front();
    Value arg = entry.addArgument(v.getType(), v.getLoc());
    f.captured[v] = arg;
    f.captureSources.push_back(v);
    v = arg;
  }
  return v;
}

RankedTensorType ModuleState::typeOf(const Tensor &t) const {
  return dyn_cast<RankedTensorType>(values[t.getId()].getType());
}

bool ModuleState::isKey(const Tensor &t) const {
  return isa<tg::KeyType>(values[t.getId()].getType());
}

bool ModuleState::isKVCache(const Tensor &t) const {
  return isa<tg::KVCacheType>(values[t.getId()].getType());
}

Type ModuleState::argumentType(const TensorSpec &spec) {
  if (spec.isKey)
    return tg::KeyType::get(&context);
  if (spec.isKVCache) {
    RankedTensorType t = tensorType(spec.shape, spec.dtype);
    if (!t)
      return {};
    if (t.getRank() != 4) {
      fail("a kv_cache has shape [batch, heads, max_length, head_dim], got " +
           describe(spec.shape));
      return {};
    }
    return tg::KVCacheType::get(
        &context, tg::DimsAttr::get(&context, tg::getShape(t).dims),
        t.getElementType());
  }
  return tensorType(spec.shape, spec.dtype);
}

RankedTensorType ModuleState::tensorType(const Shape &shape, DType dtype) {
  shape::TensorShape s;
  for (const Dim &d : shape) {
    if (d.isStatic()) {
      if (d.size() < 0) {
        fail("a dim size must be >= 0, got " + std::to_string(d.size()) +
             " in " + describe(shape));
        return {};
      }
      s.dims.push_back(shape::DimExpr::constant(d.size()));
      continue;
    }
    std::string error;
    auto e = shape::parseDimExpr(d.symbol(), error);
    if (!e) {
      fail("bad dim '" + d.symbol() + "' in " + describe(shape) + ": " + error);
      return {};
    }
    s.dims.push_back(*e);
  }
  return tg::getTensorType(s, elementType(&context, dtype));
}

Shape ModuleState::shapeOf(Type type) const {
  Shape out;
  std::vector<shape::DimExpr> dims =
      isa<tg::KVCacheType>(type)
          ? cast<tg::KVCacheType>(type).getShape().getDims()
          : tg::getShape(type).dims;
  for (const shape::DimExpr &d : dims) {
    if (auto c = d.getConstant())
      out.push_back(Dim(*c));
    else
      out.push_back(Dim(d.str()));
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

Location ModuleState::location(SourceLoc loc) {
  if (loc.file)
    current = FileLineColLoc::get(&context, loc.file, loc.line, loc.column);
  return current;
}

bool ModuleState::ready(std::initializer_list<const Tensor *> operands) {
  if (firstError)
    return false;
  if (frames.empty())
    return fail("ops can only be added while a function is being traced "
                "(inside Module::trace)");
  for (const Tensor *t : operands)
    if (t && t->valid() && t->getState() != this)
      return fail("an operand belongs to another Module");
  return true;
}

bool ModuleState::finish(Operation *op, ArrayRef<Type> declared) {
  pendingDiagnostic.clear();
  Location loc = op->getLoc();
  std::string name = op->getName().getStringRef().str();
  if (auto shaped = dyn_cast<tg::ShapeInferenceOpInterface>(op)) {
    tg::TypeInference ti(&context, loc, op->getName().getStringRef(), declared);
    if (failed(shaped.inferResultTypes(ti)) || ti.diag().failed()) {
      std::string message = ti.message();
      op->erase();
      return failAt(loc, "'" + name + "' op " + message);
    }
    // A trace knows every symbol: dims that could differ at run time are
    // dims the user named differently.
    for (const shape::DimConstraint &c : ti.diag().constraints()) {
      // A bound that holds only for some sizes (a slice of a dim that may
      // be empty) stays a run-time check.
      if (c.relation == shape::DimRelation::LessEqual)
        continue;
      op->erase();
      return failAt(loc, "'" + name + "' op " + c.message +
                             " (in a traced function, differently named "
                             "dims are different dims; name them alike if "
                             "they are equal)");
    }
    for (auto [r, t] : llvm::zip(op->getResults(), ti.getResults()))
      r.setType(t);
  }
  if (failed(mlir::verify(op))) {
    std::string message = pendingDiagnostic;
    op->erase();
    return fail(message.empty() ? "an op failed to verify" : message);
  }
  return true;
}

Tensor ModuleState::result(Operation *op, ArrayRef<Type> declared) {
  if (!finish(op, declared))
    return {};
  return wrap(op->getResult(0));
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

bool ModuleState::fail(const std::string &message) {
  if (!firstError)
    firstError = Error{message};
  return false;
}

bool ModuleState::failAt(Location loc, const std::string &message) {
  return fail(tg::describeLocation(loc) + ": error: " + message);
}

ModuleState *stateOf(std::initializer_list<const Tensor *> operands) {
  ModuleState *state = nullptr;
  for (const Tensor *t : operands) {
    if (!t || !t->valid())
      continue;
    if (state && t->getState() != state) {
      state->fail("the operands of an op belong to different Modules");
      return nullptr;
    }
    state = t->getState();
  }
  return state;
}

int64_t normalizeAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

} // namespace tessera::detail
