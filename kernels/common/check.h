// One error-check macro for CUDA runtime and cuBLAS calls: throws fb::CudaError with file, line and
// the call's text. FB_CUDA_CHECK_NOTHROW is for destructors (reports to stderr, never throws).
#pragma once

#include <cstdio>
#include <stdexcept>
#include <string>

#include <cuda_runtime.h>

namespace fb {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
[[noreturn]] inline void throw_cuda(const char* what, const char* expr, const char* file, int line) {
  throw CudaError(std::string(what) + " in `" + expr + "` at " + file + ":" + std::to_string(line));
}
}  // namespace detail

}  // namespace fb

#define FB_CUDA_CHECK(expr)                                                                  \
  do {                                                                                       \
    cudaError_t fb_err_ = (expr);                                                            \
    if (fb_err_ != cudaSuccess)                                                              \
      ::fb::detail::throw_cuda(cudaGetErrorString(fb_err_), #expr, __FILE__, __LINE__);       \
  } while (0)

// After a <<<launch>>>: launch-configuration errors show up in cudaGetLastError().
#define FB_CUDA_CHECK_LAUNCH() FB_CUDA_CHECK(cudaGetLastError())

#define FB_CUDA_CHECK_NOTHROW(expr)                                                          \
  do {                                                                                       \
    cudaError_t fb_err_ = (expr);                                                            \
    if (fb_err_ != cudaSuccess)                                                              \
      std::fprintf(stderr, "flashbench: %s in `%s` at %s:%d\n", cudaGetErrorString(fb_err_), \
                   #expr, __FILE__, __LINE__);                                               \
  } while (0)

#define FB_CUBLAS_CHECK(expr)                                                                \
  do {                                                                                       \
    cublasStatus_t fb_st_ = (expr);                                                          \
    if (fb_st_ != CUBLAS_STATUS_SUCCESS)                                                     \
      ::fb::detail::throw_cuda(cublasGetStatusString(fb_st_), #expr, __FILE__, __LINE__);     \
  } while (0)
