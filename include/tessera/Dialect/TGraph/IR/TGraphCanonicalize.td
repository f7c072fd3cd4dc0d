//===- TGraphCanonicalize.td - peephole rewrites ------------*- tablegen -*-===//
//
// Declarative rewrites used by the ops' canonicalizers. Each states its
// algebra; all of them hold for every input (NaN and inf included) and keep
// the result type, so no run-time behaviour changes.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_TGRAPH_CANONICALIZE
#define TESSERA_TGRAPH_CANONICALIZE

include "mlir/IR/PatternBase.td"
include "tessera/Dialect/TGraph/IR/TGraphOps.td"

// cast(cast(x : A -> B) : B -> C) -> cast(x : A -> C) when B holds every
// value of A exactly (a widening float or integer conversion) and neither
// cast has a policy (a rounding policy of the outer cast may not apply to
// A -> C).
def IsExactWidening : Constraint<CPred<
    "::mlir::tessera::tgraph::isExactWidening($0.getType(), $1.getType())">,
    "is an exact widening">;
def NoPolicy : Constraint<CPred<"!$0">, "has no numeric policy">;
def CastOfWideningCast : Pat<
    (TGraph_CastOp:$outer (TGraph_CastOp:$inner $x, $p0), $p1),
    (TGraph_CastOp $x, $p1),
    [(IsExactWidening $x, $inner), (NoPolicy $p0), (NoPolicy $p1)]>;

#endif // TESSERA_TGRAPH_CANONICALIZE
