// What the GPU test files share: one CUDA backend for the whole binary (creating a context, stream and
// cuBLAS handle per test costs more than the tests themselves; each test prepares its own case).
#pragma once

#include "backend/cuda/cuda_backend.h"
#include "support.h"

namespace fb::test {

inline CudaBackend& gpu() {
  static CudaBackend backend(0);
  return backend;
}

}  // namespace fb::test
