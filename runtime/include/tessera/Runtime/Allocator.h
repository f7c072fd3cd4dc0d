//===- Allocator.h - Host memory for compiled code --------------*- C++ -*-===//
//
// Part of the Tessera runtime: no MLIR or LLVM types in this header.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_ALLOCATOR_H
#define TESSERA_RUNTIME_ALLOCATOR_H

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace tessera::runtime {

/// Counters of a CachingAllocator.
/// Blocks a thread freed and keeps for its next allocations (at most 8 per
/// thread, up to 4 MiB each) stay counted as in use: that way the
/// per-thread fast path touches no shared counter.
struct AllocatorStats {
  /// Held by live allocations and the threads' kept blocks (rounded sizes).
  std::size_t bytesInUse = 0;
  std::size_t peakBytesInUse = 0;
  std::size_t bytesCached = 0; ///< freed to the shared bins, kept for reuse
  /// Blocks taken from the shared bins or the system.
  std::uint64_t allocations = 0;
  /// Of those, the ones the shared bins supplied.
  std::uint64_t cacheHits = 0;
};

/// Host memory for buffers: blocks are 64-byte aligned and, once freed,
/// kept in size classes for the next allocation of a similar size, so a
/// function called in a loop does not go back to the OS (and take page
/// faults) for its temporaries on every call. Sizes round up to one of
/// four classes per power of two (at most 25% slack). Each thread keeps a
/// few freed blocks of its own, so per-iteration temporaries of parallel
/// loops take no lock. Thread safe.
class CachingAllocator {
public:
  explicit CachingAllocator(std::size_t cacheLimitBytes = std::size_t(1) << 30);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator &) = delete;
  CachingAllocator &operator=(const CachingAllocator &) = delete;

  /// `bytes` of memory aligned to `alignment` (a power of two; 64 when
  /// smaller). Never null: a failed allocation raises an error of the call
  /// in progress (see Errors.h).
  void *allocate(std::size_t bytes, std::size_t alignment = 64);
  /// Returns a block from allocate(); null is ignored. A pointer this
  /// allocator did not hand out is reported on stderr and left alone.
  void deallocate(void *pointer);
  /// Whether `pointer` is a live block of this allocator. `pointer` must be
  /// a block of this allocator or point at least 64 bytes into readable
  /// memory (any argument array or constant qualifies).
  bool owns(const void *pointer) const;
  /// Gives every cached block back to the OS.
  void releaseCached();

  AllocatorStats stats() const;
  /// Starts a new peak measurement at the current use.
  void resetPeak();
  /// With exact accounting, freed blocks skip the per-thread caches, so
  /// bytesInUse and the peak count live allocations only (for measuring
  /// memory, at the price of the shared lock on every allocation). Turning
  /// it on hands the calling thread's kept blocks back; other threads'
  /// blocks go back as they free their next ones.
  void setExactAccounting(bool on);

  /// The allocator compiled code uses.
  static CachingAllocator &global();

  /// Internal: a thread's cache hands its blocks back when the thread ends.
  void returnToShared(void *pointer);

private:
  static std::size_t roundUp(std::size_t bytes);
  void trimTo(std::size_t limit);
  void *fromShared(std::size_t size, std::size_t alignment);
  void countIn(std::size_t size);

  mutable std::mutex mutex;
  // (size class, alignment) -> cached blocks (user pointers)
  std::map<std::pair<std::size_t, std::size_t>, std::vector<void *>> cached;
  std::size_t cacheLimit;
  AllocatorStats counters; // under `mutex`, except bytesInUse/peak below
  std::atomic<std::size_t> inUse{0}, peak{0};
  std::atomic<bool> exact{false};
  std::atomic<std::uint64_t> allocationCount{0}, hitCount{0};
};

/// Whether TESSERA_POISON_ALLOCATIONS is set (to anything but 0): every
/// block compiled code allocates, and every device buffer, then starts
/// out as 0xFF bytes (NaN in every float type, -1 in integers), so that
/// memory read before it is written shows up in the results (the tests
/// run this way).
bool poisonAllocations();

} // namespace tessera::runtime

/// The memory functions compiled code calls (the names MLIR's memref
/// lowering emits with generic allocation functions).
extern "C" {
void *_mlir_memref_to_llvm_alloc(std::size_t size);
void *_mlir_memref_to_llvm_aligned_alloc(std::size_t alignment,
                                         std::size_t size);
void _mlir_memref_to_llvm_free(void *pointer);
/// Copies between two strided memrefs of one shape (the function MLIR's
/// memref.copy lowering calls for non-contiguous layouts); the arguments
/// are unranked memref descriptors.
void memrefCopy(std::int64_t elementSize, void *source, void *destination);
}

#endif // TESSERA_RUNTIME_ALLOCATOR_H
