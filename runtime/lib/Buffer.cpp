//===- Buffer.cpp - Dense host buffers ------------------------------------===//

#include "tessera/Runtime/Buffer.h"

#include "tessera/Runtime/Allocator.h"

#include "Internal.h"

#include <cstring>
#include <limits>

using namespace tessera::runtime;

std::string tessera::runtime::describe(DType type,
                                       const std::vector<int64_t> &shape) {
  std::string text = std::string(name(type)) + "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

Result<int64_t>
tessera::runtime::elementCount(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return Error{"a buffer shape has a negative dim " + std::to_string(d)};
    if (d && n > std::numeric_limits<int64_t>::max() / 8 / d)
      return Error{"a buffer of shape " + describe(DType::i8, shape) +
                   " has more elements than memory can address"};
    n *= d;
  }
  return n;
}

/// Memory of the global caching allocator, freed when the last buffer
/// using it goes away.
static std::shared_ptr<void> allocateStorage(std::size_t bytes) {
  return detail::adoptBlock(
      CachingAllocator::global().allocate(bytes ? bytes : 1));
}

Result<HostBuffer> HostBuffer::allocate(DType type,
                                        std::vector<int64_t> shape) {
  auto n = elementCount(shape);
  if (!n)
    return n.error();
  std::shared_ptr<void> storage =
      allocateStorage(*n * tessera::runtime::byteSize(type));
  void *pointer = storage.get();
  return HostBuffer(type, std::move(shape), std::move(storage), pointer);
}

Result<HostBuffer> HostBuffer::zeros(DType type, std::vector<int64_t> shape) {
  auto buffer = allocate(type, std::move(shape));
  if (buffer)
    std::memset(buffer->data(), 0, buffer->byteSize());
  return buffer;
}

Result<HostBuffer> HostBuffer::wrap(DType type, std::vector<int64_t> shape,
                                    void *data, std::shared_ptr<void> owner) {
  auto n = elementCount(shape);
  if (!n)
    return n.error();
  if (!data && *n)
    return Error{"HostBuffer::wrap: null data for a buffer of " +
                 tessera::runtime::describe(type, shape)};
  return HostBuffer(type, std::move(shape), std::move(owner), data);
}

int64_t HostBuffer::numElements() const {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

std::size_t HostBuffer::byteSize() const {
  return std::size_t(numElements()) * tessera::runtime::byteSize(type);
}

Result<HostBuffer> HostBuffer::clone() const {
  auto copy = allocate(type, dims);
  if (copy && byteSize())
    std::memcpy(copy->data(), pointer, byteSize());
  return copy;
}

std::string HostBuffer::describe() const {
  return tessera::runtime::describe(type, dims);
}
