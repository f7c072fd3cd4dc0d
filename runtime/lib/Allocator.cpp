//===- Allocator.cpp - Host memory for compiled code ----------------------===//
//
// Each block carries a header just before the pointer handed out: a magic
// word, the size class and the alignment (the header is `alignment` bytes,
// at least 64, so the payload keeps the alignment). Freed blocks go to a
// small per-thread cache first, then to shared size-class bins. The
// per-thread path (a row buffer taken and given back in every iteration of
// a parallel loop) touches no shared counter: blocks in a thread's cache
// count as in use.
//
//===----------------------------------------------------------------------===//

#include "tessera/Runtime/Allocator.h"
#include "tessera/Runtime/Errors.h"

#include "Internal.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

using namespace tessera::runtime;

namespace {

constexpr std::uint64_t kMagic = 0x7e55e7a0b10c4ull;

struct Header {
  std::uint64_t magic;
  std::size_t size; // size class of the payload
  std::size_t alignment;
  CachingAllocator *owner;
};

Header *headerOf(const void *pointer) {
  return reinterpret_cast<Header *>(
      const_cast<char *>(static_cast<const char *>(pointer)) - sizeof(Header));
}

/// A thread's most recently freed blocks.
struct ThreadCache {
  static constexpr int kSlots = 8;
  void *slots[kSlots] = {};
  ~ThreadCache() {
    for (void *&p : slots)
      if (p) {
        headerOf(p)->owner->returnToShared(p);
        p = nullptr;
      }
  }
};

thread_local ThreadCache threadCache;

// Blocks larger than this skip the thread caches.
constexpr std::size_t kThreadCacheMaxBytes = std::size_t(4) << 20;

} // namespace

CachingAllocator::CachingAllocator(std::size_t cacheLimitBytes)
    : cacheLimit(cacheLimitBytes) {}

CachingAllocator::~CachingAllocator() { releaseCached(); }

std::size_t CachingAllocator::roundUp(std::size_t bytes) {
  if (bytes <= 256)
    return (bytes + 63) & ~std::size_t(63);
  // Four classes per power of two: 2^p, 1.25, 1.5, 1.75 times 2^p.
  unsigned p = 63 - __builtin_clzll(bytes);
  std::size_t step = (std::size_t(1) << p) / 4;
  return (bytes + step - 1) / step * step;
}

void CachingAllocator::countIn(std::size_t size) {
  std::size_t now = inUse.fetch_add(size, std::memory_order_relaxed) + size;
  std::size_t seen = peak.load(std::memory_order_relaxed);
  while (now > seen &&
         !peak.compare_exchange_weak(seen, now, std::memory_order_relaxed))
    ;
}

void *CachingAllocator::fromShared(std::size_t size, std::size_t alignment) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cached.find({size, alignment});
  if (it == cached.end() || it->second.empty())
    return nullptr;
  void *p = it->second.back();
  it->second.pop_back();
  counters.bytesCached -= size;
  return p;
}

void *CachingAllocator::allocate(std::size_t bytes, std::size_t alignment) {
  if (alignment < 64)
    alignment = 64;
  if (alignment & (alignment - 1))
    raiseError("memory alignment must be a power of two, but is " +
               std::to_string(alignment));
  std::size_t size = roundUp(bytes ? bytes : 1);
  // The thread's own blocks: no shared state (they count as in use).
  if (size <= kThreadCacheMaxBytes && !exact.load(std::memory_order_relaxed))
    for (void *&slot : threadCache.slots)
      if (slot) {
        Header *h = headerOf(slot);
        if (h->size == size && h->alignment == alignment && h->owner == this) {
          void *p = slot;
          slot = nullptr;
          return p;
        }
      }
  allocationCount.fetch_add(1, std::memory_order_relaxed);
  if (void *p = fromShared(size, alignment)) {
    hitCount.fetch_add(1, std::memory_order_relaxed);
    countIn(size);
    return p;
  }
  void *base = nullptr;
  if (posix_memalign(&base, alignment, size + alignment) != 0) {
    // Retry once with the cache emptied.
    releaseCached();
    if (posix_memalign(&base, alignment, size + alignment) != 0)
      raiseError("out of memory: cannot allocate " + std::to_string(bytes) +
                 " bytes (" + std::to_string(inUse.load()) + " bytes in use)");
  }
  void *p = static_cast<char *>(base) + alignment;
  *headerOf(p) = {kMagic, size, alignment, this};
  countIn(size);
  return p;
}

void CachingAllocator::deallocate(void *pointer) {
  if (!pointer)
    return;
  Header *h = headerOf(pointer);
  if (h->magic != kMagic || h->owner != this) {
    std::fprintf(stderr,
                 "tessera runtime: ignoring free of %p, which the allocator "
                 "did not hand out\n",
                 pointer);
    return;
  }
  if (h->size <= kThreadCacheMaxBytes && !exact.load(std::memory_order_relaxed))
    for (void *&slot : threadCache.slots)
      if (!slot) {
        slot = pointer;
        return;
      }
  returnToShared(pointer);
}

void CachingAllocator::returnToShared(void *pointer) {
  Header *h = headerOf(pointer);
  inUse.fetch_sub(h->size, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mutex);
  cached[{h->size, h->alignment}].push_back(pointer);
  counters.bytesCached += h->size;
  if (counters.bytesCached > cacheLimit)
    trimTo(cacheLimit / 2);
}

void CachingAllocator::setExactAccounting(bool on) {
  exact.store(on, std::memory_order_relaxed);
  if (on)
    for (void *&p : threadCache.slots)
      if (p) {
        void *q = p;
        p = nullptr;
        returnToShared(q);
      }
}

bool CachingAllocator::owns(const void *pointer) const {
  if (!pointer)
    return false;
  const Header *h = headerOf(pointer);
  return h->magic == kMagic && h->owner == this;
}

void CachingAllocator::trimTo(std::size_t limit) {
  // Largest blocks first: they are the ones worth returning.
  for (auto it = cached.rbegin();
       it != cached.rend() && counters.bytesCached > limit; ++it) {
    while (!it->second.empty() && counters.bytesCached > limit) {
      void *p = it->second.back();
      it->second.pop_back();
      Header *h = headerOf(p);
      h->magic = 0;
      std::free(static_cast<char *>(p) - h->alignment);
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
  AllocatorStats s;
  {
    std::lock_guard<std::mutex> lock(mutex);
    s.bytesCached = counters.bytesCached;
  }
  s.bytesInUse = inUse.load();
  s.peakBytesInUse = peak.load();
  s.allocations = allocationCount.load();
  s.cacheHits = hitCount.load();
  return s;
}

void CachingAllocator::resetPeak() { peak.store(inUse.load()); }

CachingAllocator &CachingAllocator::global() {
  // Never destroyed: compiled code may free during static destruction.
  static CachingAllocator *instance = new CachingAllocator();
  return *instance;
}

bool tessera::runtime::poisonAllocations() {
  static const bool poison = [] {
    const char *value = std::getenv("TESSERA_POISON_ALLOCATIONS");
    return value && *value && std::string_view(value) != "0";
  }();
  return poison;
}

namespace {
void *poisoned(void *pointer, std::size_t size) {
  if (pointer && poisonAllocations())
    std::memset(pointer, 0xFF, size);
  return pointer;
}
} // namespace

extern "C" void *_mlir_memref_to_llvm_alloc(std::size_t size) {
  return poisoned(CachingAllocator::global().allocate(size), size);
}

extern "C" void *_mlir_memref_to_llvm_aligned_alloc(std::size_t alignment,
                                                    std::size_t size) {
  return poisoned(CachingAllocator::global().allocate(size, alignment), size);
}

extern "C" void _mlir_memref_to_llvm_free(void *pointer) {
  CachingAllocator::global().deallocate(pointer);
}

namespace {
/// A ranked memref descriptor behind an unranked one: allocated and
/// aligned pointers, offset, then `rank` sizes and `rank` strides.
struct RankedDescriptor {
  void *allocated;
  char *aligned;
  int64_t offset;
  const int64_t *sizesAndStrides() const {
    return reinterpret_cast<const int64_t *>(this + 1);
  }
};
struct UnrankedDescriptor {
  int64_t rank;
  RankedDescriptor *ranked;
};
} // namespace

void tessera::runtime::detail::copyStrided(std::size_t elementBytes,
                                           int64_t rank, const int64_t *sizes,
                                           const char *source,
                                           const int64_t *sourceStrides,
                                           char *destination,
                                           const int64_t *destinationStrides) {
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d)
    count *= sizes[d];
  if (count == 0)
    return;
  // Innermost runs that are contiguous on both sides go through memcpy.
  int64_t run = 1, d = rank;
  while (d > 0 && sourceStrides[d - 1] == run &&
         destinationStrides[d - 1] == run)
    run *= sizes[--d];
  std::vector<int64_t> index(d, 0);
  for (int64_t done = 0; done < count; done += run) {
    int64_t s = 0, t = 0;
    for (int64_t i = 0; i < d; ++i) {
      s += index[i] * sourceStrides[i];
      t += index[i] * destinationStrides[i];
    }
    std::memcpy(destination + t * elementBytes, source + s * elementBytes,
                run * elementBytes);
    for (int64_t i = d; i-- > 0;) {
      if (++index[i] < sizes[i])
        break;
      index[i] = 0;
    }
  }
}

std::shared_ptr<void> tessera::runtime::detail::adoptBlock(void *block) {
  return std::shared_ptr<void>(
      block, [](void *p) { CachingAllocator::global().deallocate(p); });
}

extern "C" void memrefCopy(int64_t elementSize, void *sourceArg,
                           void *destinationArg) {
  auto *source = static_cast<UnrankedDescriptor *>(sourceArg);
  auto *destination = static_cast<UnrankedDescriptor *>(destinationArg);
  int64_t rank = source->rank;
  const int64_t *sizes = source->ranked->sizesAndStrides();
  tessera::runtime::detail::copyStrided(
      elementSize, rank, sizes,
      source->ranked->aligned + source->ranked->offset * elementSize,
      sizes + rank,
      destination->ranked->aligned + destination->ranked->offset * elementSize,
      destination->ranked->sizesAndStrides() + rank);
}
