// GPU tests [gpu][sm90tf32][w2f] of flash-sm90's fp32 backward at d = 128 non-causal: the fused pre-pass (session
// 22's fp16pair128w2f, the default since its call A; kernels/flash_sm90/flash_sm90_fp16pair_bwd_kernel.cuh
// fp16pair128_rows_prepass_kernel, fp16pair128_prepass_split_kernel), session 21's seven pre-pass launches as a memset
// and two, claimed to write every value with the same bits. So the two-warpgroup kernel after it must give the
// seven launches' gradients bit for bit: dK and dV always (summed in a fixed order), dQ where one key block adds into
// each of its rows (seq_k <= 64; with more, the blocks' reductions meet in global memory in a varying order and dQ's
// last bits vary from run to run under either pre-pass). Both pre-passes run in this process through
// force_fp16pair128_prepass(), whatever the word; the fused run is then judged against the fp64 reference by the
// runner's FP32 rule. Under ctest gpu_sm90tf32_w2a the whole [sm90tf32] set runs with session 21's form (the seven
// launches and key-block-major order) in every d = 128 non-causal case of it.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "catch.h"
#include "flash_sm90/flash_sm90_tf32.h"
#include "gpu_cases.h"
#include "gpu_support.h"
#include "runner.h"

namespace {

using namespace fb;
using namespace fb::test;
namespace sm90 = fb::cuda::flash_sm90;

// Restores the process-wide pre-pass setting when a test ends (pass or fail).
class ForcedPrepass {
 public:
  explicit ForcedPrepass(sm90::Fp16Pair128Prepass how) : previous_(sm90::force_fp16pair128_prepass(how)) {}
  ~ForcedPrepass() { sm90::force_fp16pair128_prepass(previous_); }
  ForcedPrepass(const ForcedPrepass&) = delete;
  ForcedPrepass& operator=(const ForcedPrepass&) = delete;

 private:
  sm90::Fp16Pair128Prepass previous_;
};

// flash-sm90 once on the case the backend holds under pre-pass `how`; its outputs (O, LSE, dQ, dK, dV) fetched.
std::vector<HostTensor> run_sm90(CudaBackend& b, sm90::Fp16Pair128Prepass how) {
  const ForcedPrepass forced(how);
  REQUIRE(b.run(kernel("flash-sm90"), 0, 1).times_ms.size() == 1);
  return b.fetch("flash-sm90");
}

// Elements of x and y whose bits differ (values widened exactly from fp32), and elements of x not finite.
struct BitDiff {
  std::size_t differ = 0, nonfinite = 0;
};
BitDiff bit_diff(const HostTensor& x, const HostTensor& y) {
  REQUIRE(x.values.size() == y.values.size());
  BitDiff d;
  for (std::size_t i = 0; i < x.values.size(); ++i) {
    d.differ += std::memcmp(&x.values[i], &y.values[i], sizeof(double)) != 0;
    d.nonfinite += !std::isfinite(x.values[i]);
  }
  return d;
}

struct W2fShape {
  int batch, heads, kv_heads, seq_q, seq_k;
  double input_scale;
};

}  // namespace

// Shapes no config names, for the fused pre-pass's bookkeeping: GQA 3 with seq_q = 100 (a row block of the row pass
// part padding, a query tile part past seq) on 200 keys (4 key blocks, the last of 8 keys); GQA 2 with 77 queries on
// 63 keys (one key block: dQ compared too) at input scale 2; MQA, 300 queries on 45 keys (one key block) at 2^-20; one
// query on 265 keys; MHA 1000 x 777 at scale 4; and 66,000 query planes (batch 2 x 33,000 heads: over the 65,535 of a
// grid's y, where the default's stats grid loops over planes; the fp64 reference takes at most 65,535 heads) in GQA 2
// on 3 x 5 (one key block).
TEST_CASE("sm90 fp32 backward d = 128: the fused pre-pass gives the seven-launch pre-pass's gradients bit for bit",
          "[gpu][sm90tf32][w2f]") {
  CudaBackend& b = gpu();
  const Descriptor& sm90k = kernel("flash-sm90");
  const W2fShape shapes[] = {
      {3, 6, 2, 100, 200, 1.0}, {1, 4, 2, 77, 63, 2.0},   {2, 4, 1, 300, 45, 0x1p-20},
      {1, 2, 2, 1, 265, 1.0},   {1, 2, 2, 1000, 777, 4.0}, {2, 33000, 16500, 3, 5, 1.0},
  };
  for (const W2fShape& sh : shapes) {
    const Case c = make_case(sh.batch, sh.heads, sh.kv_heads, sh.seq_q, sh.seq_k, 128, Dtype::fp32, false, Pass::bwd);
    INFO("case " << c.key() << " input scale " << sh.input_scale);
    if (const auto why = b.check_fits(c, sm90k)) {  // not an sm_90a build or device
      WARN("flash-sm90 fp32 backward not run: " << *why);
      return;
    }
    const AttentionParams p = c.params();
    {
      const ForcedPrepass fused(sm90::Fp16Pair128Prepass::fused);
      if (!sm90::tf32_backward_prepass_fused(p)) {
        // Only the words that run another d = 128 kernel turn it off.
        const char* env = std::getenv("FB_SM90_FP32_BWD_PROBE");
        const std::string word = env != nullptr ? env : "";
        REQUIRE((word == "tf32pair" || word == "fp16pair128"));
        WARN("the fused pre-pass does not run under FB_SM90_FP32_BWD_PROBE=" << word);
        return;
      }
    }
    {
      const ForcedPrepass separate(sm90::Fp16Pair128Prepass::separate);
      REQUIRE_FALSE(sm90::tf32_backward_prepass_fused(p));
    }
    b.prepare(c, 20261222, sh.input_scale);
    const std::vector<HostTensor> seven = run_sm90(b, sm90::Fp16Pair128Prepass::separate);
    const std::vector<HostTensor> fused = run_sm90(b, sm90::Fp16Pair128Prepass::fused);
    REQUIRE(seven.size() == fused.size());
    const bool one_key_block = c.seq_k <= 64;  // the w2 kernels' key block
    for (std::size_t t = 0; t < seven.size(); ++t) {
      REQUIRE(seven[t].name == fused[t].name);
      const BitDiff d = bit_diff(fused[t], seven[t]);
      std::printf("sm90-w2f %-36s scale %-8g %-3s %zu of %zu elements differ in their bits\n", c.key().c_str(),
                  sh.input_scale, fused[t].name.c_str(), d.differ, fused[t].values.size());
      INFO(fused[t].name << ": " << d.differ << " of " << fused[t].values.size() << " differ, " << d.nonfinite
                         << " not finite");
      CHECK(d.nonfinite == 0);
      // O and LSE: the same forward (a check of the harness); dQ: see the file's comment.
      if (fused[t].name != "dQ" || one_key_block) CHECK(d.differ == 0);
    }
    // The fused run (flash-sm90's kept outputs) beside naive, judged by the runner's rule against fp64.
    REQUIRE(b.run(kernel("naive"), 0, 1).times_ms.size() == 1);
    std::vector<Record> records{ok_record(c, "naive"), ok_record(c, "flash-sm90")};
    verify_and_check(b, records);
    b.release();
  }
}
