// What the runner needs from a place that runs kernels: the CPU or a CUDA device. Both implement
// the same calls, so the runner has one code path.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/timing.h"
#include "case.h"
#include "registry.h"

namespace fb {

// One timed kernel on the prepared case.
struct KernelRun {
  std::vector<double> times_ms;   // one per rep, after warm-up
  std::uint64_t peak_bytes = 0;   // peak bytes the run allocated (outputs + workspace; inputs excluded),
                                  // measured by the backend's tracking allocator
  int tile = 0;                   // rows per tile the kernel used (Entry::tile), for the byte model
  // The SM clock while the timed reps ran (CUDA through NVML, where the driver has it): the lowest of the readings
  // taken while each batch of reps was queued on the GPU, and the clock event reasons (nvml.h's
  // nvmlClocksEventReasons bits: 0x4 the software power cap, 0x8 / 0x40 / 0x80 slowdowns) seen in any of them.
  std::optional<unsigned> sm_mhz_min;
  std::optional<std::uint64_t> clock_event_reasons;
};

// Max |a - b| per output tensor ("O", "LSE", "dQ", "dK", "dV") over the compared elements.
struct ErrorReport {
  std::vector<std::pair<std::string, double>> max_abs;  // NaN/Inf anywhere -> +inf
  std::vector<std::pair<std::string, double>> magnitude;  // max |b| per tensor: the scale rounding
                                                          // errors are measured against
  std::int64_t nonfinite = 0;                            // non-finite elements in `a`
  std::int64_t rows_compared = 0;                        // query rows compared (CPU may sample)
  double worst() const;                                  // max over tensors (+inf if any nonfinite)
};

// Thrown by a backend when a case cannot run (allocation failure, launch error): the runner records
// the case as failed with what() and goes on.
class BackendError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A tensor copied to the host (for --dump): values widened to double, exactly; `dtype` is how it is
// stored on the backend; `shape` is row-major (e.g. {B, H, N, d}).
struct HostTensor {
  std::string name;  // "Q", "K", "V", "dO", "O", "LSE", "dQ", "dK", "dV"
  Dtype dtype = Dtype::fp64;
  std::vector<std::int64_t> shape;
  std::vector<double> values;
};

// Thrown by run_armed() when one armed kernel fails in the rounds (its launch refused, say): `kernel` is its
// index among the armed kernels. The runner records it failed, disarms it and times the rest again.
class RoundError : public BackendError {
 public:
  RoundError(std::size_t kernel, const std::string& what) : BackendError(what), kernel(kernel) {}
  std::size_t kernel;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;        // "cpu" | "cuda"
  virtual nlohmann::json device() const = 0;    // name, memory, versions, clocks... (data, not text)
  virtual nlohmann::json settings() const = 0;  // timer, l2 flush, threads... for results.settings

  // Why `kernel` cannot run `c` here (e.g. naive's N x N buffers need more than free memory, with
  // the bytes), nullopt if it may run.
  virtual std::optional<std::string> check_fits(const Case& c, const Descriptor& kernel) = 0;
  // The bytes check_fits() counts for `kernel` on `c` (inputs included, as if none were held):
  // what `run --list` shows. nullopt where the backend has no model.
  virtual std::optional<std::uint64_t> bytes_needed(const Case&, const Descriptor&) { return std::nullopt; }

  // Draws the case's inputs from `seed` (standard normal; never zeros) and drops all kept outputs.
  // Q and K are multiplied by `input_scale`, so scores grow as its square (extreme-value checks).
  virtual void prepare(const Case& c, std::uint64_t seed, double input_scale = 1.0) = 0;

  // Warm-up then timed runs of `kernel` on the prepared inputs, as many as `timing` asks (next_batch),
  // outputs poisoned (NaN) before each run. Keeps the last outputs for compare(). For Pass::bwd the
  // forward runs once untimed first.
  // With no other kernel armed: arm(kernel), then run_armed() (the kernel disarmed if that throws).
  virtual KernelRun run(const Descriptor& kernel, const TimingPolicy& timing);
  // A fixed count: `warmup` untimed runs (no time-based warm-up), then exactly `reps` timed ones.
  KernelRun run(const Descriptor& kernel, int warmup, int reps) {
    TimingPolicy fixed;
    fixed.warmup = warmup;
    fixed.reps = reps;
    fixed.warmup_min_s = 0;  // exactly `warmup` untimed runs
    return run(kernel, fixed);
  }

  // Interleaved reps (TimingPolicy::rep_order): arm() each of a case's kernels (its outputs allocated and
  // poisoned, the backward's forward run, its `warmup` untimed runs, its peak bytes and tile measured), then
  // run_armed() times every armed kernel together: the time-based warm-up over all of them, then rounds of one
  // timed rep each (L2 flushed and outputs poisoned before each, as run() does), in round_order()'s order, as
  // many as next_rounds() asks. It returns one KernelRun per armed kernel, in arming order, keeps each one's last
  // outputs for compare() and disarms them all. A kernel that fails in the rounds throws RoundError; disarm()
  // drops one armed kernel (its outputs freed). run() is one kernel armed and timed this way.
  virtual void arm(const Descriptor& kernel, const TimingPolicy& timing) = 0;
  virtual std::vector<KernelRun> run_armed(const TimingPolicy& timing) = 0;
  virtual void disarm(const std::string& kernel) = 0;

  // Exact fp64 outputs for the prepared inputs, kept as "reference" (CPU: a sample of query rows for
  // large cases).
  virtual void run_reference() = 0;

  // Errors of kept outputs `a` against kept outputs `b` (kernel names or "reference").
  virtual ErrorReport compare(const std::string& a, const std::string& b) = 0;

  // Host copies of the prepared inputs (`what` = "inputs") or of the kept outputs of a kernel or of
  // "reference" (empty when the reference holds only a sample of rows). Throws BackendError if none.
  virtual std::vector<HostTensor> fetch(const std::string& what) = 0;

  // Frees the case's inputs and kept outputs.
  virtual void release() = 0;

  // Whether this backend can still run anything: nullopt while it can; once a kernel has broken it
  // (a fault on a GPU leaves the CUDA context unusable until the process ends), what broke it, e.g.
  // "CUDA context lost (an illegal memory access was encountered)", and so on every later call. The
  // runner asks after a kernel fails and after each case; release() must still be safe (and quiet)
  // after a loss.
  virtual std::optional<std::string> context_lost() { return std::nullopt; }
};

enum class BackendKind { automatic, cpu, cuda };

// "auto" | "cpu" | "cuda"; nullopt if unknown.
std::optional<BackendKind> parse_backend(std::string_view s);
// True when this build has CUDA and a device is visible.
bool cuda_device_available();
// Throws std::runtime_error with a clear message if the kind cannot be made (e.g. cuda without a GPU).
std::unique_ptr<Backend> make_backend(BackendKind kind, int device = 0);

// Implemented in backend/cpu and backend/cuda.
std::unique_ptr<Backend> make_cpu_backend();
std::unique_ptr<Backend> make_cuda_backend(int device);  // only when FLASHBENCH_HAVE_CUDA

}  // namespace fb
