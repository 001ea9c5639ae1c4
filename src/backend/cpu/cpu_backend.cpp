// fb::Backend on the CPU: seeded inputs, steady_clock timing, tracked memory, fp64 reference.
#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/cpu/numeric.h"

namespace fb::cpu {

namespace {

using Index = std::int64_t;

constexpr double kGiB = double(1ull << 30);
constexpr const char* kReferenceName = "reference";  // the name run_reference() keeps outputs under
constexpr std::uint64_t kSampleSeedSalt = 0x5eed5a3b1e5ull;  // separates row sampling from inputs

// ---- environment ----

// A "key: value" line of a /proc file, nullopt if the file or key is missing.
std::optional<std::string> proc_field(const char* path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const auto start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? std::string() : line.substr(start);
  }
  return std::nullopt;
}

// /proc/meminfo values are in kB.
std::optional<std::uint64_t> meminfo_bytes(const std::string& key) {
  const auto v = proc_field("/proc/meminfo", key);
  if (!v) return std::nullopt;
  try {
    return std::stoull(*v) * 1024ull;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string compiler_name() {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "gcc " __VERSION__;
#else
  return "unknown";
#endif
}

// ---- seeded inputs ----

// SplitMix64 step: turns (seed, stream) into well-mixed generator seeds.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// n standard normal values from (seed, stream), rounded to T: Box-Muller on std::mt19937_64, whose
// output the C++ standard fixes bit for bit (std::normal_distribution's algorithm is not fixed).
template <class T> void fill_normal(T* dst, Index n, std::uint64_t seed, std::uint64_t stream, double scale = 1.0) {
  std::mt19937_64 gen(mix(seed ^ mix(stream)));
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  constexpr double kUnit = 1.0 / 9007199254740992.0;  // 2^-53
  for (Index i = 0; i < n; i += 2) {
    const double u1 = double((gen() >> 11) + 1) * kUnit;  // (0, 1]: log(u1) is finite
    const double u2 = double(gen() >> 11) * kUnit;        // [0, 1)
    const double r = scale * std::sqrt(-2.0 * std::log(u1));
    dst[i] = store<T>(static_cast<AccOf<T>>(r * std::cos(kTwoPi * u2)));
    if (i + 1 < n) dst[i + 1] = store<T>(static_cast<AccOf<T>>(r * std::sin(kTwoPi * u2)));
  }
}

// fp8 (kernels/attention.h): n values drawn as fill_normal draws them (in fp32), quantised with their
// own per-tensor scale s = amax / 448 (1 when all are zero): dst = e4m3(x / s). Returns s, the
// descale factor (the real tensor is dst * s).
float fill_normal_fp8(Fp8E4m3* dst, Index n, std::uint64_t seed, std::uint64_t stream, double scale = 1.0) {
  std::vector<float> x(static_cast<std::size_t>(n));
  fill_normal(x.data(), n, seed, stream, scale);
  float amax = 0;
  for (float v : x) amax = std::max(amax, std::abs(v));
  const float s = amax > 0 ? amax / kFp8E4m3Max : 1.0f;
  for (Index i = 0; i < n; ++i) dst[i] = store<Fp8E4m3>(x[std::size_t(i)] / s);
  return s;
}

// Converts n elements of type t at `src` + offset to double.
// `factor` multiplies each (an fp8 tensor's descale).
void to_double_n(const void* src, Dtype t, Index offset, Index n, double* out, double factor = 1.0) {
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    const T* s = static_cast<const T*>(src) + offset;
    for (Index i = 0; i < n; ++i) out[i] = to_double(s[i]) * factor;
  });
}

Dtype accum_dtype(Dtype t) { return t == Dtype::fp64 ? Dtype::fp64 : Dtype::fp32; }

// A row with no visible key has LSE = -inf by definition (attention.h): -inf against -inf is a match
// (error 0); -inf on one side only still fails, as any non-finite value does.
bool both_minus_inf(double a, double b) {
  return a == -std::numeric_limits<double>::infinity() && b == a;
}

// ---- kept outputs ----

// One output tensor: `groups` (batch*heads or batch*kv_heads) blocks of `rows` rows of `width`.
struct Tensor {
  Dtype dtype = Dtype::fp64;
  int groups = 0;
  int width = 0;
  bool kv_side = false;         // rows are key rows (dK, dV) rather than query rows
  Buffer owned;                 // kernel outputs: tracked
  std::vector<double> owned64;  // reference outputs
  const void* data() const {
    return owned.empty() ? static_cast<const void*>(owned64.data()) : owned.data();
  }
  void* data() { return owned.empty() ? static_cast<void*>(owned64.data()) : owned.data(); }
};

struct Outputs {
  std::vector<int> q_rows, kv_rows;  // reference: rows held; kernels: empty (all rows)
  bool sampled = false;              // rows are a subset (the reference's)
  std::vector<std::pair<std::string, Tensor>> tensors;  // in order O, LSE, dQ, dK, dV
  Tensor* find(const std::string& name) {
    for (auto& [n, t] : tensors)
      if (n == name) return &t;
    return nullptr;
  }
};

// The reps' default timer (BackendOptions::clock_ms): steady_clock in ms.
double steady_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

class CpuBackendImpl final : public CpuBackend {
 public:
  explicit CpuBackendImpl(const BackendOptions& options)
      : options_(options),
        tiles_(options.tiles),
        pool_(options.threads > 0 ? options.threads : default_thread_count()),
        now_ms_(options.clock_ms ? options.clock_ms : steady_ms) {
    check_shape(Case{}.params(), tiles_);  // a bad tile shape fails here, not mid-sweep
    tracker_.set_limit(options.memory_limit);
  }

  std::string name() const override { return "cpu"; }

  nlohmann::json device() const override {
    nlohmann::json j;
    j["name"] = proc_field("/proc/cpuinfo", "model name").value_or("unknown CPU");
    j["threads"] = pool_.size();
    j["hardware_threads"] = std::thread::hardware_concurrency();
    j["compiler"] = compiler_name();
    if (auto total = meminfo_bytes("MemTotal")) j["memory_bytes"] = *total;
    return j;
  }

  nlohmann::json settings() const override {
    return {{"timer", "steady_clock"},
            {"threads", pool_.size()},
            {"tiles", {{"br", tiles_.br}, {"bc", tiles_.bc}}}};
  }

  std::optional<std::string> check_fits(const Case& c, const Descriptor& kernel) override {
    if (!kernel.cpu) return fmt::format("kernel '{}' does not run on the CPU backend", kernel.name);
    if (auto why = kernel.cpu.unsupported(c.pass, c.params())) return why;
    const auto available = meminfo_bytes("MemAvailable");
    // Cannot tell: let it try (an allocation failure still fails the case cleanly).
    if (!available) return std::nullopt;
    const auto [io, matrices] = planned_bytes(c, kernel);
    const double e = double(dtype_bytes(c.dtype));
    const double usable = kUsableMemoryFraction * double(*available);
    if (io + matrices <= usable) return std::nullopt;
    const std::string limit = fmt::format("more than {:.0f}% of the {:.2f} GiB of memory available",
                                          kUsableMemoryFraction * 100, double(*available) / kGiB);
    if (matrices == 0)
      return fmt::format("{} needs {:.2f} GiB of inputs and outputs, {}", kernel.name, io / kGiB,
                         limit);
    return fmt::format(
        "{} needs {:.2f} GiB: {:.2f} GiB of seq_q x seq_k arrays (2 x {}x{}x{}x{} x {} bytes) and "
        "{:.2f} GiB of inputs and outputs, {}",
        kernel.name, (io + matrices) / kGiB, matrices / kGiB, c.batch, c.heads, c.seq_q, c.seq_k, e,
        io / kGiB, limit);
  }

  std::optional<std::uint64_t> bytes_needed(const Case& c, const Descriptor& kernel) override {
    const auto [io, matrices] = planned_bytes(c, kernel);
    return std::uint64_t(io + matrices);
  }

  // {inputs and outputs, naive's N x N arrays} in bytes: what check_fits() sets against free memory.
  static std::pair<double, double> planned_bytes(const Case& c, const Descriptor& kernel) {
    const AttentionParams p = c.params();
    const double e = double(dtype_bytes(c.dtype)), a = double(accum_bytes(c.dtype));
    double outputs = double(p.q_elems()) * double(dtype_bytes(output_dtype(c.dtype))) + double(p.rows()) * a;
    if (c.pass != Pass::fwd) outputs += double(p.q_elems() + 2 * p.kv_elems()) * e;
    const double io = double(input_bytes(c)) + outputs;
    // The N x N arrays a baseline holds (its own scratch), or the workspace a kernel asks for.
    const double matrices = kernel.role == Role::baseline ? double(naive_matrix_bytes(p))
                            : kernel.cpu                  ? double(kernel.cpu.workspace_bytes(c.pass, p))
                                                          : 0.0;
    return {io, matrices};
  }

  void prepare(const Case& c, std::uint64_t seed, double input_scale = 1.0) override {
    release();
    const AttentionParams p = c.params();
    try {
      check_shape(p, tiles_);
    } catch (const std::invalid_argument& e) {
      throw BackendError(fmt::format("cpu: case {}: {}", c.key(), e.what()));
    }
    const std::size_t e = dtype_bytes(c.dtype);
    try {
      q_.resize(p.q_elems() * e);
      k_.resize(p.kv_elems() * e);
      v_.resize(p.kv_elems() * e);
      if (c.pass != Pass::fwd) dout_.resize(p.q_elems() * e);
    } catch (const std::bad_alloc&) {
      release();
      throw BackendError(fmt::format("cpu: out of memory allocating {} bytes of inputs for {}",
                                     input_bytes(c), c.key()));
    }
    descale_ = {1, 1, 1};
    dispatch_dtype(c.dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, Fp8E4m3>) {  // forward only: no dO
        descale_[0] = fill_normal_fp8(reinterpret_cast<T*>(q_.data()), p.q_elems(), seed, 0, input_scale);
        descale_[1] = fill_normal_fp8(reinterpret_cast<T*>(k_.data()), p.kv_elems(), seed, 1, input_scale);
        descale_[2] = fill_normal_fp8(reinterpret_cast<T*>(v_.data()), p.kv_elems(), seed, 2);
        return;
      }
      // One stream per tensor, so Q does not change when dO is added for a backward case.
      fill_normal(reinterpret_cast<T*>(q_.data()), p.q_elems(), seed, 0, input_scale);
      fill_normal(reinterpret_cast<T*>(k_.data()), p.kv_elems(), seed, 1, input_scale);
      fill_normal(reinterpret_cast<T*>(v_.data()), p.kv_elems(), seed, 2);
      if (c.pass != Pass::fwd)
        fill_normal(reinterpret_cast<T*>(dout_.data()), p.q_elems(), seed, 3);
    });
    case_ = c;
    seed_ = seed;
  }

  void arm(const Descriptor& kernel, const TimingPolicy& timing) override {
    if (!case_) throw BackendError("cpu: arm() before prepare()");
    if (!kernel.cpu)
      throw BackendError(fmt::format("cpu: kernel '{}' does not run on the CPU backend", kernel.name));
    if (timing.warmup < 0 || timing.reps < 1)
      throw BackendError(fmt::format("cpu: warmup must be >= 0 and reps >= 1, got {} and {}",
                                     timing.warmup, timing.reps));
    const std::string key(kernel.name);
    disarm(key);
    kept_.erase(key);  // its old outputs must not count against this run's memory
    guarded(kernel.name, [&] { arm_kernel(kernel.cpu, key, timing); });
  }

  std::vector<KernelRun> run_armed(const TimingPolicy& timing) override {
    if (!case_) throw BackendError("cpu: run_armed() before prepare()");
    const std::size_t k = armed_.size();
    std::vector<std::vector<double>> times(k);
    using clock = std::chrono::steady_clock;
    double elapsed_s = 0;  // wall time of the timed rounds, poisoning included (the adaptive cap)
    long long round = 0;
    for (int n; (n = next_rounds(timing, times, elapsed_s)) > 0;) {
      const auto batch_start = clock::now();
      for (int r = 0; r < n; ++r, ++round)
        for (const int i : round_order(int(k), round)) {
          Armed& a = *armed_[std::size_t(i)];
          try {
            guarded(a.key, [&] { times[std::size_t(i)].push_back(a.rep(tracker_, now_ms_)); });
          } catch (const std::exception& e) {  // the kernel's own failure, as run() would report it
            throw RoundError(std::size_t(i), e.what());
          }
        }
      elapsed_s += std::chrono::duration<double>(clock::now() - batch_start).count();
    }
    std::vector<KernelRun> runs;
    for (std::size_t i = 0; i < k; ++i) {
      Armed& a = *armed_[i];
      a.run.times_ms = std::move(times[i]);
      a.run.peak_bytes = std::max(a.run.peak_bytes, a.held + a.rep_extra);
      a.saved.p.reset();
      runs.push_back(std::move(a.run));
      kept_[a.key] = std::move(a.out);
    }
    armed_.clear();
    return runs;
  }

  void disarm(const std::string& kernel) override {
    armed_.erase(std::remove_if(armed_.begin(), armed_.end(), [&](const auto& a) { return a->key == kernel; }),
                 armed_.end());
  }

  void run_reference() override {
    if (!case_) throw BackendError("cpu: run_reference() before prepare()");
    // The reference depends on the prepared inputs alone: computed once per prepare().
    if (kept_.count(kReferenceName)) return;
    const Case& c = *case_;
    try {
      // The same dtype-rounded inputs the kernels read, widened to fp64.
      AttentionParams p = c.params();
      p.dtype = Dtype::fp64;
      std::vector<double> q(p.q_elems()), k(p.kv_elems()), v(p.kv_elems()), dout;
      // fp8: the same e4m3 codes times their descales, exact in fp64 (4 x 24 significant bits), so
      // the error measured is the kernel's, not the quantisation of its inputs.
      to_double_n(q_.data(), c.dtype, 0, p.q_elems(), q.data(), descale_[0]);
      to_double_n(k_.data(), c.dtype, 0, p.kv_elems(), k.data(), descale_[1]);
      to_double_n(v_.data(), c.dtype, 0, p.kv_elems(), v.data(), descale_[2]);
      p.q = q.data();
      p.k = k.data();
      p.v = v.data();

      const double work = double(c.batch) * c.heads * double(c.seq_q) * c.seq_k * c.head_dim;
      const std::uint64_t sample_seed = seed_ ^ kSampleSeedSalt;
      Outputs out;
      out.q_rows = reference_rows(work, c.seq_q, mix(sample_seed));
      out.sampled = static_cast<int>(out.q_rows.size()) < c.seq_q;
      const Index nq = Index(out.q_rows.size());
      const int bh = c.batch * c.heads, bkv = c.batch * c.kv_heads;

      Tensor o = fp64_tensor(bh, c.head_dim, nq, false);
      Tensor lse = fp64_tensor(bh, 1, nq, false);
      reference_forward(p, out.q_rows, o.owned64.data(), lse.owned64.data(), pool_);
      out.tensors.emplace_back("O", std::move(o));
      out.tensors.emplace_back("LSE", std::move(lse));

      if (c.pass != Pass::fwd) {
        dout.resize(p.q_elems());
        to_double_n(dout_.data(), c.dtype, 0, p.q_elems(), dout.data());
        p.dout = dout.data();
        if (work <= options_.stats_work)
          out.kv_rows = reference_rows(work, c.seq_k, mix(sample_seed + 1));
        out.sampled =
            out.sampled || (!out.kv_rows.empty() && static_cast<int>(out.kv_rows.size()) < c.seq_k);
        const Index nkv = Index(out.kv_rows.size());
        Tensor dq = fp64_tensor(bh, c.head_dim, nq, false);
        Tensor dk = fp64_tensor(bkv, c.head_dim, nkv, true);
        Tensor dv = fp64_tensor(bkv, c.head_dim, nkv, true);
        reference_backward(p, out.q_rows, out.kv_rows, dq.owned64.data(), dk.owned64.data(),
                           dv.owned64.data(), pool_);
        out.tensors.emplace_back("dQ", std::move(dq));
        if (nkv > 0) {
          out.tensors.emplace_back("dK", std::move(dk));
          out.tensors.emplace_back("dV", std::move(dv));
        }
      }
      kept_[kReferenceName] = std::move(out);
    } catch (const std::bad_alloc&) {
      throw BackendError(
          fmt::format("cpu: reference: out of memory for {} (its fp64 copies of the "
                      "inputs need {} bytes)",
                      c.key(), input_bytes(c) / dtype_bytes(c.dtype) * 8));
    }
  }

  ErrorReport compare(const std::string& a_name, const std::string& b_name) override {
    Outputs* a = find_outputs(a_name);
    Outputs* b = find_outputs(b_name);
    const Case& c = *case_;
    // Rows: those the sampled side holds (both sampled: they must be the same rows).
    if (a->sampled && b->sampled && (a->q_rows != b->q_rows || a->kv_rows != b->kv_rows))
      throw BackendError(fmt::format("cpu: '{}' and '{}' hold different rows", a_name, b_name));
    const Outputs& rows_from = b->sampled ? *b : *a;
    const std::vector<int> all_q = all_rows(c.seq_q), all_kv = all_rows(c.seq_k);
    const std::vector<int>& q_rows = rows_from.sampled ? rows_from.q_rows : all_q;
    const std::vector<int>& kv_rows = rows_from.sampled ? rows_from.kv_rows : all_kv;

    ErrorReport report;
    report.rows_compared = Index(c.batch) * c.heads * Index(q_rows.size());
    std::vector<double> ra(c.head_dim), rb(c.head_dim);
    for (auto& [name, tb] : b->tensors) {
      Tensor* ta = a->find(name);
      if (ta == nullptr) {
        if (a_name == kReferenceName) continue;  // the reference leaves dK/dV out past its budget
        throw BackendError(
            fmt::format("cpu: '{}' has no {} to compare with '{}'", a_name, name, b_name));
      }
      const std::vector<int>& rows = tb.kv_side ? kv_rows : q_rows;
      const Index seq = tb.kv_side ? c.seq_k : c.seq_q;
      double worst = 0, scale = 0;
      for (int g = 0; g < tb.groups; ++g) {
        for (std::size_t x = 0; x < rows.size(); ++x) {
          // Position of sequence row rows[x] inside each tensor: its own index when the tensor
          // holds every row, x when it holds exactly the compared rows.
          const Index ia = a->sampled ? Index(x) : rows[x];
          const Index ib = b->sampled ? Index(x) : rows[x];
          const Index held_a = a->sampled ? Index(rows.size()) : seq;
          const Index held_b = b->sampled ? Index(rows.size()) : seq;
          to_double_n(ta->data(), ta->dtype, (g * held_a + ia) * ta->width, ta->width, ra.data());
          to_double_n(tb.data(), tb.dtype, (g * held_b + ib) * tb.width, tb.width, rb.data());
          for (int col = 0; col < tb.width; ++col) {
            if (both_minus_inf(ra[col], rb[col])) {
              continue;  // the LSE of a row with no visible key, on both sides: error 0
            } else if (!std::isfinite(ra[col])) {
              ++report.nonfinite;
              worst = std::numeric_limits<double>::infinity();
            } else if (!std::isfinite(rb[col])) {
              worst = std::numeric_limits<double>::infinity();  // NaN never passes, on either side
            } else {
              worst = std::max(worst, std::abs(ra[col] - rb[col]));
              scale = std::max(scale, std::abs(rb[col]));
            }
          }
        }
      }
      report.max_abs.emplace_back(name, worst);
      report.magnitude.emplace_back(name, scale);
    }
    return report;
  }

  void release() override {
    armed_.clear();
    kept_.clear();
    std::vector<std::byte>().swap(q_);
    std::vector<std::byte>().swap(k_);
    std::vector<std::byte>().swap(v_);
    std::vector<std::byte>().swap(dout_);
    case_.reset();
  }

  std::optional<TensorView> kept_output(const std::string& kernel,
                                        const std::string& tensor) override {
    auto it = kept_.find(kernel);
    if (it == kept_.end()) return std::nullopt;
    Tensor* t = it->second.find(tensor);
    if (t == nullptr) return std::nullopt;
    const Index rows = t->kv_side
                           ? (it->second.sampled ? Index(it->second.kv_rows.size()) : case_->seq_k)
                           : (it->second.sampled ? Index(it->second.q_rows.size()) : case_->seq_q);
    return TensorView{t->data(), t->dtype, Index(t->groups) * rows * t->width};
  }

  std::optional<TensorView> input(const std::string& tensor) override {
    if (!case_) return std::nullopt;
    const AttentionParams p = case_->params();
    auto view = [&](std::vector<std::byte>& v, Index n) -> std::optional<TensorView> {
      if (v.empty()) return std::nullopt;
      return TensorView{v.data(), case_->dtype, n};
    };
    if (tensor == "Q") return view(q_, p.q_elems());
    if (tensor == "K") return view(k_, p.kv_elems());
    if (tensor == "V") return view(v_, p.kv_elems());
    if (tensor == "dO") return view(dout_, p.q_elems());
    return std::nullopt;
  }

  const MemoryTracker& tracker() const override { return tracker_; }

  std::vector<HostTensor> fetch(const std::string& what) override {
    if (!case_) throw BackendError("cpu: fetch() before prepare()");
    const Case& c = *case_;
    const std::vector<std::int64_t> qs = {c.batch, c.heads, c.seq_q, c.head_dim};
    const std::vector<std::int64_t> kvs = {c.batch, c.kv_heads, c.seq_k, c.head_dim};
    auto host = [](const char* name, const void* data, Dtype t, std::vector<std::int64_t> shape,
                   double factor = 1.0) {
      HostTensor h;
      h.name = name;
      h.dtype = t;
      h.shape = std::move(shape);
      Index n = 1;
      for (std::int64_t s : h.shape) n *= Index(s);
      h.values.resize(std::size_t(n));
      to_double_n(data, t, 0, n, h.values.data(), factor);
      return h;
    };
    std::vector<HostTensor> out;
    if (what == "inputs") {
      // fp8: the real values, codes times descales.
      out.push_back(host("Q", q_.data(), c.dtype, qs, descale_[0]));
      out.push_back(host("K", k_.data(), c.dtype, kvs, descale_[1]));
      out.push_back(host("V", v_.data(), c.dtype, kvs, descale_[2]));
      if (!dout_.empty()) out.push_back(host("dO", dout_.data(), c.dtype, qs));
      return out;
    }
    auto it = kept_.find(what);
    if (it == kept_.end()) throw BackendError(fmt::format("cpu: no outputs kept under '{}'", what));
    if (it->second.sampled) return out;  // a sample of rows: nothing whole to hand out
    for (auto& [name, t] : it->second.tensors) {
      std::vector<std::int64_t> shape = t.kv_side ? kvs : qs;
      if (name == "LSE") shape.pop_back();
      out.push_back(host(name.c_str(), t.data(), t.dtype, shape));
    }
    return out;
  }

 private:
  std::vector<int> reference_rows(double work, int seq, std::uint64_t seed) const {
    if (work <= options_.reference_work) return all_rows(seq);
    // Rows per (batch, head) that keep rows * (work / seq) within the budget.
    const double per_row = work / seq;
    const int count =
        std::max(kMinSampledRows, static_cast<int>(options_.reference_work / per_row));
    return sample_rows(seq, count, seed);
  }

  static Tensor fp64_tensor(int groups, int width, Index rows, bool kv_side) {
    Tensor t;
    t.dtype = Dtype::fp64;
    t.groups = groups;
    t.width = width;
    t.kv_side = kv_side;
    t.owned64.assign(std::size_t(groups) * rows * width, 0.0);
    return t;
  }

  Tensor output_tensor(Dtype t, int groups, int width, bool kv_side) {
    Tensor out;
    out.dtype = t;
    out.groups = groups;
    out.width = width;
    out.kv_side = kv_side;
    const std::size_t rows = std::size_t(kv_side ? case_->seq_k : case_->seq_q);
    out.owned = Buffer(tracker_, std::size_t(groups) * rows * width * dtype_bytes(t));
    return out;
  }

  Outputs* find_outputs(const std::string& name) {
    if (!case_) throw BackendError("cpu: compare() before prepare()");
    auto it = kept_.find(name);
    if (it == kept_.end())
      throw BackendError(fmt::format("cpu: no kept outputs named '{}' (run it first)", name));
    return &it->second;
  }

  // A kernel's failures as BackendError naming it (the runner records the message against the kernel).
  template <class F> static void guarded(std::string_view kernel, F&& f) {
    try {
      f();
    } catch (const BackendError&) {
      throw;
    } catch (const OutOfMemory& e) {
      throw BackendError(fmt::format("cpu: {}: {}", kernel, e.what()));
    } catch (const std::bad_alloc&) {
      throw BackendError(fmt::format("cpu: {}: out of memory", kernel));
    } catch (const std::invalid_argument& e) {
      throw BackendError(fmt::format("cpu: {}: {}", kernel, e.what()));
    }
  }

  // One kernel armed for timing (Backend::arm): its outputs, workspace, what its forward keeps for the
  // backward, and the bytes it holds between reps.
  struct Armed {
    std::string key;
    const CpuEntry* entry = nullptr;
    Pass pass = Pass::fwd;
    AttentionParams p;
    Context ctx;
    Outputs out;
    Buffer workspace;
    Saved saved;  // what the forward keeps for the backward (naive's P)
    KernelRun run;  // peak_bytes: the high-water mark while arming; tile
    std::size_t held = 0;       // bytes held above what was there before arming, between reps
    std::size_t rep_extra = 0;  // the most a rep allocated above what was held when it started

    void poison_outputs(bool fwd_outputs, bool bwd_outputs) {
      for (auto& [name, t] : out.tensors) {
        const bool is_fwd = name == "O" || name == "LSE";
        if ((is_fwd && fwd_outputs) || (!is_fwd && bwd_outputs))
          poison(t.data(), t.dtype, Index(t.owned.bytes() / dtype_bytes(t.dtype)));
      }
    }
    // One rep (outputs poisoned first); its time in ms by `now_ms` (the poisoning outside it).
    double rep(MemoryTracker& tracker, const std::function<double()>& now_ms) {
      poison_outputs(pass != Pass::bwd, pass != Pass::fwd);
      const std::size_t before = tracker.current();
      tracker.reset_peak();
      const double t0 = now_ms();
      if (pass != Pass::bwd) entry->forward(p, ctx, saved);
      if (pass != Pass::fwd) entry->backward(p, ctx, saved);
      const double t1 = now_ms();
      rep_extra = std::max(rep_extra, tracker.peak() - before);
      return t1 - t0;
    }
  };

  void arm_kernel(const CpuEntry& entry, const std::string& key, const TimingPolicy& timing) {
    const Case& c = *case_;
    const bool backward = c.pass != Pass::fwd;
    auto a = std::make_unique<Armed>();
    a->key = key;
    a->entry = &entry;
    a->pass = c.pass;
    a->ctx = Context{&tracker_, &pool_, tiles_};

    // Peak is measured above what is held now (other kernels' kept outputs and armed buffers).
    tracker_.reset_peak();
    const std::size_t baseline = tracker_.current();

    const int bh = c.batch * c.heads, bkv = c.batch * c.kv_heads;
    Outputs& out = a->out;
    out.tensors.emplace_back("O", output_tensor(output_dtype(c.dtype), bh, c.head_dim, false));
    out.tensors.emplace_back("LSE", output_tensor(accum_dtype(c.dtype), bh, 1, false));
    if (backward) {
      out.tensors.emplace_back("dQ", output_tensor(c.dtype, bh, c.head_dim, false));
      out.tensors.emplace_back("dK", output_tensor(c.dtype, bkv, c.head_dim, true));
      out.tensors.emplace_back("dV", output_tensor(c.dtype, bkv, c.head_dim, true));
    }
    AttentionParams& p = a->p;
    p = c.params();
    p.descale_q = descale_[0];
    p.descale_k = descale_[1];
    p.descale_v = descale_[2];
    p.q = q_.data();
    p.k = k_.data();
    p.v = v_.data();
    p.o = out.find("O")->data();
    p.lse = out.find("LSE")->data();
    if (backward) {
      p.dout = dout_.data();
      p.dq = out.find("dQ")->data();
      p.dk = out.find("dK")->data();
      p.dv = out.find("dV")->data();
    }

    if (auto why = entry.unsupported(c.pass, p)) throw std::invalid_argument(*why);
    if (backward && !entry.backward) throw std::invalid_argument("this kernel has no backward pass");
    a->workspace = Buffer(tracker_, entry.workspace_bytes ? entry.workspace_bytes(c.pass, p) : 0);
    p.workspace = a->workspace.data();

    if (c.pass == Pass::bwd) {
      a->poison_outputs(true, true);
      entry.forward(p, a->ctx, a->saved);  // untimed: O, LSE (and naive's P) for the backward
    }
    const std::size_t arm_peak = tracker_.peak() - baseline;
    a->held = tracker_.current() - baseline;
    for (int i = 0; i < timing.warmup; ++i) a->rep(tracker_, now_ms_);
    a->run.peak_bytes = arm_peak;
    if (entry.tile) a->run.tile = entry.tile(c.pass == Pass::fwd ? Pass::fwd : Pass::bwd, p, a->ctx);
    armed_.push_back(std::move(a));
  }

  BackendOptions options_;
  Tiles tiles_;
  MemoryTracker tracker_;
  ThreadPool pool_;
  std::optional<Case> case_;
  std::uint64_t seed_ = 0;
  std::array<float, 3> descale_{1, 1, 1};  // fp8: the descales of Q, K, V (1 for other dtypes)
  std::vector<std::byte> q_, k_, v_,
      dout_;  // inputs in the case dtype (not tracked: not the run's)
  std::map<std::string, Outputs> kept_;
  std::vector<std::unique_ptr<Armed>> armed_;  // Backend::arm()'s kernels, in arming order
  std::function<double()> now_ms_;              // the reps' timer (BackendOptions::clock_ms)
};

}  // namespace

void poison(void* data, Dtype t, std::int64_t n) {
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    std::fill_n(static_cast<T*>(data), n, store<T>(std::numeric_limits<AccOf<T>>::quiet_NaN()));
  });
}

std::unique_ptr<CpuBackend> make_cpu_backend(const BackendOptions& options) {
  return std::make_unique<CpuBackendImpl>(options);
}

}  // namespace fb::cpu

namespace fb {
std::unique_ptr<Backend> make_cpu_backend() { return cpu::make_cpu_backend(cpu::BackendOptions{}); }
}  // namespace fb
