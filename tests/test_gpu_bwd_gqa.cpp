// GPU tests [gpu][bwd_gqa]: the flash-sm90 backward on GQA/MQA shapes, where a K/V tile's query
// heads may be split over several blocks whose dK and dV partial sums meet in fp32 accumulators
// (kBwdHeadSplit, kernels/flash_sm90/flash_sm90_bwd_traits.h), beside naive, against the fp64
// reference. gpu_main.cpp skips them without a device; off Hopper (or in a build without sm_90a code)
// flash-sm90 says why and only naive runs.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "catch.h"
#include "flash_sm90/flash_sm90_bwd.h"
#include "gpu_cases.h"
#include "gpu_support.h"
#include "judge.h"
#include "registry.h"
#include "runner.h"

namespace {

using namespace fb::test;

using namespace fb;

constexpr std::uint64_t kSeed = 20261201;

// Few K/V tiles per SM (the shapes the split is for): 1 or 2 K/V heads, groups of 2 to 32, lengths
// that are not whole 128-key tiles or 64/128-query steps, seq_q != seq_k both ways (causal: rows with
// no key, and a diagonal that cuts the tiles at odd offsets), both masks, d = 64 and 128, both 16-bit
// types, bwd and fwd_bwd. A unit summing the wrong heads, a partial added to the wrong K/V plane or key
// tile, a missed scale on dK, or a unit never run fails dK or dV.
std::vector<Case> gqa_bwd_cases() {
  struct Shape {
    int batch, heads, kv_heads, q, k;
  };
  const Shape shapes[] = {{1, 8, 1, 1000, 1000}, {1, 8, 1, 129, 129},   {2, 8, 2, 333, 333},
                          {1, 4, 2, 1025, 1025}, {1, 32, 1, 700, 700},  {2, 16, 1, 190, 257},
                          {1, 8, 1, 1500, 900},  {1, 6, 2, 64, 65},     {3, 8, 2, 777, 777},
                          {1, 8, 1, 4099, 4099}};
  std::vector<Case> cases;
  int i = 0;
  for (const Shape& s : shapes)
    for (int dim : {64, 128})
      for (bool causal : {false, true}) {
        const Dtype t = i % 2 == 0 ? Dtype::bf16 : Dtype::fp16;
        const Pass pass = i % 7 == 3 ? Pass::fwd_bwd : Pass::bwd;
        cases.push_back(make_case(s.batch, s.heads, s.kv_heads, s.q, s.k, dim, t, causal, pass));
        ++i;
      }
  return cases;
}

// Every gradient element of `name` is finite (the backend fills outputs with NaN before a run, so an
// element the kernel never wrote shows up).
void check_gradients_written(CudaBackend& b, const std::string& name) {
  check_written(b, name, Tensors::gradients);
}

}  // namespace

TEST_CASE("GQA/MQA: the flash-sm90 backward verifies beside naive; gradients all written",
          "[gpu][bwd_gqa]") {
  CudaBackend& b = gpu();
  for (const Case& c : gqa_bwd_cases()) {
    INFO("case " << c.key());
    check_sm90_beside_naive(b, c, kSeed, [&](const Record& r) { check_gradients_written(b, r.kernel); });
  }
}

// The cases above take the split only if the launcher picks it: the workspace holds the fp32 dK/dV
// accumulators exactly when it does. MQA with one K/V tile per 8 query heads at batch 1 must split
// (8 blocks on a whole GPU otherwise); MHA (nothing to split) and a GQA shape with many K/V tiles per
// SM must not. Skipped where FB_SM90_BWD_SPLIT overrides the choice.
TEST_CASE("GQA/MQA: the backward splits query heads only where K/V tiles are few", "[gpu][bwd_gqa]") {
  gpu();
  if (std::getenv("FB_SM90_BWD_SPLIT") != nullptr) {
    WARN("FB_SM90_BWD_SPLIT is set: the split is forced");
    return;
  }
  auto params = [](int batch, int heads, int kv_heads, int seq, bool causal) {
    AttentionParams p;
    p.dtype = Dtype::bf16;
    p.batch = batch;
    p.heads = heads;
    p.kv_heads = kv_heads;
    p.seq_q = p.seq_k = seq;
    p.head_dim = 128;
    p.causal = causal;
    return p;
  };
  namespace sm90 = fb::cuda::flash_sm90;
  for (bool causal : {false, true}) {
    INFO("causal " << causal);
    // Same query heads, so the same dQ, LSE and D workspace: only the accumulators differ.
    const std::size_t mqa = sm90::backward_workspace_bytes(params(1, 8, 1, 1000, causal));
    const std::size_t mha = sm90::backward_workspace_bytes(params(1, 8, 8, 1000, causal));
    CHECK(mqa > mha);
    // 32 q / 8 kv heads, batch 4, 8k keys: 64 tiles x 32 K/V planes, over 8 per SM.
    const std::size_t many = sm90::backward_workspace_bytes(params(4, 32, 8, 8192, causal));
    const std::size_t many_mha = sm90::backward_workspace_bytes(params(4, 32, 32, 8192, causal));
    CHECK(many == many_mha);
  }
}
