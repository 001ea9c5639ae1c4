// What the GPU test files share: one CUDA backend for the whole binary (creating a context, stream and
// cuBLAS handle per test costs more than the tests themselves; each test prepares its own case).
#pragma once

#include <cstdlib>
#include <string>

#include <cuda_runtime.h>

#include "backend/cuda/cuda_backend.h"
#include "support.h"

namespace fb::test {

inline CudaBackend& gpu() {
  static CudaBackend backend(0);
  return backend;
}

// The current device's SM count (the schedule models' tests pick their expectations by it).
inline int sm_count() {
  int device = 0, sms = 0;
  REQUIRE(cudaGetDevice(&device) == cudaSuccess);
  REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) == cudaSuccess);
  return sms;
}

// An environment variable's value ("" where unset), and whether a word leaves the default (unset, empty or `default`):
// the tests of a probe word check the choice as built and under the word.
inline std::string env_word(const char* name) {
  const char* e = std::getenv(name);
  return e != nullptr ? e : "";
}
inline bool is_default_word(const std::string& word) { return word.empty() || word == "default"; }

}  // namespace fb::test
