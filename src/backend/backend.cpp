#include "backend/backend.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#if FLASHBENCH_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace fb {

double ErrorReport::worst() const {
  if (nonfinite > 0) return std::numeric_limits<double>::infinity();
  double w = 0;
  for (const auto& [name, e] : max_abs) {
    if (std::isnan(e)) return std::numeric_limits<double>::infinity();  // NaN never passes
    w = std::max(w, e);
  }
  return w;
}

KernelRun Backend::run(const Descriptor& kernel, const TimingPolicy& timing) {
  arm(kernel, timing);
  try {
    std::vector<KernelRun> runs = run_armed(timing);
    if (runs.size() != 1) throw BackendError(fmt::format("{}: timed {} kernels for one", name(), runs.size()));
    return std::move(runs.front());
  } catch (...) {
    disarm(std::string(kernel.name));
    throw;
  }
}

std::optional<BackendKind> parse_backend(std::string_view s) {
  if (s == "auto") return BackendKind::automatic;
  if (s == "cpu") return BackendKind::cpu;
  if (s == "cuda") return BackendKind::cuda;
  return std::nullopt;
}

bool cuda_device_available() {
#if FLASHBENCH_HAVE_CUDA
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return false;
  }
  return n > 0;
#else
  return false;
#endif
}

std::unique_ptr<Backend> make_backend(BackendKind kind, int device) {
  if (kind == BackendKind::automatic)
    kind = cuda_device_available() ? BackendKind::cuda : BackendKind::cpu;
  if (kind == BackendKind::cpu) return make_cpu_backend();
#if FLASHBENCH_HAVE_CUDA
  if (!cuda_device_available())
    throw std::runtime_error("--backend cuda: no CUDA device is visible (use --backend cpu or auto)");
  return make_cuda_backend(device);
#else
  (void)device;
  throw std::runtime_error(
      "--backend cuda: this build has no CUDA backend (no CUDA toolkit at configure time)");
#endif
}

}  // namespace fb
