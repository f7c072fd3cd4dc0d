//===- StateOps.cpp - Key/value caches ------------------------------------===//

#include "OpBuilder.h"

using namespace mlir;
namespace tg = mlir::tessera::tgraph;
using ::tessera::detail::begin;

namespace tessera::op {

/// Starts an op on a cache operand (and tensors).
static std::optional<detail::OpContext>
beginCache(const Tensor &cache, std::initializer_list<const Tensor *> more,
           SourceLoc where) {
  for (const Tensor *t : more)
    if (!t->valid())
      return std::nullopt;
  auto c = begin({&cache}, where);
  if (c && !cache.isKVCache()) {
    c->state->failAt(c->loc, "expected a kv_cache, got " + cache.str());
    return std::nullopt;
  }
  return c;
}

Tensor kv_cache_create(const Shape &shape, DType dtype,
                       std::optional<int64_t> window, SourceLoc where) {
  detail::ModuleState *s = detail::activeState;
  if (!s)
    return {};
  Location loc = s->location(where);
  if (!s->ready({}))
    return {};
  TensorSpec spec{shape, dtype, "", false, true};
  Type type = s->argumentType(spec);
  if (!type)
    return {};
  IntegerAttr w =
      window ? s->builder().getI64IntegerAttr(*window) : IntegerAttr();
  return s->result(tg::KVCacheCreateOp::create(s->builder(), loc, type, w));
}

bool kv_cache_append(const Tensor &cache, const Tensor &keys,
                     const Tensor &values, SourceLoc where) {
  auto c = beginCache(cache, {&keys, &values}, where);
  if (!c)
    return false;
  Value k = c->use(keys), v = c->use(values);
  return c->state->finish(
      tg::KVCacheAppendOp::create(c->b(), c->loc, c->use(cache), k, v));
}

std::vector<Tensor> kv_cache_read(const Tensor &cache, SourceLoc where) {
  auto c = beginCache(cache, {}, where);
  if (!c)
    return {};
  // Keys and values come back at full capacity, in the cache's dtype.
  auto type = llvm::cast<tg::KVCacheType>(c->use(cache).getType());
  RankedTensorType full = tg::getTensorType(
      ::tessera::shape::TensorShape(type.getShape().getDims()),
      type.getElementType());
  auto length = RankedTensorType::get({}, c->b().getI64Type());
  auto op = tg::KVCacheReadOp::create(c->b(), c->loc, full, full, length,
                                      c->use(cache));
  if (!c->state->finish(op))
    return {};
  std::vector<Tensor> out;
  for (Value r : op->getResults())
    out.push_back(c->state->wrap(r));
  return out;
}

bool kv_cache_prune(const Tensor &cache, int64_t keep, SourceLoc where) {
  auto c = beginCache(cache, {}, where);
  if (!c)
    return false;
  if (keep < 0) {
    c->state->failAt(c->loc, "kv_cache_prune keeps >= 0 positions, got " +
                                 std::to_string(keep));
    return false;
  }
  return c->state->finish(tg::KVCachePruneOp::create(
      c->b(), c->loc, c->use(cache), uint64_t(keep)));
}

} // namespace tessera::op
