//===- AutodiffOps.cpp - tgraph.adjoint, tgraph.jvp, tgraph.hvp -----------===//

#include "tessera/Dialect/TGraph/IR/Autodiff.h"
#include "tessera/Dialect/TGraph/IR/TGraph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::tessera::tgraph;

//===----------------------------------------------------------------------===//
// Argument names
//===----------------------------------------------------------------------===//

std::string mlir::tessera::tgraph::argumentName(FunctionOpInterface fn,
                                                unsigned i) {
  if (auto name = fn.getArgAttrOfType<StringAttr>(i, kArgNameAttr))
    return name.str();
  return "arg" + std::to_string(i);
}

FailureOr<SmallVector<unsigned>>
mlir::tessera::tgraph::resolveArguments(Operation *op, FunctionOpInterface fn,
                                        ArrayAttr names) {
  SmallVector<unsigned> indices;
  unsigned count = fn.getNumArguments();
  for (StringRef name : names.getAsValueRange<StringAttr>()) {
    std::optional<unsigned> found;
    for (unsigned i = 0; i < count && !found; ++i)
      if (argumentName(fn, i) == name)
        found = i;
    if (!found) {
      std::string known;
      for (unsigned i = 0; i < count; ++i)
        known += (i ? ", %" : "%") + argumentName(fn, i);
      return op->emitOpError()
             << "@" << SymbolTable::getSymbolName(fn).str()
             << " has no argument %" << name
             << " (its arguments: " << (known.empty() ? "none" : known) << ")";
    }
    if (llvm::is_contained(indices, *found))
      return op->emitOpError() << "argument %" << name << " is named twice";
    auto type = dyn_cast<RankedTensorType>(fn.getArgumentTypes()[*found]);
    if (!type || !ADBuilder::isDifferentiableElement(type.getElementType()))
      return op->emitOpError()
             << "can differentiate only with respect to tensors of the Graph "
                "IR's float types (f64, f32, tf32, bf16, f16, f8E4M3FN, "
                "f8E5M2), but %"
             << name << " is " << fn.getArgumentTypes()[*found];
    indices.push_back(*found);
  }
  return indices;
}

//===----------------------------------------------------------------------===//
// Syntax: tgraph.<op> @fn wrt(%x, ...) [dir(%v, ...)] -> @result
//===----------------------------------------------------------------------===//

static ParseResult parseNames(OpAsmParser &parser, StringRef keyword,
                              ArrayAttr &names) {
  SmallVector<Attribute> list;
  if (parser.parseKeyword(keyword) ||
      parser.parseCommaSeparatedList(
          OpAsmParser::Delimiter::Paren, [&]() -> ParseResult {
            OpAsmParser::UnresolvedOperand operand;
            if (parser.parseOperand(operand, /*allowResultNumber=*/false))
              return failure();
            list.push_back(
                parser.getBuilder().getStringAttr(operand.name.drop_front()));
            return success();
          }))
    return failure();
  names = parser.getBuilder().getArrayAttr(list);
  return success();
}

static void printNames(OpAsmPrinter &p, StringRef keyword, ArrayAttr names) {
  p << " " << keyword << "(";
  llvm::interleaveComma(names.getAsValueRange<StringAttr>(), p,
                        [&](StringRef n) { p << "%" << n; });
  p << ")";
}

static ParseResult parseAutodiffOp(OpAsmParser &parser, OperationState &state,
                                   bool hasDir) {
  FlatSymbolRefAttr fn;
  ArrayAttr wrt, dir;
  StringAttr result;
  if (parser.parseAttribute(fn) || parseNames(parser, "wrt", wrt) ||
      (hasDir && parseNames(parser, "dir", dir)) || parser.parseArrow() ||
      parser.parseSymbolName(result) ||
      parser.parseOptionalAttrDict(state.attributes))
    return failure();
  state.addAttribute("fn", fn);
  state.addAttribute("wrt", wrt);
  if (hasDir)
    state.addAttribute("dir", dir);
  state.addAttribute("result", result);
  return success();
}

static void printAutodiffOp(OpAsmPrinter &p, Operation *op) {
  p << " " << op->getAttr("fn");
  printNames(p, "wrt", op->getAttrOfType<ArrayAttr>("wrt"));
  if (auto dir = op->getAttrOfType<ArrayAttr>("dir"))
    printNames(p, "dir", dir);
  p << " -> ";
  p.printSymbolName(op->getAttrOfType<StringAttr>("result").getValue());
  p.printOptionalAttrDict(op->getAttrs(), {"fn", "wrt", "dir", "result"});
}

ParseResult AdjointOp::parse(OpAsmParser &parser, OperationState &state) {
  return parseAutodiffOp(parser, state, false);
}
void AdjointOp::print(OpAsmPrinter &p) { printAutodiffOp(p, *this); }
ParseResult JvpOp::parse(OpAsmParser &parser, OperationState &state) {
  return parseAutodiffOp(parser, state, false);
}
void JvpOp::print(OpAsmPrinter &p) { printAutodiffOp(p, *this); }
ParseResult HvpOp::parse(OpAsmParser &parser, OperationState &state) {
  return parseAutodiffOp(parser, state, true);
}
void HvpOp::print(OpAsmPrinter &p) { printAutodiffOp(p, *this); }

//===----------------------------------------------------------------------===//
// Verification
//===----------------------------------------------------------------------===//

static LogicalResult verifyAutodiffOp(Operation *op) {
  auto wrt = op->getAttrOfType<ArrayAttr>("wrt");
  if (wrt.empty())
    return op->emitOpError("needs at least one argument in wrt(...)");
  if (auto dir = op->getAttrOfType<ArrayAttr>("dir"))
    if (dir.size() != wrt.size())
      return op->emitOpError() << "needs one direction per wrt argument ("
                               << wrt.size() << "), got " << dir.size();
  return success();
}
LogicalResult AdjointOp::verify() { return verifyAutodiffOp(*this); }
LogicalResult JvpOp::verify() { return verifyAutodiffOp(*this); }
LogicalResult HvpOp::verify() { return verifyAutodiffOp(*this); }

/// The function `fn` names exists, or another autodiff op of the module
/// declares it; its wrt arguments exist; `result` names nothing yet.
static LogicalResult verifyAutodiffSymbols(Operation *op,
                                           SymbolTableCollection &symbols) {
  auto module = op->getParentOfType<ModuleOp>();
  auto fnRef = op->getAttrOfType<FlatSymbolRefAttr>("fn");
  StringRef result = op->getAttrOfType<StringAttr>("result").getValue();
  auto declares = [&](StringRef name) {
    for (Operation &other : module.getBody()->getOperations())
      if (isa<AdjointOp, JvpOp, HvpOp>(other) && &other != op &&
          other.getAttrOfType<StringAttr>("result").getValue() == name)
        return true;
    return false;
  };
  if (symbols.lookupSymbolIn(module, op->getAttrOfType<StringAttr>("result")))
    return op->emitOpError() << "cannot create @" << result
                             << ": the module already has a symbol of that "
                                "name";
  for (Operation &other : module.getBody()->getOperations())
    if (&other != op && isa<AdjointOp, JvpOp, HvpOp>(other) &&
        other.getAttrOfType<StringAttr>("result").getValue() == result)
      return op->emitOpError()
             << "creates @" << result << ", which another declaration "
             << "creates too";
  Operation *target = symbols.lookupSymbolIn(module, fnRef.getAttr());
  if (!target) {
    if (declares(fnRef.getValue()))
      return success();
    return op->emitOpError() << "differentiates @" << fnRef.getValue()
                             << ", which is not a function of this module";
  }
  auto fn = dyn_cast<func::FuncOp>(target);
  if (!fn || fn.isExternal())
    return op->emitOpError()
           << "@" << fnRef.getValue() << " must be a function with a body";
  return resolveArguments(op, fn, op->getAttrOfType<ArrayAttr>("wrt"));
}
LogicalResult AdjointOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyAutodiffSymbols(*this, symbols);
}
LogicalResult JvpOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyAutodiffSymbols(*this, symbols);
}
LogicalResult HvpOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyAutodiffSymbols(*this, symbols);
}
