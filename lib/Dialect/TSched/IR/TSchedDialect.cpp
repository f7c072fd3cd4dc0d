//===- TSchedDialect.cpp - Schedule IR dialect and attributes -------------===//

#include "tessera/Dialect/TSched/IR/TSched.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/StringExtras.h"
#include <cstdint>
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tessera::tsched;

#include "tessera/Dialect/TSched/IR/TSchedDialect.cpp.inc"

#include "tessera/Dialect/TSched/IR/TSchedEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "tessera/Dialect/TSched/IR/TSchedAttrs.cpp.inc"

/// ` [R, C] ` or nothing.
static ParseResult parseGroupLayout(OpAsmParser &parser,
                                    DenseI64ArrayAttr &layout) {
  if (failed(parser.parseOptionalLSquare()))
    return success();
  SmallVector<int64_t> dims;
  if (failed(parser.parseOptionalRSquare())) {
    if (parser.parseCommaSeparatedList([&] {
          return parser.parseInteger(dims.emplace_back());
        }) ||
        parser.parseRSquare())
      return failure();
  }
  layout = parser.getBuilder().getDenseI64ArrayAttr(dims);
  return success();
}

static void printGroupLayout(OpAsmPrinter &printer, Operation *,
                             DenseI64ArrayAttr layout) {
  if (layout) {
    printer << "[";
    llvm::interleaveComma(layout.asArrayRef(), printer);
    printer << "] ";
  }
}

#define GET_OP_CLASSES
#include "tessera/Dialect/TSched/IR/TSchedOps.cpp.inc"

void TSchedDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "tessera/Dialect/TSched/IR/TSchedAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "tessera/Dialect/TSched/IR/TSchedOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// tsched.group
//===----------------------------------------------------------------------===//

void GroupOp::build(OpBuilder &b, OperationState &state, GroupKind kind,
                    DenseI64ArrayAttr layout, ValueRange inputs,
                    TypeRange resultTypes) {
  state.addAttribute(getKindAttrName(state.name),
                     GroupKindAttr::get(b.getContext(), kind));
  if (layout)
    state.addAttribute(getLayoutAttrName(state.name), layout);
  state.addOperands(inputs);
  state.addTypes(resultTypes);
  Region *body = state.addRegion();
  Block *block = new Block;
  body->push_back(block);
  for (Value v : inputs)
    block->addArgument(v.getType(), v.getLoc());
}

LogicalResult GroupOp::verify() {
  Block &block = getBodyBlock();
  if (block.getNumArguments() != getInputs().size())
    return emitOpError() << "has " << getInputs().size()
                         << " inputs but its body takes "
                         << block.getNumArguments() << " arguments";
  for (auto [i, pair] :
       llvm::enumerate(llvm::zip(getInputs(), block.getArguments())))
    if (std::get<0>(pair).getType() != std::get<1>(pair).getType())
      return emitOpError() << "input " << i << " is "
                           << std::get<0>(pair).getType()
                           << " but body argument " << i << " is "
                           << std::get<1>(pair).getType();
  auto yield = dyn_cast<YieldOp>(block.getTerminator());
  if (!yield)
    return emitOpError() << "body must end in tsched.yield";
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError() << "yields " << yield.getValues().size()
                         << " values of types " << yield.getValues().getTypes()
                         << " but the group's results are "
                         << getResultTypes();
  if (getResults().empty())
    return emitOpError() << "computes nothing (a group has at least one "
                            "result)";
  if (std::optional<ArrayRef<int64_t>> layout = getLayout()) {
    bool rowLike =
        getKind() == GroupKind::Row || getKind() == GroupKind::Contraction;
    if (!rowLike)
      return emitOpError() << "a " << stringifyGroupKind(getKind())
                           << " group has no [R, C] layout";
    if (layout->size() != 2 || (*layout)[0] < 0 || (*layout)[1] < 0)
      return emitOpError() << "layout must be [R, C] with R, C >= 0, got ["
                           << llvm::make_range(layout->begin(), layout->end())
                           << "]";
  } else if (getKind() == GroupKind::Row ||
             getKind() == GroupKind::Contraction) {
    return emitOpError() << "a " << stringifyGroupKind(getKind())
                         << " group needs its [R, C] layout";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// The host program: tsched.buffer, tsched.view, tsched.launch
//===----------------------------------------------------------------------===//

LogicalResult BufferOp::verify() {
  if (!getResult().getType().getLayout().isIdentity())
    return emitOpError() << "is a contiguous block of the workspace; "
                         << getResult().getType() << " has a layout";
  return success();
}

LogicalResult ViewOp::verify() {
  MemRefType from = getSource().getType(), to = getResult().getType();
  if (!from.getLayout().isIdentity() || !to.getLayout().isIdentity())
    return emitOpError() << "views contiguous memory: " << from << " to "
                         << to << " has a layout";
  if (from.getElementType() != to.getElementType())
    return emitOpError() << "keeps the element type: " << from << " to "
                         << to;
  if (from.getNumElements() != to.getNumElements())
    return emitOpError() << "keeps the element count: " << from << " has "
                         << from.getNumElements() << ", " << to << " has "
                         << to.getNumElements();
  return success();
}

LogicalResult LaunchOp::verify() {
  ArrayRef<int64_t> grid = getGrid();
  if (grid.empty() || grid.size() > 3 ||
      llvm::any_of(grid, [](int64_t g) { return g < 1 || g > INT32_MAX; }))
    return emitOpError() << "grid must be 1 to 3 counts of programs from 1 "
                            "to 2^31 - 1, got ["
                         << llvm::make_range(grid.begin(), grid.end()) << "]";
  if (std::optional<ArrayAttr> scalars = getScalars())
    for (auto [i, a] : llvm::enumerate(*scalars)) {
      auto typed = dyn_cast<TypedAttr>(a);
      Type t = typed ? typed.getType() : Type();
      bool ok = (isa<FloatAttr>(a) && t.isF32()) ||
                (isa<IntegerAttr>(a) && (t.isInteger(32) || t.isInteger(64)));
      if (!ok)
        return emitOpError() << "scalar " << i << " is " << a
                             << "; a kernel takes f32, i32 or i64 numbers";
    }
  return success();
}

LogicalResult
LaunchOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  SymbolRefAttr ref = getKernel();
  Operation *callee = nullptr;
  if (ref.getNestedReferences().empty()) {
    callee = symbolTable.lookupNearestSymbolFrom(*this, ref);
    if (!callee)
      return emitOpError() << "names the kernel " << ref
                           << ", which is not in the module";
  } else {
    // @device::@kernel: the kernel somewhere in the device module, as a
    // Tile IR function, a gpu.func of a gpu.module, or compiled into one of
    // its gpu.binary ops (which no longer hold ops of their own).
    Operation *device = symbolTable.lookupNearestSymbolFrom(
        *this, FlatSymbolRefAttr::get(ref.getRootReference()));
    if (!device)
      return emitOpError() << "names the device module "
                           << ref.getRootReference()
                           << ", which is not in the module";
    StringAttr leaf = ref.getLeafReference();
    bool compiled = false;
    device->walk([&](Operation *op) {
      if (op->getName().getStringRef() == "gpu.binary")
        compiled = true;
      auto sym = dyn_cast<SymbolOpInterface>(op);
      if (!callee && sym && sym.getNameAttr() == leaf &&
          isa<FunctionOpInterface>(op))
        callee = op;
    });
    if (!callee) {
      if (compiled)
        return success();
      return emitOpError() << "names the kernel " << ref
                           << ", which is not in its device module";
    }
  }
  auto fn = dyn_cast<FunctionOpInterface>(callee);
  if (!fn)
    return emitOpError() << "names " << getKernel() << ", a '"
                         << callee->getName() << "', not a kernel";
  ArrayRef<Type> params = fn.getArgumentTypes();
  ArrayRef<Attribute> scalars;
  if (std::optional<ArrayAttr> s = getScalars())
    scalars = s->getValue();
  if (params.size() != getArgs().size() + scalars.size())
    return emitOpError() << "passes " << getArgs().size() << " buffers and "
                         << scalars.size() << " scalars to " << getKernel()
                         << ", which takes " << params.size()
                         << " parameters";
  for (auto [i, a] : llvm::enumerate(scalars)) {
    Type param = params[getArgs().size() + i];
    // A kernel already lowered to LLVM types keeps its numbers' types.
    if (isa<MemRefType>(param) ||
        (param.isIntOrFloat() && cast<TypedAttr>(a).getType() != param))
      return emitOpError() << "passes " << a << " as parameter "
                           << getArgs().size() + i << " of " << getKernel()
                           << ", which takes " << param;
  }
  params = params.take_front(getArgs().size());
  for (auto [i, pair] : llvm::enumerate(llvm::zip(params, getArgs()))) {
    auto param = dyn_cast<MemRefType>(std::get<0>(pair));
    if (!param)
      continue; // a kernel already lowered to LLVM types
    auto arg = cast<MemRefType>(std::get<1>(pair).getType());
    if (param.getRank() != arg.getRank() ||
        param.getElementType() != arg.getElementType())
      return emitOpError() << "passes " << arg << " as argument " << i
                           << " of " << getKernel() << ", which takes "
                           << param;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// #tsched.schedule<"block(128, 256).k(256).tile(8, 32).vector(16).threads(2)">
//===----------------------------------------------------------------------===//

/// Parses the Halide-style chain `block(128, 256).k(256).vector(16)`. MLIR
/// tokens have no '.', so the chain is written as a string.
static FailureOr<ScheduleAttr>
parseChain(StringRef text, MLIRContext *ctx,
           function_ref<InFlightDiagnostic()> emitError) {
  SmallVector<int64_t> block, tile;
  int64_t k = 0, vector = 0, threads = 0, warps = 0, stages = 0, split = 0;
  bool pingpong = false;
  llvm::StringSet<> seen;
  StringRef rest = text.trim();
  if (rest.empty())
    return emitError() << "a schedule needs at least one part";
  while (true) {
    // The one part without values.
    StringRef word = rest.take_until([](char c) { return c == '.'; }).rtrim();
    if (word == "pingpong") {
      if (!seen.insert(word).second)
        return emitError() << "schedule part 'pingpong' appears twice";
      pingpong = true;
      rest = rest.drop_front(rest.take_until([](char c) {
                                   return c == '.';
                                 }).size())
                 .ltrim();
      if (rest.empty())
        break;
      if (!rest.consume_front("."))
        return emitError() << "expected '.' between schedule parts, but got '"
                           << rest << "'";
      continue;
    }
    size_t open = rest.find('(');
    if (open == StringRef::npos)
      return emitError() << "expected '(' after schedule part '" << rest << "'";
    StringRef part = rest.take_front(open).trim();
    size_t close = rest.find(')', open);
    if (close == StringRef::npos)
      return emitError() << "missing ')' after schedule part '" << part << "'";
    SmallVector<StringRef> fields;
    rest.slice(open + 1, close).split(fields, ',');
    SmallVector<int64_t> args;
    for (StringRef f : fields) {
      int64_t v;
      if (f.trim().getAsInteger(10, v))
        return emitError() << "schedule part '" << part
                           << "' takes integers, but got '" << f.trim() << "'";
      args.push_back(v);
    }
    if (!seen.insert(part).second)
      return emitError() << "schedule part '" << part << "' appears twice";
    for (int64_t v : args)
      if (v <= 0)
        return emitError() << "schedule part '" << part
                           << "' takes positive values, but got " << v;
    auto want = [&](size_t n) -> LogicalResult {
      if (args.size() == n)
        return success();
      return emitError() << "schedule part '" << part << "' takes " << n
                         << (n == 1 ? " value" : " values") << ", but got "
                         << args.size();
    };
    if (part == "block" || part == "tile") {
      if (failed(want(2)))
        return failure();
      (part == "block" ? block : tile) = args;
    } else if (part == "k" || part == "vector" || part == "threads" ||
               part == "warps" || part == "stages" || part == "split") {
      if (failed(want(1)))
        return failure();
      (part == "k"         ? k
       : part == "vector"  ? vector
       : part == "threads" ? threads
       : part == "warps"   ? warps
       : part == "stages"  ? stages
                           : split) = args[0];
    } else {
      return emitError() << "unknown schedule part '" << part
                         << "'; expected block, k, tile, vector, threads, "
                            "warps, stages, split or pingpong";
    }
    rest = rest.drop_front(close + 1).ltrim();
    if (rest.empty())
      break;
    if (!rest.consume_front("."))
      return emitError() << "expected '.' between schedule parts, but got '"
                         << rest << "'";
  }
  if (failed(ScheduleAttr::verify(emitError, block, k, tile, vector, threads,
                                  warps, stages, split, pingpong)))
    return failure();
  return ScheduleAttr::get(ctx, block, k, tile, vector, threads, warps,
                           stages, split, pingpong);
}

FailureOr<ScheduleAttr>
ScheduleAttr::parseSchedule(StringRef text, MLIRContext *ctx,
                            function_ref<InFlightDiagnostic()> emitError) {
  return parseChain(text, ctx, emitError);
}

Attribute ScheduleAttr::parse(AsmParser &parser, Type) {
  std::string text;
  SMLoc at = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseString(&text) || parser.parseGreater())
    return {};
  FailureOr<ScheduleAttr> attr = parseChain(
      text, parser.getContext(), [&] { return parser.emitError(at); });
  if (failed(attr))
    return {};
  return *attr;
}

std::string ScheduleAttr::str() const {
  SmallVector<std::string> parts;
  auto pair = [](StringRef name, ArrayRef<int64_t> v) {
    return (name + "(" + Twine(v[0]) + ", " + Twine(v[1]) + ")").str();
  };
  auto one = [](StringRef name, int64_t v) {
    return (name + "(" + Twine(v) + ")").str();
  };
  if (!getBlock().empty())
    parts.push_back(pair("block", getBlock()));
  if (getK())
    parts.push_back(one("k", getK()));
  if (!getTile().empty())
    parts.push_back(pair("tile", getTile()));
  if (getVector())
    parts.push_back(one("vector", getVector()));
  if (getThreads())
    parts.push_back(one("threads", getThreads()));
  if (getWarps())
    parts.push_back(one("warps", getWarps()));
  if (getStages())
    parts.push_back(one("stages", getStages()));
  if (getSplit())
    parts.push_back(one("split", getSplit()));
  if (getPingpong())
    parts.push_back("pingpong");
  return llvm::join(parts, ".");
}

void ScheduleAttr::print(AsmPrinter &printer) const {
  printer << "<\"" << str() << "\">";
}

LogicalResult ScheduleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   ArrayRef<int64_t> block, int64_t k,
                                   ArrayRef<int64_t> tile, int64_t vector,
                                   int64_t threads, int64_t warps,
                                   int64_t stages, int64_t split,
                                   bool pingpong) {
  if (block.empty() && !k && tile.empty() && !vector && !threads && !warps &&
      !stages && !split && !pingpong)
    return emitError() << "a schedule needs at least one part";
  if (pingpong && split > 1)
    return emitError() << "pingpong and split(" << split
                       << ") do not go together (a split's partials have no "
                          "epilogue to overlap)";
  if (pingpong && warps && warps % 4)
    return emitError() << "pingpong programs are whole warpgroups: warps "
                          "must be 4, 8 or 16, but got "
                       << warps;
  if (split < 0 || split > 64)
    return emitError() << "split takes 1 to 64 chunks, but got " << split;
  for (int64_t v : block)
    if (v <= 0)
      return emitError() << "block sizes must be positive, but got " << v;
  for (int64_t v : tile)
    if (v <= 0)
      return emitError() << "tile sizes must be positive, but got " << v;
  if (k < 0 || vector < 0 || threads < 0 || warps < 0 || stages < 0)
    return emitError() << "k, vector, threads, warps and stages must be "
                          "positive";
  if (warps && !llvm::is_contained({1, 2, 4, 8, 16}, warps))
    return emitError() << "warps must be 1, 2, 4, 8 or 16, but got " << warps;
  if (vector && !llvm::isPowerOf2_64(vector))
    return emitError() << "vector width must be a power of two, but got "
                       << vector;
  if (!tile.empty() && vector && tile[1] % vector != 0)
    return emitError() << "tile NR (" << tile[1]
                       << ") must be a multiple of the vector width (" << vector
                       << ")";
  if (!block.empty() && !tile.empty() &&
      (block[0] % tile[0] != 0 || block[1] % tile[1] != 0))
    return emitError() << "block (" << block[0] << ", " << block[1]
                       << ") must be a multiple of tile (" << tile[0] << ", "
                       << tile[1] << ")";
  return success();
}
