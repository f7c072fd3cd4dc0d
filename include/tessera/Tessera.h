//===- Tessera.h - The C++ modeling API -------------------------*- C++ -*-===//
//
// One include for C++ users: traced tensors and their ops, modules with
// autodiff transforms and compilation, and the runtime that runs the
// compiled functions on host buffers.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_TESSERA_H
#define TESSERA_TESSERA_H

#include "tessera/API/Module.h"
#include "tessera/API/NN.h"
#include "tessera/API/Ops.h"
#include "tessera/API/Tensor.h"
#include "tessera/Runtime/Buffer.h"
#include "tessera/Runtime/Executable.h"
#include "tessera/Runtime/Runtime.h"

#endif // TESSERA_TESSERA_H
