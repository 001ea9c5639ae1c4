// Programmatic dependent launch (sm_90+), the one place for it: a kernel launched with the attribute
// cudaLaunchAttributeProgrammaticStreamSerialization may start before the launch ahead of it on the stream has ended.
// Its blocks become resident once every block of that launch has called pdl_launch_dependents() or exited, and
// pdl_wait_primary() holds a thread until that launch has completed and its writes are visible. A dependent must
// call pdl_wait_primary() before it touches anything the launch ahead of it writes or reads. Both calls are no-ops
// where the kernel was launched in stream order (no attribute, or nothing ahead) and compile to nothing for code
// below sm_90, whose PTX has no griddepcontrol (programmatic_launch_ok(), common/tile_order.h, says where the
// attribute may be set). Users: the portable forward's tail launch, the decode combine, flash-sm90's backward probe
// FB_SM90_BWD_LAUNCHES=pdl.
#pragma once

#include <cstddef>
#include <utility>

#include <cuda_runtime.h>

#include "common/check.h"

namespace fb::cuda {

__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_wait_primary() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// `kernel` on `stream` with `grid` blocks of `threads`, `smem` bytes of dynamic shared memory: a programmatic
// dependent of the launch ahead of it where `dependent`, else an ordinary launch. Checked.
template <typename... Params, typename... Args>
void launch_kernel(void (*kernel)(Params...), dim3 grid, int threads, std::size_t smem, cudaStream_t stream,
                   bool dependent, Args&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = dim3(unsigned(threads));
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = dependent ? 1 : 0;
  FB_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
  FB_CUDA_CHECK_LAUNCH();
}

}  // namespace fb::cuda
