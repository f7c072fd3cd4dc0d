//===- HostArray.h - Host arrays for tessera-run ----------------*- C++ -*-===//
//
// Dense row-major host arrays with the element types tessera-run exchanges
// (f64, f32, i64, i32, i8, i1), their .npy files, seeded random fills, and
// the memref descriptors the JIT-compiled code takes and returns.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_TOOLS_TESSERA_RUN_HOSTARRAY_H
#define TESSERA_TOOLS_TESSERA_RUN_HOSTARRAY_H

#include "tessera/Dialect/TGraph/IR/TGraph.h"

#include <random>
#include <string>
#include <vector>

namespace mlir::tessera::run {

/// The words of one memref descriptor: allocated and aligned pointers,
/// offset, sizes, strides.
class Descriptor {
public:
  Descriptor(void *data, llvm::ArrayRef<int64_t> shape);
  void *data() { return words.data(); }

private:
  std::vector<int64_t> words;
};

class HostArray {
public:
  /// Loads `path` as argument `index` of type `type` (a ranked tensor);
  /// reports a wrong dtype, rank or static dim, a short or corrupt file.
  static mlir::FailureOr<HostArray> load(const std::string &path,
                                         mlir::Type type, size_t index);
  /// A seeded uniform fill ([-1, 1) for floats, [0, 8) for integers, fair
  /// coins for i1) of argument `index`, sized by `dims` for symbolic dims.
  static mlir::FailureOr<HostArray> random(mlir::Type type,
                                           const llvm::StringMap<int64_t> &dims,
                                           std::mt19937_64 &rng, size_t index);
  /// Copies a result out of a (possibly strided) memref descriptor.
  static HostArray fromDescriptor(mlir::Type element, const int64_t *words,
                                  unsigned rank);

  mlir::LogicalResult save(const std::string &path) const;
  /// One line: dtype, shape, min/max/mean of the finite values, the count
  /// of non-finite ones and the first few values.
  std::string summary() const;
  Descriptor descriptor() { return Descriptor(bytes.data(), shape); }
  const std::vector<int64_t> &getShape() const { return shape; }
  const char *begin() const { return bytes.data(); }
  const char *end() const { return bytes.data() + bytes.size(); }

private:
  mlir::Type element;
  std::vector<int64_t> shape;
  std::vector<char> bytes;
};

/// Storage for the results of a call (a struct of memref descriptors).
class ResultBuffer {
public:
  explicit ResultBuffer(mlir::TypeRange types);
  void *data() { return words.data(); }
  /// Copies the results out (unless `copy` is false) and frees the buffers
  /// the callee allocated (never memory that belongs to `inputs` or to
  /// constants).
  std::vector<HostArray> take(llvm::ArrayRef<HostArray> inputs,
                              bool copy = true);

private:
  std::vector<mlir::RankedTensorType> types;
  std::vector<int64_t> words;
};

/// The signature as the compiled code sees it: a random key is a
/// tensor<2xi32> (its two Philox words).
mlir::FunctionType runtimeSignature(mlir::FunctionType type);
/// Every argument and result must be a ranked tensor of a supported type.
mlir::LogicalResult checkSignature(mlir::FunctionType type);
/// Loaded arguments must bind each symbol to one size and match '?'-free
/// static dims.
mlir::LogicalResult checkBindings(llvm::ArrayRef<HostArray> args,
                                  mlir::FunctionType type);

} // namespace mlir::tessera::run

#endif // TESSERA_TOOLS_TESSERA_RUN_HOSTARRAY_H
