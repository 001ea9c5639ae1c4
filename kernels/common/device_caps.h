// What the current CUDA device offers, for the kernels' unsupported() checks (host only).
#pragma once

#include <algorithm>
#include <cstdint>
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

// SMs of the current device, or 0 where no device answers (the failed query cleared): for plans and workspace sizes,
// which may be asked for where no device is (no device, no split: nothing runs there).
inline int device_sm_count_or_zero() {
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || sms <= 0) {
    (void)cudaGetLastError();
    return 0;
  }
  return sms;
}

// SMs of the current device, for launchers that size their grids by it (two cheap queries, not the
// whole DeviceCaps: unsupported() has already vetted the device).
inline int current_sm_count() {
  int device = 0, sms = 0;
  FB_CUDA_CHECK(cudaGetDevice(&device));
  FB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

// How many planes (heads) a launch schedules together so that what their tiles re-read stays in L2:
// as many as keep `bytes_per_plane` each within 1/share of the current device's L2 (the rest holds
// what streams through and what other kernels left), at least 1, at most `planes`. A launch whose
// concurrent blocks spread over every plane re-reads each one from HBM instead: the Hopper forward at
// 16k tokens x 2048 model dim had 128 MB of K/V in flight, an L2 hit rate of 28% and DRAM 79% busy
// (docs/perf-notes.md, session 5).
inline int l2_plane_group(std::int64_t bytes_per_plane, std::int64_t planes, int share = 3) {
  constexpr std::int64_t kFallbackL2 = 32 << 20;
  int device = 0, l2 = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device) != cudaSuccess || l2 <= 0) {
    (void)cudaGetLastError();
    l2 = int(kFallbackL2);
  }
  const std::int64_t fit = std::int64_t(l2) / share / std::max<std::int64_t>(bytes_per_plane, 1);
  return int(std::clamp<std::int64_t>(fit, 1, std::max<std::int64_t>(planes, 1)));
}

}  // namespace fb::cuda
