// One check macro for cuDNN calls: a failing status throws fb::CudaError naming the status, cuDNN's own
// message for it (cudnnGetLastErrorString: which attribute or shape it refused), the call's text, file
// and line — the same shape as FB_CUDA_CHECK (common/check.h).
#pragma once

#include <string>

#include <cudnn.h>

#include "common/check.h"

namespace fb::cudnn_detail {

// cuDNN's message for the last failure on this thread ("" when it has none).
inline std::string last_error() {
  constexpr std::size_t kMaxMessage = 1024;
  char message[kMaxMessage] = {};
  cudnnGetLastErrorString(message, sizeof message);
  return message;
}

[[noreturn]] inline void throw_cudnn(cudnnStatus_t st, const char* expr, const char* file, int line) {
  std::string what = std::string("cuDNN ") + cudnnGetErrorString(st);
  const std::string detail = last_error();
  if (!detail.empty()) what += " (" + detail + ")";
  ::fb::detail::throw_cuda(what.c_str(), expr, file, line);
}

}  // namespace fb::cudnn_detail

#define FB_CUDNN_CHECK(expr)                                                          \
  do {                                                                                \
    cudnnStatus_t fb_cudnn_st_ = (expr);                                              \
    if (fb_cudnn_st_ != CUDNN_STATUS_SUCCESS)                                         \
      ::fb::cudnn_detail::throw_cudnn(fb_cudnn_st_, #expr, __FILE__, __LINE__);       \
  } while (0)

// cudnnBackendSetAttribute through the check, so that a refusal names the attribute.
#define FB_CUDNN_SET(desc, attr, type, count, values) \
  FB_CUDNN_CHECK(cudnnBackendSetAttribute((desc), (attr), (type), (count), (values)))
