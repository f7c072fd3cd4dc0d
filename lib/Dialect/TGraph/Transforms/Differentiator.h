//===- Differentiator.h - The walks of tgraph autodiff ----------*- C++ -*-===//
//
// Private to -tessera-tgraph-autodiff: the class that differentiates a
// function copy in place. Autodiff.cpp has the walks over ops and the
// pass, AutodiffControlFlow.cpp the rules of the ops with regions (cond,
// scan, while, fixed_point/solve, custom rules, checkpoint).
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_TGRAPH_TRANSFORMS_DIFFERENTIATOR_H
#define TESSERA_TGRAPH_TRANSFORMS_DIFFERENTIATOR_H

#include "tessera/Dialect/TGraph/IR/Autodiff.h"
#include "tessera/Dialect/TGraph/IR/TGraph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"

#include <string>

namespace mlir::tessera::tgraph::autodiff {

/// Replaces the return with `values`, sets the function type and erases
/// the ops nothing uses any more (unused collectives included).
void finish(func::FuncOp fn, func::ReturnOp ret, ArrayRef<Value> values);

/// Appends an argument named `name` (for later wrt(...)) to `fn`.
Value addArgument(func::FuncOp fn, Type type, StringRef name);

class Differentiator {
public:
  Differentiator(ModuleOp module, Operation *request)
      : module(module), request(request) {}

  /// A copy of `source` named `name`, placed after it, with calls inlined
  /// and composites expanded.
  FailureOr<func::FuncOp> copy(func::FuncOp source, StringRef name,
                               bool forwardMode);

  /// Reverse mode on `fn` in place: arguments, then seeds (unless the only
  /// result is a scalar), to the cotangents of the `wrt` arguments.
  LogicalResult reverse(func::FuncOp fn, ArrayRef<unsigned> wrt,
                        StringRef source);

  /// Forward mode on `fn` in place: arguments, then one tangent per `wrt`
  /// argument, to the results and then the tangents of the float results.
  LogicalResult forward(func::FuncOp fn, ArrayRef<unsigned> wrt,
                        ArrayRef<std::string> tangentNames, StringRef source);

  //===--------------------------------------------------------------------===//
  // Forward mode
  //===--------------------------------------------------------------------===//

  /// Adds, after each op of `block` that a tangent reaches, the tangents of
  /// its results.
  LogicalResult forwardOps(Block &block, DenseMap<Value, Value> &tangent);

  /// Whether a tangent reaches `op`: through an operand, or through a value
  /// from outside used in its regions.
  static bool reached(Operation *op, const DenseMap<Value, Value> &tangent);

  /// A cond with the tangents as extra results: each branch computes its
  /// values and their tangents.
  LogicalResult forwardCond(CondOp cond, DenseMap<Value, Value> &tangent);

  /// x* = F(x*, p) (fixed_point) or F(x*, p) = 0 (solve): the tangent t of
  /// x* solves t = J_x t + J_p dp, resp. J_x t + J_p dp = 0, itself a
  /// fixed_point / solve over t whose body is the JVP of F at x*.
  template <typename OpTy>
  LogicalResult forwardImplicit(OpTy op, DenseMap<Value, Value> &tangent,
                                bool root);

  //===--------------------------------------------------------------------===//
  // Reverse mode
  //===--------------------------------------------------------------------===//

  /// Backward code for the ops of `block` at `b`'s insertion point: from
  /// the cotangents in `cotangent`, accumulates those of the values the
  /// ops use (block arguments and values from outside). `active` holds the
  /// values that depend on what is differentiated; it grows with the ops'
  /// results.
  LogicalResult reverseOps(Block &block, DenseSet<Value> &active,
                           DenseMap<Value, Value> &cotangent, OpBuilder &b);

  /// The activity marking and backward walk over `ops` (in program order)
  /// that reverseOps and reverseCloned share.
  LogicalResult reverseInOrder(ArrayRef<Operation *> ops, Location loc,
                               DenseSet<Value> &active,
                               DenseMap<Value, Value> &cotangent, OpBuilder &b);

  /// The backward code of one op (its cotangents `cts`) at `b`.
  LogicalResult reverseOp(Operation *op, ArrayRef<Value> cts,
                          DenseSet<Value> &active,
                          DenseMap<Value, Value> &cotangent, OpBuilder &b,
                          ADBuilder &ad);

  /// Whether `op` uses an active value (directly or in its regions).
  static bool reachedBy(Operation *op, const DenseSet<Value> &active);

  /// Active values from outside `op` that its regions use.
  static SmallVector<Value> freeActiveValues(Operation *op,
                                             const DenseSet<Value> &active);

  /// The adjoint of a cond is a cond on the same predicate: each branch
  /// recomputes its values, then runs their backward code, and yields the
  /// cotangents of the active values it uses from outside.
  LogicalResult reverseCond(CondOp cond, ArrayRef<Value> cts,
                            DenseSet<Value> &active,
                            DenseMap<Value, Value> &cotangent, OpBuilder &b);

  /// Implicit differentiation (spec 004 §10). With xbar the cotangent of
  /// x*: fixed_point solves lambda = xbar + J_x^T lambda, solve solves
  /// J_x^T lambda = xbar (each with an op of the same kind, whose body is
  /// the VJP of F at x*); then pbar = J_p^T lambda (times -1 for solve).
  /// The initial value gets no cotangent.
  template <typename OpTy>
  LogicalResult reverseImplicit(OpTy op, Value xbar, DenseSet<Value> &active,
                                DenseMap<Value, Value> &cotangent, OpBuilder &b,
                                bool root);

  /// Forward mode over a region body cloned into `block`: the values it
  /// yields and their tangents (zeros where none reached them).
  LogicalResult forwardBody(Block &from, Block &block, IRMapping &map,
                            DenseMap<Value, Value> &tangent,
                            SmallVectorImpl<Value> &values,
                            SmallVectorImpl<Value> &tangents);

  /// `slice` stacked along a new leading dim of `scan`'s length.
  static Type stacked(ScanOp scan, Type slice);

  /// Forward mode through scan: a scan that also carries the carries'
  /// tangents, takes the tangents of xs as inputs and stacks the tangents
  /// of its outputs.
  LogicalResult forwardScan(ScanOp scan, DenseMap<Value, Value> &tangent);

  /// Reverse mode through scan. The forward scan also stacks the carries
  /// each step starts from; the backward code is a scan in the opposite
  /// direction over those, the xs and the outputs' cotangents, carrying the
  /// carries' cotangents and the cotangents of the outer values the body
  /// uses: each step recomputes its body and runs its backward code.
  LogicalResult reverseScan(ScanOp scan, ArrayRef<Value> cts,
                            DenseSet<Value> &active,
                            DenseMap<Value, Value> &cotangent, OpBuilder &b);

  /// A 0-d i64 constant.
  static Value index(OpBuilder &b, Location loc, int64_t v);

  /// Forward mode through while: the loop also carries the tangents of its
  /// float carries (the condition only sees the values).
  LogicalResult forwardWhile(WhileOp loop, DenseMap<Value, Value> &tangent);

  /// Reverse mode through while, for any number of iterations: the forward
  /// loop also counts its iterations n; the backward loop runs k = n-1 ... 0,
  /// each time recomputing the carry c_k from the initial one (an inner
  /// loop of k body steps) and running the body's backward code at c_k.
  /// Only the initial carry is kept (O(n^2) body evaluations, O(1) carries).
  LogicalResult reverseWhile(WhileOp loop, ArrayRef<Value> cts,
                             DenseSet<Value> &active,
                             DenseMap<Value, Value> &cotangent, OpBuilder &b);

  /// The result types of calling `fn` with `args` (its shape symbols bound).
  FailureOr<SmallVector<Type>> callTypes(Operation *at, StringRef fn,
                                         ValueRange args);

  /// custom_jvp in forward mode: the user's jvp function on the arguments
  /// and their tangents (zeros where there are none).
  LogicalResult forwardCustom(CustomJvpOp op, DenseMap<Value, Value> &tangent);

  /// custom_vjp in reverse mode: the primal call becomes the user's fwd
  /// (results, then residuals); the backward code calls bwd on the
  /// residuals and the results' cotangents (zeros where there are none).
  LogicalResult reverseCustom(CustomVjpOp op, ArrayRef<Value> cts,
                              DenseSet<Value> &active,
                              DenseMap<Value, Value> &cotangent, OpBuilder &b);

  /// checkpoint: the forward pass keeps only the region's operands and
  /// results; the backward code calls a private function that recomputes
  /// the body from the operands and runs its backward code (a function, so
  /// the recomputation is not merged back into the forward pass's copy of
  /// the same ops and their results are not kept alive in between).
  LogicalResult reverseCheckpoint(CheckpointOp op, ArrayRef<Value> cts,
                                  DenseSet<Value> &active,
                                  DenseMap<Value, Value> &cotangent,
                                  OpBuilder &b);

  /// Backward code for the ops that compute `roots` from values in
  /// `active`: those after `after` (all, if null) and before `b`'s
  /// insertion point in its block (earlier values are constants here).
  LogicalResult reverseCloned(ArrayRef<Value> roots, Operation *after,
                              DenseSet<Value> &active,
                              DenseMap<Value, Value> &cotangent, OpBuilder &b);

  /// An op without a rule that writes memory (state) instead of returning
  /// its effect as results.
  static bool writesStateWithoutRule(Operation *op);

  LogicalResult missingRule(Operation *op);

  ModuleOp module;
  Operation *request;
  StringRef sourceName;
};

} // namespace mlir::tessera::tgraph::autodiff

#endif // TESSERA_TGRAPH_TRANSFORMS_DIFFERENTIATOR_H
