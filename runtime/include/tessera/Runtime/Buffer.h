//===- Buffer.h - Dense host buffers ----------------------------*- C++ -*-===//
//
// Part of the Tessera runtime: no MLIR or LLVM types in this header.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_BUFFER_H
#define TESSERA_RUNTIME_BUFFER_H

#include "tessera/Runtime/DType.h"
#include "tessera/Runtime/Result.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tessera::runtime {

/// A dense, row-major array in host memory. Copies share the memory (like
/// a shared_ptr); clone() copies the elements. Memory comes from the
/// caching allocator (64-byte aligned) or from the caller (wrap()).
class HostBuffer {
public:
  HostBuffer() = default;

  /// Uninitialized memory for `shape` elements of `type`.
  static Result<HostBuffer> allocate(DType type, std::vector<int64_t> shape);
  /// Zero-filled memory.
  static Result<HostBuffer> zeros(DType type, std::vector<int64_t> shape);
  /// Memory the caller owns (it must outlive every copy of the buffer);
  /// `owner`, if given, is kept alive by the buffer instead.
  static Result<HostBuffer> wrap(DType type, std::vector<int64_t> shape,
                                 void *data,
                                 std::shared_ptr<void> owner = nullptr);
  /// Reads a C-order .npy file. 16- and 8-bit floats are stored as uint16
  /// and uint8 bit patterns, so `type` says which format such a file holds
  /// (and, when given, must match the file's dtype).
  static Result<HostBuffer> loadNpy(const std::string &path,
                                    std::optional<DType> type = std::nullopt);
  /// Writes a .npy file (16- and 8-bit floats as their bit patterns).
  Status saveNpy(const std::string &path) const;

  DType dtype() const { return type; }
  const std::vector<int64_t> &shape() const { return dims; }
  int64_t rank() const { return int64_t(dims.size()); }
  int64_t numElements() const;
  std::size_t byteSize() const;
  void *data() { return pointer; }
  const void *data() const { return pointer; }
  template <typename T> T *as() { return static_cast<T *>(pointer); }
  template <typename T> const T *as() const {
    return static_cast<const T *>(pointer);
  }
  /// A buffer with its own copy of the elements.
  Result<HostBuffer> clone() const;
  /// "f32[4, 64]".
  std::string describe() const;

private:
  HostBuffer(DType type, std::vector<int64_t> shape,
             std::shared_ptr<void> storage, void *pointer)
      : type(type), dims(std::move(shape)), storage(std::move(storage)),
        pointer(pointer) {}
  friend class Function;

  DType type = DType::f32;
  std::vector<int64_t> dims;
  std::shared_ptr<void> storage;
  void *pointer = nullptr;
};

/// "f32[4, 64]" for a dtype and a shape.
std::string describe(DType type, const std::vector<int64_t> &shape);
/// The element count of `shape`, or an error when a dim is negative or the
/// count overflows.
Result<int64_t> elementCount(const std::vector<int64_t> &shape);

} // namespace tessera::runtime

#endif // TESSERA_RUNTIME_BUFFER_H
