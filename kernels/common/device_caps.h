// What the current CUDA device offers, for the kernels' unsupported() checks (host only).
#pragma once

#include <optional>

#include <cuda_runtime.h>

#include "common/check.h"

namespace fb::cuda {

struct DeviceCaps {
  int device = 0;
  int major = 0, minor = 0;  // compute capability
  int smem_optin = 0;        // bytes of shared memory a block may opt in to
  int l2_bytes = 0;          // L2 cache size
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
      cudaDeviceGetAttribute(&c.l2_bytes, cudaDevAttrL2CacheSize, c.device) != cudaSuccess) {
    (void)cudaGetLastError();
    return std::nullopt;
  }
  return c;
}

// SMs of the current device, for launchers that size their grids by it (two cheap queries, not the
// whole DeviceCaps: unsupported() has already vetted the device).
inline int current_sm_count() {
  int device = 0, sms = 0;
  FB_CUDA_CHECK(cudaGetDevice(&device));
  FB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

}  // namespace fb::cuda
