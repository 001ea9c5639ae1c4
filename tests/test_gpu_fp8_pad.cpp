// GPU tests [gpu][fp8pad]: naive's fp8 forward at shapes off cuBLASLt FP8's 16-code grid (head_dim or
// seq_k not a multiple of 16), which it runs on zero-padded copies (kernels/naive/fp8_pad.h), and what
// that buys verify: flash-sm90's fp8 judged by the 2x-naive rule at such shapes (N = 777), where it used
// to fall back to the dtype bound (whose LSE bound assumes S summed in fp32, which Hopper's FP8 MMAs do
// not do), with wrong kernels still rejected there.
//   1. head_dim padding is exact: a d = 72 run equals, bit for bit, the d = 80 run on the same inputs
//      with zero columns added (the same GEMM calls); the workspace is NaN-poisoned first, so every
//      padding byte the GEMMs read must have been written.
//   2. seq_k (and head_dim) padding against the CPU backend's emulation of the same roundings and the
//      fp64 reference, on the same e4m3 codes: LSE to the FP8 MMA's accumulation noise (a padding key
//      let into the softmax moves it by far more), O within the emulation's error.
//   3. Through the runner: naive fp8 fits and verifies at those shapes with its padding in the tracked
//      workspace, flash-sm90 fp8 verifies under the 2x-naive rule at N = 777, and mutants of it (a
//      descale misapplied to S or to O, the last 16 keys ignored) are rejected at the same shapes.
// gpu_main.cpp skips without a device; off Hopper (or without sm_90a code) part 3 says so (WARN).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "attention.h"
#include "backend/cpu/cpu_attention.h"
#include "backend/cpu/memory.h"
#include "backend/cpu/numeric.h"
#include "backend/cpu/parallel.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_resources.h"
#include "catch.h"
#include "common/check.h"
#include "common/fp8.h"
#include "gpu_support.h"
#include "judge.h"
#include "registry.h"
#include "runner.h"

namespace {

using namespace fb;
using namespace fb::test;

constexpr std::uint64_t kSeed = 20261130;

struct Shape {
  int batch, heads, kv_heads, seq_q, seq_k, dim;
  bool causal;
};

std::string shape_name(const Shape& s) {
  return "b" + std::to_string(s.batch) + " h" + std::to_string(s.heads) + "/" + std::to_string(s.kv_heads) +
         " sq" + std::to_string(s.seq_q) + " sk" + std::to_string(s.seq_k) + " d" + std::to_string(s.dim) +
         (s.causal ? " causal" : "");
}

AttentionParams params_of(const Shape& s) {
  AttentionParams p;
  p.dtype = Dtype::fp8;
  p.batch = s.batch;
  p.heads = s.heads;
  p.kv_heads = s.kv_heads;
  p.seq_q = s.seq_q;
  p.seq_k = s.seq_k;
  p.head_dim = s.dim;
  p.causal = s.causal;
  p.scale = 1.0 / std::sqrt(double(s.dim));
  return p;
}

// e4m3 codes of standard normals at a per-tensor scale, as the backends quantise (attention.h).
struct Codes {
  std::vector<std::uint8_t> v;
  float descale = 1;
};
Codes quantised_normals(std::int64_t n, std::mt19937_64& gen) {
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<std::size_t>(n));
  float amax = 0;
  for (float& e : x) {
    e = normal(gen);
    amax = std::max(amax, std::abs(e));
  }
  Codes c;
  c.descale = amax > 0 ? amax / kFp8E4m3Max : 1.0f;
  c.v.resize(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) c.v[i] = fp8_e4m3_from_float(x[i] / c.descale);
  return c;
}

struct Inputs {
  AttentionParams p;  // shape, scale, descales; pointers unset
  Codes q, k, v;
};
Inputs make_inputs(const Shape& s, std::uint64_t seed) {
  Inputs in;
  in.p = params_of(s);
  std::mt19937_64 gen(seed);
  in.q = quantised_normals(in.p.q_elems(), gen);
  in.k = quantised_normals(in.p.kv_elems(), gen);
  in.v = quantised_normals(in.p.kv_elems(), gen);
  in.p.descale_q = in.q.descale;
  in.p.descale_k = in.k.descale;
  in.p.descale_v = in.v.descale;
  return in;
}

// Rows of `cols` codes widened to `cols_out` with zero codes (the d = 80 twin of a d = 72 input).
std::vector<std::uint8_t> widen_rows(const std::vector<std::uint8_t>& x, int cols, int cols_out) {
  const std::size_t rows = x.size() / std::size_t(cols);
  std::vector<std::uint8_t> out(rows * std::size_t(cols_out), 0);
  for (std::size_t r = 0; r < rows; ++r)
    std::copy_n(x.begin() + std::ptrdiff_t(r * cols), cols, out.begin() + std::ptrdiff_t(r * cols_out));
  return out;
}

struct DeviceMemory {
  void* p = nullptr;
  explicit DeviceMemory(std::size_t bytes) { FB_CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(bytes, 16))); }
  ~DeviceMemory() { FB_CUDA_CHECK_NOTHROW(cudaFree(p)); }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
};

struct Outputs {
  std::vector<std::uint16_t> o_bits;  // bf16 (GPU and CPU backends)
  std::vector<float> lse;
  std::vector<double> o() const {
    std::vector<double> out;
    out.reserve(o_bits.size());
    for (std::uint16_t b : o_bits) out.push_back(cpu::bf16_bits_to_float(b));
    return out;
  }
};

// naive's CUDA fp8 forward. The workspace and outputs start as 0xff bytes (e4m3 -NaN, bf16 and fp32
// NaN): padding the GEMMs read but nobody wrote, or an output row left unwritten, shows as NaN.
Outputs run_naive_cuda(const AttentionParams& shape, const std::vector<std::uint8_t>& q,
                       const std::vector<std::uint8_t>& k, const std::vector<std::uint8_t>& v) {
  gpu();  // the backend's device is the current one
  AttentionParams p = shape;
  const std::size_t nq = std::size_t(p.q_elems()), nkv = std::size_t(p.kv_elems()), rows = std::size_t(p.rows());
  REQUIRE(q.size() == nq);
  REQUIRE(k.size() == nkv);
  const cuda::Ops& ops = cuda::naive_ops();
  REQUIRE(ops.unsupported(Pass::fwd, p) == nullptr);
  const std::size_t ws_bytes = ops.workspace_bytes(Pass::fwd, p);
  DeviceMemory dq(nq), dk(nkv), dv(nkv), dout(nq * 2), dlse(rows * 4), ws(ws_bytes);
  FB_CUDA_CHECK(cudaMemcpy(dq.p, q.data(), nq, cudaMemcpyHostToDevice));
  FB_CUDA_CHECK(cudaMemcpy(dk.p, k.data(), nkv, cudaMemcpyHostToDevice));
  FB_CUDA_CHECK(cudaMemcpy(dv.p, v.data(), nkv, cudaMemcpyHostToDevice));
  FB_CUDA_CHECK(cudaMemset(ws.p, 0xff, ws_bytes));
  FB_CUDA_CHECK(cudaMemset(dout.p, 0xff, nq * 2));
  FB_CUDA_CHECK(cudaMemset(dlse.p, 0xff, rows * 4));
  p.q = dq.p;
  p.k = dk.p;
  p.v = dv.p;
  p.o = dout.p;
  p.lse = dlse.p;
  p.workspace = ws.p;
  cuda::Stream stream;
  cuda::CublasHandle cublas(stream.get());
  ops.forward(p, cuda::Context{stream.get(), cublas.get()});
  FB_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  Outputs out;
  out.o_bits.resize(nq);
  out.lse.resize(rows);
  FB_CUDA_CHECK(cudaMemcpy(out.o_bits.data(), dout.p, nq * 2, cudaMemcpyDeviceToHost));
  FB_CUDA_CHECK(cudaMemcpy(out.lse.data(), dlse.p, rows * 4, cudaMemcpyDeviceToHost));
  return out;
}

// The CPU backend's naive fp8 emulation (cpu_attention.cpp) on the same codes: no alignment rule there.
Outputs run_naive_cpu(const Inputs& in, cpu::ThreadPool& pool) {
  AttentionParams p = in.p;
  Outputs out;
  out.o_bits.resize(std::size_t(p.q_elems()));
  out.lse.resize(std::size_t(p.rows()));
  p.q = in.q.v.data();  // cpu::Fp8E4m3 is one byte holding the code
  p.k = in.k.v.data();
  p.v = in.v.v.data();
  p.o = out.o_bits.data();  // cpu::BFloat16: the bf16 bits
  p.lse = out.lse.data();
  cpu::MemoryTracker tracker;
  cpu::Context ctx;
  ctx.tracker = &tracker;
  ctx.pool = &pool;
  cpu::naive_forward(p, ctx);
  return out;
}

struct Exact {
  std::vector<double> o, lse;
};
Exact run_reference(const Inputs& in, cpu::ThreadPool& pool) {
  AttentionParams p = in.p;
  p.dtype = Dtype::fp64;
  const auto widen = [](const Codes& c) {
    std::vector<double> x(c.v.size());
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = double(fp8_e4m3_to_float(c.v[i])) * c.descale;
    return x;
  };
  const std::vector<double> q = widen(in.q), k = widen(in.k), v = widen(in.v);
  p.q = q.data();
  p.k = k.data();
  p.v = v.data();
  std::vector<int> rows(std::size_t(p.seq_q));
  for (int i = 0; i < p.seq_q; ++i) rows[std::size_t(i)] = i;
  Exact out;
  out.o.resize(std::size_t(p.q_elems()));
  out.lse.resize(std::size_t(p.rows()));
  cpu::reference_forward(p, rows, out.o.data(), out.lse.data(), pool);
  return out;
}

// |a - b| over a pair of outputs: max (infinite where one is finite and the other not), mean, and the
// share of elements that differ at all. Equal values, -inf included (a row with no key), count as 0.
struct Agreement {
  double max_abs = 0, mean_abs = 0, differing = 0;
};
template <typename A, typename B> Agreement agreement(const std::vector<A>& a, const std::vector<B>& b) {
  REQUIRE(a.size() == b.size());
  Agreement g;
  std::size_t diff = 0;
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = double(a[i]), y = double(b[i]);
    if (x == y) continue;
    ++diff;
    const double d =
        std::isfinite(x) && std::isfinite(y) ? std::abs(x - y) : std::numeric_limits<double>::infinity();
    g.max_abs = d > g.max_abs ? d : g.max_abs;
    if (std::isfinite(d)) sum += d;
  }
  g.differing = a.empty() ? 0 : double(diff) / double(a.size());
  g.mean_abs = a.empty() ? 0 : sum / double(a.size());
  return g;
}

template <typename T> double max_abs_finite(const std::vector<T>& v) {
  double m = 0;
  for (T x : v)
    if (std::isfinite(double(x))) m = std::max(m, std::abs(double(x)));
  return m;
}

}  // namespace

TEST_CASE("naive fp8 on CUDA: a head_dim off the 16-code grid is padded exactly", "[gpu][fp8pad]") {
  // Each d = 72 run against the d = 80 run on the same codes with 8 zero columns (and the d = 72
  // softmax scale): the same padded GEMMs, so O's first 72 columns and LSE bit for bit, O's last 8
  // exactly 0. seq_k on the grid (only d padded) and off it (both).
  for (const Shape& sh : {Shape{1, 4, 2, 200, 256, 72, false}, Shape{1, 4, 2, 200, 333, 72, true},
                          Shape{2, 2, 1, 65, 100, 40, false}}) {
    INFO("shape " << shape_name(sh));
    const Inputs in = make_inputs(sh, kSeed);
    const int wide = (sh.dim + 15) / 16 * 16;
    AttentionParams pw = in.p;
    pw.head_dim = wide;  // scale and descales stay those of the narrow case
    const Outputs narrow = run_naive_cuda(in.p, in.q.v, in.k.v, in.v.v);
    const Outputs padded = run_naive_cuda(pw, widen_rows(in.q.v, sh.dim, wide), widen_rows(in.k.v, sh.dim, wide),
                                          widen_rows(in.v.v, sh.dim, wide));
    std::size_t o_differ = 0, tail_nonzero = 0, lse_differ = 0, nan = 0;
    const std::size_t rows = std::size_t(in.p.rows());
    for (std::size_t r = 0; r < rows; ++r) {
      for (int c = 0; c < wide; ++c) {
        const std::uint16_t w = padded.o_bits[r * std::size_t(wide) + std::size_t(c)];
        if (c < sh.dim) {
          const std::uint16_t n = narrow.o_bits[r * std::size_t(sh.dim) + std::size_t(c)];
          o_differ += n != w;
          nan += std::isnan(cpu::bf16_bits_to_float(n));
        } else {
          tail_nonzero += cpu::bf16_bits_to_float(w) != 0.0f;
        }
      }
      std::uint32_t a, b;
      std::memcpy(&a, &narrow.lse[r], 4);
      std::memcpy(&b, &padded.lse[r], 4);
      lse_differ += a != b;
    }
    std::printf("fp8pad d%d vs d%d zero-padded %s: O bits differ at %zu, LSE at %zu of %zu rows, NaN %zu\n",
                sh.dim, wide, shape_name(sh).c_str(), o_differ, lse_differ, rows, nan);
    CHECK(nan == 0);
    CHECK(o_differ == 0);
    CHECK(lse_differ == 0);
    CHECK(tail_nonzero == 0);
  }
}

TEST_CASE("naive fp8 on CUDA at unaligned head_dim and seq_k matches the CPU emulation and fp64",
          "[gpu][fp8pad]") {
  cpu::ThreadPool pool(8);
  const Shape shapes[] = {
      {1, 4, 4, 777, 777, 128, false},  // the N = 777 of the issue
      {1, 4, 1, 777, 777, 64, true},
      {1, 4, 2, 200, 333, 72, true},    // GQA, seq_q < seq_k, d off the grid
      {2, 2, 2, 1000, 17, 80, false},   // 15 padding keys beside 17 real ones
      {1, 4, 2, 300, 100, 24, true},    // seq_q > seq_k causal: 200 rows see no key
      {1, 8, 2, 1, 3001, 40, false},    // decode
  };
  for (const Shape& sh : shapes) {
    INFO("shape " << shape_name(sh));
    const Inputs in = make_inputs(sh, kSeed);
    const Exact ref = run_reference(in, pool);
    const Outputs cpu8 = run_naive_cpu(in, pool);
    const Outputs gpu8 = run_naive_cuda(in.p, in.q.v, in.k.v, in.v.v);
    const std::vector<double> o_cpu = cpu8.o(), o_gpu = gpu8.o();
    const double m = max_abs_finite(ref.o), lse_m = max_abs_finite(ref.lse);
    const Agreement cpu_err = agreement(o_cpu, ref.o), gpu_err = agreement(o_gpu, ref.o);
    const Agreement o_same = agreement(o_gpu, o_cpu), lse_same = agreement(gpu8.lse, cpu8.lse);
    const Agreement lse_ref = agreement(gpu8.lse, ref.lse);
    const double ulp = ulp_at(m, Dtype::bf16);
    std::printf("fp8pad naive %-28s O err %.3e vs CPU emulation %.3e (mean %.3e vs %.3e; M %.3e); vs "
                "emulation: O <= %.3e (mean %.3e, %.2f%% differ), LSE <= %.3e; LSE err %.3e\n",
                shape_name(sh).c_str(), gpu_err.max_abs, cpu_err.max_abs, gpu_err.mean_abs, cpu_err.mean_abs, m,
                o_same.max_abs, o_same.mean_abs, 100 * o_same.differing, lse_same.max_abs, lse_ref.max_abs);
    // LSE comes from S alone: the FP8 MMA's ~14-bit accumulation keeps it within 2^-12 of the fp32
    // emulation (test_gpu_fp8.cpp; H200 2-3e-4). A padding key let into the softmax adds exp(0 - max)
    // to a row's sum per key: at seq_k 17 against 15 of them, or a seq_k of 777 against 7, far more.
    CHECK(lse_same.max_abs <= 0x1p-12 * (1 + lse_m));
    // O: the emulation's error against fp64, up to the P roundings that accumulation flips (2x, the
    // rule verify applies), and close to the emulation element by element: one flipped P8 rounding is
    // one e4m3 step, up to 2^-3 of that key's P |V|, which at seq_k 17 can approach 2^-3 M; a
    // misplaced or uncropped column, or a NaN from unwritten padding, is of the order of M or more.
    CHECK(gpu_err.max_abs <= 2 * cpu_err.max_abs + 2 * ulp);
    CHECK(gpu_err.mean_abs <= 1.25 * cpu_err.mean_abs + ulp / 64);
    CHECK(o_same.max_abs <= 0x1p-2 * m);
  }
}

namespace {

// flash-sm90 with one bug planted on its inputs (test code only; the pattern of test_gpu_mutation.cpp).
enum class Fp8Bug { descale_k, descale_v, skip_last_16 };

const char* slug(Fp8Bug b) {
  switch (b) {
    case Fp8Bug::descale_k: return "descale-k-x17/16";
    case Fp8Bug::descale_v: return "descale-v-x3/2";
    case Fp8Bug::skip_last_16: return "skip-last-16";
  }
  return "?";
}

Descriptor fp8_mutant(const Descriptor& real, Fp8Bug bug) {
  Descriptor d = real;
  d.name = real.name + "-mutant-" + slug(bug);
  d.role = Role::tiled;
  d.origin = "tests/test_gpu_fp8_pad.cpp";
  d.cpu = {};
  const auto fwd = real.cuda.forward;
  d.cuda.forward = [fwd, bug](const AttentionParams& p, const cuda::Context& ctx, NoState& st) {
    AttentionParams q = p;
    // S scaled by 1 + 2^-4 (LSE moves by that share of the scores; O a little): the descale of K.
    if (bug == Fp8Bug::descale_k) q.descale_k = p.descale_k * 1.0625f;
    // O scaled by 3/2 (LSE right): the descale of V. Naive's own O error at N = 777 is a few % of M.
    if (bug == Fp8Bug::descale_v) q.descale_v = p.descale_v * 1.5f;
    // The first seq_k - 16 keys only: with one K/V plane (batch * kv_heads = 1) they are the tensor's
    // first rows, so the kernel reads a prefix of the real K and V.
    if (bug == Fp8Bug::skip_last_16) q.seq_k = p.seq_k - 16;
    fwd(q, ctx, st);
  };
  return d;
}

// errors[tensor][what] of a judged record, or -1 where absent. A non-finite error is stored as a string
// ("inf", "nan": JSON has no such numbers), read back as that value.
double error_of(const Record& r, const char* tensor, const char* what) {
  if (!r.errors.contains(tensor) || !r.errors.at(tensor).contains(what)) return -1;
  const nlohmann::json& v = r.errors.at(tensor).at(what);
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) return std::strtod(v.get<std::string>().c_str(), nullptr);
  return -1;
}

Case fp8_case(const Shape& s) {
  return make_case(s.batch, s.heads, s.kv_heads, s.seq_q, s.seq_k, s.dim, Dtype::fp8, s.causal, Pass::fwd);
}

}  // namespace

TEST_CASE("verify at N = 777: naive fp8 is the baseline, flash-sm90 fp8 passes the 2x rule, mutants fail",
          "[gpu][fp8pad]") {
  CudaBackend& b = gpu();
  const Descriptor& naive = kernel("naive");
  const Descriptor& sm90 = kernel("flash-sm90");
  KernelSet set;
  for (const Descriptor& d : builtin_kernels().all()) set.add(d);
  const std::vector<Fp8Bug> bugs = {Fp8Bug::descale_k, Fp8Bug::descale_v, Fp8Bug::skip_last_16};
  for (Fp8Bug bug : bugs) set.add(fp8_mutant(sm90, bug));

  // One K/V plane each (skip-last-16 reads a prefix of it); flash-sm90's fp8 head dims, 64 and 128.
  const Shape shapes[] = {{1, 4, 1, 777, 777, 128, false}, {1, 4, 1, 777, 777, 128, true},
                          {1, 4, 1, 777, 777, 64, false},  {1, 8, 1, 1000, 3001, 128, false},
                          {1, 4, 1, 333, 777, 64, true}};
  bool sm90_runs = true;
  for (const Shape& sh : shapes) {
    const Case c = fp8_case(sh);
    INFO("case " << c.key());
    REQUIRE(sh.batch * sh.kv_heads == 1);
    // naive takes every shape now: no refusal for seq_k or head_dim.
    const auto naive_why = b.check_fits(c, naive);
    INFO("naive: " << naive_why.value_or("fits"));
    REQUIRE_FALSE(naive_why.has_value());
    if (const auto why = b.check_fits(c, sm90)) {
      INFO(*why);
      CHECK((why->find("compute capability 9.0") != std::string::npos || why->find("sm_90a") != std::string::npos));
      sm90_runs = false;
    }
    b.prepare(c, kSeed);
    std::vector<Record> records;
    const KernelRun naive_run = b.run(naive, 0, 1);
    REQUIRE(naive_run.times_ms.size() == 1);
    // The padded operands are in the tracked workspace.
    CHECK(naive_run.peak_bytes >= naive.cuda.workspace_bytes(Pass::fwd, c.params()));
    records.push_back(ok_record(c, "naive"));
    if (sm90_runs) {
      for (const Descriptor& d : set.all()) {
        // flash-sm90 and its mutants (not the fp32 diagnostic flash-sm90-tf32x1)
        if (d.name != sm90.name && d.name.find("-mutant-") == std::string::npos) continue;
        REQUIRE(b.run(d, 0, 1).times_ms.size() == 1);
        records.push_back(ok_record(c, d.name));
      }
    }
    verify_case(b, records, set);
    for (const Record& r : records) {
      INFO(r.kernel << " errors " << r.errors.dump());
      std::printf("fp8pad verify %s %-36s %s rule %s  O err %.3e (bound %.3e)  LSE err %.3e (bound %.3e)\n",
                  c.key().c_str(), r.kernel.c_str(),
                  r.verified.has_value() ? (*r.verified ? "[OK]  " : "[FAIL]") : "[?]   ",
                  r.errors.value("rule", std::string("?")).c_str(), error_of(r, "O", "ref"),
                  error_of(r, "O", "bound"), error_of(r, "LSE", "ref"), error_of(r, "LSE", "bound"));
      REQUIRE(r.verified.has_value());
      if (r.kernel == "naive") {
        CHECK(*r.verified);
      } else if (r.kernel == "flash-sm90") {
        CHECK(r.errors.value("rule", std::string()) == "2x-baseline");
        CHECK(*r.verified);
      } else {
        CHECK_FALSE(*r.verified);  // a mutant
      }
    }
    b.release();
  }
  if (!sm90_runs) WARN("flash-sm90 fp8 not run (not Hopper, or no sm_90a code): naive checked alone");
}
