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
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "attention.h"
#include "backend/cpu/numeric.h"
#include "backend/cpu/parallel.h"
#include "backend/cuda/cuda_backend.h"
#include "catch.h"
#include "common/fp8.h"
#include "gpu_fp8_support.h"
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

Case fp8_case(const Shape& s) {
  return make_case(s.batch, s.heads, s.kv_heads, s.seq_q, s.seq_k, s.dim, Dtype::fp8, s.causal, Pass::fwd);
}

// Rows of `cols` codes widened to `cols_out` with zero codes (the d = 80 twin of a d = 72 input).
std::vector<std::uint8_t> widen_rows(const std::vector<std::uint8_t>& x, int cols, int cols_out) {
  const std::size_t rows = x.size() / std::size_t(cols);
  std::vector<std::uint8_t> out(rows * std::size_t(cols_out), 0);
  for (std::size_t r = 0; r < rows; ++r)
    std::copy_n(x.begin() + std::ptrdiff_t(r * cols), cols, out.begin() + std::ptrdiff_t(r * cols_out));
  return out;
}

}  // namespace

TEST_CASE("naive fp8 on CUDA: a head_dim off the 16-code grid is padded exactly", "[gpu][fp8pad]") {
  // Each d = 72 run against the d = 80 run on the same codes with 8 zero columns (and the d = 72
  // softmax scale): the same padded GEMMs, so O's first 72 columns and LSE bit for bit, O's last 8
  // exactly 0. seq_k on the grid (only d padded) and off it (both).
  for (const Shape& sh : {Shape{1, 4, 2, 200, 256, 72, false}, Shape{1, 4, 2, 200, 333, 72, true},
                          Shape{2, 2, 1, 65, 100, 40, false}}) {
    INFO("shape " << shape_name(sh));
    const Fp8Inputs in = make_fp8_inputs(fp8_case(sh).params(), kSeed);
    const int wide = (sh.dim + 15) / 16 * 16;
    AttentionParams pw = in.p;
    pw.head_dim = wide;  // scale and descales stay those of the narrow case
    const Fp8Outputs narrow = run_naive_fp8_cuda(in);
    const Fp8Outputs padded = run_naive_fp8_cuda(pw, widen_rows(in.q.v, sh.dim, wide),
                                                 widen_rows(in.k.v, sh.dim, wide), widen_rows(in.v.v, sh.dim, wide));
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
    const Fp8Inputs in = make_fp8_inputs(fp8_case(sh).params(), kSeed);
    const Fp8Exact ref = fp8_reference(in, pool);
    const Fp8Outputs cpu8 = run_naive_fp8_cpu(in, pool);
    const Fp8Outputs gpu8 = run_naive_fp8_cuda(in);
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
