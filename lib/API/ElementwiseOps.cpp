//===- ElementwiseOps.cpp - Generators and elementwise ops ----------------===//

#include "OpBuilder.h"

#include "tessera/Dialect/TGraph/IR/TypeInference.h"

#include <cmath>
#include <sstream>

using namespace mlir;
namespace tg = mlir::tessera::tgraph;

namespace tessera::detail {

std::optional<OpContext> begin(std::initializer_list<const Tensor *> operands,
                               SourceLoc where) {
  for (const Tensor *t : operands)
    if (t && !t->valid())
      return std::nullopt;
  ModuleState *s = stateOf(operands);
  if (!s)
    return std::nullopt;
  Location loc = s->location(where);
  if (!s->ready(operands))
    return std::nullopt;
  return OpContext{s, loc};
}

std::optional<uint64_t> OpContext::axis(const Tensor &x, int64_t axis,
                                        const char *what) const {
  int64_t rank = x.rank();
  int64_t a = normalizeAxis(axis, rank);
  if (a < 0 || a >= rank) {
    state->failAt(loc,
                  std::string(what) + " " + std::to_string(axis) +
                      " is out of range for " + x.str() +
                      (rank == 0 ? " (a scalar has no axes)"
                                 : " (rank " + std::to_string(rank) +
                                       ": axes -" + std::to_string(rank) +
                                       ".." + std::to_string(rank - 1) + ")"));
    return std::nullopt;
  }
  return uint64_t(a);
}

/// "(1, -1)".
static std::string tupleText(const std::vector<int64_t> &axes) {
  std::string text = "(";
  for (size_t i = 0; i < axes.size(); ++i)
    text += (i ? ", " : "") + std::to_string(axes[i]);
  return text + (axes.size() == 1 ? ",)" : ")");
}

std::optional<std::vector<int64_t>>
OpContext::axisList(const Tensor &x, const std::vector<int64_t> &axes,
                    const char *what) const {
  std::vector<int64_t> out;
  for (int64_t a : axes) {
    auto n = axis(x, a, what);
    if (!n)
      return std::nullopt;
    if (llvm::is_contained(out, int64_t(*n))) {
      state->failAt(loc, std::string(what) + " " + tupleText(axes) +
                             " names axis " + std::to_string(*n) + " of " +
                             x.str() + " twice");
      return std::nullopt;
    }
    out.push_back(int64_t(*n));
  }
  return out;
}

std::optional<std::vector<int64_t>>
OpContext::axes(const Tensor &x, const op::Axes &axes) const {
  std::vector<int64_t> out;
  if (axes.isAll()) {
    for (int64_t i = 0; i < x.rank(); ++i)
      out.push_back(i);
    return out;
  }
  auto list = axisList(x, axes.values());
  if (list)
    llvm::sort(*list);
  return list;
}

TypedAttr OpContext::scalarAttr(double value, DType dtype) const {
  Type t = elementType(ctx(), dtype);
  if (auto f = dyn_cast<FloatType>(t))
    return FloatAttr::get(f, value);
  return IntegerAttr::get(t, int64_t(value));
}

tg::PolicyAttr OpContext::policy(const op::Policy &p) const {
  if (!p.accum && !p.stochasticRound && !p.lossScale && !p.saturate)
    return {};
  Type accum = p.accum ? elementType(ctx(), *p.accum) : Type();
  FloatAttr scale = p.lossScale
                        ? FloatAttr::get(Float64Type::get(ctx()), *p.lossScale)
                        : FloatAttr();
  return tg::PolicyAttr::get(ctx(), accum, p.stochasticRound, scale,
                             p.saturate);
}

} // namespace tessera::detail

using ::tessera::detail::begin;

namespace tessera::op {

//===----------------------------------------------------------------------===//
// Generators
//===----------------------------------------------------------------------===//

/// Generators have no operand to find their Module through: they add to
/// the innermost trace running on this thread.
static std::optional<detail::OpContext> beginGenerator(SourceLoc where) {
  detail::ModuleState *s = detail::activeState;
  if (!s)
    return std::nullopt;
  Location loc = s->location(where);
  if (!s->ready({}))
    return std::nullopt;
  return detail::OpContext{s, loc};
}

Tensor full(double value, const Shape &shape, DType dtype, SourceLoc where) {
  auto c = beginGenerator(where);
  if (!c)
    return {};
  RankedTensorType type = c->state->tensorType(shape, dtype);
  if (!type)
    return {};
  return c->result(
      tg::FullOp::create(c->b(), c->loc, type, c->scalarAttr(value, dtype)));
}

Tensor zeros_like(const Tensor &x, SourceLoc where) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  Value v = c->use(x);
  return c->result(tg::ZerosLikeOp::create(c->b(), c->loc, v.getType(), v));
}

Tensor ones_like(const Tensor &x, SourceLoc where) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  Value v = c->use(x);
  return c->result(tg::OnesLikeOp::create(c->b(), c->loc, v.getType(), v));
}

Tensor iota(const Shape &shape, int64_t axis, DType dtype, SourceLoc where) {
  auto c = beginGenerator(where);
  if (!c)
    return {};
  RankedTensorType type = c->state->tensorType(shape, dtype);
  if (!type)
    return {};
  int64_t d = detail::normalizeAxis(axis, int64_t(shape.size()));
  if (d < 0 || d >= int64_t(shape.size())) {
    c->state->failAt(c->loc, "iota axis " + std::to_string(axis) +
                                 " is out of range for " + describe(shape));
    return {};
  }
  return c->result(tg::IotaOp::create(c->b(), c->loc, type, uint64_t(d)));
}

Tensor constant_bytes(const void *data, const Shape &shape, DType dtype,
                      SourceLoc where) {
  auto c = beginGenerator(where);
  if (!c)
    return {};
  for (const Dim &d : shape)
    if (!d.isStatic()) {
      c->state->failAt(c->loc, "a constant needs a static shape, got " +
                                   describe(shape));
      return {};
    }
  RankedTensorType type = c->state->tensorType(shape, dtype);
  if (!type)
    return {};
  int64_t n = type.getNumElements();
  DenseElementsAttr attr;
  if (dtype == DType::i1) {
    const auto *bytes = static_cast<const uint8_t *>(data);
    SmallVector<bool> bits(bytes, bytes + n);
    attr = DenseElementsAttr::get(type, ArrayRef<bool>(bits));
  } else {
    size_t size = size_t(n) * runtime::byteSize(dtype);
    attr = DenseElementsAttr::getFromRawBuffer(
        type, ArrayRef<char>(static_cast<const char *>(data), size));
  }
  return c->result(tg::ConstantOp::create(c->b(), c->loc, type, attr));
}

Tensor constant(const std::vector<double> &values, const Shape &shape,
                DType dtype, SourceLoc where) {
  auto c = beginGenerator(where);
  if (!c)
    return {};
  RankedTensorType type = c->state->tensorType(shape, dtype);
  if (!type)
    return {};
  if (!type.hasStaticShape() ||
      type.getNumElements() != int64_t(values.size())) {
    c->state->failAt(c->loc, "a constant of shape " + describe(shape) +
                                 " needs that many values, got " +
                                 std::to_string(values.size()));
    return {};
  }
  SmallVector<Attribute> elements;
  for (double v : values)
    elements.push_back(c->scalarAttr(v, dtype));
  auto attr = DenseElementsAttr::get(type, elements);
  return c->result(tg::ConstantOp::create(c->b(), c->loc, type, attr));
}

/// Why `value` cannot be a constant of `dtype` (empty when it can).
static std::string misfit(Scalar value, DType dtype) {
  auto range = runtime::integerRange(dtype);
  if (!range)
    return "";
  if (value.kind() == ScalarKind::Float) {
    double v = value.doubleValue();
    if (std::trunc(v) != v)
      return "the number " + value.str() +
             " is not an integer, so it cannot "
             "be a constant of " +
             runtime::name(dtype);
    if (!(v >= -0x1p63 && v < 0x1p63) || int64_t(v) < range->first ||
        int64_t(v) > range->second)
      return "the number " + value.str() + " is out of range for " +
             runtime::name(dtype);
    return "";
  }
  if (value.intValue() < range->first || value.intValue() > range->second)
    return "the number " + value.str() + " is out of range for " +
           runtime::name(dtype) + " (" + std::to_string(range->first) + ".." +
           std::to_string(range->second) + ")";
  return "";
}

Tensor scalar(Scalar value, const Tensor &like, SourceLoc where) {
  auto c = begin({&like}, where);
  if (!c)
    return {};
  DType dtype = like.dtype();
  if (std::string why = misfit(value, dtype); !why.empty()) {
    c->state->failAt(c->loc, why);
    return {};
  }
  RankedTensorType type = c->state->tensorType({}, dtype);
  Type element = type.getElementType();
  TypedAttr attr;
  if (auto f = dyn_cast<FloatType>(element))
    attr = FloatAttr::get(f, value.doubleValue());
  else if (value.kind() == ScalarKind::Float)
    attr = IntegerAttr::get(element, int64_t(value.doubleValue()));
  else
    attr = IntegerAttr::get(element, value.intValue());
  return c->result(tg::FullOp::create(c->b(), c->loc, type, attr));
}

std::pair<Tensor, Tensor> promote(const Tensor &x, Scalar s, SourceLoc where) {
  if (!x.valid())
    return {};
  DType dtype = runtime::weakResultType(x.dtype(), s.kind());
  Tensor t = dtype == x.dtype() ? x : cast(x, dtype, {}, where);
  return {t, scalar(s, t, where)};
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

template <typename OpTy> static Tensor unary(const Tensor &x, SourceLoc where) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  Value v = c->use(x);
  return c->result(OpTy::create(c->b(), c->loc, v.getType(), v));
}

#define TESSERA_UNARY(name, Op)                                                \
  Tensor name(const Tensor &x, SourceLoc loc) { return unary<tg::Op>(x, loc); }
TESSERA_UNARY(neg, NegOp)
TESSERA_UNARY(abs, AbsOp)
TESSERA_UNARY(exp, ExpOp)
TESSERA_UNARY(log, LogOp)
TESSERA_UNARY(log1p, Log1pOp)
TESSERA_UNARY(sin, SinOp)
TESSERA_UNARY(cos, CosOp)
TESSERA_UNARY(tanh, TanhOp)
TESSERA_UNARY(erf, ErfOp)
TESSERA_UNARY(sigmoid, SigmoidOp)
TESSERA_UNARY(relu, ReluOp)
TESSERA_UNARY(silu, SiluOp)
TESSERA_UNARY(sqrt, SqrtOp)
TESSERA_UNARY(rsqrt, RsqrtOp)
TESSERA_UNARY(reciprocal, ReciprocalOp)
TESSERA_UNARY(square, SquareOp)
TESSERA_UNARY(floor, FloorOp)
TESSERA_UNARY(sign, SignOp)
TESSERA_UNARY(stop_gradient, StopGradientOp)
#undef TESSERA_UNARY

Tensor gelu(const Tensor &x, bool approximate, SourceLoc where) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  Value v = c->use(x);
  return c->result(
      tg::GeluOp::create(c->b(), c->loc, v.getType(), v, approximate));
}

template <typename OpTy>
static Tensor binary(const Tensor &lhs, const Tensor &rhs, SourceLoc where) {
  auto c = begin({&lhs, &rhs}, where);
  if (!c)
    return {};
  Value l = c->use(lhs), r = c->use(rhs);
  return c->result(OpTy::create(c->b(), c->loc, l.getType(), l, r));
}

#define TESSERA_BINARY(name, Op)                                               \
  Tensor name(const Tensor &lhs, const Tensor &rhs, SourceLoc loc) {           \
    return binary<tg::Op>(lhs, rhs, loc);                                      \
  }
TESSERA_BINARY(add, AddOp)
TESSERA_BINARY(sub, SubOp)
TESSERA_BINARY(mul, MulOp)
TESSERA_BINARY(div, DivOp)
TESSERA_BINARY(pow, PowOp)
TESSERA_BINARY(max, MaxOp)
TESSERA_BINARY(min, MinOp)
#undef TESSERA_BINARY

Tensor floor_div(const Tensor &lhs, const Tensor &rhs, SourceLoc where) {
  Tensor q = div(lhs, rhs, where);
  if (!q.valid() || runtime::isFloat(q.dtype()))
    return q.valid() ? floor(q, where) : q;
  // Truncated: one less where the division is inexact and the signs differ.
  Tensor zero = scalar(0, q, where);
  Tensor inexact = compare(mul(q, rhs, where), lhs, "ne", where);
  Tensor negative = compare(compare(lhs, zero, "lt", where),
                            compare(rhs, zero, "lt", where), "ne", where);
  Tensor lower = sub(q, scalar(1, q, where), where);
  return select(inexact, select(negative, lower, q, where), q, where);
}

Tensor compare(const Tensor &lhs, const Tensor &rhs,
               const std::string &direction, SourceLoc where) {
  auto c = begin({&lhs, &rhs}, where);
  if (!c)
    return {};
  auto dir = tg::symbolizeCompareDirection(direction);
  if (!dir) {
    c->state->failAt(c->loc, "compare direction must be one of eq, ne, lt, "
                             "le, gt, ge; got '" +
                                 direction + "'");
    return {};
  }
  Value l = c->use(lhs), r = c->use(rhs);
  Type pred = RankedTensorType::get({}, IntegerType::get(c->ctx(), 1));
  return c->result(tg::CompareOp::create(c->b(), c->loc, pred, *dir, l, r));
}

Tensor select(const Tensor &cond, const Tensor &onTrue, const Tensor &onFalse,
              SourceLoc where) {
  auto c = begin({&cond, &onTrue, &onFalse}, where);
  if (!c)
    return {};
  Value p = c->use(cond), t = c->use(onTrue), f = c->use(onFalse);
  return c->result(tg::SelectOp::create(c->b(), c->loc, t.getType(), p, t, f));
}

Tensor cast(const Tensor &x, DType dtype, const Policy &policy,
            SourceLoc where) {
  auto c = begin({&x}, where);
  if (!c)
    return {};
  Value v = c->use(x);
  auto type = llvm::cast<RankedTensorType>(v.getType())
                  .clone(detail::elementType(c->ctx(), dtype));
  return c->result(
      tg::CastOp::create(c->b(), c->loc, type, v, c->policy(policy)), {type});
}

} // namespace tessera::op

//===----------------------------------------------------------------------===//
// Operators
//===----------------------------------------------------------------------===//

namespace tessera {

Tensor operator+(const Tensor &a, const Tensor &b) { return op::add(a, b, {}); }
Tensor operator-(const Tensor &a, const Tensor &b) { return op::sub(a, b, {}); }
Tensor operator*(const Tensor &a, const Tensor &b) { return op::mul(a, b, {}); }
Tensor operator/(const Tensor &a, const Tensor &b) { return op::div(a, b, {}); }
Tensor operator-(const Tensor &a) { return op::neg(a, {}); }

std::string Scalar::str() const {
  if (k == ScalarKind::Bool)
    return i ? "true" : "false";
  if (k == ScalarKind::Int)
    return std::to_string(i);
  std::ostringstream os;
  os << d;
  return os.str();
}

#define TESSERA_SCALAR_OPERATOR(sym)                                           \
  Tensor operator sym(const Tensor &a, Scalar b) {                             \
    auto [t, s] = op::promote(a, b, {});                                       \
    return t sym s;                                                            \
  }                                                                            \
  Tensor operator sym(Scalar a, const Tensor &b) {                             \
    auto [t, s] = op::promote(b, a, {});                                       \
    return s sym t;                                                            \
  }
TESSERA_SCALAR_OPERATOR(+)
TESSERA_SCALAR_OPERATOR(-)
TESSERA_SCALAR_OPERATOR(*)
TESSERA_SCALAR_OPERATOR(/)
#undef TESSERA_SCALAR_OPERATOR

} // namespace tessera
