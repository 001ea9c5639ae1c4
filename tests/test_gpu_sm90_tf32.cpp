// GPU tests [gpu][sm90tf32] of the TF32 wgmma pieces of flash-sm90's fp32 forward, one tile at a
// time (tests/sm90_tf32_probe.cu runs the kernel's own device functions): the TF32 A-fragment layout
// of the Q fragments, the K split, the V transpose with the key permutation that makes P's
// accumulator registers the A fragment of P V. A wrong layout or permutation gives errors of the
// size of the values themselves; the split's residue is ~2^-22 of the products' magnitudes.
// The whole kernels against the fp64 reference: tests/test_fp32_tc.cpp (variants "sm90 ..."), and
// below the fp32 backward through the runner's own verification (the FP32 rule of src/judge.h).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "catch.h"
#include "common/check.h"
#include "gpu_support.h"
#include "runner.h"
#include "sm90_tf32_probe.h"

namespace {

using namespace fb::test;

struct Buf {
  float* p = nullptr;
  explicit Buf(std::size_t n) { FB_CUDA_CHECK(cudaMalloc(&p, n * sizeof(float))); }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  ~Buf() { FB_CUDA_CHECK_NOTHROW(cudaFree(p)); }
};

struct ProbeResult {
  double s_err = 0, s_scale = 0, o_err = 0, o_scale = 0;  // max |x - ref|, max sum |a b|
  bool ran = false;
};

ProbeResult probe(bool split, bool session7 = false) {
  constexpr int R = kProbeRows, B = kProbeKeys, D = kProbeDim;
  std::mt19937 gen(20261201);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  std::vector<float> q(R * D), k(B * D), v(B * D), p(R * B);
  for (float& x : q) x = normal(gen);
  for (float& x : k) x = normal(gen);
  for (float& x : v) x = normal(gen);
  for (float& x : p) x = unit(gen);  // softmax probabilities are in [0, 1]
  Buf dq(q.size()), dk(k.size()), dv(v.size()), dp(p.size()), ds(R * B), dout(R * D);
  FB_CUDA_CHECK(cudaMemcpy(dq.p, q.data(), q.size() * 4, cudaMemcpyHostToDevice));
  FB_CUDA_CHECK(cudaMemcpy(dk.p, k.data(), k.size() * 4, cudaMemcpyHostToDevice));
  FB_CUDA_CHECK(cudaMemcpy(dv.p, v.data(), v.size() * 4, cudaMemcpyHostToDevice));
  FB_CUDA_CHECK(cudaMemcpy(dp.p, p.data(), p.size() * 4, cudaMemcpyHostToDevice));
  // NaN poison: an element the probe does not write fails.
  FB_CUDA_CHECK(cudaMemset(ds.p, 0xff, R * B * 4));
  FB_CUDA_CHECK(cudaMemset(dout.p, 0xff, R * D * 4));
  ProbeResult r;
  r.ran = run_sm90_tf32_probe(dq.p, dk.p, dv.p, dp.p, ds.p, dout.p, split, session7);
  if (!r.ran) return r;
  std::vector<float> s(R * B), o(R * D);
  FB_CUDA_CHECK(cudaMemcpy(s.data(), ds.p, s.size() * 4, cudaMemcpyDeviceToHost));
  FB_CUDA_CHECK(cudaMemcpy(o.data(), dout.p, o.size() * 4, cudaMemcpyDeviceToHost));
  auto err = [](double x, double ref) { return std::isfinite(x) ? std::abs(x - ref) : INFINITY; };
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < B; ++j) {
      double ref = 0, mag = 0;
      for (int c = 0; c < D; ++c) {
        ref += double(q[i * D + c]) * k[j * D + c];
        mag += std::abs(double(q[i * D + c]) * k[j * D + c]);
      }
      r.s_err = std::max(r.s_err, err(s[i * B + j], ref));
      r.s_scale = std::max(r.s_scale, mag);
    }
  for (int i = 0; i < R; ++i)
    for (int c = 0; c < D; ++c) {
      double ref = 0, mag = 0;
      for (int j = 0; j < B; ++j) {
        ref += double(p[i * B + j]) * v[j * D + c];
        mag += std::abs(double(p[i * B + j]) * v[j * D + c]);
      }
      r.o_err = std::max(r.o_err, err(o[i * D + c], ref));
      r.o_scale = std::max(r.o_scale, mag);
    }
  return r;
}

// Host reference of cvt.rn.tf32.f32: round to nearest, ties to even, at bit 13; Inf and NaN kept.
std::uint32_t tf32_rne(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, 4);
  if ((b & 0x7f800000u) == 0x7f800000u) return b;
  return (b + 0xfffu + ((b >> 13) & 1u)) & 0xffffe000u;
}
float as_float(std::uint32_t b) {
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}

}  // namespace

TEST_CASE("sm90 TF32 split by cvt.rn: nearest-even TF32 hi and lo, low 13 bits zero", "[gpu][sm90tf32]") {
  // Random values over many binades, exact ties with even and odd bit 13 (the case where ties to
  // even and ties away differ), values just off a tie, subnormals, signed zeros, large values.
  std::mt19937 gen(20261130);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_int_distribution<std::uint32_t> bits(0u, 0xffffffffu);
  std::vector<float> x;
  for (int e = -30; e <= 30; e += 3)
    for (int i = 0; i < 64; ++i) x.push_back(std::ldexp(normal(gen), e));
  for (int i = 0; i < 512; ++i) {
    std::uint32_t b = bits(gen) & 0xbfffffffu;  // finite: exponent below 0xff
    const std::uint32_t tie = (b & 0xffffe000u) | 0x1000u;
    x.push_back(as_float(tie));
    x.push_back(as_float(tie ^ 0x2000u));  // the other parity of bit 13
    x.push_back(as_float(tie + 1));
    x.push_back(as_float(tie - 1));
    x.push_back(as_float(b & 0x807fffffu));  // subnormal
  }
  x.push_back(0.f);
  x.push_back(-0.f);
  x.push_back(3.0e38f);
  const int n = int(x.size());
  Buf dx(n), dhi(n), dlo(n);
  FB_CUDA_CHECK(cudaMemcpy(dx.p, x.data(), n * 4, cudaMemcpyHostToDevice));
  if (!run_sm90_tf32_rn_split(dx.p, reinterpret_cast<std::uint32_t*>(dhi.p), reinterpret_cast<std::uint32_t*>(dlo.p),
                              n)) {
    WARN("no sm_90a device code or device: cvt.rn split not run");
    return;
  }
  std::vector<std::uint32_t> hi(n), lo(n);
  FB_CUDA_CHECK(cudaMemcpy(hi.data(), dhi.p, n * 4, cudaMemcpyDeviceToHost));
  FB_CUDA_CHECK(cudaMemcpy(lo.data(), dlo.p, n * 4, cudaMemcpyDeviceToHost));
  int wrong = 0, flushed = 0;
  for (int i = 0; i < n; ++i) {
    const std::uint32_t want_hi = tf32_rne(x[i]);
    const std::uint32_t want_lo = tf32_rne(x[i] - as_float(want_hi));  // x - hi is exact in fp32
    std::uint32_t xb;
    std::memcpy(&xb, &x[i], 4);
    // A subnormal input (never met by attention's data) may be flushed to zero: counted, not failed.
    if ((xb & 0x7f800000u) == 0 && (hi[i] & 0x7fffffffu) == 0 && (lo[i] & 0x7fffffffu) == 0 && want_hi != 0) {
      ++flushed;
      continue;
    }
    if (hi[i] != want_hi || lo[i] != want_lo || (hi[i] & 0x1fffu) != 0 || (lo[i] & 0x1fffu) != 0) {
      if (++wrong <= 5)
        std::printf("sm90-tf32-rn x=%a hi=%08x (want %08x) lo=%08x (want %08x)\n", double(x[i]), hi[i], want_hi,
                    lo[i], want_lo);
    }
  }
  std::printf("sm90-tf32-rn: %d of %d splits differ from the nearest-even reference (%d subnormals flushed)\n",
              wrong, n, flushed);
  CHECK(wrong == 0);
}

TEST_CASE("sm90 TF32 wgmma: fragment layouts, K split, permuted V^T on one tile", "[gpu][sm90tf32]") {
  const ProbeResult x3 = probe(true);
  if (!x3.ran) {
    WARN("no sm_90a device code or device: TF32 wgmma probe not run");
    return;
  }
  const ProbeResult x1 = probe(false);
  std::printf("sm90-tf32-probe 3xTF32: S err %.2e (scale %.2e), O err %.2e (scale %.2e)\n", x3.s_err,
              x3.s_scale, x3.o_err, x3.o_scale);
  std::printf("sm90-tf32-probe 1xTF32: S err %.2e, O err %.2e\n", x1.s_err, x1.o_err);
  // 3xTF32: each product exact to ~2^-21 relative, sums truncated in fp32: far below 2^-18 of the
  // magnitude sum. A wrong fragment layout or key order gives errors of the order of the values.
  constexpr double kX3Rel = 0x1p-18;
  CHECK(x3.s_err <= kX3Rel * x3.s_scale);
  CHECK(x3.o_err <= kX3Rel * x3.o_scale);
  // 1xTF32: right layout (errors ~2^-11 of the magnitudes, well under 2^-7), and visibly worse than
  // the split (the split's lo terms are really added).
  constexpr double kX1Rel = 0x1p-7;
  CHECK(x1.s_err <= kX1Rel * x1.s_scale);
  CHECK(x1.o_err <= kX1Rel * x1.o_scale);
  CHECK(x1.s_err > 16 * x3.s_err);
  CHECK(x1.o_err > 16 * x3.o_err);
}

// The same tile through the session-7 variants' pieces (cvt.rn splits, S in one pass into three
// accumulators, descriptors from the tile's: FB_SM90_FP32_FWD_PROBE=rn,onepass,desc), under the
// same bounds: a wrong descriptor offset or accumulator gives errors of the order of the values.
TEST_CASE("sm90 TF32 wgmma: the session-7 variants' pieces on one tile", "[gpu][sm90tf32]") {
  const ProbeResult x3 = probe(true, true);
  if (!x3.ran) {
    WARN("no sm_90a device code or device: TF32 wgmma probe not run");
    return;
  }
  const ProbeResult x1 = probe(false, true);
  std::printf("sm90-tf32-probe rn,onepass,desc 3xTF32: S err %.2e (scale %.2e), O err %.2e (scale %.2e)\n",
              x3.s_err, x3.s_scale, x3.o_err, x3.o_scale);
  std::printf("sm90-tf32-probe rn,onepass,desc 1xTF32: S err %.2e, O err %.2e\n", x1.s_err, x1.o_err);
  CHECK(x3.s_err <= 0x1p-18 * x3.s_scale);
  CHECK(x3.o_err <= 0x1p-18 * x3.o_scale);
  CHECK(x1.s_err <= 0x1p-7 * x1.s_scale);
  CHECK(x1.o_err <= 0x1p-7 * x1.o_scale);
  CHECK(x1.s_err > 16 * x3.s_err);
  CHECK(x1.o_err > 16 * x3.o_err);
}

namespace {

using namespace fb;

struct BwdShape {
  int batch, heads, kv_heads, seq_q, seq_k, head_dim;
  bool causal;
};

// The fp32 backward case of a shape: O and LSE from each kernel's own untimed forward, gradients from its backward.
Case bwd_case(const BwdShape& sh) {
  Case c;
  c.batch = sh.batch;
  c.heads = sh.heads;
  c.kv_heads = sh.kv_heads;
  c.seq_q = sh.seq_q;
  c.seq_k = sh.seq_k;
  c.head_dim = sh.head_dim;
  c.dtype = Dtype::fp32;
  c.causal = sh.causal;
  c.pass = Pass::bwd;
  return c;
}

// A shape and the scale its Q and K are drawn at.
struct ScaledShape {
  BwdShape shape;
  double input_scale;
};

// naive and flash-sm90's fp32 backward on each shape at its input scale (seeded), judged by the FP32 rule.
void check_scaled_bwd(const std::vector<ScaledShape>& shapes, std::uint64_t seed) {
  CudaBackend& b = gpu();
  const Descriptor& sm90 = kernel("flash-sm90");
  for (const ScaledShape& ss : shapes) {
    const Case c = bwd_case(ss.shape);
    INFO("case " << c.key() << " input scale " << ss.input_scale);
    if (const auto why = b.check_fits(c, sm90)) {  // not an sm_90a build or device
      WARN("flash-sm90 fp32 backward not run: " << *why);
      return;
    }
    b.prepare(c, seed, ss.input_scale);
    std::vector<Record> records;
    for (const Descriptor* k : {&kernel("naive"), &sm90}) {
      REQUIRE(b.run(*k, 0, 1).times_ms.size() == 1);
      records.push_back(ok_record(c, std::string(k->name)));
    }
    verify_case(b, records, builtin_kernels());
    for (const Record& r : records) {
      std::printf("sm90-fp32-bwd %-34s scale %-8g %-18s %s %s\n", c.key().c_str(), ss.input_scale, r.kernel.c_str(),
                  r.verified.value_or(false) ? "verified" : "FAILED", r.errors.dump().c_str());
      INFO(r.kernel << " errors " << r.errors.dump());
      REQUIRE(r.verified.has_value());
      CHECK(*r.verified);
    }
    b.release();
  }
}

}  // namespace

// flash-sm90's fp32 backward (3xTF32 on wgmma) judged as `flashbench verify --pass bwd` judges it:
// every tensor (O, LSE, dQ, dK, dV) against the fp64 reference under the FP32 rule (naive's exact
// FP32 error as the yardstick). The 1xTF32 diagnostic, the same kernel with hi*hi only, must fail
// the same rule, or the rule could not tell TF32 from FP32. Shapes: both head dims, causal or not,
// odd lengths (one key or query tile and a bit, a tile multiple plus one), GQA / MQA / MHA, batch 2,
// seq_q != seq_k both ways (causal bottom-right: with seq_q > seq_k the first rows see no key).
TEST_CASE("sm90 fp32 backward (3xTF32 wgmma) meets the FP32 rule, 1xTF32 fails it", "[gpu][sm90tf32]") {
  CudaBackend& b = gpu();
  const Descriptor& sm90 = kernel("flash-sm90");
  const Descriptor& x1 = kernel("flash-sm90-tf32x1");
  const BwdShape shapes[] = {
      {1, 4, 2, 1000, 1000, 64, false}, {2, 4, 1, 77, 77, 128, true},   {1, 4, 4, 257, 257, 128, false},
      {1, 8, 2, 1025, 1025, 64, true},  {1, 2, 2, 300, 1111, 128, false}, {1, 4, 2, 1000, 77, 64, true},
      {1, 4, 1, 77, 1000, 128, true},   {1, 2, 1, 4099, 4099, 128, true}, {1, 2, 2, 1, 1, 64, false},
  };
  for (const BwdShape& sh : shapes) {
    const Case c = bwd_case(sh);
    INFO("case " << c.key());
    if (const auto why = b.check_fits(c, sm90)) {  // not an sm_90a build or device
      WARN("flash-sm90 fp32 backward not run: " << *why);
      return;
    }
    REQUIRE_FALSE(b.check_fits(c, x1).has_value());
    b.prepare(c, 20261201);
    std::vector<Record> records;
    for (const Descriptor* k : {&kernel("naive"), &sm90, &x1}) {
      REQUIRE(b.run(*k, 0, 1).times_ms.size() == 1);
      records.push_back(ok_record(c, std::string(k->name)));
    }
    verify_case(b, records, builtin_kernels());
    for (const Record& r : records) {
      std::printf("sm90-fp32-bwd %-34s %-18s %s %s\n", c.key().c_str(), r.kernel.c_str(),
                  r.verified.value_or(false) ? "verified" : "FAILED", r.errors.dump().c_str());
      INFO(r.kernel << " errors " << r.errors.dump());
      REQUIRE(r.verified.has_value());
      if (r.kernel == x1.name) CHECK_FALSE(*r.verified);
      else CHECK(*r.verified);
    }
    b.release();
  }
}

// d = 64 non-causal, where the fp16-pair backward runs (the default since session 20's call B; ctest
// gpu_sm90tf32_tf32pair runs [sm90tf32] again under FB_SM90_FP32_BWD_PROBE=tf32pair, the 3xTF32 kernel): odd lengths
// no config names (N = 320, 1000 x 777 and 777 x 1000, a last key block of 9 keys, one query), GQA / MQA, and input
// magnitudes the fp16 pieces must scale into range (Q, K at 2^-20: scores ~2^-40, P flat; at 4: scores ~16 sigma, P
// near one-hot; at 8 a numpy model of both 3x splits, which drop lo * lo, put dV at ~0.8 of the bound, too close to
// tell a kernel from the split). Judged as above.
TEST_CASE("sm90 fp32 backward d = 64 non-causal, odd shapes and input scales, meets the FP32 rule",
          "[gpu][sm90tf32]") {
  check_scaled_bwd(
      {
      {{1, 2, 2, 320, 320, 64, false}, 1.0},        {{1, 4, 2, 1000, 777, 64, false}, 1.0},
      {{2, 4, 1, 777, 1000, 64, false}, 1.0},       {{1, 2, 2, 1, 265, 64, false}, 1.0},
      {{1, 4, 2, 320, 320, 64, false}, 0x1p-20},    {{1, 4, 2, 1000, 777, 64, false}, 4.0},
      {{1, 2, 1, 2049, 2049, 64, false}, 0x1p-20},
      },
      20261202);
}

// d = 128 non-causal, where the fp16-pair backward at d = 128 runs (the two-warpgroup kernel, the default since
// session 21's call C, in plane-major order after the fused pre-pass since session 22; under ctest gpu_sm90tf32_w2a
// session 21's form, under gpu_sm90tf32_fp16pair128 the one-warpgroup kernel, under gpu_sm90tf32_tf32pair the 3xTF32
// kernel): odd lengths no config names (N = 320, 1000 x 777 and 777 x 1000 with last key blocks of 9 and 40
// keys, one query on 265 keys), GQA / MQA, and input scales 2^-20 (scores ~2^-40, P flat), 2 and 4 (scores ~8 and ~16
// sigma; the split study's emulation of this split at d = 128, tiles 32 x 64, results/model/
// fp32-fp16pair128-d128.txt: worst gradient err / bound 0.12 at 4, 0.11 at 2, 0.07 at 2^-20, 3xTF32 alike). Judged as
// above.
TEST_CASE("sm90 fp32 backward d = 128 non-causal, odd shapes and input scales, meets the FP32 rule",
          "[gpu][sm90tf32][sm90fp16pair128]") {
  check_scaled_bwd(
      {
      {{1, 2, 2, 320, 320, 128, false}, 1.0},       {{1, 4, 2, 1000, 777, 128, false}, 1.0},
      {{2, 4, 1, 777, 1000, 128, false}, 1.0},      {{1, 2, 2, 1, 265, 128, false}, 1.0},
      {{1, 4, 2, 320, 320, 128, false}, 0x1p-20},   {{1, 4, 2, 1000, 777, 128, false}, 2.0},
      {{1, 4, 2, 1000, 777, 128, false}, 4.0},      {{1, 2, 1, 2049, 2049, 128, false}, 0x1p-20},
      },
      20261203);
}

// d = 128 non-causal shapes for the two-warpgroup fp16-pair kernels (session 21's call C: the default's kernel,
// fp16pair128w2a / fp16pair128w2 under their words: two warpgroups sharing a block's 64 keys by role, P^T handed from
// one to the other through shared memory, dV / dK chained over 4 query tiles before the fp32 totals, K / V scaled per
// 64-key block; w2a issues the next tile's S^T / dP^T before this tile's dQ staging; the case above runs them too):
// lengths no config names, chosen for the new kernel's bookkeeping -- GQA 3 with 4 query tiles a head (12 steps: chunks
// of 4 tiles that straddle the heads of a group, stages reused 6 times each), a last key block of 8 keys; 2 query tiles
// (a chunk cut short by the last tile) on 16 key blocks; MQA with 94 steps (an odd number of chunks' worth, 23.5) on
// one partial block of 63 keys at input scale 3 (scores ~9 sigma); one head of 4097 queries (129 steps: the last tile
// one query) on 130 keys at 2^-10 (3 key blocks, the last of 2 keys: its own K / V scales). Judged as above.
TEST_CASE("sm90 fp32 backward d = 128 non-causal, two-warpgroup bookkeeping shapes, meets the FP32 rule",
          "[gpu][sm90tf32][sm90fp16pair128w2]") {
  check_scaled_bwd(
      {
      {{3, 6, 2, 100, 200, 128, false}, 1.0},       {{1, 2, 2, 33, 1000, 128, false}, 1.0},
      {{2, 2, 1, 1500, 63, 128, false}, 3.0},       {{1, 1, 1, 4097, 130, 128, false}, 0x1p-10},
      },
      20261221);
}

// d = 128 non-causal shapes for the plane-major block order of the two-warpgroup kernel (session 22's default; written
// for its persistent probe, removed): a plane's key blocks consecutive in the grid. Lengths chosen for the plane
// boundaries: 3 key blocks of one plane (fewer blocks than any Hopper's SMs) of 10 steps on 150 keys (a last block of
// 22) and 301 queries (the last tile 13); 256 blocks (GQA 2, 22 steps a block, 2011 keys: a last block of 27); MQA
// with 141 key blocks of 9 steps on 9000 keys (the last block of 40 keys); 560 blocks of one step each (17 queries,
// 2200 keys) at input scale 2. Judged as above.
TEST_CASE("sm90 fp32 backward d = 128 non-causal, plane-major block-order shapes, meets the FP32 rule",
          "[gpu][sm90tf32][sm90fp16pair128order]") {
  check_scaled_bwd(
      {
      {{1, 1, 1, 301, 150, 128, false}, 1.0},       {{2, 8, 4, 333, 2011, 128, false}, 1.0},
      {{1, 3, 1, 95, 9000, 128, false}, 1.0},       {{4, 4, 4, 17, 2200, 128, false}, 2.0},
      },
      20261222);
}
