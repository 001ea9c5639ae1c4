// GPU tests [gpu]: the CUDA backend, the naive/flash/reference kernels, and the utilities around them.
// Run by gpu_main.cpp, which exits 77 (skipped) when no CUDA device is visible.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention.h"
#include "backend/backend.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_resources.h"
#include "catch.h"
#include "gpu_cases.h"
#include "gpu_support.h"
#include "judge.h"
#include "registry.h"
#include "runner.h"
#include "spec.h"

namespace {

using namespace fb::test;

using namespace fb;

constexpr std::uint64_t kSeed = 20240611;
constexpr int kWarmup = 1;
constexpr int kReps = 2;

double error_of(const ErrorReport& r, const std::string& tensor) {
  for (const auto& [name, e] : r.max_abs)
    if (name == tensor) return e;
  FAIL("no error reported for " << tensor);
  return 0;
}

double magnitude_of(const ErrorReport& r, const std::string& tensor) {
  for (const auto& [name, m] : r.magnitude)
    if (name == tensor) return m;
  FAIL("no magnitude reported for " << tensor);
  return 0;
}

std::vector<std::string> tensors_of(Pass p) {
  if (p == Pass::fwd) return {"O", "LSE"};
  return {"O", "LSE", "dQ", "dK", "dV"};
}

// A square case (seq_q = seq_k = seq); make_case (tests/support.h) takes the two apart.
using fb::test::make_case;
Case make_case(int batch, int heads, int kv_heads, int seq, int dim, Dtype t, bool causal, Pass pass) {
  return make_case(batch, heads, kv_heads, seq, seq, dim, t, causal, pass);
}

// Odd sequence lengths (1, primes, one past a power of two) and a long one; head dims, causal masking
// and GQA rotate through them so every dtype meets each of them more than once.
std::vector<Case> accuracy_cases() {
  const int seqs[] = {1, 17, 97, 1000, 1025, 4096};
  const Dtype dtypes[] = {Dtype::fp64, Dtype::fp32, Dtype::fp16, Dtype::bf16};
  struct Heads {
    int heads, kv_heads;
  };
  const Heads head_layouts[] = {{4, 1}, {4, 2}, {2, 2}};  // MQA, GQA, MHA
  constexpr int kHeadDims[] = {64, 128};
  std::vector<Case> cases;
  int i = 0;
  for (Dtype t : dtypes) {
    for (int n : seqs) {
      const Heads h = head_layouts[i % 3];
      const int batch = i % 5 == 0 ? 2 : 1;
      const int dim = kHeadDims[i % 2];
      const bool causal = (i / 2) % 2 == 1;
      cases.push_back(make_case(batch, h.heads, h.kv_heads, n, dim, t, causal, Pass::fwd));
      // Backward on the shorter lengths and one long low-precision case.
      if (n != 4096 || t == Dtype::bf16)
        cases.push_back(make_case(batch, h.heads, h.kv_heads, n, dim, t, !causal, Pass::bwd));
      ++i;
    }
  }
  // Forward and backward timed together, once per low-precision dtype.
  cases.push_back(make_case(1, 4, 2, 1025, 64, Dtype::bf16, true, Pass::fwd_bwd));
  cases.push_back(make_case(1, 4, 4, 97, 128, Dtype::fp16, false, Pass::fwd_bwd));
  return cases;
}

}  // namespace

TEST_CASE("naive meets its dtype tolerance and flash the naive-relative rule vs the fp64 reference",
          "[gpu]") {
  CudaBackend& b = gpu();
  for (const Case& c : accuracy_cases()) {
    INFO("case " << c.key());
    b.prepare(c, kSeed);
    // Every kernel in the registry must run these shapes (head dims 64/128) on the GPU.
    std::vector<Record> records = run_each(b, c, {"naive", "flash"}, never_refused);
    verify_case(b, records, builtin_kernels());  // the runner's own rule: runs the reference and compares

    const ErrorReport naive = b.compare("naive", "reference");
    const ErrorReport flash = b.compare("flash", "reference");
    CHECK(naive.nonfinite == 0);
    CHECK(flash.nonfinite == 0);
    for (const std::string& t : tensors_of(c.pass)) {
      INFO(t << ": err(naive) = " << error_of(naive, t) << ", err(flash) = " << error_of(flash, t));
      const double dv = c.pass == Pass::fwd ? std::numeric_limits<double>::quiet_NaN() : magnitude_of(naive, "dV");
      CHECK(error_of(naive, t) <= tol_baseline(t, c.dtype) * judged_scale(t, magnitude_of(naive, t), dv));
    }
    require_verified(records);
    b.release();
  }
}

TEST_CASE("flash-sm90 meets the naive-relative rule on Hopper, and says why not elsewhere", "[gpu]") {
  // fp32 (3xTF32 on wgmma forward, flash's 3xTF32 backward) runs under the FP32 rule beside naive.
  CudaBackend& b = gpu();
  const Descriptor& sm90 = kernel("flash-sm90");
  std::vector<Case> cases = accuracy_cases();
  // The backward at both head dims (dQ split by columns at 128, by query rows at 64): odd lengths
  // around the 64/128-query and 128-key tiles, causal or not, MQA/GQA/MHA (dK, dV summed over the
  // group), both 16-bit types.
  int i = 0;
  for (int n : {1, 17, 63, 130, 257, 1025}) {
    const int heads[][2] = {{4, 1}, {4, 2}, {2, 2}};
    const Dtype t = i % 2 == 0 ? Dtype::bf16 : Dtype::fp16;
    for (int dim : {64, 128}) {
      cases.push_back(make_case(1 + i % 2, heads[i % 3][0], heads[i % 3][1], n, dim, t,
                                (i / 2) % 2 == 0, Pass::bwd));
      cases.push_back(make_case(1, heads[i % 3][0], heads[i % 3][1], n, dim, t, (i / 2) % 2 == 1,
                                i % 2 == 0 ? Pass::bwd : Pass::fwd_bwd));
    }
    ++i;
  }
  for (const Case& c : cases) {
    INFO("case " << c.key());
    const auto why = b.check_fits(c, sm90);
    if (c.dtype == Dtype::fp64) {
      // fp16/bf16/fp32 only: fp64 is refused with a reason, never a wrong answer.
      REQUIRE(why.has_value());
      continue;
    }
    if (why) {  // not a compute capability 9.0 device, or a build without sm_90a
      WARN("flash-sm90 not run: " << *why);
      continue;
    }
    b.prepare(c, kSeed);
    std::vector<Record> records = run_each(b, c, {"naive", "flash-sm90"}, never_refused);
    verify_and_check(b, records);
    b.release();
  }
}

TEST_CASE("the fp64 naive path and reference agree to fp64 rounding, gradients included", "[gpu]") {
  // Two unrelated fp64 computations (cuBLAS + row kernels vs the tiled reference kernels) of the same
  // function: their agreement far below any low-precision error checks both, GQA sums included.
  constexpr double kFp64Agreement = 1e-11;
  CudaBackend& b = gpu();
  for (bool causal : {false, true}) {
    const Case c = make_case(2, 6, 2, 131, 64, Dtype::fp64, causal, Pass::fwd_bwd);
    INFO("case " << c.key());
    b.prepare(c, kSeed);
    b.run(kernel("naive"), 0, 1);
    b.run_reference();
    const ErrorReport e = b.compare("naive", "reference");
    REQUIRE(e.nonfinite == 0);
    for (const std::string& t : tensors_of(c.pass)) {
      INFO(t << ": " << error_of(e, t));
      CHECK(error_of(e, t) <= kFp64Agreement);
    }
    b.release();
  }
}

// ---- a direct host computation of the same attention, for the reference itself ----
namespace {

struct HostGrads {
  std::vector<double> o, lse, dq, dk, dv;
};

// Textbook attention and its gradients, in fp64 on the host (small shapes only).
HostGrads host_attention(const Case& c, const std::vector<double>& q, const std::vector<double>& k,
                         const std::vector<double>& v, const std::vector<double>& dout) {
  const int n = c.seq_q, nk = c.seq_k, d = c.head_dim, g = c.heads / c.kv_heads;
  const double scale = 1.0 / std::sqrt(double(d));
  HostGrads r;
  r.o.assign(q.size(), 0);
  r.lse.assign(std::size_t(c.batch) * c.heads * n, 0);
  r.dq.assign(q.size(), 0);
  r.dk.assign(k.size(), 0);
  r.dv.assign(v.size(), 0);
  std::vector<double> p(nk), dp(nk);
  for (int b = 0; b < c.batch; ++b)
    for (int h = 0; h < c.heads; ++h) {
      const std::size_t qh = (std::size_t(b) * c.heads + h) * n * d;
      const std::size_t kh = (std::size_t(b) * c.kv_heads + h / g) * nk * d;
      for (int i = 0; i < n; ++i) {
        // Causal, bottom-right aligned: query i sees keys j <= i + nk - n (none, for the first
        // n - nk rows when n > nk: O = 0, LSE = -inf, no gradient).
        const int keys = c.causal ? std::clamp(i + nk - n + 1, 0, nk) : nk;
        if (keys == 0) {
          r.lse[(std::size_t(b) * c.heads + h) * n + i] = -std::numeric_limits<double>::infinity();
          continue;
        }
        double m = -std::numeric_limits<double>::infinity();
        for (int j = 0; j < keys; ++j) {
          double s = 0;
          for (int x = 0; x < d; ++x) s += q[qh + i * d + x] * k[kh + j * d + x];
          p[j] = s * scale;
          m = std::max(m, p[j]);
        }
        double l = 0;
        for (int j = 0; j < keys; ++j) l += (p[j] = std::exp(p[j] - m));
        for (int j = 0; j < keys; ++j) p[j] /= l;
        r.lse[(std::size_t(b) * c.heads + h) * n + i] = m + std::log(l);
        for (int j = 0; j < keys; ++j)
          for (int x = 0; x < d; ++x) r.o[qh + i * d + x] += p[j] * v[kh + j * d + x];
        // Backward: D = dO.O, dS = P (dP - D).
        double dd = 0;
        for (int x = 0; x < d; ++x) dd += dout[qh + i * d + x] * r.o[qh + i * d + x];
        for (int j = 0; j < keys; ++j) {
          dp[j] = 0;
          for (int x = 0; x < d; ++x) dp[j] += dout[qh + i * d + x] * v[kh + j * d + x];
          const double ds = p[j] * (dp[j] - dd);
          for (int x = 0; x < d; ++x) {
            r.dq[qh + i * d + x] += scale * ds * k[kh + j * d + x];
            r.dk[kh + j * d + x] += scale * ds * q[qh + i * d + x];
            r.dv[kh + j * d + x] += p[j] * dout[qh + i * d + x];
          }
        }
      }
    }
  return r;
}

struct Device {
  void* p = nullptr;
  explicit Device(std::size_t bytes) { FB_CUDA_CHECK(cudaMalloc(&p, bytes)); }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  ~Device() { FB_CUDA_CHECK_NOTHROW(cudaFree(p)); }
  double* d() const { return static_cast<double*>(p); }
};

std::vector<double> to_host(const Device& b, std::size_t n) {
  std::vector<double> h(n);
  FB_CUDA_CHECK(cudaMemcpy(h.data(), b.p, n * sizeof(double), cudaMemcpyDeviceToHost));
  return h;
}

double max_rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] == b[i]) continue;  // includes -inf == -inf (the LSE of a row with no visible key)
    const double e = std::abs(a[i] - b[i]) / std::max(1.0, std::abs(b[i]));
    if (!(e <= worst)) worst = e;  // NaN wins
  }
  return worst;
}

}  // namespace

TEST_CASE("the fp64 reference matches a host computation, gradients included", "[gpu]") {
  constexpr double kHostAgreement = 1e-12;  // relative to max(1, |value|): fp64 rounding over d, N terms
  // Square, seq_q < seq_k and seq_q > seq_k (causal: 19 rows with no visible key), decode.
  const int lengths[][2] = {{33, 33}, {17, 70}, {40, 21}, {1, 45}};
  for (bool causal : {false, true})
  for (const auto& len : lengths) {
    const Case c = make_case(1, 4, 2, len[0], len[1], 64, Dtype::fp64, causal, Pass::fwd_bwd);
    INFO("case " << c.key());
    AttentionParams p = c.params();
    const std::size_t nq = std::size_t(p.q_elems()), nkv = std::size_t(p.kv_elems()), rows = std::size_t(p.rows());
    Device q(nq * 8), k(nkv * 8), v(nkv * 8), dout(nq * 8);
    const cuda::Context ctx{};  // the default stream; the reference needs no cuBLAS handle
    cuda::fill_normal(q.p, Dtype::fp64, p.q_elems(), kSeed, 0, ctx);
    cuda::fill_normal(k.p, Dtype::fp64, p.kv_elems(), kSeed, 1, ctx);
    cuda::fill_normal(v.p, Dtype::fp64, p.kv_elems(), kSeed, 2, ctx);
    cuda::fill_normal(dout.p, Dtype::fp64, p.q_elems(), kSeed, 3, ctx);
    FB_CUDA_CHECK(cudaDeviceSynchronize());
    const HostGrads want =
        host_attention(c, to_host(q, nq), to_host(k, nkv), to_host(v, nkv), to_host(dout, nq));

    Device o(nq * 8), lse(rows * 8), dq(nq * 8), dk(nkv * 8), dv(nkv * 8);
    Device ws(std::max<std::size_t>(8, cuda::reference_ops().workspace_bytes(Pass::bwd, p)));
    p.q = q.p, p.k = k.p, p.v = v.p, p.dout = dout.p;
    p.o = o.p, p.lse = lse.p, p.dq = dq.p, p.dk = dk.p, p.dv = dv.p, p.workspace = ws.p;
    cuda::reference_ops().forward(p, ctx);
    cuda::reference_ops().backward(p, ctx);
    FB_CUDA_CHECK(cudaDeviceSynchronize());
    CHECK(max_rel_diff(to_host(o, nq), want.o) <= kHostAgreement);
    CHECK(max_rel_diff(to_host(lse, rows), want.lse) <= kHostAgreement);
    CHECK(max_rel_diff(to_host(dq, nq), want.dq) <= kHostAgreement);
    CHECK(max_rel_diff(to_host(dk, nkv), want.dk) <= kHostAgreement);
    CHECK(max_rel_diff(to_host(dv, nkv), want.dv) <= kHostAgreement);
  }
}

TEST_CASE("outputs a run leaves unwritten are caught as non-finite", "[gpu]") {
  CudaBackend& b = gpu();
  SECTION("through the backend: a run with no reps leaves the poison in place") {
    const Case c = make_case(1, 2, 2, 64, 64, Dtype::bf16, false, Pass::fwd);
    b.prepare(c, kSeed);
    b.run(kernel("naive"), 0, 0);  // poison only: nothing runs
    b.run_reference();
    const ErrorReport e = b.compare("naive", "reference");
    const AttentionParams p = c.params();
    CHECK(e.nonfinite == p.q_elems() + p.rows());  // every element of O and LSE
    CHECK(std::isinf(e.worst()));
    std::vector<Record> records{ok_record(c, "naive")};
    verify_case(b, records, builtin_kernels());
    REQUIRE(records[0].verified.has_value());
    CHECK_FALSE(*records[0].verified);
    b.release();
  }
  SECTION("at the comparison: a half-written buffer of every dtype") {
    constexpr std::int64_t kElems = 1000;
    const cuda::Context ctx{};
    Device ref(kElems * sizeof(double));
    cuda::fill_normal(ref.p, Dtype::fp64, kElems, kSeed, 0, ctx);
    for (Dtype t : {Dtype::fp64, Dtype::fp32, Dtype::fp16, Dtype::bf16}) {
      INFO("dtype " << to_string(t));
      Device a(kElems * dtype_bytes(t));
      FB_CUDA_CHECK(cudaMemset(a.p, cuda::kPoisonByte, kElems * dtype_bytes(t)));
      cuda::Diff d = cuda::max_abs_diff(a.p, t, ref.d(), kElems, ctx);
      CHECK(d.nonfinite == kElems);
      // Write the first half (the same values the reference holds, rounded to t).
      cuda::fill_normal(a.p, t, kElems / 2, kSeed, 0, ctx);
      d = cuda::max_abs_diff(a.p, t, ref.d(), kElems, ctx);
      CHECK(d.nonfinite == kElems - kElems / 2);
      CHECK(std::isfinite(d.max_abs));
      // Typed comparison counts the same elements.
      d = cuda::max_abs_diff_typed(a.p, t, a.p, t, kElems, ctx);
      CHECK(d.nonfinite == kElems - kElems / 2);
      CHECK(d.max_abs == 0.0);
    }
  }
}

TEST_CASE("fill_normal is deterministic, seeded and standard normal", "[gpu]") {
  constexpr std::int64_t kElems = std::int64_t(1) << 20;
  const cuda::Context ctx{};
  Device a(kElems * 8), b(kElems * 8), c64(kElems * 8);
  cuda::fill_normal(a.p, Dtype::fp32, kElems, kSeed, 0, ctx);
  cuda::fill_normal(b.p, Dtype::fp32, kElems, kSeed, 0, ctx);
  cuda::Diff same = cuda::max_abs_diff_typed(a.p, Dtype::fp32, b.p, Dtype::fp32, kElems, ctx);
  CHECK(same.max_abs == 0.0);
  CHECK(same.nonfinite == 0);

  cuda::fill_normal(b.p, Dtype::fp32, kElems, kSeed + 1, 0, ctx);
  CHECK(cuda::max_abs_diff_typed(a.p, Dtype::fp32, b.p, Dtype::fp32, kElems, ctx).max_abs > 1.0);
  cuda::fill_normal(b.p, Dtype::fp32, kElems, kSeed, 1, ctx);
  CHECK(cuda::max_abs_diff_typed(a.p, Dtype::fp32, b.p, Dtype::fp32, kElems, ctx).max_abs > 1.0);

  // The same draw in every dtype: bf16 is the fp64 value rounded (8 significant bits).
  cuda::fill_normal(c64.p, Dtype::fp64, kElems, kSeed, 0, ctx);
  cuda::fill_normal(b.p, Dtype::bf16, kElems, kSeed, 0, ctx);
  // Half a bf16 ulp for |x| < 8 (2^20 normal draws stay well inside that).
  constexpr double kBf16HalfUlpBelow8 = 0x1p-6;
  CHECK(cuda::max_abs_diff(b.p, Dtype::bf16, c64.d(), kElems, ctx).max_abs <= kBf16HalfUlpBelow8);

  std::vector<float> h(kElems);
  FB_CUDA_CHECK(cudaMemcpy(h.data(), a.p, kElems * sizeof(float), cudaMemcpyDeviceToHost));
  double sum = 0, sq = 0;
  std::int64_t zeros = 0;
  for (float x : h) {
    sum += x;
    sq += double(x) * x;
    zeros += x == 0.0f;
  }
  const double mean = sum / kElems, var = sq / kElems - mean * mean;
  // Standard errors: 1/sqrt(n) ~ 1e-3 for the mean, sqrt(2/n) ~ 1.4e-3 for the variance; 6 sigma.
  CHECK(std::abs(mean) < 6e-3);
  CHECK(std::abs(var - 1.0) < 9e-3);
  CHECK(zeros == 0);
}

TEST_CASE("the tracking allocator's peak is each kernel's own buffers", "[gpu]") {
  CudaBackend& b = gpu();
  for (Pass pass : {Pass::fwd, Pass::bwd}) {
    // seq a multiple of 8: S and P rows need no padding, so the N x N model is exact.
    const Case c = make_case(1, 4, 2, 1024, 64, Dtype::bf16, false, pass);
    INFO("case " << c.key());
    const AttentionParams p = c.params();
    const std::uint64_t e = dtype_bytes(c.dtype);
    std::uint64_t outputs = p.q_elems() * e + p.rows() * sizeof(float);
    if (pass != Pass::fwd) outputs += p.q_elems() * e + 2 * p.kv_elems() * e;
    const std::uint64_t nn = std::uint64_t(c.batch) * c.heads * c.seq_q * c.seq_k * e;  // one N x N array

    b.prepare(c, kSeed);
    const std::uint64_t inputs = b.tracked_bytes();
    CHECK(inputs == input_bytes(c));

    const KernelRun naive = b.run(kernel("naive"), kWarmup, kReps);
    CHECK(naive.peak_bytes == outputs + 2 * nn);  // S and P (dP/dS reuse S's buffer)

    const KernelRun flash = b.run(kernel("flash"), kWarmup, kReps);
    const std::uint64_t flash_ws = cuda::flash_ops().workspace_bytes(pass, p);
    CHECK(flash.peak_bytes == outputs + flash_ws);
    CHECK(flash_ws < nn);  // nothing N x N
    b.release();
    CHECK(b.tracked_bytes() == 0);
  }
}

TEST_CASE("a case too large for the device is refused by check_fits and the next case still runs",
          "[gpu]") {
  CudaBackend& b = gpu();
  // Inputs of 1.5 GiB, but naive's S and P would be 2 x 64 x 65536^2 x 2 bytes = 1 TiB.
  const Case big = make_case(1, 64, 64, 65536, 64, Dtype::bf16, false, Pass::fwd);
  b.prepare(big, kSeed);
  const auto why = b.check_fits(big, kernel("naive"));
  REQUIRE(why.has_value());
  CHECK(why->find("bytes") != std::string::npos);
  CHECK_FALSE(b.check_fits(big, kernel("flash")).has_value());  // O and LSE fit

  // Run anyway: the allocation fails, the error names it, and nothing stays allocated.
  const std::uint64_t held = b.tracked_bytes();
  REQUIRE_THROWS_AS(b.run(kernel("naive"), 0, 1), BackendError);
  CHECK(b.tracked_bytes() == held);
  b.release();

  const Case small = make_case(1, 2, 2, 256, 64, Dtype::bf16, true, Pass::fwd);
  b.prepare(small, kSeed);
  REQUIRE_FALSE(b.check_fits(small, kernel("naive")).has_value());
  const KernelRun run = b.run(kernel("naive"), kWarmup, kReps);
  CHECK(run.times_ms.size() == std::size_t(kReps));
  b.run_reference();
  const ErrorReport small_err = b.compare("naive", "reference");
  CHECK(error_of(small_err, "O") <= tol_baseline("O", Dtype::bf16) * magnitude_of(small_err, "O"));
  b.release();
}

TEST_CASE("naive's long-row softmax (rows beyond registers) is exact too", "[gpu]") {
  // 33000 bf16 columns exceed what the one-pass kernel holds in registers (32768): the looped
  // two-read path runs. One head keeps S and P at 2 x 2.2 GB and the fp64 reference at seconds.
  CudaBackend& b = gpu();
  const Case c = make_case(1, 1, 1, 33000, 64, Dtype::bf16, true, Pass::fwd);
  b.prepare(c, kSeed);
  b.run(kernel("naive"), 0, 1);
  b.run_reference();
  const ErrorReport e = b.compare("naive", "reference");
  CHECK(e.nonfinite == 0);
  CHECK(error_of(e, "O") <= tol_baseline("O", Dtype::bf16) * magnitude_of(e, "O"));
  b.release();
}

TEST_CASE("timed runs report every rep; device and settings describe the GPU", "[gpu]") {
  CudaBackend& b = gpu();
  const Case c = make_case(1, 4, 4, 512, 128, Dtype::fp16, false, Pass::fwd_bwd);
  b.prepare(c, kSeed);
  constexpr int kMoreReps = 5;
  const KernelRun run = b.run(kernel("naive"), kWarmup, kMoreReps);
  REQUIRE(run.times_ms.size() == std::size_t(kMoreReps));
  for (double t : run.times_ms) CHECK(t > 0);
  // The SM clock read while the reps ran, where NVML is there (the device's clocks say whether it is).
  if (b.device().at("clocks").at("sm_mhz").is_number()) {
    REQUIRE(run.sm_mhz_min.has_value());
    CHECK(*run.sm_mhz_min > 0);
    CHECK(*run.sm_mhz_min <= b.device().at("clocks").at("sm_max_mhz").get<unsigned>() + 100);
  }
  b.release();

  const nlohmann::json dev = b.device();
  CHECK(dev.at("name").get<std::string>().size() > 0);
  CHECK(dev.at("sm_count").get<int>() > 0);
  CHECK(dev.at("memory").at("total_bytes").get<std::uint64_t>() > 0);
  CHECK(dev.at("clocks").contains("sm_mhz"));
  CHECK(dev.at("l2_bytes").get<std::int64_t>() > 0);
  const nlohmann::json s = b.settings();
  CHECK(s.at("timer") == "cuda events");
  CHECK(s.at("l2_flush") == true);
  CHECK(s.at("l2_flush_bytes").get<std::uint64_t>() >= 2 * dev.at("l2_bytes").get<std::uint64_t>());
}

TEST_CASE("adaptive timing on the GPU samples in batches until min time, and the memory model lists", "[gpu]") {
  CudaBackend& b = gpu();
  const Case c = make_case(1, 4, 4, 512, 64, Dtype::bf16, false, Pass::fwd);
  b.prepare(c, kSeed);
  TimingPolicy p;
  p.warmup = 1;
  p.reps = 3;
  p.min_time_s = 0.02;  // far more than 3 reps of a 512-token forward
  p.max_time_s = 5;
  const KernelRun run = b.run(kernel("flash"), p);
  double sum_ms = 0;
  for (double t : run.times_ms) {
    CHECK(t > 0);
    sum_ms += t;
  }
  CHECK(run.times_ms.size() > 3);
  CHECK(sum_ms >= 20.0);
  // It stops soon after: the last batch is sized to reach min time, not far past it.
  CHECK(sum_ms < 20.0 * 3);
  // bytes_needed is what check_fits counts: naive's N x N arrays make it larger than flash's.
  const auto naive = b.bytes_needed(c, kernel("naive"));
  const auto flash = b.bytes_needed(c, kernel("flash"));
  REQUIRE(naive.has_value());
  REQUIRE(flash.has_value());
  CHECK(*naive > *flash);
  CHECK(*flash >= input_bytes(c));
  b.release();
}

// ---- seq_q != seq_k ----
namespace {

// Decode (seq_q of 1 to 16 against odd key lengths), seq_q < seq_k and seq_q > seq_k (causal: the
// first seq_q - seq_k rows see no key), GQA 32/8 and 8/2, head dims 64 and 128, 16-bit and fp32/fp64.
std::vector<Case> unequal_cases() {
  const SeqLens lengths[] = {{1, 1},     {1, 7},      {1, 63},     {1, 129},     {1, 1000},  {1, 4097},
                         {2, 4099},  {16, 4099},  {5, 300},    {100, 1000},  {257, 300}, {1025, 4096},
                         {300, 100}, {1000, 1},   {129, 64},   {4096, 1025}, {300, 17}};
  const Dtype dtypes[] = {Dtype::bf16, Dtype::fp16, Dtype::fp32, Dtype::fp64};
  std::vector<Case> cases;
  int i = 0;
  for (const SeqLens& l : lengths) {
    const bool decode = l.q <= 16;
    const int heads = decode ? 32 : 8, kv_heads = decode ? 8 : 2;
    const int dim = i % 2 == 0 ? 128 : 64;
    const Dtype t = dtypes[i % 4];
    const bool causal = i % 3 != 2;  // mostly causal: that is where the alignment matters
    cases.push_back(make_case(1 + i % 2, heads, kv_heads, l.q, l.k, dim, t, causal, Pass::fwd));
    // Backward with both masks on 16-bit (the offset of the causal diagonal against the tiles is what
    // differs from seq_q = seq_k), with the forward's mask on fp32/fp64 for the shorter lengths.
    if (t == Dtype::bf16 || t == Dtype::fp16) {
      cases.push_back(make_case(1, heads, kv_heads, l.q, l.k, dim, t, true, Pass::bwd));
      cases.push_back(make_case(2, heads, kv_heads, l.q, l.k, dim, t, false, Pass::bwd));
    } else if (l.q * std::int64_t(l.k) <= 300000) {
      cases.push_back(make_case(1, heads, kv_heads, l.q, l.k, dim, t, causal, Pass::bwd));
    }
    ++i;
  }
  // Causal diagonals that cut the 64/128-row and -key tiles at odd offsets, both 16-bit types (every
  // kernel, flash-sm90 included), forward and backward.
  const SeqLens offsets[] = {{63, 130}, {190, 257}, {130, 63}, {64, 192}, {16, 40}};
  for (const SeqLens& l : offsets)
    for (Dtype t : {Dtype::bf16, Dtype::fp16})
      for (Pass p : {Pass::fwd, Pass::bwd})
        cases.push_back(make_case(1, 4, 2, l.q, l.k, t == Dtype::bf16 ? 128 : 64, t, true, p));
  return cases;
}

}  // namespace

TEST_CASE("seq_q != seq_k: naive, flash and flash-sm90 verify, rows with no key are O = 0, LSE = -inf",
          "[gpu]") {
  CudaBackend& b = gpu();
  for (const Case& c : unequal_cases()) {
    INFO("case " << c.key());
    b.prepare(c, kSeed);
    std::vector<Record> records =
        run_each(b, c, {"naive", "flash", "flash-sm90"}, [](const std::string& name, const std::string&) {
          // flash-sm90 is 16-bit and Hopper only; everything else must run these shapes.
          REQUIRE(name == "flash-sm90");
        });
    verify_and_check(b, records, each_written(b, c, Tensors::outputs));
    check_written(b, "reference", Tensors::outputs, c);
    b.release();
  }
}

// ---- head dim 256 ----
namespace {

// Odd lengths around the tiles (flash 128 x 32, flash-sm90 128 x 80), seq_q != seq_k with and
// without empty rows, MQA/GQA/MHA, both 16-bit types, causal or not. d = 96 (flash only) on the same.
std::vector<Case> hdim256_cases() {
  const SeqLens lengths[] = {{1, 1}, {17, 17}, {1000, 1000}, {4099, 4099}, {17, 1000}, {1000, 17}, {130, 63}};
  const int heads[][2] = {{4, 1}, {4, 2}, {2, 2}};
  std::vector<Case> cases;
  int i = 0;
  for (int dim : {256, 96})
    for (const SeqLens& l : lengths)
      for (bool causal : {false, true}) {
        const Dtype t = i % 2 == 0 ? Dtype::bf16 : Dtype::fp16;
        cases.push_back(make_case(1 + i % 2, heads[i % 3][0], heads[i % 3][1], l.q, l.k, dim, t, causal,
                                     Pass::fwd));
        ++i;
      }
  return cases;
}

}  // namespace

TEST_CASE("head dims 256 and 96: naive, flash and flash-sm90 forwards verify; poisoned outputs all written",
          "[gpu][hdim256]") {
  CudaBackend& b = gpu();
  for (const Case& c : hdim256_cases()) {
    INFO("case " << c.key());
    b.prepare(c, kSeed);
    std::vector<Record> records =
        run_each(b, c, {"naive", "flash", "flash-sm90"}, [&](const std::string& name, const std::string& why) {
          // Only flash-sm90 may be refused: always at d = 96 (not in its head dims), at d = 256 on a
          // device that is not compute capability 9.0 or a build without sm_90a code.
          REQUIRE(name == "flash-sm90");
          if (c.head_dim == 256) WARN("flash-sm90 not run: " << why);
        });
    // Outputs are NaN before the run: an element a kernel leaves unwritten fails both checks.
    verify_and_check(b, records, each_written(b, c, Tensors::outputs));
    b.release();
  }
}

namespace {

// The d = 256 backward of flash-sm90 (both consumers on the same 64 keys, P^T and dS^T through
// shared memory, dQ in four 64-column blocks): odd lengths around the 64 x 64 tiles, seq_q != seq_k
// both ways (causal: rows with no key), MQA/GQA/MHA (dK, dV summed over the group), both masks and
// both 16-bit types, bwd and fwd_bwd. `flash` has no d = 256 backward and says so; at d = 96 neither
// tiled backward runs.
std::vector<Case> hdim256_bwd_cases() {
  const SeqLens lengths[] = {{1, 1},    {17, 17},   {63, 63},  {130, 130}, {1000, 1000}, {1025, 1025},
                         {17, 1000}, {1000, 17}, {130, 63}, {63, 130},  {190, 257},   {1, 4099}};
  const int heads[][2] = {{4, 1}, {4, 2}, {2, 2}, {8, 2}};
  std::vector<Case> cases;
  int i = 0;
  for (const SeqLens& l : lengths)
    for (bool causal : {false, true}) {
      const Dtype t = i % 2 == 0 ? Dtype::bf16 : Dtype::fp16;
      const Pass pass = i % 5 == 4 ? Pass::fwd_bwd : Pass::bwd;
      cases.push_back(make_case(1 + (i / 2) % 2, heads[i % 4][0], heads[i % 4][1], l.q, l.k, 256, t,
                                   causal, pass));
      ++i;
    }
  return cases;
}

}  // namespace

TEST_CASE("head dim 256: the flash-sm90 backward verifies beside naive; poisoned gradients all written",
          "[gpu][hdim256]") {
  CudaBackend& b = gpu();
  for (const Case& c : hdim256_bwd_cases()) {
    INFO("case " << c.key());
    {
      const auto why = b.check_fits(c, kernel("flash"));
      REQUIRE(why.has_value());  // the portable backward stops at d = 128
      INFO("flash: " << *why);
      CHECK(why->find("256") != std::string::npos);
    }
    // Outputs are NaN before the run: a gradient element the kernel leaves unwritten fails both checks.
    check_sm90_beside_naive(b, c, kSeed, each_written(b, c, Tensors::outputs));
  }
}

TEST_CASE("head dim 96: the naive backward verifies; the tiled backwards say why they do not run",
          "[gpu][hdim256]") {
  CudaBackend& b = gpu();
  const Case cases[] = {make_case(1, 2, 1, 17, 1000, 96, Dtype::fp16, true, Pass::bwd),
                        make_case(2, 2, 2, 130, 63, 96, Dtype::bf16, false, Pass::fwd_bwd)};
  for (const Case& c : cases) {
    INFO("case " << c.key());
    for (const char* name : {"flash", "flash-sm90"}) {
      const auto why = b.check_fits(c, kernel(name));
      REQUIRE(why.has_value());
      INFO(name << ": " << *why);
      // The reason names the head dim: its value, or the values the kernel takes.
      CHECK((why->find(std::to_string(c.head_dim)) != std::string::npos ||
             why->find("head_dim must be") != std::string::npos));
    }
    b.prepare(c, kSeed);
    std::vector<Record> records = run_each(b, c, {"naive"}, never_refused);
    verify_and_check(b, records, each_written(b, c, Tensors::outputs));
    b.release();
  }
}

// ---- flash-sm90's dynamic tile schedule (a tile counter in global memory) ----
// Enough work tiles that every block runs several (at least two per SM even at 192-row tiles), causal
// and not, seq_q != seq_k (empty rows too), GQA/MHA, d = 64/128/256, both 16-bit types. Each case runs
// three warm-ups and three timed launches back to back on one stream and verifies the last: outputs
// are poisoned before every launch, so a launch that saw a counter left over from the one before it
// (its blocks would stop early) leaves NaN rows and fails.
TEST_CASE("flash-sm90's tile counter: many tiles per block, repeated launches verify", "[gpu][sched]") {
  CudaBackend& b = gpu();
  const int sms = sm_count();
  const Case cases[] = {
      make_case(2, 32, 8, 1000, 1000, 128, Dtype::bf16, true, Pass::fwd),
      make_case(2, 24, 24, 1500, 2100, 64, Dtype::fp16, true, Pass::fwd),
      make_case(3, 24, 4, 700, 700, 128, Dtype::fp16, false, Pass::fwd),
      make_case(1, 32, 8, 2100, 700, 64, Dtype::bf16, true, Pass::fwd),
      make_case(2, 32, 2, 900, 900, 256, Dtype::bf16, true, Pass::fwd),
      make_case(4, 16, 16, 1024, 1024, 64, Dtype::bf16, false, Pass::fwd),
  };
  const Descriptor& sm90 = kernel("flash-sm90");
  for (const Case& c : cases) {
    INFO("case " << c.key());
    // The premise: more tiles than two per SM at the largest query tile (192 rows).
    constexpr int kLargestQueryTile = 192;
    REQUIRE(std::int64_t(c.batch) * c.heads * ((c.seq_q + kLargestQueryTile - 1) / kLargestQueryTile) >=
            2 * std::int64_t(sms));
    if (const auto why = b.check_fits(c, sm90)) {
      WARN("flash-sm90 not run: " << *why);
      continue;
    }
    b.prepare(c, kSeed);
    REQUIRE(b.run(kernel("naive"), 0, 1).times_ms.size() == 1);
    REQUIRE(b.run(sm90, 3, 3).times_ms.size() == 3);
    std::vector<Record> records{ok_record(c, "naive"), ok_record(c, "flash-sm90")};
    verify_and_check(b, records, each_written(b, c, Tensors::outputs));
    b.release();
  }
}

TEST_CASE("the L2 flush's mode: FB_L2_FLUSH names write or clean, the settings say which, and clean runs", "[gpu]") {
  const char* kVar = "FB_L2_FLUSH";
  const char* before = std::getenv(kVar);
  const std::string saved = before ? before : "";
  using Mode = cuda::L2Flush::Mode;
  ::unsetenv(kVar);
  CHECK(cuda::L2Flush::mode_from_env() == Mode::write);
  ::setenv(kVar, "write", 1);
  CHECK(cuda::L2Flush::mode_from_env() == Mode::write);
  ::setenv(kVar, "clean", 1);
  CHECK(cuda::L2Flush::mode_from_env() == Mode::clean);
  for (const char* bad : {"Clean", "read", "1"}) {
    ::setenv(kVar, bad, 1);
    std::string what;
    try {
      (void)cuda::L2Flush::mode_from_env();
    } catch (const std::runtime_error& e) {
      what = e.what();
    }
    CHECK(what.find(std::string(kVar) + "=" + bad) != std::string::npos);
  }
  // The clean flush on a stream: the write, then the read of the second buffer; nothing fails, nothing is written
  // to the sink (the second buffer is zeros).
  {
    cuda::L2Flush f(0, Mode::clean);
    CHECK(std::string(f.mode_name()) == "clean");
    REQUIRE(f.bytes() > 0);
    cuda::Stream s;
    f.flush(s.get());
    f.flush(s.get());
    REQUIRE(cudaStreamSynchronize(s.get()) == cudaSuccess);
  }
  // A backend made under the variable names the mode in its settings, and a case times under it.
  ::setenv(kVar, "clean", 1);
  {
    auto backend = make_backend(BackendKind::cuda, 0);
    CHECK(backend->settings().at("l2_flush_mode") == "clean");
    const Case c = make_case(1, 2, 2, 256, 256, 64, Dtype::bf16, false, Pass::fwd);
    backend->prepare(c, kSeed);
    CHECK(backend->run(kernel("flash"), 1, 3).times_ms.size() == 3);
    backend->release();
  }
  ::unsetenv(kVar);
  CHECK(make_backend(BackendKind::cuda, 0)->settings().at("l2_flush_mode") == "write");
  if (before) ::setenv(kVar, saved.c_str(), 1);
}

TEST_CASE("interleaved reps on the GPU: every kernel verified, its reps from the same rounds, its memory as blocked",
          "[gpu][interleave]") {
  const nlohmann::json spec = {{"seq_q", {200}},         {"seq_k", {333}},    {"batch", {2}},
                               {"heads", {8}},           {"kv_heads", {2}},   {"head_dim", {64, 128}},
                               {"dtype", {"bf16"}},      {"causal", {false}}, {"pass", {"fwd", "bwd"}},
                               {"kernels", {"naive", "flash", "flash-sm90"}}, {"warmup", 1},
                               {"reps", 4}};
  Sweep sweep = sweep_from_json(spec);
  const Results blocked = run_sweep(sweep, gpu());
  sweep.rep_order = RepOrder::interleaved;
  const Results inter = run_sweep(sweep, gpu());
  CHECK(inter.settings.at("rep_order") == "interleaved");
  REQUIRE(inter.records.size() == blocked.records.size());
  int timed = 0;
  for (std::size_t i = 0; i < inter.records.size(); ++i) {
    const Record& r = inter.records[i];
    INFO(r.c.key() << " " << r.kernel << ": " << r.reason);
    CHECK(r.kernel == blocked.records[i].kernel);
    CHECK(r.status == blocked.records[i].status);  // flash-sm90 skipped off Hopper, in both
    if (r.status != Status::ok) continue;
    ++timed;
    CHECK(r.verified == std::optional<bool>(true));
    CHECK(r.time_ms.samples.size() == 4);
    CHECK(r.peak_bytes == blocked.records[i].peak_bytes);
  }
  CHECK(timed >= 8);  // naive and flash, both head dims and passes
}
