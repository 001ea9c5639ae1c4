// One error-check macro for CUDA runtime and cuBLAS calls: throws fb::CudaError with file, line and
// the call's text. FB_CUDA_CHECK_NOTHROW is for destructors (reports to stderr, never throws; silent
// once the CUDA context is lost, see is_sticky_error).
#pragma once

#include <atomic>
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

// A fault inside a kernel (illegal address, device assert, ...) is sticky: it leaves the process's CUDA
// context unusable, and every later runtime call returns the same error until the process ends. These
// are the codes the runtime documents that way ("the process must be terminated and relaunched").
inline bool is_sticky_error(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorExternalDevice:
    case cudaErrorMpsClientTerminated:
#if CUDART_VERSION >= 12080
    case cudaErrorContained:
    case cudaErrorTensorMemoryLeak:
#endif
      return true;
    default:
      return false;
  }
}

namespace detail {
inline std::atomic<bool> g_cuda_context_lost{false};
}  // namespace detail

// Set when a release in a destructor meets a sticky error, or by whoever detects the loss (the CUDA
// backend's probe). From then on every release fails the same way: saying so once per buffer, event
// and handle would bury the one message that matters, so releases stay silent.
inline void note_cuda_context_lost() { detail::g_cuda_context_lost.store(true); }
inline bool cuda_context_lost() { return detail::g_cuda_context_lost.load(); }

namespace detail {
inline void report_release_error(cudaError_t err, const char* expr, const char* file, int line) {
  if (is_sticky_error(err)) note_cuda_context_lost();
  if (cuda_context_lost()) return;  // the loss is reported once, by the code that detected it
  std::fprintf(stderr, "flashbench: %s in `%s` at %s:%d\n", cudaGetErrorString(err), expr, file, line);
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

// For releases in destructors: reports a failure on stderr, never throws, and says nothing once the
// context is lost (then every release fails, and the loss has been reported where it was detected).
#define FB_CUDA_CHECK_NOTHROW(expr)                                                          \
  do {                                                                                       \
    cudaError_t fb_err_ = (expr);                                                            \
    if (fb_err_ != cudaSuccess)                                                              \
      ::fb::detail::report_release_error(fb_err_, #expr, __FILE__, __LINE__);                \
  } while (0)

#define FB_CUBLAS_CHECK(expr)                                                                \
  do {                                                                                       \
    cublasStatus_t fb_st_ = (expr);                                                          \
    if (fb_st_ != CUBLAS_STATUS_SUCCESS)                                                     \
      ::fb::detail::throw_cuda(cublasGetStatusString(fb_st_), #expr, __FILE__, __LINE__);     \
  } while (0)
