// The CPU implementation of fb::Backend, with the knobs tests need (thread count, tile shape) and
// read/write access to kept outputs.
//
// What it measures and compares:
//   - peak_bytes: high-water mark of the tracking allocator over the run, above what was held
//   before
//     it: outputs (O, LSE; dQ, dK, dV for backward) and everything the kernels allocate (naive's
//     N x N arrays including the P kept for the backward, per-thread tiles, flash's dQ
//     accumulators). Inputs (Q, K, V, dO) are not counted.
//   - reference: exact fp64 from the dtype-rounded inputs. Query rows: all of them while
//     batch*heads*seq^2*head_dim <= kReferenceWork, else a fixed sample (first and last row
//     included) sized to that same budget, at least kMinSampledRows per (batch, head). Backward: dQ
//     on those rows; dK and dV need the softmax statistics of every query row (a full fp64
//     forward), so they are compared only while batch*heads*seq^2*head_dim <= kStatsWork, on all
//     key rows or a sample sized like the query rows'; past that only O, LSE and dQ are compared.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "backend/backend.h"
#include "backend/cpu/cpu_attention.h"

namespace fb::cpu {

// batch*heads*(rows)*seq*head_dim budget of the reference per output tensor before it samples
// rows: 2^28 multiply-adds in each of its two products (scores, P V), about 2^30 flops, a fraction
// of a second of fp64 on two cores.
inline constexpr double kReferenceWork = 1ull << 28;
// Largest batch*heads*seq^2*head_dim for which the reference computes dK/dV: they need a full fp64
// forward (4x kReferenceWork: about a second on two cores).
inline constexpr double kStatsWork = 1ull << 30;
inline constexpr int kMinSampledRows = 32;
// Share of MemAvailable a case may plan to use; the rest is left to the system and other processes.
inline constexpr double kUsableMemoryFraction = 0.8;

struct BackendOptions {
  int threads = 0;  // 0: default_thread_count() (FLASHBENCH_THREADS or the hardware's)
  Tiles tiles{};
  std::size_t memory_limit = 0;  // tracker limit in bytes (0: none); lets tests hit out-of-memory
  double reference_work = kReferenceWork;  // the reference's budgets (see above); tests lower them
  double stats_work = kStatsWork;
  // The timer the reps are timed with, in ms (empty: std::chrono::steady_clock). Tests plant a simulated device's
  // clock here, so that what a timing order does to a drift is exact, not at the mercy of the machine's load.
  std::function<double()> clock_ms;
};

// Elements of one kept tensor, in its storage type (outputs: case dtype; LSE: accumulator type;
// reference: fp64).
struct TensorView {
  void* data = nullptr;
  Dtype dtype = Dtype::fp64;
  std::int64_t count = 0;
};

class CpuBackend : public Backend {
 public:
  using Backend::run;
  // A kept output of `kernel` ("naive", "flash", "reference") named `tensor` ("O", "LSE", "dQ",
  // "dK", "dV"), nullopt when there is none. Writable, so tests can plant a bad element.
  virtual std::optional<TensorView> kept_output(const std::string& kernel,
                                                const std::string& tensor) = 0;
  // The prepared inputs "Q", "K", "V", "dO" in the case dtype; nullopt when there is none.
  virtual std::optional<TensorView> input(const std::string& tensor) = 0;
  virtual const MemoryTracker& tracker() const = 0;
};

// Throws std::runtime_error if FLASHBENCH_THREADS is malformed.
std::unique_ptr<CpuBackend> make_cpu_backend(const BackendOptions& options);

// Fills n elements of type t with NaN (what an unwritten output element looks like afterwards).
void poison(void* data, Dtype t, std::int64_t n);

}  // namespace fb::cpu
