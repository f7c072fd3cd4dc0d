//===- ReductionOps.cpp - Reductions and normalizations over axes ---------===//
//
// The Graph IR reduces over a list of dims, but the softmax family works
// along one dim and the norms over the trailing dims [axis, rank). The API
// takes any set of axes for all of them: a set the op cannot take directly
// is moved last (a transpose, only when the axes are not already trailing)
// and, for the softmax family, merged into one dim (a reshape); the result
// is brought back the same way.
//
//===----------------------------------------------------------------------===//

#include "OpBuilder.h"

#include "tessera/Dialect/TGraph/IR/TypeInference.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
namespace tg = mlir::tessera::tgraph;
using ::tessera::detail::begin;

namespace tessera {

bool detail::OpContext::requireElements(const Tensor &x,
                                        llvm::ArrayRef<int64_t> axes,
                                        const char *opName,
                                        const char *what) const {
  Shape shape = x.shape();
  int64_t known = 1;
  std::vector<int64_t> symbolic;
  for (int64_t a : axes) {
    if (!shape[a].isStatic()) {
      symbolic.push_back(a);
      continue;
    }
    if (shape[a].size() == 0) {
      state->failAt(loc, std::string(opName) +
                             " over an empty axis: "
                             "axis " +
                             std::to_string(a) + " of " + x.str() +
                             " has size 0, and the " + what +
                             " of nothing is undefined");
      return false;
    }
    known *= shape[a].size();
  }
  if (symbolic.empty())
    return true;
  OpBuilder &builder = b();
  Value v = use(x);
  Value count = arith::ConstantIndexOp::create(builder, loc, known);
  std::string sizes;
  for (int64_t a : symbolic) {
    count = arith::MulIOp::create(builder, loc, count,
                                  tg::DimOp::create(builder, loc, v, a));
    sizes += (sizes.empty() ? "" : " * ") + shape[a].symbol();
  }
  tg::AssertDimOp::create(
      builder, loc, tg::DimRelation::le,
      arith::ConstantIndexOp::create(builder, loc, 1), count,
      "'tgraph." + std::string(opName) + "' op at " +
          tg::describeLocation(loc) + ": the " + what +
          " of nothing is undefined: the reduced axes of " + x.str() +
          " must hold at least 1 element (" + sizes + ")");
  return true;
}

namespace op {

namespace {

/// Where the chosen axes of a tensor go when they are moved last: the
/// permutation (the other axes first, each group in order), its inverse, and
/// the rank of the chosen group.
struct AxesLast {
  std::vector<int64_t> perm, inverse;
  size_t count = 0;

  AxesLast(int64_t rank, const std::vector<int64_t> &axes)
      : count(axes.size()) {
    for (int64_t i = 0; i < rank; ++i)
      if (!llvm::is_contained(axes, i))
        perm.push_back(i);
    perm.insert(perm.end(), axes.begin(), axes.end());
    inverse.resize(perm.size());
    for (size_t i = 0; i < perm.size(); ++i)
      inverse[perm[i]] = int64_t(i);
  }
  bool identity() const {
    for (size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != int64_t(i))
        return false;
    return true;
  }
};

/// The product of `dims` as one dim (an expression when any is symbolic).
Dim product(const Shape &dims) {
  int64_t size = 1;
  std::string expr;
  for (const Dim &d : dims) {
    if (d.isStatic())
      size *= d.size();
    else
      expr += (expr.empty() ? "(" : "*(") + d.symbol() + ")";
  }
  if (expr.empty())
    return Dim(size);
  return Dim(size == 1 ? expr : std::to_string(size) + "*" + expr);
}

/// The axes of `x` that `axis` names, or an error when it names none.
std::optional<std::vector<int64_t>> nonEmptyAxes(const Tensor &x,
                                                 const Axes &axis,
                                                 const char *opName,
                                                 SourceLoc where) {
  auto c = begin({&x}, where);
  if (!c)
    return std::nullopt;
  auto axes = c->axes(x, axis);
  if (axes && axes->empty()) {
    c->state->failAt(c->loc, std::string(opName) +
                                 " needs at least one axis, got none (axis=" +
                                 (axis.isAll() ? "all of a scalar" : "()") +
                                 ")");
    return std::nullopt;
  }
  return axes;
}

/// `single(y, -1)` with the axes of `x` merged into y's last dim; the result
/// has x's shape (`keepShape`) or x's shape without those axes (`keepdims`
/// then puts them back with size 1).
template <typename Single>
Tensor overMergedAxes(const Tensor &x, const std::vector<int64_t> &axes,
                      bool keepShape, bool keepdims, SourceLoc where,
                      Single single) {
  if (axes.size() == 1)
    return single(x, axes[0]);
  AxesLast moved(x.rank(), axes);
  Tensor y = moved.identity() ? x : transpose(x, moved.perm, where);
  Shape shape = y.shape(), merged(shape.begin(), shape.end() - moved.count);
  merged.push_back(product(Shape(shape.end() - moved.count, shape.end())));
  Tensor r = single(reshape(y, merged, where), -1);
  if (keepShape) {
    r = reshape(r, shape, where);
    return moved.identity() ? r : transpose(r, moved.inverse, where);
  }
  if (!keepdims)
    return r;
  Shape kept = x.shape();
  for (int64_t a : axes)
    kept[a] = Dim(1);
  return reshape(r, kept, where);
}

/// The op `build(c, v, axes)` adds for `x` (as `v`) over the axes `axis`
/// names, sorted and non-negative; `build` returns null after an error.
template <typename Build>
Tensor onAxes(const Tensor &x, const Axes &axis, SourceLoc where, Build build) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  auto d = c->axes(x, axis);
  if (!d)
    return {};
  Operation *op = build(*c, c->use(x), *d);
  return op ? c->result(op) : Tensor();
}

/// As onAxes, for an op along one axis.
template <typename Build>
Tensor onAxis(const Tensor &x, int64_t axis, SourceLoc where, Build build) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  auto d = c->axis(x, axis);
  if (!d)
    return {};
  return c->result(build(*c, c->use(x), int64_t(*d)));
}

template <typename OpTy>
Tensor reduceStable(const Tensor &x, const Axes &axis, bool keepdims,
                    bool stable, SourceLoc where) {
  return onAxes(x, axis, where,
                [&](const detail::OpContext &c, Value v,
                    ArrayRef<int64_t> d) -> Operation * {
                  return OpTy::create(c.b(), c.loc, v.getType(), v, d, keepdims,
                                      stable, tg::PolicyAttr());
                });
}

template <typename OpTy>
Tensor reduce(const Tensor &x, const Axes &axis, bool keepdims,
              const char *opName, const char *what, SourceLoc where) {
  // The maximum of nothing has no value (NumPy raises). The Graph IR op
  // gives its identity (-inf, +inf), which the decompositions of logsumexp
  // and softmax rely on, so the check is made here.
  return onAxes(x, axis, where,
                [&](const detail::OpContext &c, Value v,
                    ArrayRef<int64_t> d) -> Operation * {
                  if (!c.requireElements(x, d, opName, what))
                    return nullptr;
                  return OpTy::create(c.b(), c.loc, v.getType(), v, d,
                                      keepdims);
                });
}

/// An op of the softmax family along one axis.
template <typename OpTy>
Tensor alongAxis(const Tensor &x, int64_t axis, SourceLoc where) {
  return onAxis(x, axis, where,
                [](const detail::OpContext &c, Value v, int64_t d) {
                  return OpTy::create(c.b(), c.loc, v.getType(), v, d);
                });
}

template <typename OpTy>
Tensor alongAxisKeep(const Tensor &x, int64_t axis, bool keepdims,
                     SourceLoc where) {
  return onAxis(
      x, axis, where, [&](const detail::OpContext &c, Value v, int64_t d) {
        return OpTy::create(c.b(), c.loc, v.getType(), v, d, keepdims);
      });
}

template <typename OpTy>
Tensor softmaxLike(const Tensor &x, const Axes &axis, const char *opName,
                   SourceLoc where) {
  auto axes = nonEmptyAxes(x, axis, opName, where);
  if (!axes)
    return {};
  return overMergedAxes(
      x, *axes, /*keepShape=*/true, false, where,
      [&](const Tensor &y, int64_t a) { return alongAxis<OpTy>(y, a, where); });
}

template <typename OpTy>
Tensor logsumexpLike(const Tensor &x, const Axes &axis, bool keepdims,
                     const char *opName, SourceLoc where) {
  auto axes = nonEmptyAxes(x, axis, opName, where);
  if (!axes)
    return {};
  return overMergedAxes(x, *axes, /*keepShape=*/false, keepdims, where,
                        [&](const Tensor &y, int64_t a) {
                          return alongAxisKeep<OpTy>(
                              y, a, axes->size() == 1 && keepdims, where);
                        });
}

/// A norm over `axis`: the IR op normalizes the trailing dims from its
/// `axis` attribute on, so other axes are moved last and back. `build` adds
/// the op for the first normalized dim.
template <typename Build>
Tensor normOverAxes(const Tensor &x, const Axes &axis, const char *opName,
                    SourceLoc where, Build build) {
  auto axes = nonEmptyAxes(x, axis, opName, where);
  if (!axes)
    return {};
  AxesLast moved(x.rank(), *axes);
  if (moved.identity())
    return build(x, x.rank() - int64_t(axes->size()));
  Tensor y = transpose(x, moved.perm, where);
  Tensor r = build(y, x.rank() - int64_t(axes->size()));
  return transpose(r, moved.inverse, where);
}

template <typename OpTy>
Tensor layerNorm(const Tensor &x, const Tensor &scale, const Tensor &bias,
                 const Axes &axis, double epsilon, const char *opName,
                 SourceLoc where) {
  return normOverAxes(x, axis, opName, where, [&](const Tensor &y, int64_t a) {
    auto c = begin(
        {&y, scale.valid() ? &scale : nullptr, bias.valid() ? &bias : nullptr},
        where);
    if (!c)
      return Tensor();
    Value v = c->use(y);
    Value s = scale.valid() ? c->use(scale) : Value();
    Value b = bias.valid() ? c->use(bias) : Value();
    return c->result(OpTy::create(c->b(), c->loc, v.getType(), v, s, b,
                                  uint64_t(a), APFloat(epsilon),
                                  tg::PolicyAttr()));
  });
}

template <typename OpTy>
Tensor rmsNorm(const Tensor &x, const Tensor &scale, const Axes &axis,
               double epsilon, const char *opName, SourceLoc where) {
  return normOverAxes(x, axis, opName, where, [&](const Tensor &y, int64_t a) {
    auto c = begin({&y, scale.valid() ? &scale : nullptr}, where);
    if (!c)
      return Tensor();
    Value v = c->use(y);
    Value s = scale.valid() ? c->use(scale) : Value();
    return c->result(OpTy::create(c->b(), c->loc, v.getType(), v, s,
                                  uint64_t(a), APFloat(epsilon),
                                  tg::PolicyAttr()));
  });
}

} // namespace

Tensor reduce_sum(const Tensor &x, const Axes &axis, bool keepdims, bool stable,
                  SourceLoc loc) {
  return reduceStable<tg::ReduceSumOp>(x, axis, keepdims, stable, loc);
}
Tensor reduce_mean(const Tensor &x, const Axes &axis, bool keepdims,
                   bool stable, SourceLoc loc) {
  return reduceStable<tg::ReduceMeanOp>(x, axis, keepdims, stable, loc);
}
Tensor reduce_prod(const Tensor &x, const Axes &axis, bool keepdims,
                   bool stable, SourceLoc loc) {
  return reduceStable<tg::ReduceProdOp>(x, axis, keepdims, stable, loc);
}
Tensor reduce_max(const Tensor &x, const Axes &axis, bool keepdims,
                  SourceLoc loc) {
  return reduce<tg::ReduceMaxOp>(x, axis, keepdims, "reduce_max", "maximum",
                                 loc);
}
Tensor reduce_min(const Tensor &x, const Axes &axis, bool keepdims,
                  SourceLoc loc) {
  return reduce<tg::ReduceMinOp>(x, axis, keepdims, "reduce_min", "minimum",
                                 loc);
}

Tensor argmax(const Tensor &x, int64_t axis, bool keepdims, SourceLoc loc) {
  return alongAxisKeep<tg::ArgmaxOp>(x, axis, keepdims, loc);
}
Tensor argmin(const Tensor &x, int64_t axis, bool keepdims, SourceLoc loc) {
  return alongAxisKeep<tg::ArgminOp>(x, axis, keepdims, loc);
}

Tensor softmax(const Tensor &x, const Axes &axis, SourceLoc loc) {
  return softmaxLike<tg::SoftmaxOp>(x, axis, "softmax", loc);
}
Tensor log_softmax(const Tensor &x, const Axes &axis, SourceLoc loc) {
  return softmaxLike<tg::LogSoftmaxOp>(x, axis, "log_softmax", loc);
}
Tensor softmax_safe(const Tensor &x, const Axes &axis, SourceLoc loc) {
  return softmaxLike<tg::SoftmaxSafeOp>(x, axis, "softmax_safe", loc);
}
Tensor logsumexp(const Tensor &x, const Axes &axis, bool keepdims,
                 SourceLoc loc) {
  return logsumexpLike<tg::LogsumexpOp>(x, axis, keepdims, "logsumexp", loc);
}
Tensor logsumexp_safe(const Tensor &x, const Axes &axis, bool keepdims,
                      SourceLoc loc) {
  return logsumexpLike<tg::LogsumexpSafeOp>(x, axis, keepdims, "logsumexp_safe",
                                            loc);
}

Tensor layernorm(const Tensor &x, const Tensor &scale, const Tensor &bias,
                 const Axes &axis, double epsilon, SourceLoc loc) {
  return layerNorm<tg::LayerNormOp>(x, scale, bias, axis, epsilon, "layernorm",
                                    loc);
}
Tensor layernorm_safe(const Tensor &x, const Tensor &scale, const Tensor &bias,
                      const Axes &axis, double epsilon, SourceLoc loc) {
  return layerNorm<tg::LayerNormSafeOp>(x, scale, bias, axis, epsilon,
                                        "layernorm_safe", loc);
}
Tensor rmsnorm(const Tensor &x, const Tensor &scale, const Axes &axis,
               double epsilon, SourceLoc loc) {
  return rmsNorm<tg::RMSNormOp>(x, scale, axis, epsilon, "rmsnorm", loc);
}
Tensor rmsnorm_safe(const Tensor &x, const Tensor &scale, const Axes &axis,
                    double epsilon, SourceLoc loc) {
  return rmsNorm<tg::RMSNormSafeOp>(x, scale, axis, epsilon, "rmsnorm_safe",
                                    loc);
}

} // namespace op
} // namespace tessera
