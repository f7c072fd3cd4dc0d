//===- Runtime.h - The Tessera runtime --------------------------*- C++ -*-===//
//
// Everything an application needs to run compiled Tessera code: devices,
// host buffers, executables and their functions, errors as values. No MLIR
// or LLVM types appear in these headers.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_RUNTIME_H
#define TESSERA_RUNTIME_RUNTIME_H

#include "tessera/Runtime/Allocator.h"
#include "tessera/Runtime/Buffer.h"
#include "tessera/Runtime/CompileCache.h"
#include "tessera/Runtime/DType.h"
#include "tessera/Runtime/Device.h"
#include "tessera/Runtime/Executable.h"
#include "tessera/Runtime/Result.h"
#include "tessera/Runtime/Signature.h"

#endif // TESSERA_RUNTIME_RUNTIME_H
