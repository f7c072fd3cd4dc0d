//===- RandomOps.cpp - Stateless random numbers ---------------------------===//

#include "OpBuilder.h"

using namespace mlir;
namespace tg = mlir::tessera::tgraph;
using ::tessera::detail::begin;

namespace tessera::op {

/// Starts an op on a key operand.
static std::optional<detail::OpContext> beginKeyed(const Tensor &key,
                                                   SourceLoc where) {
  auto c = begin({&key}, where);
  if (c && !key.isKey()) {
    c->state->failAt(c->loc, "expected a random key (from rng_key or "
                             "rng_split), got " +
                                 key.str());
    return std::nullopt;
  }
  return c;
}

Tensor rng_key(int64_t seed, SourceLoc where) {
  detail::ModuleState *s = detail::activeState;
  if (!s)
    return {};
  Location loc = s->location(where);
  if (!s->ready({}))
    return {};
  return s->result(tg::RngKeyOp::create(
      s->builder(), loc, tg::KeyType::get(s->getContext()), uint64_t(seed)));
}

std::vector<Tensor> rng_split(const Tensor &key, int64_t count,
                              SourceLoc where) {
  auto c = beginKeyed(key, where);
  if (!c)
    return {};
  if (count < 1) {
    c->state->failAt(c->loc, "rng_split needs a count >= 1, got " +
                                 std::to_string(count));
    return {};
  }
  SmallVector<Type> types(count, tg::KeyType::get(c->ctx()));
  auto op = tg::RngSplitOp::create(c->b(), c->loc, types, c->use(key));
  if (!c->state->finish(op))
    return {};
  std::vector<Tensor> out;
  for (Value k : op.getKeys())
    out.push_back(c->state->wrap(k));
  return out;
}

Tensor rng_fold_in(const Tensor &key, const Tensor &data, SourceLoc where) {
  auto c = begin({&key, &data}, where);
  if (!c)
    return {};
  Value k = c->use(key), d = c->use(data);
  return c->result(tg::RngFoldInOp::create(c->b(), c->loc,
                                           tg::KeyType::get(c->ctx()), k, d));
}

template <typename OpTy>
static Tensor sample(const Tensor &key, const Shape &shape, DType dtype,
                     double a, double b, SourceLoc where) {
  auto c = beginKeyed(key, where);
  if (!c)
    return {};
  RankedTensorType type = c->state->tensorType(shape, dtype);
  if (!type)
    return {};
  return c->result(
      OpTy::create(c->b(), c->loc, type, c->use(key), APFloat(a), APFloat(b)));
}

Tensor rng_uniform(const Tensor &key, const Shape &shape, DType dtype,
                   double low, double high, SourceLoc loc) {
  return sample<tg::RngUniformOp>(key, shape, dtype, low, high, loc);
}

Tensor rng_normal(const Tensor &key, const Shape &shape, DType dtype,
                  double mean, double stddev, SourceLoc loc) {
  return sample<tg::RngNormalOp>(key, shape, dtype, mean, stddev, loc);
}

Tensor rng_bernoulli(const Tensor &key, const Shape &shape, double p,
                     SourceLoc where) {
  auto c = beginKeyed(key, where);
  if (!c)
    return {};
  RankedTensorType type = c->state->tensorType(shape, DType::i1);
  if (!type)
    return {};
  return c->result(tg::RngBernoulliOp::create(c->b(), c->loc, type, c->use(key),
                                              APFloat(p)));
}

} // namespace tessera::op
