//===- TTileDialect.cpp - Tile IR dialect, layouts, kernel attributes -----===//

#include "tessera/Dialect/TTile/IR/TTile.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tessera::ttile;

#include "tessera/Dialect/TTile/IR/TTileDialect.cpp.inc"
#include "tessera/Dialect/TTile/IR/TTileEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "tessera/Dialect/TTile/IR/TTileAttrs.cpp.inc"

namespace {
/// Layouts print as #blocked, #mma, #dot_op and #slice aliases.
struct TTileOpAsmInterface : public OpAsmDialectInterface {
  using OpAsmDialectInterface::OpAsmDialectInterface;
  AliasResult getAlias(Attribute attr, raw_ostream &os) const override {
    return llvm::TypeSwitch<Attribute, AliasResult>(attr)
        .Case([&](BlockedAttr) {
          os << "blocked";
          return AliasResult::FinalAlias;
        })
        .Case([&](MmaAttr) {
          os << "mma";
          return AliasResult::FinalAlias;
        })
        .Case([&](DotOperandAttr) {
          os << "dot_op";
          return AliasResult::FinalAlias;
        })
        .Case([&](SliceAttr) {
          os << "slice";
          return AliasResult::FinalAlias;
        })
        .Default([](Attribute) { return AliasResult::NoAlias; });
  }
};
} // namespace

void TTileDialect::initialize() {
  addInterfaces<TTileOpAsmInterface>();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "tessera/Dialect/TTile/IR/TTileAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "tessera/Dialect/TTile/IR/TTileOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Layouts
//===----------------------------------------------------------------------===//

bool mlir::tessera::ttile::isLayout(Attribute attr) {
  return isa_and_nonnull<BlockedAttr, MmaAttr, DotOperandAttr, SliceAttr,
                         SharedAttr>(attr);
}

unsigned mlir::tessera::ttile::layoutRank(Attribute layout) {
  return llvm::TypeSwitch<Attribute, unsigned>(layout)
      .Case([](BlockedAttr b) { return b.getRank(); })
      .Case([](SliceAttr s) { return layoutRank(s.getParent()) - 1; })
      .Case([](SharedAttr s) { return unsigned(s.getOrder().size()); })
      .Default([](Attribute) { return 2u; }); // mma, dot_operand
}

static std::string list(ArrayRef<int64_t> v) {
  std::string s = "[";
  for (auto [i, x] : llvm::enumerate(v))
    s += (i ? ", " : "") + std::to_string(x);
  return s + "]";
}

LogicalResult BlockedAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  ArrayRef<int64_t> sizePerThread,
                                  ArrayRef<int64_t> threadsPerWarp,
                                  ArrayRef<int64_t> warpsPerCTA,
                                  ArrayRef<int64_t> order) {
  size_t rank = order.size();
  if (rank == 0 || sizePerThread.size() != rank ||
      threadsPerWarp.size() != rank || warpsPerCTA.size() != rank)
    return emitError() << "a blocked layout needs one entry per dim in "
                          "sizePerThread, threadsPerWarp, warpsPerCTA and "
                          "order; got "
                       << sizePerThread.size() << ", " << threadsPerWarp.size()
                       << ", " << warpsPerCTA.size() << " and " << rank;
  int64_t threads = 1;
  for (auto arr : {sizePerThread, threadsPerWarp, warpsPerCTA})
    for (int64_t v : arr)
      if (v < 1)
        return emitError() << "blocked layout sizes must be >= 1, got "
                           << list(arr);
  for (int64_t t : threadsPerWarp)
    threads *= t;
  if (threads != 32)
    return emitError() << "threadsPerWarp " << list(threadsPerWarp) << " has "
                       << threads << " threads; a warp has 32";
  SmallVector<bool> seen(rank, false);
  for (int64_t d : order) {
    if (d < 0 || d >= int64_t(rank) || seen[d])
      return emitError() << "order " << list(order)
                         << " is not a permutation of the " << rank << " dims";
    seen[d] = true;
  }
  return success();
}

int64_t BlockedAttr::getNumWarps() const {
  int64_t n = 1;
  for (int64_t w : getWarpsPerCTA())
    n *= w;
  return n;
}

LogicalResult MmaAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                              unsigned version, ArrayRef<int64_t> warpsPerCTA,
                              ArrayRef<int64_t> instrShape) {
  if (version != 2 && version != 3)
    return emitError() << "mma version " << version
                       << " is not 2 (mma.sync) or 3 (wgmma)";
  if (warpsPerCTA.size() != 2 || warpsPerCTA[0] < 1 || warpsPerCTA[1] < 1)
    return emitError() << "mma warpsPerCTA must be [M, N] with entries >= 1, "
                          "got "
                       << list(warpsPerCTA);
  if (instrShape.size() != 3)
    return emitError() << "mma instrShape must be [M, N, K], got "
                       << list(instrShape);
  int64_t m = instrShape[0], n = instrShape[1], k = instrShape[2];
  if (k != 8 && k != 16 && k != 32)
    return emitError() << "mma instruction K must be 8, 16 or 32, got " << k;
  if (version == 2 && (m != 16 || n != 8))
    return emitError() << "mma.sync (version 2) computes 16x8 per warp, got "
                       << m << "x" << n;
  if (version == 3) {
    if (m != 64 || n < 8 || n > 256 || n % 8)
      return emitError() << "wgmma (version 3) computes 64xN per warpgroup "
                            "with N a multiple of 8 up to 256, got "
                         << m << "x" << n;
    if ((warpsPerCTA[0] * warpsPerCTA[1]) % 4)
      return emitError() << "wgmma needs whole warpgroups (warps a multiple "
                            "of 4), got "
                         << list(warpsPerCTA);
  }
  return success();
}

LogicalResult
DotOperandAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       unsigned opIdx, Attribute parent, unsigned kWidth) {
  if (opIdx > 1)
    return emitError() << "dot_operand opIdx must be 0 (A) or 1 (B), got "
                       << opIdx;
  if (!isa<MmaAttr, BlockedAttr>(parent))
    return emitError() << "a dot_operand's parent must be an mma or blocked "
                          "layout, got "
                       << parent;
  if (kWidth < 1)
    return emitError() << "dot_operand kWidth must be >= 1";
  return success();
}

LogicalResult SharedAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 unsigned swizzle, ArrayRef<int64_t> order) {
  if (swizzle != 32 && swizzle != 64 && swizzle != 128)
    return emitError() << "shared swizzle must be 32, 64 or 128 bytes, got "
                       << swizzle;
  SmallVector<int64_t> sorted(order);
  llvm::sort(sorted);
  for (auto [i, d] : llvm::enumerate(sorted))
    if (d != int64_t(i))
      return emitError() << "shared order must be a permutation of the dims, "
                            "got "
                         << list(order);
  return success();
}

LogicalResult SliceAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                unsigned dim, Attribute parent) {
  if (!isLayout(parent) || isa<SharedAttr>(parent))
    return emitError() << "a slice's parent must be a register layout, got "
                       << parent;
  unsigned rank = layoutRank(parent);
  if (rank < 2 || dim >= rank)
    return emitError() << "slice dim " << dim << " is not a dim of its " << rank
                       << "-d parent";
  return success();
}

//===----------------------------------------------------------------------===//
// Kernel attributes
//===----------------------------------------------------------------------===//

LogicalResult TTileDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  StringRef name = attr.getName().strref();
  if (name == "ttile.kernel") {
    auto fn = dyn_cast<func::FuncOp>(op);
    if (!fn || !isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'ttile.kernel' marks a func.func (unit "
                                "attribute)";
    if (fn.getNumResults())
      return op->emitError() << "a kernel returns nothing (it writes its "
                                "results through memref arguments), but @"
                             << fn.getName() << " returns "
                             << fn.getNumResults() << " value(s)";
    for (auto [i, t] : llvm::enumerate(fn.getArgumentTypes()))
      if (!isa<MemRefType, IndexType, IntegerType, FloatType>(t))
        return op->emitError()
               << "kernel argument " << i << " is " << t
               << "; kernels take memrefs and integer, index or float scalars";
    return success();
  }
  if (name == "ttile.num_warps") {
    auto v = dyn_cast<IntegerAttr>(attr.getValue());
    int64_t n = v ? v.getInt() : 0;
    if (n < 1 || n > 32 || (n & (n - 1)))
      return op->emitError() << "ttile.num_warps must be a power of two from "
                                "1 to 32, got "
                             << attr.getValue();
    return success();
  }
  if (name == "ttile.pingpong") {
    // The warpgroups of the kernel's wgmma loops take turns to issue their
    // products: two warpgroups at least.
    auto warps = op->getAttrOfType<IntegerAttr>("ttile.num_warps");
    if (!isa<UnitAttr>(attr.getValue()) || !isa<func::FuncOp>(op) || !warps ||
        warps.getInt() < 8)
      return op->emitError()
             << "'ttile.pingpong' is a unit attribute of a kernel of two "
                "warpgroups or more (ttile.num_warps >= 8), got "
             << attr.getValue() << " with ttile.num_warps = "
             << (warps ? std::to_string(warps.getInt()) : "none");
    return success();
  }
  if (name == "ttile.programs_per_block") {
    // Programs of whole warpgroups, their named barriers within the 16 of
    // a block (LowerControlFlow.cpp).
    auto v = dyn_cast<IntegerAttr>(attr.getValue());
    auto warps = op->getAttrOfType<IntegerAttr>("ttile.num_warps");
    int64_t n = v ? v.getInt() : 0;
    int64_t w = warps ? warps.getInt() : 4;
    if (!isa<func::FuncOp>(op) || n < 1 || n > 3 || w % 4 || n * w > 16)
      return op->emitError()
             << "ttile.programs_per_block is a kernel's 1, 2 or 3 programs "
                "of whole warpgroups (ttile.num_warps a multiple of 4, at "
                "most 16 warps a block), got "
             << attr.getValue() << " with ttile.num_warps = " << w;
    if (n > 1 && op->hasAttr("ttile.pingpong"))
      return op->emitError() << "ttile.programs_per_block takes turns "
                                "between programs; it does not go with "
                                "ttile.pingpong";
    return success();
  }
  if (name == "ttile.deepest_ring") {
    // A generated GEMM's K loop whose stages are the most that fit: the
    // GPU lowering may give some up (LowerProducer.cpp).
    if (!isa<RangeOp>(op) || !isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "ttile.deepest_ring is a unit attribute of "
                                "a ttile.range, got "
                             << attr.getValue() << " on " << op->getName();
    return success();
  }
  if (name == "ttile.producer_registers") {
    // What setmaxnreg leaves a producer warpgroup (the consumers get the
    // rest).
    auto v = dyn_cast<IntegerAttr>(attr.getValue());
    int64_t n = v ? v.getInt() : 0;
    if (!isa<func::FuncOp>(op) || n < 24 || n > 256 || n % 8)
      return op->emitError() << "ttile.producer_registers is a kernel's "
                                "multiple of 8 from 24 to 256, got "
                             << attr.getValue();
    return success();
  }
  if (name == "ttile.programs_per_sm") {
    // Programs that must fit on one SM at once (.minnctapersm): at most the
    // SM's 2048 threads.
    auto v = dyn_cast<IntegerAttr>(attr.getValue());
    auto warps = op->getAttrOfType<IntegerAttr>("ttile.num_warps");
    int64_t n = v ? v.getInt() : 0;
    int64_t threads = 32 * (warps ? warps.getInt() : 4);
    if (!isa<func::FuncOp>(op) || n < 1 || n * threads > 2048)
      return op->emitError()
             << "ttile.programs_per_sm is a kernel's count of programs an SM "
                "holds at once, from 1 to 2048 threads / "
             << threads << " threads a program = " << 2048 / threads << ", got "
             << attr.getValue();
    return success();
  }
  if (name == "ttile.cluster") {
    // Programs a cluster (consecutive ids along grid dim 0), which
    // multicast loads share.
    auto v = dyn_cast<IntegerAttr>(attr.getValue());
    int64_t n = v ? v.getInt() : 0;
    if (!isa<func::FuncOp>(op) || n < 1 || n > 8 || (n & (n - 1)))
      return op->emitError() << "ttile.cluster is a kernel's power of two "
                                "from 1 to 8 (programs a cluster), got "
                             << attr.getValue();
    return success();
  }
  return op->emitError() << "unknown Tile IR attribute '" << name << "'";
}
