//===- Internal.h - Pieces shared inside the runtime ------------*- C++ -*-===//

#ifndef TESSERA_RUNTIME_LIB_INTERNAL_H
#define TESSERA_RUNTIME_LIB_INTERNAL_H

#include <cstddef>
#include <cstdint>
#include <memory>

namespace tessera::runtime::detail {

/// Copies `rank`-dimensional data of `sizes` between two strided layouts
/// (strides in elements); innermost runs contiguous on both sides go
/// through memcpy.
void copyStrided(std::size_t elementBytes, int64_t rank, const int64_t *sizes,
                 const char *source, const int64_t *sourceStrides,
                 char *destination, const int64_t *destinationStrides);

/// Ownership of a block of the global caching allocator: it goes back to
/// the allocator when the last owner lets go.
std::shared_ptr<void> adoptBlock(void *block);

} // namespace tessera::runtime::detail

#endif // TESSERA_RUNTIME_LIB_INTERNAL_H
