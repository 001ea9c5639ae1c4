// The CUDA backend: one device, one stream, cuBLAS bound to it, CUDA-event timing with an L2 flush
// before each timed rep, a tracking allocator for every device buffer of a case, and the fp64
// reference kernel. Created through make_cuda_backend(); the concrete type is visible for tests.
#pragma once

#include <cstdint>
#include <memory>

#include "backend/backend.h"

namespace fb {

class CudaBackend final : public Backend {
 public:
  // Throws std::runtime_error if `device` is not a visible CUDA device.
  explicit CudaBackend(int device);
  ~CudaBackend() override;

  std::string name() const override { return "cuda"; }
  nlohmann::json device() const override;  // reads the current clocks on every call
  nlohmann::json settings() const override;
  std::optional<std::string> check_fits(const Case& c, const Descriptor& kernel) override;
  std::optional<std::uint64_t> bytes_needed(const Case& c, const Descriptor& kernel) override;
  void prepare(const Case& c, std::uint64_t seed, double input_scale = 1.0) override;
  void arm(const Descriptor& kernel, const TimingPolicy& timing) override;
  std::vector<KernelRun> run_armed(const TimingPolicy& timing) override;
  void disarm(const std::string& kernel) override;
  void run_reference() override;
  ErrorReport compare(const std::string& a, const std::string& b) override;
  std::vector<HostTensor> fetch(const std::string& what) override;
  void release() override;
  // Probes the device after a failure; see Backend::context_lost().
  std::optional<std::string> context_lost() override;

  // Device bytes held through the tracking allocator right now (inputs + kept outputs).
  std::uint64_t tracked_bytes() const;

  // Spare device memory check_fits() keeps beyond a run's own buffers: cuBLAS's workspace, the
  // driver's page rounding, and the fp64 reference that may follow.
  static constexpr std::uint64_t kFitMarginBytes = 512ull << 20;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fb
