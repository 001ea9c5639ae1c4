// Ceilings of this device, measured: device-to-device copy bandwidth and cuBLAS bf16 GEMM peak.
#pragma once

#include <nlohmann/json.hpp>

namespace fb {

// {"copy_gbps": .., "gemm_bf16_tflops": .., ...}; throws on CUDA errors.
nlohmann::json measure_ceilings(int device);

}  // namespace fb
