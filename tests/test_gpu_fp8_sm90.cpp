// GPU tests [gpu][fp8sm90] of flash-sm90's fp8 (e4m3) forward (kernels/flash_sm90/flash_sm90_fp8_*).
//
// 1. The kernel called directly on inputs quantised here, against two yardsticks:
//    - the fp64 reference of the same quantised inputs (codes x descales), with the bound verify uses
//      for a tiled fp8 kernel without a baseline (judge.cpp's tol_tiled: O 2^-4, LSE 2^-16 of the
//      magnitude);
//    - the CPU backend's flash emulation (the spec of the fp8 roundings: P quantised per tile against
//      the running max, row sum from the fp32 P, O in bf16) run with the kernel's K/V tile
//      (fp8_key_tile: 224 keys at d = 128, 128 at d = 64), so both quantise P against the same
//      running maxima: the kernel's error must stay within 2x the emulation's (Hopper's ~14-bit FP8
//      accumulation keeps them from agreeing bit for bit); a misapplied descale or p_scale, or a
//      key order that differs between P and V^T, is of the order of the output itself.
//    LSE depends on S alone, so an LSE failure points at Q K^T (descriptors, swizzle), an O failure
//    with LSE right at P V (the e4m3 A fragment, the V transpose and its key permutation).
// 2. The same kernel through the CUDA backend and verify (the runner's path), on the backend's fp8
//    inputs.
// Without a Hopper device or sm_90a code the kernel refuses, and the tests say so (WARN).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "attention.h"
#include "backend/cpu/cpu_attention.h"
#include "backend/cpu/memory.h"
#include "backend/cpu/numeric.h"
#include "backend/cpu/parallel.h"
#include "catch.h"
#include "common/check.h"
#include "common/fp8.h"
#include "flash_sm90/flash_sm90_fp8.h"  // fp8_key_tile
#include "gpu_support.h"
#include "judge.h"
#include "registry.h"
#include "runner.h"

namespace {

using namespace fb;
using namespace fb::test;

struct Shape {
  int batch, heads, kv_heads, seq_q, seq_k, dim;
  bool causal;
};

struct DevBuf {
  void* p = nullptr;
  explicit DevBuf(std::size_t bytes) { FB_CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(bytes, 16))); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  ~DevBuf() { FB_CUDA_CHECK_NOTHROW(cudaFree(p)); }
};

// Standard normal values quantised per tensor as the backends do (attention.h): s = amax / 448.
struct Quantised {
  std::vector<std::uint8_t> codes;
  float descale = 1.0f;
};
Quantised quantise_normal(std::size_t n, std::mt19937& gen) {
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> x(n);
  float amax = 0;
  for (float& v : x) {
    v = normal(gen);
    amax = std::max(amax, std::abs(v));
  }
  Quantised q;
  q.descale = amax > 0 ? amax / kFp8E4m3Max : 1.0f;
  q.codes.resize(n);
  for (std::size_t i = 0; i < n; ++i) q.codes[i] = fp8_e4m3_from_float(x[i] / q.descale);
  return q;
}

struct Outputs {
  std::vector<double> o, lse;
  double s_abs = 0;  // reference only: max over (row, key) of scale * descales * sum_c |q_c k_c|
};

// Exact attention in fp64 of the real inputs (codes x descales).
Outputs reference(const AttentionParams& p, const Quantised& q, const Quantised& k, const Quantised& v) {
  const int d = p.head_dim, nq = p.seq_q, nk = p.seq_k;
  Outputs out;
  out.o.assign(std::size_t(p.q_elems()), 0.0);
  out.lse.assign(std::size_t(p.rows()), 0.0);
  const CausalMask mask = p.mask();
  std::vector<double> s(static_cast<std::size_t>(nk));
  for (int b = 0; b < p.batch; ++b)
    for (int h = 0; h < p.heads; ++h) {
      const std::size_t qoff = (std::size_t(b) * p.heads + h) * nq * d;
      const std::size_t kvoff = (std::size_t(b) * p.kv_heads + h / p.group()) * nk * d;
      for (int i = 0; i < nq; ++i) {
        const int end = mask.key_end(i);
        const std::size_t row = (std::size_t(b) * p.heads + h) * nq + i;
        if (end == 0) {
          out.lse[row] = -std::numeric_limits<double>::infinity();
          continue;
        }
        double mx = -std::numeric_limits<double>::infinity();
        for (int j = 0; j < end; ++j) {
          double acc = 0, mag = 0;
          for (int c = 0; c < d; ++c) {
            const double x = double(fp8_e4m3_to_float(q.codes[qoff + std::size_t(i) * d + c])) *
                             double(fp8_e4m3_to_float(k.codes[kvoff + std::size_t(j) * d + c]));
            acc += x;
            mag += std::abs(x);
          }
          const double f = p.scale * double(q.descale) * double(k.descale);
          s[j] = acc * f;
          out.s_abs = std::max(out.s_abs, mag * f);
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (int j = 0; j < end; ++j) {
          s[j] = std::exp(s[j] - mx);
          sum += s[j];
        }
        for (int c = 0; c < d; ++c) {
          double acc = 0;
          for (int j = 0; j < end; ++j)
            acc += s[j] * double(fp8_e4m3_to_float(v.codes[kvoff + std::size_t(j) * d + c]));
          out.o[qoff + std::size_t(i) * d + c] = acc / sum * double(v.descale);
        }
        out.lse[row] = mx + std::log(sum);
      }
    }
  return out;
}

// The CPU backend's flash emulation (the fp8 spec) with K/V tiles of `bc` keys.
Outputs emulate(AttentionParams p, const Quantised& q, const Quantised& k, const Quantised& v, int bc) {
  std::vector<cpu::BFloat16> o(std::size_t(p.q_elems()));
  std::vector<float> lse(std::size_t(p.rows()));
  p.q = q.codes.data();
  p.k = k.codes.data();
  p.v = v.codes.data();
  p.o = o.data();
  p.lse = lse.data();
  cpu::ThreadPool pool(4);
  cpu::MemoryTracker tracker;
  cpu::Context ctx{&tracker, &pool, cpu::Tiles{64, bc}};
  cpu::flash_forward(p, ctx);
  Outputs out;
  for (const auto& x : o) out.o.push_back(cpu::to_double(x));
  for (float x : lse) out.lse.push_back(x);
  return out;
}

struct Err {
  double max_abs = 0;
  double scale = 0;  // max |yardstick| over finite values
  bool finite = true;
};
Err compare(const std::vector<double>& got, const std::vector<double>& want) {
  Err e;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isinf(want[i]) && got[i] == want[i]) continue;  // -inf LSE of an empty row
    if (!std::isfinite(got[i]) || !std::isfinite(want[i])) {
      e.finite = false;
      continue;
    }
    e.max_abs = std::max(e.max_abs, std::abs(got[i] - want[i]));
    e.scale = std::max(e.scale, std::abs(want[i]));
  }
  return e;
}

std::string shape_name(const Shape& s) {
  return "b" + std::to_string(s.batch) + " h" + std::to_string(s.heads) + "/" + std::to_string(s.kv_heads) +
         " sq" + std::to_string(s.seq_q) + " sk" + std::to_string(s.seq_k) + " d" + std::to_string(s.dim) +
         (s.causal ? " causal" : "");
}

}  // namespace

TEST_CASE("flash-sm90 fp8 forward matches the fp64 reference and the CPU emulation", "[gpu][fp8sm90]") {
  const cuda::Ops& ops = cuda::flash_sm90_ops();
  const Shape shapes[] = {
      {1, 2, 2, 256, 256, 128, false},   {1, 2, 2, 256, 256, 128, true},
      {2, 4, 1, 200, 333, 128, true},    // GQA (MQA), seq_q < seq_k, odd lengths
      {1, 4, 2, 333, 200, 64, true},     // seq_q > seq_k causal: the first 133 rows see no key
      {1, 3, 3, 1000, 1000, 64, false},  // odd length at d = 64 (192-row query tiles)
      {1, 2, 1, 64, 4096, 128, false},   // many K/V tiles: the running max moves
      {1, 1, 1, 1, 17, 64, false},       // one row, one partial tile
      {1, 2, 2, 2048, 2048, 128, true},  {2, 2, 2, 1025, 1025, 64, true},
  };
  std::mt19937 gen(20261130);
  for (const Shape& sh : shapes) {
    INFO("shape " << shape_name(sh));
    AttentionParams p;
    p.dtype = Dtype::fp8;
    p.batch = sh.batch;
    p.heads = sh.heads;
    p.kv_heads = sh.kv_heads;
    p.seq_q = sh.seq_q;
    p.seq_k = sh.seq_k;
    p.head_dim = sh.dim;
    p.causal = sh.causal;
    p.scale = 1.0 / std::sqrt(double(sh.dim));
    const Quantised q = quantise_normal(std::size_t(p.q_elems()), gen);
    const Quantised k = quantise_normal(std::size_t(p.kv_elems()), gen);
    const Quantised v = quantise_normal(std::size_t(p.kv_elems()), gen);
    p.descale_q = q.descale;
    p.descale_k = k.descale;
    p.descale_v = v.descale;

    if (const char* why = ops.unsupported(Pass::fwd, p)) {
      // Only off Hopper or in a build without sm_90a code (never for the shape or the dtype: a
      // refusal such as "not built" on an H100/H200 fails here).
      INFO(why);
      CHECK((std::string(why).find("compute capability 9.0") != std::string::npos ||
             std::string(why).find("sm_90a") != std::string::npos));
      WARN("flash-sm90 fp8 not run: " << why);
      return;
    }
    CHECK(ops.unsupported(Pass::bwd, p) != nullptr);  // forward only, with a reason
    DevBuf dq(q.codes.size()), dk(k.codes.size()), dv(v.codes.size());
    DevBuf dout(std::size_t(p.q_elems()) * 2), dlse(std::size_t(p.rows()) * 4);
    DevBuf ws(ops.workspace_bytes(Pass::fwd, p));
    FB_CUDA_CHECK(cudaMemcpy(dq.p, q.codes.data(), q.codes.size(), cudaMemcpyHostToDevice));
    FB_CUDA_CHECK(cudaMemcpy(dk.p, k.codes.data(), k.codes.size(), cudaMemcpyHostToDevice));
    FB_CUDA_CHECK(cudaMemcpy(dv.p, v.codes.data(), v.codes.size(), cudaMemcpyHostToDevice));
    // NaN poison: a row the kernel does not write fails.
    FB_CUDA_CHECK(cudaMemset(dout.p, 0xff, std::size_t(p.q_elems()) * 2));
    FB_CUDA_CHECK(cudaMemset(dlse.p, 0xff, std::size_t(p.rows()) * 4));
    // Garbage in the workspace: the transpose must write every byte the kernel reads.
    FB_CUDA_CHECK(cudaMemset(ws.p, 0x7f, ops.workspace_bytes(Pass::fwd, p)));
    AttentionParams dp = p;
    dp.q = dq.p;
    dp.k = dk.p;
    dp.v = dv.p;
    dp.o = dout.p;
    dp.lse = dlse.p;
    dp.workspace = ws.p;
    REQUIRE(ops.unsupported(Pass::fwd, dp) == nullptr);
    ops.forward(dp, cuda::Context{});
    FB_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<std::uint16_t> o_bits(std::size_t(p.q_elems()));
    std::vector<float> lse(std::size_t(p.rows()));
    FB_CUDA_CHECK(cudaMemcpy(o_bits.data(), dout.p, o_bits.size() * 2, cudaMemcpyDeviceToHost));
    FB_CUDA_CHECK(cudaMemcpy(lse.data(), dlse.p, lse.size() * 4, cudaMemcpyDeviceToHost));
    Outputs got;
    for (std::uint16_t b : o_bits) got.o.push_back(cpu::bf16_bits_to_float(b));
    for (float x : lse) got.lse.push_back(x);

    const Outputs ref = reference(p, q, k, v);
    const Outputs emu = emulate(p, q, k, v, cuda::flash_sm90::fp8_key_tile(sh.dim));
    const Err o_ref = compare(got.o, ref.o), lse_ref = compare(got.lse, ref.lse);
    const Err o_emu = compare(got.o, emu.o), emu_ref = compare(emu.o, ref.o);
    std::printf("fp8-sm90 %-32s O err %.3e (M %.3e, %.2e M; CPU emulation %.2e M; vs emulation %.2e M)  "
                "LSE err %.3e (%.2e M)\n",
                shape_name(sh).c_str(), o_ref.max_abs, o_ref.scale, o_ref.max_abs / o_ref.scale,
                emu_ref.max_abs / emu_ref.scale, o_emu.max_abs / o_ref.scale, lse_ref.max_abs,
                lse_ref.scale > 0 ? lse_ref.max_abs / lse_ref.scale : 0.0);
    REQUIRE(o_ref.finite);
    REQUIRE(lse_ref.finite);
    // O: the bound verify applies to a tiled fp8 kernel without a baseline, and the 2x-baseline rule
    // with the CPU emulation as the baseline (plus two bf16 ulps at M). Not a bound on the distance to
    // the emulation: Hopper's FP8 MMAs accumulate S with ~14 bits (fp8naive measured LSE 2-3e-4
    // off the fp32 emulation), which moves some P * 2^8 across an e4m3 rounding boundary, each such
    // flip worth 2^-4 of that key's share of the row. A wrong descale, p_scale or key order is of
    // the order of M.
    CHECK(o_ref.max_abs <= tol_tiled("O", Dtype::fp8) * o_ref.scale);
    CHECK(o_ref.max_abs <= 2 * emu_ref.max_abs + 2 * ulp_at(o_ref.scale, Dtype::bf16));
    // LSE: fp32's 2^-16 of the magnitude, plus the S error of that accumulation, 2^-11 (8 x 2^-14)
    // of the largest |score| magnitude sum (the LSE moves by at most the largest S error).
    CHECK(lse_ref.max_abs <= tol_tiled("LSE", Dtype::fp8) * lse_ref.scale + 0x1p-11 * ref.s_abs);
  }
}

TEST_CASE("flash-sm90 fp8 forward passes verify through the CUDA backend", "[gpu][fp8sm90]") {
  CudaBackend& b = gpu();
  const Descriptor& sm90 = kernel("flash-sm90");
  const Shape shapes[] = {{1, 4, 4, 1024, 1024, 128, false}, {2, 4, 2, 777, 1500, 64, true},
                          {1, 8, 2, 4096, 4096, 128, true}};
  for (const Shape& sh : shapes) {
    Case c;
    c.batch = sh.batch;
    c.heads = sh.heads;
    c.kv_heads = sh.kv_heads;
    c.set_seq(sh.seq_q);
    c.seq_k = sh.seq_k;
    c.head_dim = sh.dim;
    c.dtype = Dtype::fp8;
    c.causal = sh.causal;
    c.pass = Pass::fwd;
    INFO("case " << c.key());
    if (const auto why = b.check_fits(c, sm90)) {
      INFO(*why);
      CHECK((why->find("compute capability 9.0") != std::string::npos ||
             why->find("sm_90a") != std::string::npos));
      WARN("flash-sm90 fp8 not run: " << *why);
      return;
    }
    b.prepare(c, 20261130);
    std::vector<Record> records;
    // The naive fp8 path is the baseline where it is built (else verify applies the dtype bound).
    const Descriptor& naive = kernel("naive");
    std::vector<const Descriptor*> runs = {&sm90};
    if (!b.check_fits(c, naive)) runs.insert(runs.begin(), &naive);
    for (const Descriptor* k : runs) {
      REQUIRE(b.run(*k, 0, 1).times_ms.size() == 1);
      records.push_back(ok_record(c, std::string(k->name)));
    }
    verify_case(b, records, builtin_kernels());
    for (const Record& r : records) {
      INFO(r.kernel << " errors " << r.errors.dump());
      std::printf("fp8-sm90 verify %s %s: %s\n", c.key().c_str(), r.kernel.c_str(), r.errors.dump().c_str());
      REQUIRE(r.verified.has_value());
      CHECK(*r.verified);
    }
    b.release();
  }
}

// Kernel timing without the backend (hidden: run with "[fp8sm90perf]"): the FlashAttention papers'
// setup (16k tokens per batch, model dim 2048), fp8 against bf16 on the same shapes, the fp8 time
// including its V transpose. Asserts only that each run completes and times positive; prints TFLOP/s.
TEST_CASE("flash-sm90 fp8 forward timing (diagnostic)", "[.][fp8sm90perf]") {
  const cuda::Ops& ops = cuda::flash_sm90_ops();
  for (int d : {128, 64})
    for (bool causal : {false, true})
      for (int n : {2048, 4096, 8192, 16384}) {
        for (Dtype t : {Dtype::fp8, Dtype::bf16}) {
          AttentionParams p;
          p.dtype = t;
          p.batch = 16384 / n;
          p.heads = 2048 / d;
          p.kv_heads = p.heads;
          p.seq_q = p.seq_k = n;
          p.head_dim = d;
          p.causal = causal;
          p.scale = 1.0 / std::sqrt(double(d));
          const std::size_t in = dtype_bytes(t), out = dtype_bytes(output_dtype(t));
          DevBuf dq(std::size_t(p.q_elems()) * in), dk(std::size_t(p.kv_elems()) * in),
              dv(std::size_t(p.kv_elems()) * in), dout(std::size_t(p.q_elems()) * out),
              dlse(std::size_t(p.rows()) * 4), ws(ops.workspace_bytes(Pass::fwd, p));
          // Small finite codes (0x30 = 0.5 in e4m3, 0x3f00 = 0.5 in bf16): timing only.
          FB_CUDA_CHECK(cudaMemset(dq.p, 0x30, std::size_t(p.q_elems()) * in));
          FB_CUDA_CHECK(cudaMemset(dk.p, 0x30, std::size_t(p.kv_elems()) * in));
          FB_CUDA_CHECK(cudaMemset(dv.p, 0x30, std::size_t(p.kv_elems()) * in));
          p.q = dq.p;
          p.k = dk.p;
          p.v = dv.p;
          p.o = dout.p;
          p.lse = dlse.p;
          p.workspace = ws.p;
          if (const char* why = ops.unsupported(Pass::fwd, p)) {
            WARN("not run: " << why);
            return;
          }
          constexpr int kWarm = 3, kReps = 20;
          for (int r = 0; r < kWarm; ++r) ops.forward(p, cuda::Context{});
          cudaEvent_t e0, e1;
          FB_CUDA_CHECK(cudaEventCreate(&e0));
          FB_CUDA_CHECK(cudaEventCreate(&e1));
          FB_CUDA_CHECK(cudaEventRecord(e0));
          for (int r = 0; r < kReps; ++r) ops.forward(p, cuda::Context{});
          FB_CUDA_CHECK(cudaEventRecord(e1));
          FB_CUDA_CHECK(cudaEventSynchronize(e1));
          float ms = 0;
          FB_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
          FB_CUDA_CHECK(cudaEventDestroy(e0));
          FB_CUDA_CHECK(cudaEventDestroy(e1));
          ms /= kReps;
          const double flops = 4.0 * p.batch * p.heads * double(n) * n * d * (causal ? 0.5 : 1.0);
          std::printf("fp8-sm90-perf %-4s d%-3d N%-6d %-6s %8.3f ms  %7.1f TFLOP/s\n",
                      t == Dtype::fp8 ? "fp8" : "bf16", d, n, causal ? "causal" : "full", ms,
                      flops / (ms * 1e-3) / 1e12);
          CHECK(ms > 0);
        }
      }
}
