//===- IndexingShapes.cpp - gather, scatter, collectives, calls -----------===//

#include "tessera/Shape/ShapeFunctions.h"

using namespace tessera::shape;

static TensorShape gatherShape(const TensorShape &x, const TensorShape &indices,
                               int64_t dim) {
  TensorShape result;
  result.dims.assign(x.dims.begin(), x.dims.begin() + dim);
  result.dims.insert(result.dims.end(), indices.dims.begin(),
                     indices.dims.end());
  result.dims.insert(result.dims.end(), x.dims.begin() + dim + 1, x.dims.end());
  return result;
}

ShapeResult tessera::shape::inferGather(ShapeDiag &diag, const TensorShape &x,
                                        const TensorShape &indices,
                                        int64_t dim) {
  if (!checkAxis(diag, dim, x.rank()))
    return std::nullopt;
  return gatherShape(x, indices, dim);
}

ShapeResult tessera::shape::inferScatterAdd(ShapeDiag &diag,
                                            const TensorShape &x,
                                            const TensorShape &indices,
                                            const TensorShape &updates,
                                            int64_t dim) {
  if (!checkAxis(diag, dim, x.rank()))
    return std::nullopt;
  TensorShape expected = gatherShape(x, indices, dim);
  if (updates.rank() != expected.rank())
    return diag.error(diag.operandLabel(2) + " must have shape " +
                      expected.str() + " (operand dims around dim " +
                      std::to_string(dim) + " with the index shape inside), "
                      "but has shape " + updates.str());
  TensorShape result = x;
  for (size_t d = 0; d < expected.rank(); ++d) {
    // Map each updates dim back to the operand it comes from.
    int64_t d0 = int64_t(d);
    int src = d0 < dim ? 0 : (d0 < dim + int64_t(indices.rank()) ? 1 : 0);
    int srcDim = d0 < dim ? d0
                 : src == 1 ? d0 - dim
                            : d0 - int64_t(indices.rank()) + 1;
    auto u = diag.unify(expected.dims[d], diag.dimLabel(src, srcDim),
                        {{src, srcDim}}, updates.dims[d], diag.dimLabel(2, d),
                        {{2, int(d)}}, "updates dimension mismatch");
    if (!u)
      return std::nullopt;
    if (src == 0)
      result.dims[srcDim] = *u;
  }
  return result;
}

ShapeResult tessera::shape::inferEmbedding(ShapeDiag &diag,
                                           const TensorShape &table,
                                           const TensorShape &ids) {
  if (table.rank() != 2)
    return diag.error(diag.operandLabel(0) +
                      " must have rank 2 ([vocab, dim]), but has shape " +
                      table.str());
  TensorShape result = ids;
  result.dims.push_back(table.dims[1]);
  return result;
}

ShapeResult tessera::shape::inferOneHot(ShapeDiag &diag,
                                        const TensorShape &ids,
                                        const DimExpr &numClasses) {
  auto lb = numClasses.lowerBound();
  if (numClasses.isUnknown() || !lb || *lb < 1)
    return diag.error("num_classes must be >= 1, but is " + numClasses.str());
  TensorShape result = ids;
  result.dims.push_back(numClasses);
  return result;
}

static bool checkGroup(ShapeDiag &diag, int64_t groupSize) {
  if (groupSize >= 1)
    return true;
  diag.error("group_size must be >= 1, but is " + std::to_string(groupSize));
  return false;
}

ShapeResult tessera::shape::inferAllGather(ShapeDiag &diag,
                                           const TensorShape &x, int64_t dim,
                                           int64_t groupSize) {
  if (!checkAxis(diag, dim, x.rank()) || !checkGroup(diag, groupSize))
    return std::nullopt;
  TensorShape result = x;
  result.dims[dim] = x.dims[dim] * DimExpr::constant(groupSize);
  return result;
}

/// x.dims[dim] / n, which must divide exactly.
static std::optional<DimExpr> splitDim(ShapeDiag &diag, const TensorShape &x,
                                       int64_t dim, int64_t n) {
  const DimExpr &d = x.dims[dim];
  if (!diag.requireDivisible(
          DimSide{d, diag.dimLabel(0, dim), {{0, int(dim)}}}, n,
          "the split dimension must divide evenly over group_size"))
    return std::nullopt;
  return *d.floorDiv(DimExpr::constant(n));
}

ShapeResult tessera::shape::inferReduceScatter(ShapeDiag &diag,
                                               const TensorShape &x,
                                               int64_t dim,
                                               int64_t groupSize) {
  if (!checkAxis(diag, dim, x.rank()) || !checkGroup(diag, groupSize))
    return std::nullopt;
  auto part = splitDim(diag, x, dim, groupSize);
  if (!part)
    return std::nullopt;
  TensorShape result = x;
  result.dims[dim] = *part;
  return result;
}

ShapeResult tessera::shape::inferAllToAll(ShapeDiag &diag,
                                          const TensorShape &x,
                                          int64_t splitDim_, int64_t concatDim,
                                          int64_t groupSize) {
  if (!checkAxis(diag, splitDim_, x.rank(), "split_dim") ||
      !checkAxis(diag, concatDim, x.rank(), "concat_dim") ||
      !checkGroup(diag, groupSize))
    return std::nullopt;
  auto part = splitDim(diag, x, splitDim_, groupSize);
  if (!part)
    return std::nullopt;
  TensorShape result = x;
  result.dims[splitDim_] = *part;
  result.dims[concatDim] =
      result.dims[concatDim] * DimExpr::constant(groupSize);
  return result;
}

bool tessera::shape::bindSymbols(ShapeDiag &diag,
                                 llvm::ArrayRef<TensorShape> params,
                                 llvm::ArrayRef<TensorShape> args,
                                 llvm::StringMap<DimExpr> &bindings) {
  if (params.size() != args.size()) {
    diag.error("the callee takes " + std::to_string(params.size()) +
               " arguments but " + std::to_string(args.size()) +
               " are passed");
    return false;
  }
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].rank() != args[i].rank()) {
      diag.error(diag.operandLabel(i) + " has shape " + args[i].str() +
                 " but the callee's parameter " + std::to_string(i) +
                 " has rank " + std::to_string(params[i].rank()) + " " +
                 params[i].str());
      return false;
    }
  auto paramLabel = [](size_t i, size_t d, const DimExpr &p) {
    return "the callee's parameter " + std::to_string(i) + " dim " +
           std::to_string(d) + " (" + p.str() + ")";
  };
  // Pass 1: a parameter dim that is a plain symbol binds it at its first
  // occurrence; later occurrences must equal that argument dim.
  llvm::StringMap<DimRef> boundAt;
  for (size_t i = 0; i < params.size(); ++i)
    for (size_t d = 0; d < params[i].rank(); ++d) {
      auto name = params[i].dims[d].getSymbolName();
      if (!name)
        continue;
      DimRef here{int(i), int(d)};
      auto [it, inserted] = boundAt.try_emplace(*name, here);
      if (inserted) {
        bindings[*name] = args[i].dims[d];
        continue;
      }
      if (!diag.unify(
              DimSide{args[i].dims[d], diag.dimLabel(i, d), {here}},
              DimSide{bindings[*name], paramLabel(i, d, params[i].dims[d]),
                      {it->second}},
              "argument shape mismatch"))
        return false;
    }
  // Pass 2: every other parameter dim, in terms of the bound symbols. A dim
  // using a symbol no argument binds cannot be related to the caller.
  for (size_t i = 0; i < params.size(); ++i)
    for (size_t d = 0; d < params[i].rank(); ++d) {
      const DimExpr &p = params[i].dims[d];
      if (p.getSymbolName())
        continue;
      std::set<std::string> syms;
      p.collectSymbols(syms);
      if (llvm::any_of(syms, [&](const std::string &n) {
            return !bindings.count(n);
          }))
        continue;
      if (!diag.unify(args[i].dims[d], diag.dimLabel(i, d), {{int(i), int(d)}},
                      p.substitute(bindings), paramLabel(i, d, p), {},
                      "argument shape mismatch"))
        return false;
    }
  return true;
}

TensorShape tessera::shape::substitute(const TensorShape &shape,
                                       const llvm::StringMap<DimExpr> &b) {
  TensorShape result;
  for (const DimExpr &d : shape.dims)
    result.dims.push_back(d.substitute(b));
  return result;
}

bool tessera::shape::requireSameShape(ShapeDiag &diag,
                                      const TensorShape &expected,
                                      const std::string &expectedLabel,
                                      const TensorShape &actual,
                                      const std::string &actualLabel,
                                      const std::string &what) {
  if (expected.rank() != actual.rank()) {
    diag.error(what + ": " + actualLabel + " has shape " + actual.str() +
               " but " + expectedLabel + " has shape " + expected.str());
    return false;
  }
  for (size_t d = 0; d < expected.rank(); ++d)
    if (!diag.unify(actual.dims[d], actualLabel + " dim " + std::to_string(d),
                    {}, expected.dims[d],
                    expectedLabel + " dim " + std::to_string(d), {}, what))
      return false;
  return true;
}
