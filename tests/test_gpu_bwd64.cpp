// GPU tests [gpu][bwd64]: the flash-sm90 backward at head dim 64 (128 queries per step, dQ split by
// query rows between the consumers, persistent blocks: kernels/flash_sm90/flash_sm90_bwd_traits.h)
// beside naive, against the fp64 reference. gpu_main.cpp skips them without a device; off Hopper (or
// in a build without sm_90a code) flash-sm90 says why and only naive runs.
#include <cstdint>
#include <vector>

#include <cstdlib>
#include <string>

#include "backend/cuda/cuda_backend.h"
#include "catch.h"
#include "flash_sm90/flash_sm90_bwd.h"
#include "gpu_cases.h"
#include "gpu_support.h"

namespace {

using namespace fb::test;

using namespace fb;

constexpr std::uint64_t kSeed = 20261130;

// Odd lengths around the d = 64 backward's 128-key tiles and 128-query steps (each consumer's dQ is
// one 64-row half of the step: a half swapped or sent to the wrong tile fails dQ), seq_q != seq_k
// both ways (causal: rows with no key, and diagonals that cut the 128 x 128 tiles at odd offsets),
// MQA/GQA/MHA (dK, dV summed over the group's heads), both masks, both 16-bit types, bwd and fwd_bwd.
std::vector<Case> hdim64_bwd_cases() {
  const SeqLens lengths[] = {{1, 1},       {17, 17},     {65, 65},   {127, 127}, {129, 129}, {255, 257},
                         {1000, 1000}, {1025, 1025}, {17, 1000}, {1000, 17}, {130, 63},  {63, 130},
                         {190, 257},   {64, 192},    {1, 4099},  {4099, 1000}};
  const int heads[][2] = {{4, 1}, {4, 2}, {2, 2}, {8, 2}};
  std::vector<Case> cases;
  int i = 0;
  for (const SeqLens& l : lengths)
    for (bool causal : {false, true}) {
      const Dtype t = i % 2 == 0 ? Dtype::bf16 : Dtype::fp16;
      const Pass pass = i % 5 == 4 ? Pass::fwd_bwd : Pass::bwd;
      cases.push_back(make_case(1 + (i / 2) % 2, heads[i % 4][0], heads[i % 4][1], l.q, l.k, 64, t,
                                causal, pass));
      ++i;
    }
  // More work tiles (128 keys x K/V head) than an H100/H200 has SMs, so that the persistent kernel's
  // blocks each loop over several tiles (ring slots, K/V and dS^T buffers carried from one to the
  // next): 9 key tiles x 32 K/V planes, and 17 x 2 x 8 with GQA 4:1 and seq_q != seq_k.
  cases.push_back(make_case(2, 16, 16, 1025, 1025, 64, Dtype::bf16, false, Pass::bwd));
  cases.push_back(make_case(2, 16, 16, 1025, 1025, 64, Dtype::fp16, true, Pass::bwd));
  cases.push_back(make_case(2, 32, 8, 1500, 2100, 64, Dtype::bf16, true, Pass::bwd));
  // A last partial round of a few tiles on 132 SMs (session 16's qtail split it along the queries; measured and
  // removed, the shapes kept): 15 heads 1100 x 1150 (135 tiles, partial last query and key tiles), and GQA 2:1
  // 3 x 4 / 2 heads 2000 x 8500 (402 tiles; head_split() models no split there).
  cases.push_back(make_case(1, 15, 15, 1100, 1150, 64, Dtype::fp16, false, Pass::bwd));
  cases.push_back(make_case(3, 4, 2, 2000, 8500, 64, Dtype::bf16, false, Pass::bwd));
  return cases;
}

}  // namespace

TEST_CASE("head dim 64: the flash-sm90 backward verifies beside naive; poisoned gradients all written",
          "[gpu][bwd64]") {
  CudaBackend& b = gpu();
  for (const Case& c : hdim64_bwd_cases()) {
    INFO("case " << c.key());
    // Every gradient element finite (outputs are NaN before the run), and the dQ rows of query rows with
    // no visible key (causal, seq_q > seq_k: the first seq_q - seq_k rows of each head) exactly 0.
    check_sm90_beside_naive(b, c, kSeed, each_written(b, c, Tensors::gradients));
  }
}

// The shared tail (kBwd64TailShare, flash_sm90_bwd.cu tail_share_on(); session 32): the persistent kernel's last
// partial round of tiles, its query tiles laid end to end and cut into one run per block, each run one or two pieces
// (a tile's range of query tiles) whose partial dK / dV go to fp32 accumulators for the tail's tiles and are
// converted into those rows. Shapes no config names, each sharing on the H200's 132 SMs (the tail and the runs in the
// comment): runs inside a tile and runs across a tile's end, partial last key and query tiles, seq_q != seq_k both
// ways, GQA 2:1; every gradient element written (NaN-poisoned before the run), verified against the fp64 reference
// beside naive. A piece walking the wrong query tiles, a partial added to the wrong tile's slot, a tail row not
// converted or a piece left out fails dK or dV; dQ checks the pieces' dQ. The causal row (never shared) is a control.
// FB_SM90_BWD_SHARE=off runs the tail unshared, =on shares wherever it can run.
TEST_CASE("head dim 64: the backward with its last partial round shared out over every block verifies",
          "[gpu][bwd64][sm90_share]") {
  namespace sm90 = fb::cuda::flash_sm90;
  struct Row {
    int batch, heads, kv_heads, q, k;
    bool causal;
    Dtype dtype;
    bool mha_share;  // shares on 132 SMs under the model (GQA rows: unless the head split takes the pass)
  };
  const Row rows[] = {{1, 15, 15, 1100, 1150, false, Dtype::fp16, true},   // 135 tiles, tail 3 of 9: runs of 0-1
                      {2, 30, 30, 1500, 2500, false, Dtype::bf16, true},   // 1200, tail 12 of 12: runs of 1-2
                      {1, 15, 15, 8000, 4100, false, Dtype::bf16, true},   // 495, tail 99 of 63: runs of 47-48
                      {3, 4, 2, 2000, 8500, false, Dtype::fp16, false},    // GQA 2:1, 402, tail 6 of 16
                      {2, 30, 30, 1500, 2500, true, Dtype::fp16, false}};  // causal: never shared
  CudaBackend& b = gpu();
  const int sms = sm_count();
  const char* env = std::getenv("FB_SM90_BWD_SHARE");
  const bool model_on = env == nullptr || std::string(env).empty() || std::string(env) == "default";
  int shared_runs = 0;
  for (const Row& r : rows) {
    const Case c = make_case(r.batch, r.heads, r.kv_heads, r.q, r.k, 64, r.dtype, r.causal, Pass::bwd);
    INFO("case " << c.key());
    const bool share = sm90::backward_tail_share(c.params());
    INFO("shared tail " << share);
    if (r.causal) CHECK_FALSE(share);
    if (r.mha_share && model_on && sms == 132) CHECK(share);
    shared_runs += share;
    check_sm90_beside_naive(b, c, kSeed, each_written(b, c, Tensors::gradients));
  }
  if (shared_runs == 0)
    WARN("no run of the shared tail (FB_SM90_BWD_SHARE=off, or a GPU these grids fill differently)");
}

// The dynamic tile order (flash_sm90_bwd.cu dyn_tiles_on(); the default for MHA since session 49 and for short GQA
// passes since session 51, FB_SM90_BWD_PERSIST=dyn every GQA pass, =dynmha MHA only, =nodyn none): causal d = 64
// passes without a head split run the persistent kernel,
// each block's next tile from a counter the pre-pass zeroes. Shapes no config names: many short tiles (4 x 16 heads
// N = 1030: 9 key tiles a plane, 576 tiles), long ones the default runs a block a tile (2 x 6 heads 4200 x 4100: 33
// steps), seq_q != seq_k both ways, GQA 2:1, both 16-bit types; two warm-up runs before the one verified, so a counter
// left where the last run stopped (tiles skipped: their dQ missing from the zeroed accumulator) or a tile run twice
// (dQ doubled) fails. By default every row must take the order (the GQA row's longest key tile is 12 steps: 768 padded
// queries / 128 x 2 heads, under the 32 that bwd_blocks() launches a block a tile), and under dyn, dynshort, dynlong
// and dynpg too; under dynmha the MHA rows only; under any other word none. A GQA pass in the order reports
// causal_group()'s plane group by default (and under dynpg, session 51's probe, the default since, and dynlong) and
// none (0: the L2 group) under dyn and dynshort.
TEST_CASE("head dim 64: causal passes in the dynamic tile order verify on repeated runs", "[gpu][bwd64][sm90_dyn]") {
  namespace sm90 = fb::cuda::flash_sm90;
  struct Row {
    int batch, heads, kv_heads, q, k;
    Dtype dtype;
  };
  const Row rows[] = {{4, 16, 16, 1030, 1030, Dtype::bf16},
                      {2, 6, 6, 4200, 4100, Dtype::fp16},
                      {3, 10, 5, 700, 1900, Dtype::bf16},
                      {2, 12, 12, 2300, 600, Dtype::fp16}};
  CudaBackend& b = gpu();
  const std::string persist = env_word("FB_SM90_BWD_PERSIST");
  const bool by_default = (is_default_word(persist) || persist == "dynpg") && env_word("FB_SM90_BWD64").empty();
  const bool dyn = persist == "dyn" || persist == "dynshort" || persist == "dynlong" || by_default;
  const bool mha_only = persist == "dynmha" && env_word("FB_SM90_BWD64").empty();
  int ran = 0, dyn_runs = 0;
  for (const Row& r : rows) {
    const Case c = make_case(r.batch, r.heads, r.kv_heads, r.q, r.k, 64, r.dtype, true, Pass::bwd);
    INFO("case " << c.key());
    const bool on = sm90::backward_dyn_tiles(c.params());
    INFO("dynamic order " << on);
    const bool whole = sm90::backward_head_split(c.params()) == 1;  // head splits keep their own order
    if (dyn || mha_only) CHECK(on == (whole && (dyn || r.heads == r.kv_heads)));
    else if (!persist.empty()) CHECK_FALSE(on);  // on, off, nodyn
    if (on && r.heads != r.kv_heads) {
      const int group = sm90::backward_causal_plane_group(c.params());
      INFO("plane group " << group);
      if (by_default || persist == "dynlong") CHECK(group > 0);
      else CHECK(group == 0);
    }
    if (check_sm90_repeated_beside_naive(b, c, kSeed + 11, 2, each_written(b, c, Tensors::gradients))) {
      ++ran;
      dyn_runs += on;
    }
  }
  if ((dyn || mha_only) && ran > 0) CHECK(dyn_runs > 0);
}

// Causal GQA passes launched a block a tile take a plane group the schedule model may widen past what fits L2
// (flash_sm90_bwd.cu, causal_group(); FB_SM90_BWD64=pgl2: the L2 group): 40 q / 8 kv heads at N = 3300 ran in groups of
// 2 planes on the H200, the last groups' longest key tiles starting a block late (results/h200/s35/E/, 0.928x
// torch-cudnn). Shapes no config names that no head split takes and whose widened group on 132 SMs does not divide the
// planes (with a 50 or a 60 MiB L2: 9 planes in groups of 5, 15 in groups of 8, 21 in groups of 11; the last group is
// short), seq_q != seq_k in one, both 16-bit types; a block given the wrong plane or key tile fails dK / dV, one never
// run leaves NaN. On 132 SMs under the default words every row must run the plane-group order (group > 0); the
// head-split rows below, bounded groups of virtual planes.
TEST_CASE("head dim 64: causal GQA in plane groups the schedule model widens verifies",
          "[gpu][bwd64][sm90_pgroup]") {
  namespace sm90 = fb::cuda::flash_sm90;
  struct Row {
    int batch, heads, kv_heads, q, k;
    Dtype dtype;
  };
  const Row rows[] = {{1, 27, 9, 2800, 2800, Dtype::bf16},
                      {3, 10, 5, 2600, 2650, Dtype::fp16},
                      {3, 21, 7, 1300, 1300, Dtype::bf16},
                      {1, 40, 8, 3300, 3300, Dtype::bf16}};
  CudaBackend& b = gpu();
  // FB_SM90_BWD_PERSIST=on or dyn runs these passes persistent: no plane group of a block-a-tile launch (0). (The
  // default's dynamic order takes MHA passes and GQA ones under 32 query-tile steps a key tile; these rows' longest
  // key tiles take 33 or more: 11 x 3 heads at 3 x 21 / 7 N = 1300.)
  const bool model_on = is_default_word(env_word("FB_SM90_BWD64")) && is_default_word(env_word("FB_SM90_BWD_SPLIT")) &&
                        is_default_word(env_word("FB_SM90_BWD64_PG")) &&
                        is_default_word(env_word("FB_SM90_BWD_PERSIST"));
  for (const Row& r : rows) {
    const Case c = make_case(r.batch, r.heads, r.kv_heads, r.q, r.k, 64, r.dtype, true, Pass::bwd);
    const int group = sm90::backward_causal_plane_group(c.params());
    INFO("case " << c.key() << ", plane group " << group);
    CHECK(group >= 0);
    CHECK(group <= r.batch * r.kv_heads);
    if (model_on && sm_count() == 132) {
      CHECK(group > 0);
      // 40 / 8 N = 3300: widened to 4 planes or more (2 or 3 fit a third of L2).
      if (r.heads == 40) CHECK(group >= 4);
    }
    check_sm90_beside_naive(b, c, kSeed, each_written(b, c, Tensors::gradients));
  }
  // Head-split passes (causal MQA / GQA the model splits): their virtual planes in bounded groups since session 37
  // (split_causal_group()): 32 q / 2 kv, batch 2, N = 2800, fp16 (8 subsets: 32 virtual planes in groups of 11 on the
  // H200) and 8 q / 1 kv, batch 8, N = 2500 (4 subsets: 32 in groups of 11); the last group short.
  const Row split_rows[] = {{2, 32, 2, 2800, 2800, Dtype::fp16}, {8, 8, 1, 2500, 2500, Dtype::bf16}};
  for (const Row& r : split_rows) {
    const Case c = make_case(r.batch, r.heads, r.kv_heads, r.q, r.k, 64, r.dtype, true, Pass::bwd);
    const int split = sm90::backward_head_split(c.params());
    const int group = sm90::backward_causal_plane_group(c.params());
    INFO("case " << c.key() << ", head split " << split << ", plane group " << group);
    CHECK(group >= 0);
    CHECK(group <= r.batch * r.kv_heads * split);
    if (model_on && sm_count() == 132) {
      CHECK(split > 1);
      CHECK(group > 0);
      CHECK(group < r.batch * r.kv_heads * split);
    }
    check_sm90_beside_naive(b, c, kSeed, each_written(b, c, Tensors::gradients));
  }
  // Not causal, or short blocks (the persistent kernel): no plane group of this kind.
  const Case full = make_case(1, 40, 8, 3300, 3300, 64, Dtype::bf16, false, Pass::bwd);
  const Case short_blocks = make_case(4, 8, 8, 1000, 1000, 64, Dtype::bf16, true, Pass::bwd);
  CHECK(sm90::backward_causal_plane_group(full.params()) == 0);
  CHECK(sm90::backward_causal_plane_group(short_blocks.params()) == 0);
}

// long64, the default since session 43 (head_split(); FB_SM90_BWD_SPLIT=nolong64: before): every causal d = 64 grid
// of a group of >= 8 query heads that the model leaves whole (its gain under 5%, or past its gate of 8 blocks an SM)
// splits into the most subsets (at most group / 2, at most 8) whose units average >= 48 64-query steps a key tile.
// Shapes no config names that run whole under nolong64 on 132 SMs: as built 2 x 32 q / 4 kv N = 4096 takes 4 subsets
// (2-head units), 8 x 32 / 4 N = 1536 2 (4-head units: 2-head ones would be too short), 7 x 40 / 4 N = 1000 none (too
// short for any), and session 40's call E row 7 x 16 / 1 N = 5200 8. The first three run and verify (dQ, dK, dV beside
// naive, every gradient written); the last is the choice only.
TEST_CASE("head dim 64: causal GQA grids of groups of >= 8 split where their units are long (long64) and verify",
          "[gpu][bwd64][sm90_long64]") {
  namespace sm90 = fb::cuda::flash_sm90;
  struct Row {
    int batch, heads, kv_heads, q;
    Dtype dtype;
    int long64;  // subsets as built (long64) on 132 SMs
    bool run;
  };
  const Row rows[] = {{2, 32, 4, 4096, Dtype::bf16, 4, true},    // 256 blocks
                      {8, 32, 4, 1536, Dtype::fp16, 2, true},    // 384 blocks
                      {7, 40, 4, 1000, Dtype::fp16, 1, true},    // 224 blocks
                      {7, 16, 1, 5200, Dtype::bf16, 8, false}};  // 287 blocks, modelled 4.8% faster split
  CudaBackend& b = gpu();
  const std::string word = env_word("FB_SM90_BWD_SPLIT");
  const bool as_built = is_default_word(word);
  const int sms = sm_count();
  int split_runs = 0;
  for (const Row& r : rows) {
    const Case c = make_case(r.batch, r.heads, r.kv_heads, r.q, r.q, 64, r.dtype, true, Pass::bwd);
    const int split = sm90::backward_head_split(c.params());
    INFO("case " << c.key() << ", head split " << split);
    if (sms == 132 && as_built) CHECK(split == r.long64);
    if (sms == 132 && word == "nolong64") CHECK(split == 1);
    if (r.run) {
      split_runs += split > 1;
      check_sm90_beside_naive(b, c, kSeed, each_written(b, c, Tensors::gradients));
    }
  }
  // As built on the GPU the rows were chosen for, two of the verified rows run split: else this checks nothing.
  if (sms == 132 && as_built) CHECK(split_runs == 2);
}
