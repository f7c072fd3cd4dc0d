//===- Allocator.cpp - Host memory for compiled code ----------------------===//

#include "tessera/Runtime/Allocator.h"
#include "tessera/Runtime/Errors.h"

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace tessera::runtime;

CachingAllocator::CachingAllocator(std::size_t cacheLimitBytes)
    : cacheLimit(cacheLimitBytes) {}

CachingAllocator::~CachingAllocator() {
  releaseCached();
  // Live blocks belong to their owners (results handed to callers).
}

std::size_t CachingAllocator::roundUp(std::size_t bytes) {
  if (bytes <= 256)
    return (bytes + 63) & ~std::size_t(63);
  // Four classes per power of two: 2^p, 1.25, 1.5, 1.75 times 2^p.
  unsigned p = 63 - __builtin_clzll(bytes);
  std::size_t step = (std::size_t(1) << p) / 4;
  return (bytes + step - 1) / step * step;
}

void *CachingAllocator::allocate(std::size_t bytes, std::size_t alignment) {
  if (alignment < 64)
    alignment = 64;
  if (alignment & (alignment - 1))
    raiseError("memory alignment must be a power of two, but is " +
               std::to_string(alignment));
  std::size_t size = roundUp(bytes ? bytes : 1);
  {
    std::lock_guard<std::mutex> lock(mutex);
    ++counters.allocations;
    auto it = cached.find({size, alignment});
    if (it != cached.end() && !it->second.empty()) {
      void *p = it->second.back();
      it->second.pop_back();
      counters.bytesCached -= size;
      ++counters.cacheHits;
      live[p] = {size, alignment};
      counters.bytesInUse += size;
      if (counters.bytesInUse > counters.peakBytesInUse)
        counters.peakBytesInUse = counters.bytesInUse;
      return p;
    }
  }
  void *p = nullptr;
  if (posix_memalign(&p, alignment, size) != 0) {
    // Retry once with the cache emptied.
    releaseCached();
    if (posix_memalign(&p, alignment, size) != 0)
      raiseError("out of memory: cannot allocate " + std::to_string(bytes) +
                 " bytes (" + std::to_string(counters.bytesInUse) +
                 " bytes in use)");
  }
  std::lock_guard<std::mutex> lock(mutex);
  live[p] = {size, alignment};
  counters.bytesInUse += size;
  if (counters.bytesInUse > counters.peakBytesInUse)
    counters.peakBytesInUse = counters.bytesInUse;
  return p;
}

void CachingAllocator::deallocate(void *pointer) {
  if (!pointer)
    return;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = live.find(pointer);
  if (it == live.end()) {
    std::fprintf(stderr,
                 "tessera runtime: ignoring free of %p, which the allocator "
                 "did not hand out\n",
                 pointer);
    return;
  }
  Block block = it->second;
  live.erase(it);
  counters.bytesInUse -= block.size;
  cached[{block.size, block.alignment}].push_back(pointer);
  counters.bytesCached += block.size;
  if (counters.bytesCached > cacheLimit)
    trimTo(cacheLimit / 2);
}

bool CachingAllocator::owns(const void *pointer) const {
  std::lock_guard<std::mutex> lock(mutex);
  return live.count(const_cast<void *>(pointer)) != 0;
}

void CachingAllocator::trimTo(std::size_t limit) {
  // Largest blocks first: they are the ones worth returning.
  for (auto it = cached.rbegin();
       it != cached.rend() && counters.bytesCached > limit; ++it) {
    while (!it->second.empty() && counters.bytesCached > limit) {
      std::free(it->second.back());
      it->second.pop_back();
      counters.bytesCached -= it->first.first;
    }
  }
}

void CachingAllocator::releaseCached() {
  std::lock_guard<std::mutex> lock(mutex);
  trimTo(0);
  cached.clear();
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex);
  return counters;
}

void CachingAllocator::resetPeak() {
  std::lock_guard<std::mutex> lock(mutex);
  counters.peakBytesInUse = counters.bytesInUse;
}

CachingAllocator &CachingAllocator::global() {
  // Never destroyed: compiled code may free during static destruction.
  static CachingAllocator *instance = new CachingAllocator();
  return *instance;
}

extern "C" void *_mlir_memref_to_llvm_alloc(std::size_t size) {
  return CachingAllocator::global().allocate(size);
}

extern "C" void *_mlir_memref_to_llvm_aligned_alloc(std::size_t alignment,
                                                    std::size_t size) {
  return CachingAllocator::global().allocate(size, alignment);
}

extern "C" void _mlir_memref_to_llvm_free(void *pointer) {
  CachingAllocator::global().deallocate(pointer);
}
