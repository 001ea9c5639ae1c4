// The CUDA backend (see cuda_backend.h) and the device ceilings of ceilings.h.
#include "backend/cuda/cuda_backend.h"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include "attention.h"
#include "backend/cuda/ceilings.h"
#include "backend/cuda/cuda_resources.h"
#include "common/check.h"

namespace fb {
namespace {

// The time-based warm-up stops after this many runs whatever the time (a kernel of microseconds).
constexpr int kMaxWarmupRuns = 20000;

using cuda::DeviceBuffer;
using cuda::TrackingAllocator;

// Input tensors draw from these RNG streams of the case's seed.
constexpr std::uint64_t kStreamQ = 0, kStreamK = 1, kStreamV = 2, kStreamDout = 3;
constexpr const char* kReferenceName = "reference";

Dtype lse_dtype(Dtype t) { return t == Dtype::fp64 ? Dtype::fp64 : Dtype::fp32; }
bool has_backward(Pass p) { return p != Pass::fwd; }

std::string version_string(int v) {  // CUDA encodes 13.0 as 13000
  constexpr int kMajor = 1000, kMinor = 10;
  return fmt::format("{}.{}", v / kMajor, (v % kMajor) / kMinor);
}

// Every failure surfaces as BackendError, which the runner records against the case before going on.
template <typename F> auto guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const BackendError&) {
    throw;
  } catch (const std::exception& e) {
    throw BackendError(e.what());
  }
}

// ---- NVML, loaded at run time for the current clocks (no link-time dependency on the driver) ----
class Nvml {
 public:
  // From nvml.h: nvmlClockType_t values, and NVML_SUCCESS.
  static constexpr int kClockSm = 1, kClockMem = 2, kSuccess = 0;

  Nvml() {
    lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib_) return;
    init_ = reinterpret_cast<InitFn>(dlsym(lib_, "nvmlInit_v2"));
    shutdown_ = reinterpret_cast<ShutdownFn>(dlsym(lib_, "nvmlShutdown"));
    by_pci_ = reinterpret_cast<ByPciFn>(dlsym(lib_, "nvmlDeviceGetHandleByPciBusId_v2"));
    clock_ = reinterpret_cast<ClockFn>(dlsym(lib_, "nvmlDeviceGetClockInfo"));
    // The clock event reasons (named "throttle reasons" before driver 535; the same bits).
    reasons_ = reinterpret_cast<ReasonsFn>(dlsym(lib_, "nvmlDeviceGetCurrentClocksEventReasons"));
    if (!reasons_) reasons_ = reinterpret_cast<ReasonsFn>(dlsym(lib_, "nvmlDeviceGetCurrentClocksThrottleReasons"));
    ok_ = init_ && shutdown_ && by_pci_ && clock_ && init_() == kSuccess;
  }
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
  ~Nvml() {
    if (ok_) shutdown_();
    if (lib_) dlclose(lib_);
  }
  bool ok() const { return ok_; }
  std::optional<unsigned> clock_mhz(const std::string& pci_bus_id, int type) const {
    void* dev = handle(pci_bus_id);
    return dev ? read_clock(dev, type) : std::nullopt;
  }
  // The SM clock and the clock event reasons active now (nvmlClocksEventReasons bits), each where the driver
  // reports it: one device lookup for both.
  struct SmReading {
    std::optional<unsigned> mhz;
    std::optional<std::uint64_t> event_reasons;
  };
  SmReading sm_reading(const std::string& pci_bus_id) const {
    void* dev = handle(pci_bus_id);
    if (!dev) return {};
    SmReading r{read_clock(dev, kClockSm), std::nullopt};
    unsigned long long bits = 0;
    if (reasons_ && reasons_(dev, &bits) == kSuccess) r.event_reasons = std::uint64_t(bits);
    return r;
  }

 private:
  void* handle(const std::string& pci_bus_id) const {
    void* dev = nullptr;
    return ok_ && by_pci_(pci_bus_id.c_str(), &dev) == kSuccess ? dev : nullptr;
  }
  std::optional<unsigned> read_clock(void* dev, int type) const {
    unsigned mhz = 0;
    if (clock_(dev, type, &mhz) != kSuccess) return std::nullopt;
    return mhz;
  }

  using InitFn = int (*)();
  using ShutdownFn = int (*)();
  using ByPciFn = int (*)(const char*, void**);
  using ClockFn = int (*)(void*, int, unsigned*);
  using ReasonsFn = int (*)(void*, unsigned long long*);
  void* lib_ = nullptr;
  InitFn init_ = nullptr;
  ShutdownFn shutdown_ = nullptr;
  ByPciFn by_pci_ = nullptr;
  ClockFn clock_ = nullptr;
  ReasonsFn reasons_ = nullptr;
  bool ok_ = false;
};

// One kernel's kept outputs (or the reference's, fp64).
struct Outputs {
  Dtype dtype = Dtype::fp32;  // element type of O, dQ, dK, dV; LSE is lse_dtype(dtype)
  DeviceBuffer o, lse, dq, dk, dv;
  std::uint64_t bytes() const { return o.bytes() + lse.bytes() + dq.bytes() + dk.bytes() + dv.bytes(); }
};

struct OutputSizes {
  std::uint64_t o, lse, dq, dkv;  // bytes; dkv is each of dK and dV
  std::uint64_t total() const { return o + lse + dq + 2 * dkv; }
};

OutputSizes output_sizes(const Case& c, Dtype dtype) {
  const AttentionParams p = c.params();
  const std::uint64_t e = dtype_bytes(output_dtype(dtype));  // fp8: O in bf16
  OutputSizes s{std::uint64_t(p.q_elems()) * e, std::uint64_t(p.rows()) * dtype_bytes(lse_dtype(dtype)), 0, 0};
  if (has_backward(c.pass)) {
    s.dq = std::uint64_t(p.q_elems()) * e;
    s.dkv = std::uint64_t(p.kv_elems()) * e;
  }
  return s;
}

Outputs allocate_outputs(TrackingAllocator& alloc, const Case& c, Dtype dtype) {
  const OutputSizes s = output_sizes(c, dtype);
  Outputs out;
  out.dtype = dtype;
  out.o = alloc.allocate(s.o, "O");
  out.lse = alloc.allocate(s.lse, "LSE");
  if (has_backward(c.pass)) {
    out.dq = alloc.allocate(s.dq, "dQ");
    out.dk = alloc.allocate(s.dkv, "dK");
    out.dv = alloc.allocate(s.dkv, "dV");
  }
  return out;
}

void bind_outputs(AttentionParams& p, Outputs& out) {
  p.o = out.o.get();
  p.lse = out.lse.get();
  p.dq = out.dq.get();
  p.dk = out.dk.get();
  p.dv = out.dv.get();
}

double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

struct CudaBackend::Impl {
  explicit Impl(int dev) : device(dev), l2(dev) {
    FB_CUDA_CHECK(cudaGetDeviceProperties(&props, device));
    char bus[32] = {};
    FB_CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, device));
    pci_bus_id = bus;
  }

  int device;
  cudaDeviceProp props{};
  std::string pci_bus_id;
  Nvml nvml;
  TrackingAllocator alloc;  // declared before every buffer: outlives them
  cuda::Stream stream;
  cuda::CublasHandle cublas{stream.get()};
  cuda::L2Flush l2;

  std::optional<Case> prepared;
  DeviceBuffer q, k, v, dout;
  std::optional<std::string> lost;  // what lost the CUDA context (Backend::context_lost), once it is
  std::array<float, 3> descale{1, 1, 1};  // fp8: the descales of Q, K, V (attention.h); 1 otherwise
  std::map<std::string, Outputs> kept;

  cuda::Context ctx() const { return cuda::Context{stream.get(), cublas.get()}; }

  const Case& current_case() const {
    if (!prepared) throw BackendError("cuda backend: no case prepared (prepare() first)");
    return *prepared;
  }

  // After a loss every call would fail with the same sticky error: say what happened instead.
  void refuse_if_lost() const {
    if (lost) throw BackendError(*lost + ": this process can run nothing more on the device");
  }

  // Whether the context survived a failure. A sticky error comes back from every call, so one
  // synchronize (microseconds on an idle device) finds it. Any other error belonged to the call that
  // failed: it is cleared, and a tiny allocation, write and wait (what the next case does first) tell
  // whether the device still works.
  std::optional<std::string> probe_context() {
    if (lost) return lost;
    cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaSuccess && !is_sticky_error(err)) {
      (void)cudaGetLastError();
      err = try_small_write();
      if (err == cudaErrorMemoryAllocation) err = cudaSuccess;  // full, not broken
    }
    if (err == cudaSuccess) return std::nullopt;
    note_cuda_context_lost();  // from now on releases are silent (common/check.h)
    lost = fmt::format("CUDA context lost ({}: {})", cudaGetErrorName(err), cudaGetErrorString(err));
    return lost;
  }

  cudaError_t try_small_write() {
    constexpr std::size_t kProbeBytes = 256;
    void* p = nullptr;
    cudaError_t err = cudaMalloc(&p, kProbeBytes);
    if (err != cudaSuccess) return err;
    err = cudaMemsetAsync(p, 0, kProbeBytes, stream.get());
    if (err == cudaSuccess) err = cudaStreamSynchronize(stream.get());
    const cudaError_t freed = cudaFree(p);
    return err != cudaSuccess ? err : freed;
  }

  AttentionParams input_params() const {
    AttentionParams p = current_case().params();
    p.q = q.get();
    p.k = k.get();
    p.v = v.get();
    p.dout = dout.get();
    p.descale_q = descale[0];
    p.descale_k = descale[1];
    p.descale_v = descale[2];
    return p;
  }

  void release() {
    armed.clear();
    kept.clear();
    q = DeviceBuffer();
    k = DeviceBuffer();
    v = DeviceBuffer();
    dout = DeviceBuffer();
    descale = {1, 1, 1};
    prepared.reset();
  }

  void prepare(const Case& c, std::uint64_t seed, double input_scale) {
    refuse_if_lost();
    release();
    const AttentionParams p = c.params();
    const std::uint64_t e = dtype_bytes(c.dtype);
    const bool fp8 = c.dtype == Dtype::fp8;
    q = alloc.allocate(std::uint64_t(p.q_elems()) * e, "Q");
    k = alloc.allocate(std::uint64_t(p.kv_elems()) * e, "K");
    v = alloc.allocate(std::uint64_t(p.kv_elems()) * e, "V");
    // fp8 runs the forward only (attention.h): no dO, as on the CPU backend; kernels refuse its backward.
    if (has_backward(c.pass) && !fp8) dout = alloc.allocate(std::uint64_t(p.q_elems()) * e, "dO");
    const cuda::Context cx = ctx();
    if (fp8) {  // e4m3 codes with per-tensor descales, drawn from the same streams as the other dtypes
      descale[0] = cuda::fill_normal_fp8(q.get(), p.q_elems(), seed, kStreamQ, cx, input_scale);
      descale[1] = cuda::fill_normal_fp8(k.get(), p.kv_elems(), seed, kStreamK, cx, input_scale);
      descale[2] = cuda::fill_normal_fp8(v.get(), p.kv_elems(), seed, kStreamV, cx);
    } else {
      cuda::fill_normal(q.get(), c.dtype, p.q_elems(), seed, kStreamQ, cx, input_scale);
      cuda::fill_normal(k.get(), c.dtype, p.kv_elems(), seed, kStreamK, cx, input_scale);
      cuda::fill_normal(v.get(), c.dtype, p.kv_elems(), seed, kStreamV, cx);
    }
    if (dout) cuda::fill_normal(dout.get(), c.dtype, p.q_elems(), seed, kStreamDout, cx);
    stream.sync();
    prepared = c;
  }

  // Outputs, workspace and inputs of `kernel` on `c`: what check_fits() sets against free memory.
  std::uint64_t bytes_needed(const Case& c, const Descriptor& kernel) const {
    const std::uint64_t workspace = kernel.cuda ? kernel.cuda.workspace_bytes(c.pass, c.params()) : 0;
    return output_sizes(c, c.dtype).total() + workspace + input_bytes(c);
  }

  std::optional<std::string> check_fits(const Case& c, const Descriptor& kernel) {
    refuse_if_lost();
    const AttentionParams p = c.params();
    if (!kernel.cuda) return fmt::format("kernel '{}' does not run on the CUDA backend", kernel.name);
    if (auto why = kernel.cuda.unsupported(c.pass, p)) return why;
    const std::uint64_t outputs = output_sizes(c, c.dtype).total();
    const std::uint64_t workspace = kernel.cuda.workspace_bytes(c.pass, p);
    const bool inputs_held = prepared && *prepared == c;
    const std::uint64_t inputs = inputs_held ? 0 : input_bytes(c);
    const std::uint64_t need = outputs + workspace + inputs;
    std::size_t free_b = 0, total_b = 0;
    FB_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    // The kernel's previous outputs are dropped before it runs again.
    std::uint64_t avail = free_b;
    if (auto it = kept.find(std::string(kernel.name)); it != kept.end()) avail += it->second.bytes();
    if (need + kFitMarginBytes <= avail) return std::nullopt;
    return fmt::format(
        "{} needs {} bytes ({}: outputs {} + workspace {}{}) but {} bytes ({}) of device memory are "
        "available, keeping {} spare",
        kernel.name, need, TrackingAllocator::gib(need), outputs, workspace,
        inputs ? fmt::format(" + inputs {}", inputs) : std::string(), avail, TrackingAllocator::gib(avail),
        TrackingAllocator::gib(kFitMarginBytes));
  }

  // One kernel armed for timing (Backend::arm): its outputs, workspace and parameters, and what arm() measured.
  struct Armed {
    std::string name;
    const CudaEntry* entry = nullptr;
    AttentionParams p;
    Outputs out;
    DeviceBuffer ws;
    NoState state;
    KernelRun run;  // peak_bytes and tile from arm(); times and clocks from run_armed()
  };
  std::vector<Armed> armed;

  void poison(Armed& a, bool forward_outputs, bool backward_outputs) {
    const cudaStream_t s = stream.get();
    if (forward_outputs) {
      cuda::poison(a.out.o, s);
      cuda::poison(a.out.lse, s);
    }
    if (backward_outputs) {
      cuda::poison(a.out.dq, s);
      cuda::poison(a.out.dk, s);
      cuda::poison(a.out.dv, s);
    }
  }

  // One rep of `a`: its outputs poisoned, then (timed) L2 flushed and the rep between two events.
  void launch(Armed& a, const Case& c, bool timed, std::vector<cuda::Event>* starts, std::vector<cuda::Event>* stops) {
    const cudaStream_t s = stream.get();
    const cuda::Context cx = ctx();
    poison(a, c.pass != Pass::bwd, c.pass != Pass::fwd);
    if (timed) {
      l2.flush(s);
      starts->emplace_back().record(s);
    }
    if (c.pass != Pass::bwd) a.entry->forward(a.p, cx, a.state);
    if (c.pass != Pass::fwd) a.entry->backward(a.p, cx, a.state);
    if (timed) stops->emplace_back().record(s);
  }

  void arm(const Descriptor& kernel, const TimingPolicy& timing) {
    refuse_if_lost();
    const Case& c = current_case();
    const CudaEntry& entry = kernel.cuda;
    const std::string name(kernel.name);
    if (!entry) throw BackendError(fmt::format("kernel '{}' does not run on the CUDA backend", kernel.name));
    Armed a;
    a.name = name;
    a.entry = &entry;
    a.p = input_params();
    if (auto why = entry.unsupported(c.pass, a.p)) throw BackendError(*why);
    if (c.pass != Pass::fwd && !entry.backward)
      throw BackendError(fmt::format("kernel '{}' has no backward pass", kernel.name));
    disarm(name);
    kept.erase(name);  // before the peak measurement starts

    alloc.reset_peak();
    const std::uint64_t base = alloc.current();  // inputs, other kernels' kept outputs and armed buffers
    a.out = allocate_outputs(alloc, c, c.dtype);
    a.ws = alloc.allocate(entry.workspace_bytes(c.pass, a.p), "workspace");
    bind_outputs(a.p, a.out);
    a.p.workspace = a.ws.get();
    // Fresh allocations hold whatever an earlier case left there (often plausible values): poison
    // them at once, so that outputs a run never writes (zero reps, an unwritten tile) stay NaN.
    poison(a, true, true);
    if (c.pass == Pass::bwd)  // the backward's inputs O and LSE (and the naive path's P), untimed
      entry.forward(a.p, ctx(), a.state);
    for (int r = 0; r < timing.warmup; ++r) launch(a, c, false, nullptr, nullptr);
    stream.sync();
    FB_CUDA_CHECK(cudaGetLastError());
    a.run.peak_bytes = alloc.peak() - base;
    if (entry.tile) a.run.tile = entry.tile(c.pass == Pass::fwd ? Pass::fwd : Pass::bwd, a.p, ctx());
    armed.push_back(std::move(a));
  }

  void disarm(const std::string& name) {
    armed.erase(std::remove_if(armed.begin(), armed.end(), [&](const Armed& a) { return a.name == name; }),
                armed.end());
  }

  // One launch of armed kernel i; a launch that throws becomes RoundError(i) (the others may still run).
  void launch_armed(std::size_t i, const Case& c, bool timed, std::vector<cuda::Event>* starts,
                    std::vector<cuda::Event>* stops) {
    try {
      launch(armed[i], c, timed, starts, stops);
    } catch (const std::exception& e) {
      throw RoundError(i, e.what());
    }
  }

  std::vector<KernelRun> run_armed(const TimingPolicy& timing) {
    refuse_if_lost();
    const Case& c = current_case();
    const std::size_t k = armed.size();
    if (k == 0) return {};
    // Then by time (TimingPolicy::warmup_min_s): clocks step up for ~100 ms after the device idled. A round
    // is one run of every armed kernel.
    if (timing.warmup_min_s > 0) {
      stream.sync();
      const auto t0 = std::chrono::steady_clock::now();
      const auto since = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
      int chunk = 1, done = 0;
      for (double t = 0; t < timing.warmup_min_s && done < kMaxWarmupRuns; t = since()) {
        for (int r = 0; r < chunk; ++r)
          for (std::size_t i = 0; i < k; ++i) launch_armed(i, c, false, nullptr, nullptr);
        stream.sync();
        done += chunk;
        const double per_round = since() / done;
        chunk = int(std::clamp((timing.warmup_min_s - since()) / std::max(per_round, 1e-6) / 2, 1.0, 1000.0));
      }
    }
    // Timed rounds in batches, queued back to back; the stream syncs only between batches (one batch in
    // fixed mode), when the policy looks at the samples so far.
    std::vector<std::vector<double>> times(k);
    std::vector<std::vector<cuda::Event>> starts(k), stops(k);
    double elapsed_s = 0;
    long long round = 0;
    for (int n; (n = next_rounds(timing, times, elapsed_s)) > 0;) {
      const auto batch_start = std::chrono::steady_clock::now();
      for (std::size_t i = 0; i < k; ++i) {
        starts[i].clear();
        stops[i].clear();
        starts[i].reserve(std::size_t(n));
        stops[i].reserve(std::size_t(n));
      }
      for (int r = 0; r < n; ++r, ++round)
        for (const int i : round_order(int(k), round)) launch_armed(std::size_t(i), c, true, &starts[i], &stops[i]);
      const Nvml::SmReading now = nvml.sm_reading(pci_bus_id);  // the batch queued: the GPU runs its rounds now
      for (Armed& a : armed) note_clock(a.run, now);
      stream.sync();
      for (std::size_t i = 0; i < k; ++i)
        for (std::size_t j = 0; j < starts[i].size(); ++j) times[i].push_back(stops[i][j].since(starts[i][j]));
      elapsed_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - batch_start).count();
    }
    stream.sync();
    FB_CUDA_CHECK(cudaGetLastError());

    std::vector<KernelRun> runs;
    for (std::size_t i = 0; i < k; ++i) {
      armed[i].run.times_ms = std::move(times[i]);
      runs.push_back(std::move(armed[i].run));
      kept[armed[i].name] = std::move(armed[i].out);
    }
    armed.clear();
    return runs;
  }

  // A reading of the SM clock and its event reasons into run (KernelRun::sm_mhz_min, clock_event_reasons).
  static void note_clock(KernelRun& run, const Nvml::SmReading& now) {
    if (now.mhz) run.sm_mhz_min = std::min(run.sm_mhz_min.value_or(*now.mhz), *now.mhz);
    if (now.event_reasons) run.clock_event_reasons = run.clock_event_reasons.value_or(0) | *now.event_reasons;
  }

  void run_reference() {
    refuse_if_lost();
    const Case& c = current_case();
    kept.erase(kReferenceName);
    AttentionParams p = input_params();
    p.dtype = Dtype::fp64;
    const cuda::Ops& reference = cuda::reference_ops();
    if (const char* why = reference.unsupported(c.pass, p)) throw BackendError(why);

    const cuda::Context cx = ctx();
    // Inputs in fp64: the typed inputs converted exactly (fp64 inputs are used as they are). fp8: the
    // same e4m3 codes times their descales, exact in fp64, so the error measured is the kernel's, not
    // the quantisation of its inputs.
    DeviceBuffer q64, k64, v64, dout64;
    if (c.dtype != Dtype::fp64) {
      const auto widen = [&](const DeviceBuffer& src, std::int64_t n, const char* what, float factor) {
        DeviceBuffer dst = alloc.allocate(std::uint64_t(n) * sizeof(double), std::string(what) + " (fp64)");
        cuda::to_fp64(src.get(), c.dtype, dst.as<double>(), n, cx, factor);
        return dst;
      };
      q64 = widen(q, p.q_elems(), "Q", descale[0]);
      k64 = widen(k, p.kv_elems(), "K", descale[1]);
      v64 = widen(v, p.kv_elems(), "V", descale[2]);
      if (dout) dout64 = widen(dout, p.q_elems(), "dO", 1.0f);
      p.q = q64.get();
      p.k = k64.get();
      p.v = v64.get();
      p.dout = dout64.get();
    }
    Outputs ref = allocate_outputs(alloc, c, Dtype::fp64);
    const DeviceBuffer ws = alloc.allocate(reference.workspace_bytes(c.pass, p), "reference workspace");
    bind_outputs(p, ref);
    p.workspace = ws.get();
    const cudaStream_t s = stream.get();
    for (const DeviceBuffer* b : {&ref.o, &ref.lse, &ref.dq, &ref.dk, &ref.dv}) cuda::poison(*b, s);
    reference.forward(p, cx);
    if (has_backward(c.pass)) reference.backward(p, cx);
    stream.sync();
    kept[kReferenceName] = std::move(ref);
  }

  const Outputs& kept_outputs(const std::string& name) const {
    const auto it = kept.find(name);
    if (it == kept.end())
      throw BackendError(fmt::format("cuda backend: no outputs kept under '{}' (run it first)", name));
    return it->second;
  }

  ErrorReport compare(const std::string& a_name, const std::string& b_name) {
    refuse_if_lost();
    const Case& c = current_case();
    const Outputs& a = kept_outputs(a_name);
    const Outputs& b = kept_outputs(b_name);
    const AttentionParams p = c.params();
    struct Tensor {
      const char* name;
      const DeviceBuffer* a;
      const DeviceBuffer* b;
      Dtype ta, tb;
      std::int64_t n;
    };
    // O, dQ, dK, dV are stored in output_dtype (bf16 for fp8); LSE in the accumulator type.
    const Dtype oa = output_dtype(a.dtype), ob = output_dtype(b.dtype);
    std::vector<Tensor> tensors = {
        {"O", &a.o, &b.o, oa, ob, p.q_elems()},
        {"LSE", &a.lse, &b.lse, lse_dtype(a.dtype), lse_dtype(b.dtype), p.rows()},
    };
    if (has_backward(c.pass)) {
      tensors.push_back({"dQ", &a.dq, &b.dq, oa, ob, p.q_elems()});
      tensors.push_back({"dK", &a.dk, &b.dk, oa, ob, p.kv_elems()});
      tensors.push_back({"dV", &a.dv, &b.dv, oa, ob, p.kv_elems()});
    }
    const cuda::Context cx = ctx();
    ErrorReport rep;
    rep.rows_compared = p.rows();
    for (const Tensor& t : tensors) {
      if (!*t.a || !*t.b)
        throw BackendError(fmt::format("compare: '{}' or '{}' has no {}", a_name, b_name, t.name));
      const cuda::Diff d =
          t.tb == Dtype::fp64
              ? cuda::max_abs_diff(t.a->get(), t.ta, t.b->as<double>(), t.n, cx)
              : cuda::max_abs_diff_typed(t.a->get(), t.ta, t.b->get(), t.tb, t.n, cx);
      rep.max_abs.emplace_back(t.name, d.nonfinite > 0 ? std::numeric_limits<double>::infinity() : d.max_abs);
      rep.magnitude.emplace_back(t.name, d.b_max_abs);
      rep.nonfinite += d.nonfinite;
    }
    return rep;
  }

  // factor: an fp8 tensor's descale (its real values are code * factor).
  HostTensor to_host(const char* name, const DeviceBuffer& buf, Dtype t, std::vector<std::int64_t> shape,
                     float factor = 1.0f) {
    HostTensor h;
    h.name = name;
    h.dtype = t;
    h.shape = std::move(shape);
    std::int64_t n = 1;
    for (std::int64_t s : h.shape) n *= s;
    DeviceBuffer wide = alloc.allocate(std::uint64_t(n) * sizeof(double), "fetch");
    cuda::to_fp64(buf.get(), t, wide.as<double>(), n, ctx(), factor);
    h.values.resize(std::size_t(n));
    FB_CUDA_CHECK(cudaMemcpyAsync(h.values.data(), wide.get(), std::size_t(n) * sizeof(double),
                                  cudaMemcpyDeviceToHost, stream.get()));
    FB_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    return h;
  }

  std::vector<HostTensor> fetch(const std::string& what) {
    refuse_if_lost();
    const Case& c = current_case();
    const std::vector<std::int64_t> qs = {c.batch, c.heads, c.seq_q, c.head_dim};
    const std::vector<std::int64_t> kvs = {c.batch, c.kv_heads, c.seq_k, c.head_dim};
    std::vector<HostTensor> out;
    if (what == "inputs") {
      // fp8: the real values, codes times descales.
      out.push_back(to_host("Q", q, c.dtype, qs, descale[0]));
      out.push_back(to_host("K", k, c.dtype, kvs, descale[1]));
      out.push_back(to_host("V", v, c.dtype, kvs, descale[2]));
      if (dout) out.push_back(to_host("dO", dout, c.dtype, qs));
      return out;
    }
    const Outputs& o = kept_outputs(what);
    const Dtype ot = output_dtype(o.dtype);  // bf16 for fp8
    out.push_back(to_host("O", o.o, ot, qs));
    out.push_back(to_host("LSE", o.lse, lse_dtype(o.dtype), {c.batch, c.heads, c.seq_q}));
    if (o.dq) out.push_back(to_host("dQ", o.dq, ot, qs));
    if (o.dk) out.push_back(to_host("dK", o.dk, ot, kvs));
    if (o.dv) out.push_back(to_host("dV", o.dv, ot, kvs));
    return out;
  }

  nlohmann::json device_json() const {
    refuse_if_lost();
    nlohmann::json j;
    j["name"] = props.name;
    j["index"] = device;
    j["pci_bus_id"] = pci_bus_id;
    j["compute_capability"] = fmt::format("{}.{}", props.major, props.minor);
    j["sm_count"] = props.multiProcessorCount;
    j["l2_bytes"] = props.l2CacheSize;
    j["shared_memory_per_block_optin_bytes"] = props.sharedMemPerBlockOptin;
    std::size_t free_b = 0, total_b = 0;
    FB_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    j["memory"] = {{"total_bytes", total_b}, {"free_bytes", free_b}};

    constexpr int kKHzPerMHz = 1000;
    int sm_khz = 0, mem_khz = 0;
    FB_CUDA_CHECK(cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, device));
    FB_CUDA_CHECK(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device));
    nlohmann::json clocks;
    const auto sm = nvml.clock_mhz(pci_bus_id, Nvml::kClockSm);
    const auto mem = nvml.clock_mhz(pci_bus_id, Nvml::kClockMem);
    clocks["sm_mhz"] = sm ? nlohmann::json(*sm) : nlohmann::json();
    clocks["memory_mhz"] = mem ? nlohmann::json(*mem) : nlohmann::json();
    clocks["sm_max_mhz"] = sm_khz / kKHzPerMHz;
    clocks["memory_max_mhz"] = mem_khz / kKHzPerMHz;
    clocks["source"] = nvml.ok() ? "nvml (current), cuda attributes (max)" : "cuda attributes (max only)";
    j["clocks"] = clocks;

    int drv = 0, rt = 0;
    FB_CUDA_CHECK(cudaDriverGetVersion(&drv));
    FB_CUDA_CHECK(cudaRuntimeGetVersion(&rt));
    j["driver_cuda_version"] = version_string(drv);
    j["runtime_version"] = version_string(rt);
    int maj = 0, min = 0, patch = 0;
    FB_CUBLAS_CHECK(cublasGetProperty(MAJOR_VERSION, &maj));
    FB_CUBLAS_CHECK(cublasGetProperty(MINOR_VERSION, &min));
    FB_CUBLAS_CHECK(cublasGetProperty(PATCH_LEVEL, &patch));
    j["cublas_version"] = fmt::format("{}.{}.{}", maj, min, patch);
#if FLASHBENCH_HAVE_CUDNN
    // The library loaded at run time (major * 10000 + minor * 100 + patch since cuDNN 9).
    constexpr std::size_t kCudnnMajor = 10000, kCudnnMinor = 100;
    const std::size_t cudnn = cuda::cudnn_version();
    j["cudnn_version"] = fmt::format("{}.{}.{}", cudnn / kCudnnMajor, cudnn / kCudnnMinor % kCudnnMinor,
                                     cudnn % kCudnnMinor);
#endif
    return j;
  }
};

namespace {
void select_device(int device) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    n = 0;
  }
  if (device < 0 || device >= n)
    throw std::runtime_error(fmt::format("--device {}: {} CUDA device(s) visible", device, n));
  FB_CUDA_CHECK(cudaSetDevice(device));
}
}  // namespace

CudaBackend::CudaBackend(int device) {
  select_device(device);
  impl_ = std::make_unique<Impl>(device);
}

CudaBackend::~CudaBackend() = default;

nlohmann::json CudaBackend::device() const {
  return guarded([&] { return impl_->device_json(); });
}

nlohmann::json CudaBackend::settings() const {
  return {
      {"timer", "cuda events"},
      {"l2_flush", true},
      {"l2_flush_bytes", impl_->l2.bytes()},
      {"l2_flush_mode", impl_->l2.mode_name()},
      {"poison", "outputs set to NaN (0xFF bytes) when allocated and before every rep"},
      {"fp32_gemm", "exact FP32 (CUBLAS_COMPUTE_32F_PEDANTIC, no TF32)"},
  };
}

std::optional<std::string> CudaBackend::check_fits(const Case& c, const Descriptor& kernel) {
  return guarded([&] { return impl_->check_fits(c, kernel); });
}

std::optional<std::uint64_t> CudaBackend::bytes_needed(const Case& c, const Descriptor& kernel) {
  return guarded([&] { return std::optional<std::uint64_t>(impl_->bytes_needed(c, kernel)); });
}

void CudaBackend::prepare(const Case& c, std::uint64_t seed, double input_scale) {
  guarded([&] { impl_->prepare(c, seed, input_scale); });
}

void CudaBackend::arm(const Descriptor& kernel, const TimingPolicy& timing) {
  guarded([&] { impl_->arm(kernel, timing); });
}

std::vector<KernelRun> CudaBackend::run_armed(const TimingPolicy& timing) {
  return guarded([&] { return impl_->run_armed(timing); });
}

void CudaBackend::disarm(const std::string& kernel) {
  guarded([&] { impl_->disarm(kernel); });
}

void CudaBackend::run_reference() {
  guarded([&] { impl_->run_reference(); });
}

ErrorReport CudaBackend::compare(const std::string& a, const std::string& b) {
  return guarded([&] { return impl_->compare(a, b); });
}

std::vector<HostTensor> CudaBackend::fetch(const std::string& what) {
  return guarded([&] { return impl_->fetch(what); });
}

void CudaBackend::release() {
  guarded([&] { impl_->release(); });
}

std::optional<std::string> CudaBackend::context_lost() { return impl_->probe_context(); }

std::uint64_t CudaBackend::tracked_bytes() const { return impl_->alloc.current(); }

std::unique_ptr<Backend> make_cuda_backend(int device) { return std::make_unique<CudaBackend>(device); }

// ---------------------------------------------------------------------------------------------------
// Ceilings: what this device can do at best, measured the way the kernels are timed (CUDA events,
// median of reps after warm-up), to put achieved GB/s and TFLOP/s in proportion.
namespace {

constexpr std::size_t kCopyBytes = std::size_t(1) << 30;  // 1 GiB each way: far beyond any L2
constexpr int kGemmN = 8192;                              // square bf16 GEMM, large enough to saturate
constexpr int kCeilingWarmup = 3;
constexpr int kCopyReps = 20;
constexpr int kGemmReps = 10;
constexpr std::uint64_t kCeilingSeed = 1;

template <typename Launch> double median_ms(cudaStream_t s, int warmup, int reps, Launch&& launch) {
  for (int i = 0; i < warmup; ++i) launch();
  std::vector<cuda::Event> starts(reps), stops(reps);
  for (int i = 0; i < reps; ++i) {
    starts[i].record(s);
    launch();
    stops[i].record(s);
  }
  FB_CUDA_CHECK(cudaStreamSynchronize(s));
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) ms.push_back(stops[i].since(starts[i]));
  return median(ms);
}

}  // namespace

nlohmann::json measure_ceilings(int device) {
  select_device(device);
  TrackingAllocator alloc;
  cuda::Stream stream;
  cuda::CublasHandle cublas(stream.get());
  const cudaStream_t s = stream.get();
  const cuda::Context cx{s, cublas.get()};

  // Device-to-device copy: bytes read plus bytes written.
  double copy_ms = 0;
  {
    const DeviceBuffer src = alloc.allocate(kCopyBytes, "copy source");
    const DeviceBuffer dst = alloc.allocate(kCopyBytes, "copy destination");
    cuda::fill_normal(src.get(), Dtype::fp32, std::int64_t(kCopyBytes / sizeof(float)), kCeilingSeed, 0, cx);
    copy_ms = median_ms(s, kCeilingWarmup, kCopyReps, [&] {
      FB_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), kCopyBytes, cudaMemcpyDeviceToDevice, s));
    });
  }

  // bf16 GEMM C = A B on random data (zeros run faster and would flatter the ceiling).
  double gemm_ms = 0;
  {
    const std::int64_t elems = std::int64_t(kGemmN) * kGemmN;
    const std::size_t bytes = std::size_t(elems) * dtype_bytes(Dtype::bf16);
    const DeviceBuffer a = alloc.allocate(bytes, "GEMM A");
    const DeviceBuffer b = alloc.allocate(bytes, "GEMM B");
    const DeviceBuffer c = alloc.allocate(bytes, "GEMM C");
    cuda::fill_normal(a.get(), Dtype::bf16, elems, kCeilingSeed, 1, cx);
    cuda::fill_normal(b.get(), Dtype::bf16, elems, kCeilingSeed, 2, cx);
    const float alpha = 1.0f, beta = 0.0f;
    gemm_ms = median_ms(s, kCeilingWarmup, kGemmReps, [&] {
      FB_CUBLAS_CHECK(cublasGemmEx(cublas.get(), CUBLAS_OP_N, CUBLAS_OP_N, kGemmN, kGemmN, kGemmN, &alpha,
                                   a.get(), CUDA_R_16BF, kGemmN, b.get(), CUDA_R_16BF, kGemmN, &beta,
                                   c.get(), CUDA_R_16BF, kGemmN, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    });
  }
  FB_CUDA_CHECK(cudaGetLastError());

  constexpr double kGiga = 1e9, kTera = 1e12, kMsPerS = 1e3;
  const double gemm_flops = 2.0 * double(kGemmN) * kGemmN * kGemmN;
  return {
      {"copy_gbps", 2.0 * double(kCopyBytes) / (copy_ms / kMsPerS) / kGiga},
      {"copy_bytes_each_way", kCopyBytes},
      {"copy_ms", copy_ms},
      {"copy_reps", kCopyReps},
      {"gemm_bf16_tflops", gemm_flops / (gemm_ms / kMsPerS) / kTera},
      {"gemm_shape", {kGemmN, kGemmN, kGemmN}},
      {"gemm_ms", gemm_ms},
      {"gemm_reps", kGemmReps},
      {"timer", "cuda events, median after warm-up"},
  };
}

}  // namespace fb
