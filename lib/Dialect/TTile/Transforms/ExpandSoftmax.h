//===- ExpandSoftmax.h - The online-softmax ops as tile ops ---------------===//

#ifndef TESSERA_DIALECT_TTILE_TRANSFORMS_EXPANDSOFTMAX_H
#define TESSERA_DIALECT_TTILE_TRANSFORMS_EXPANDSOFTMAX_H

#include "mlir/IR/PatternMatch.h"

namespace mlir::tessera::ttile {

/// Patterns that rewrite `ttile.softmax_online` and
/// `ttile.softmax_accumulate` into reductions, broadcasts, elementwise ops
/// and a dot (a pair that forms one FlashAttention step as one).
void populateSoftmaxExpansionPatterns(RewritePatternSet &patterns);

} // namespace mlir::tessera::ttile

#endif // TESSERA_DIALECT_TTILE_TRANSFORMS_EXPANDSOFTMAX_H
