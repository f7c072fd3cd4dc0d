//===- CudaDriver.h - The CUDA driver inside the runtime -------*- C++ -*-===//
//
// The driver's functions (looked up in libcuda.so.1 at first use), its
// errors as Tessera errors, and the primary contexts: what the runtime's
// CUDA files share.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_LIB_CUDADRIVER_H
#define TESSERA_RUNTIME_LIB_CUDADRIVER_H

#include "tessera/Runtime/Cuda.h"

#include <cuda.h>

#include <array>
#include <string>
#include <vector>

namespace tessera::runtime::cuda::detail {

/// The driver entry points the runtime calls (null where the driver lacks
/// an optional one).
struct Driver {
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuGetErrorName) getErrorName = nullptr;
  decltype(&::cuGetErrorString) getErrorString = nullptr;
  decltype(&::cuDeviceGetCount) deviceGetCount = nullptr;
  decltype(&::cuDeviceGet) deviceGet = nullptr;
  decltype(&::cuDeviceGetName) deviceGetName = nullptr;
  decltype(&::cuDeviceGetAttribute) deviceGetAttribute = nullptr;
  decltype(&::cuDeviceTotalMem) deviceTotalMem = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primaryCtxRetain = nullptr;
  decltype(&::cuCtxSetCurrent) ctxSetCurrent = nullptr;
  decltype(&::cuCtxSynchronize) ctxSynchronize = nullptr;
  decltype(&::cuMemAlloc) memAlloc = nullptr;
  decltype(&::cuMemFree) memFree = nullptr;
  decltype(&::cuMemcpyHtoDAsync) memcpyHtoDAsync = nullptr;
  decltype(&::cuMemcpyDtoHAsync) memcpyDtoHAsync = nullptr;
  decltype(&::cuMemcpyDtoDAsync) memcpyDtoDAsync = nullptr;
  decltype(&::cuMemsetD8Async) memsetD8Async = nullptr;
  decltype(&::cuStreamCreate) streamCreate = nullptr;
  decltype(&::cuStreamDestroy) streamDestroy = nullptr;
  decltype(&::cuStreamSynchronize) streamSynchronize = nullptr;
  decltype(&::cuEventCreate) eventCreate = nullptr;
  decltype(&::cuEventDestroy) eventDestroy = nullptr;
  decltype(&::cuEventRecord) eventRecord = nullptr;
  decltype(&::cuEventSynchronize) eventSynchronize = nullptr;
  decltype(&::cuEventElapsedTime) eventElapsedTime = nullptr;
  decltype(&::cuModuleLoadDataEx) moduleLoadDataEx = nullptr;
  decltype(&::cuModuleUnload) moduleUnload = nullptr;
  decltype(&::cuModuleGetFunction) moduleGetFunction = nullptr;
  decltype(&::cuModuleGetGlobal) moduleGetGlobal = nullptr;
  decltype(&::cuMemcpyDtoH) memcpyDtoH = nullptr;
  decltype(&::cuLaunchKernel) launchKernel = nullptr;
  decltype(&::cuFuncSetAttribute) funcSetAttribute = nullptr;
  /// Optional: launches of kernels run in clusters (CUDA 12 drivers).
  decltype(&::cuLaunchKernelEx) launchKernelEx = nullptr;
  /// Optional (CUDA 12 drivers): without it, TMA kernels copy with cp.async.
  decltype(&::cuTensorMapEncodeTiled) tensorMapEncodeTiled = nullptr;
  /// Optional: CUDA graphs, for replayed host programs (null where any
  /// one is missing).
  decltype(&::cuGraphCreate) graphCreate = nullptr;
  decltype(&::cuGraphDestroy) graphDestroy = nullptr;
  decltype(&::cuGraphAddKernelNode) graphAddKernelNode = nullptr;
  decltype(&::cuGraphAddMemcpyNode) graphAddMemcpyNode = nullptr;
  decltype(&::cuGraphKernelNodeSetAttribute) graphKernelNodeSetAttribute =
      nullptr;
  decltype(&::cuGraphInstantiate) graphInstantiate = nullptr;
  decltype(&::cuGraphExecDestroy) graphExecDestroy = nullptr;
  decltype(&::cuGraphLaunch) graphLaunch = nullptr;
  decltype(&::cuGraphExecKernelNodeSetParams) graphExecKernelNodeSetParams =
      nullptr;
  decltype(&::cuGraphExecMemcpyNodeSetParams) graphExecMemcpyNodeSetParams =
      nullptr;
  bool hasGraphs() const { return graphExecMemcpyNodeSetParams != nullptr; }

  std::string failure; // why the driver cannot be used
  int devices = 0;
  std::vector<CUcontext> contexts;
};

/// The driver, loaded and initialized once.
const Driver &driver();

/// A Tessera error for a failed driver call: `what`, then the driver's
/// name and text of `r`.
Error cudaError(const std::string &what, CUresult r);

/// The grid, block and dynamic shared memory of a launch, written into
/// a driver launch struct (CUlaunchConfig, CUDA_KERNEL_NODE_PARAMS).
template <class LaunchParams>
void setLaunchShape(LaunchParams &p, const std::array<unsigned, 3> &grid,
                    const std::array<unsigned, 3> &block, unsigned shared) {
  p.gridDimX = grid[0];
  p.gridDimY = grid[1];
  p.gridDimZ = grid[2];
  p.blockDimX = block[0];
  p.blockDimY = block[1];
  p.blockDimZ = block[2];
  p.sharedMemBytes = shared;
}

/// The launch attribute value of clusters of `size` programs along x.
inline CUlaunchAttributeValue clusterDimension(unsigned size) {
  CUlaunchAttributeValue v = {};
  v.clusterDim.x = size;
  v.clusterDim.y = 1;
  v.clusterDim.z = 1;
  return v;
}

/// Makes `device`'s primary context current on this thread.
Status enter(int device);

/// The driver's handle of `s` (null: the default stream).
inline CUstream streamOf(Stream *s) {
  return s ? static_cast<CUstream>(s->handle()) : nullptr;
}

} // namespace tessera::runtime::cuda::detail

/// Returns the error of a failed driver call from the enclosing function.
#define TESSERA_CU(call, what)                                                 \
  do {                                                                         \
    CUresult tesseraResult = (call);                                           \
    if (tesseraResult != CUDA_SUCCESS)                                         \
      return ::tessera::runtime::cuda::detail::cudaError(what, tesseraResult); \
  } while (false)

#define TESSERA_ENTER(device)                                                  \
  do {                                                                         \
    ::tessera::runtime::Status tesseraEntered =                                \
        ::tessera::runtime::cuda::detail::enter(device);                       \
    if (!tesseraEntered)                                                       \
      return tesseraEntered.error();                                           \
  } while (false)

#endif // TESSERA_RUNTIME_LIB_CUDADRIVER_H
