// What the current CUDA device offers, for the kernels' unsupported() checks (host only).
#pragma once

#include <optional>

#include <cuda_runtime.h>

namespace fb::cuda {

struct DeviceCaps {
  int device = 0;
  int major = 0, minor = 0;  // compute capability
  int smem_optin = 0;        // bytes of shared memory a block may opt in to
  int l2_bytes = 0;          // L2 cache size
  int sm_count = 0;          // streaming multiprocessors
};

// nullopt where no device answers; the failed query is cleared so that it does not surface as the
// next launch's error.
inline std::optional<DeviceCaps> current_device_caps() {
  DeviceCaps c;
  if (cudaGetDevice(&c.device) != cudaSuccess ||
      cudaDeviceGetAttribute(&c.major, cudaDevAttrComputeCapabilityMajor, c.device) != cudaSuccess ||
      cudaDeviceGetAttribute(&c.minor, cudaDevAttrComputeCapabilityMinor, c.device) != cudaSuccess ||
      cudaDeviceGetAttribute(&c.smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, c.device) !=
          cudaSuccess ||
      cudaDeviceGetAttribute(&c.l2_bytes, cudaDevAttrL2CacheSize, c.device) != cudaSuccess ||
      cudaDeviceGetAttribute(&c.sm_count, cudaDevAttrMultiProcessorCount, c.device) != cudaSuccess) {
    (void)cudaGetLastError();
    return std::nullopt;
  }
  return c;
}

}  // namespace fb::cuda
