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
// that are not whole 128-key tiles or 64/80/128-query steps (560: whole 80-query ones), seq_q != seq_k
// both ways (causal: rows with no key, and a diagonal that cuts the tiles at odd offsets), both
// masks, d = 64 and 128, both 16-bit types, bwd and fwd_bwd. A unit summing the wrong heads, a partial added to the wrong K/V plane or key
// tile, a missed scale on dK, or a unit never run fails dK or dV.
std::vector<Case> gqa_bwd_cases() {
  struct Shape {
    int batch, heads, kv_heads, q, k;
  };
  const Shape shapes[] = {{1, 8, 1, 1000, 1000}, {1, 8, 1, 129, 129},   {2, 8, 2, 333, 333},
                          {1, 4, 2, 1025, 1025}, {1, 32, 1, 700, 700},  {2, 16, 1, 190, 257},
                          {1, 8, 1, 1500, 900},  {1, 6, 2, 64, 65},     {3, 8, 2, 777, 777},
                          {1, 8, 1, 4099, 4099}, {1, 16, 2, 560, 1210},
                          // Causal d = 128 on 132 SMs: 4 subsets since session 15 (units of 2 heads), 8
                          // before (one head, 9 steps: long_enough_units(), flash_sm90_bwd.cu).
                          {6, 8, 1, 1000, 1000},
                          // Causal d = 128 on 132 SMs: 4 subsets since session 15's call D (units of 2
                          // heads), 8 before (one-head units, 12 steps; FB_SM90_BWD128=unit1h).
                          {4, 8, 1, 1800, 1800}};
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

// A head split's dK, dV accumulators are zeroed before every run (by the pre-pass, its three converts then one kernel;
// under FB_SM90_BWD_LAUNCHES=separate a memset, ctest's gpu_bwd_gqa_separate): three runs back to back on one workspace
// (two warm-ups, one timed) verify, so partial sums left from the run before, added again, fail dK and dV (a
// workspace's first run may find it zero). Shapes no config names that split on any GPU: MQA and GQA at batch 1 with
// few key tiles, both masks and head dims, seq_q != seq_k, lengths that cut the 64-key convert blocks.
TEST_CASE("GQA/MQA: a head split's accumulators start from zero on every run (repeated runs verify)",
          "[gpu][bwd_gqa]") {
  CudaBackend& b = gpu();
  namespace sm90 = fb::cuda::flash_sm90;
  struct Shape {
    int heads, kv_heads, q, k, dim;
    bool causal;
  };
  const Shape shapes[] = {{8, 1, 1000, 1000, 128, false}, {8, 1, 600, 700, 128, true}, {16, 2, 333, 333, 64, false},
                          {12, 1, 900, 900, 64, true}};
  int ran = 0, split_runs = 0, i = 0;
  for (const Shape& s : shapes) {
    const Case c = make_case(1, s.heads, s.kv_heads, s.q, s.k, s.dim, i++ % 2 == 0 ? Dtype::bf16 : Dtype::fp16,
                             s.causal, Pass::bwd);
    INFO("case " << c.key());
    if (!check_sm90_repeated_beside_naive(b, c, kSeed + 7, 2,
                                          [&](const Record& r) { check_gradients_written(b, r.kernel); }))
      continue;
    ++ran;
    split_runs += sm90::backward_head_split(c.params()) > 1;
  }
  INFO(split_runs << " of " << ran << " runs split");
  if (std::getenv("FB_SM90_BWD_SPLIT") == nullptr && ran > 0) CHECK(split_runs > 0);
}

// The cases above take the split only if the launcher picks it: the workspace holds the fp32 dK/dV
// accumulators exactly when it does. MQA with one K/V tile per 8 query heads at batch 1 must split
// (8 blocks on a whole GPU otherwise); MHA (nothing to split) and a GQA shape with many K/V tiles per
// SM must not. Skipped where FB_SM90_BWD_SPLIT overrides the choice. Since session 24 a non-causal d = 128
// pass without a head split may run its last partial wave as query-tail units (backward_tail_split()), with
// fp32 accumulators of its own for the tail's tiles: the many-tile shapes' workspaces then differ by those
// (64 x 32 and 64 x 128 tiles leave tails of 68 and 8 on 132 SMs), so the head split is asked for there.
TEST_CASE("GQA/MQA: the backward splits query heads only where K/V tiles are few", "[gpu][bwd_gqa]") {
  gpu();
  const char* word_env = std::getenv("FB_SM90_BWD_SPLIT");
  const std::string word = word_env != nullptr ? word_env : "";
  const bool whole_cap = word.empty() || word == "default" || word == "whole";
  if (!whole_cap && word != "cap8" && word != "pg") {
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
    // Same query heads, so the same dQ, LSE and D workspace: only the accumulators differ. The base has none (MHA
    // under the causal mask: no split, no query tail); since session 38 the non-causal MHA grid (64 tiles, less than
    // one wave) runs the query tail, with its own accumulators.
    const std::size_t mqa = sm90::backward_workspace_bytes(params(1, 8, 1, 1000, causal));
    const std::size_t mha = sm90::backward_workspace_bytes(params(1, 8, 8, 1000, causal));
    const std::size_t base = sm90::backward_workspace_bytes(params(1, 8, 8, 1000, true));
    CHECK(mqa > base);
    CHECK((mha > base) == (sm90::backward_tail_split(params(1, 8, 8, 1000, causal)) > 1));
    CHECK(sm90::backward_head_split(params(1, 8, 1, 1000, causal)) > 1);
    CHECK(sm90::backward_head_split(params(1, 8, 8, 1000, causal)) == 1);
    // 32 q / 8 kv heads, batch 4, 8k keys: 64 tiles x 32 K/V planes, over 8 per SM.
    CHECK(sm90::backward_head_split(params(4, 32, 8, 8192, causal)) == 1);
    // 32 q / 1 kv head, N = 700: 6 key tiles. Non-causal passes may take the whole group since session 35
    // (max_head_split(), flash_sm90_bwd.cu): 16 subsets (96 units of 2 heads, one round on 114 or 132 SMs) where the
    // cap of 8 (`cap8`, `pg`) gives 48 units of 4 heads. Causal: at most 8 always.
    const int wide = sm90::backward_head_split(params(1, 32, 1, 700, causal));
    INFO("32 q / 1 kv head N = 700: " << wide << " subsets");
    CHECK(32 % wide == 0);
    if (causal || !whole_cap)
      CHECK(wide <= 8);
    else
      CHECK(wide > 8);
    const std::size_t many = sm90::backward_workspace_bytes(params(4, 32, 8, 8192, causal));
    const std::size_t many_mha = sm90::backward_workspace_bytes(params(4, 32, 32, 8192, causal));
    if (sm90::backward_tail_split(params(4, 32, 8, 8192, causal)) == 1 &&
        sm90::backward_tail_split(params(4, 32, 32, 8192, causal)) == 1) {
      INFO("no query tail");
      CHECK(many == many_mha);
    }
  }
}

// ---- flash (the portable mma.sync backward): query heads split over blocks (session 8) ----
// Self-contained (its own helpers below): kernels/flash/flash_bwd.cu's head split, forced to several
// subset counts through force_backward_head_split(), each run verified against the fp64 reference
// beside naive. Subset counts that do not divide the group (3 of 8, 4 of 6) give units of unequal
// head counts; odd lengths (777, 513 x 300, 129 x 1000) cut the key tiles, the query steps and the
// causal diagonal at odd offsets, and seq_q > seq_k leaves causal rows with no key. A unit summing the
// wrong heads, a partial added to the wrong plane or tile, a partial added twice or never, or a
// missing dK/dV convert fails dK or dV. The split kernels reduce dQ into the tiled accumulator (d = 128
// since session 12, d = 64 since session 13; FB_FLASH_BWD=splitrows: by rows), so a wrong tile offset
// fails dQ; the workspace checks hold as they are (its dQ section has the tiled size whether or not a
// split runs).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "catch.h"
#include "flash/flash_bwd.h"
#include "gpu_support.h"
#include "registry.h"
#include "runner.h"

namespace {

// Restores the process-wide split setting when a test ends (pass or fail).
class ForcedFlashSplit {
 public:
  explicit ForcedFlashSplit(int split) : previous_(fb::cuda::flash::force_backward_head_split(split)) {}
  ~ForcedFlashSplit() { fb::cuda::flash::force_backward_head_split(previous_); }
  ForcedFlashSplit(const ForcedFlashSplit&) = delete;
  ForcedFlashSplit& operator=(const ForcedFlashSplit&) = delete;

 private:
  int previous_;
};

constexpr std::uint64_t kFlashSplitSeed = 20261130;

// Every dQ, dK, dV element of flash's run is finite (the backend fills outputs with NaN before a run,
// so an element never written, e.g. a key row no unit converted, shows up).
void check_flash_gradients_written(fb::CudaBackend& b) {
  for (const fb::HostTensor& t : b.fetch("flash")) {
    if (t.name != "dQ" && t.name != "dK" && t.name != "dV") continue;
    INFO("flash " << t.name);
    std::size_t bad = 0;
    for (const double v : t.values) bad += !std::isfinite(v);
    CHECK(bad == 0);
  }
}

// flash once on the case c the backend holds (naive has run on it), both judged by the runner's rule
// against the fp64 reference and verified, every gradient element of flash's run written.
void check_flash_beside_naive(fb::CudaBackend& b, const fb::Case& c) {
  using namespace fb::test;
  REQUIRE(b.run(kernel("flash"), 0, 1).times_ms.size() == 1);
  std::vector<fb::Record> records{ok_record(c, "naive"), ok_record(c, "flash")};
  verify_and_check(b, records);
  check_flash_gradients_written(b);
}

}  // namespace

// flash's unsplit causal GQA backward in plane groups (flash_bwd.cu causal_plane_group_of(), since session 37): K/V
// planes taken a group at a time, key tiles outermost within a group. Shapes no config names whose group on 132 SMs
// does not divide the planes (the last group short): 8 x 16 q / 8 kv, N = 1300, d = 128 (64 planes in groups of 22),
// 12 x 8 / 4, N = 800, d = 64 (48 in groups of 26); and seq_q != seq_k, fp16 (10 x 32 / 8, 900 queries on 1000 keys).
// A block given the wrong plane or key tile fails dK / dV; one never run leaves NaN. On 132 SMs under the default
// words the first two must run in groups (1 < group < planes); FB_FLASH_BWD=headmajor: 1.
TEST_CASE("GQA: flash's causal backward in plane groups verifies", "[gpu][bwd_gqa][flash_pgroup]") {
  namespace flash = fb::cuda::flash;
  CudaBackend& b = gpu();
  struct Row {
    int batch, heads, kv_heads, q, k, dim;
    Dtype dtype;
    bool grouped;  // on 132 SMs under the default words
  };
  const Row rows[] = {{8, 16, 8, 1300, 1300, 128, Dtype::bf16, true},
                      {12, 8, 4, 800, 800, 64, Dtype::bf16, true},
                      {10, 32, 8, 900, 1000, 64, Dtype::fp16, false}};
  const char* env = std::getenv("FB_FLASH_BWD");
  const std::string word = env != nullptr ? env : "";
  const bool model_on = (word.empty() || word == "standard") && std::getenv("FB_FLASH_BWD_SPLIT") == nullptr;
  for (const Row& r : rows) {
    const Case c = make_case(r.batch, r.heads, r.kv_heads, r.q, r.k, r.dim, r.dtype, true, Pass::bwd);
    const int group = flash::backward_causal_plane_group(c.params());
    INFO("case " << c.key() << ", plane group " << group);
    CHECK(group >= 1);
    CHECK(group <= r.batch * r.kv_heads);
    if (word == "headmajor") CHECK(group == 1);
    if (model_on && r.grouped && sm_count() == 132) {
      CHECK(flash::backward_head_split(c.params()) == 1);
      CHECK(group > 1);
      CHECK(group < r.batch * r.kv_heads);
      CHECK((r.batch * r.kv_heads) % group != 0);
    }
    b.prepare(c, kSeed);
    std::vector<Record> records = run_each(b, c, {"naive", "flash"}, never_refused);
    verify_and_check(b, records, each_written(b, c, Tensors::gradients));
    b.release();
  }
  // MHA and non-causal passes keep their order.
  CHECK(flash::backward_causal_plane_group(make_case(4, 8, 8, 4096, 4096, 64, Dtype::bf16, true, Pass::bwd).params()) ==
        1);
  CHECK(flash::backward_causal_plane_group(
            make_case(12, 8, 4, 800, 800, 64, Dtype::bf16, false, Pass::bwd).params()) == 1);
}

TEST_CASE("GQA/MQA: flash's backward with query heads split over blocks verifies at every split",
          "[gpu][bwd_gqa][flash_split]") {
  using namespace fb::test;
  namespace flash = fb::cuda::flash;
  CudaBackend& b = gpu();
  struct Shape {
    int batch, heads, kv_heads, q, k, dim;
    std::vector<int> splits;
  };
  const Shape shapes[] = {{1, 8, 1, 777, 777, 128, {1, 2, 3, 8}},
                          {1, 8, 1, 777, 777, 64, {2, 4}},
                          {2, 4, 2, 777, 777, 128, {2}},
                          {1, 6, 1, 513, 300, 128, {4, 6}},
                          {3, 8, 2, 129, 1000, 64, {3, 4}},
                          {1, 32, 1, 300, 513, 128, {8, 32}}};
  int i = 0, split_runs = 0;
  for (const Shape& s : shapes)
    for (bool causal : {false, true}) {
      const fb::Dtype t = i++ % 2 == 0 ? fb::Dtype::bf16 : fb::Dtype::fp16;
      const fb::Case c = make_case(s.batch, s.heads, s.kv_heads, s.q, s.k, s.dim, t, causal, fb::Pass::bwd);
      INFO("case " << c.key());
      b.prepare(c, kFlashSplitSeed);
      if (const auto why = b.check_fits(c, kernel("flash"))) FAIL("flash refused: " << *why);
      REQUIRE(b.run(kernel("naive"), 0, 1).times_ms.size() == 1);
      const fb::AttentionParams p = c.params();
      // The workspace without fp32 dK/dV accumulators: the same shape under a causal mask (no tail split), unsplit.
      // Since session 38 the unsplit non-causal grid of less than one wave runs the tail split, whose accumulators
      // are then in its workspace too.
      fb::AttentionParams p_causal = p;
      p_causal.causal = true;
      ForcedFlashSplit off(1);
      const std::size_t base_ws = flash::backward_workspace_bytes(p_causal);
      const std::size_t unsplit_ws = flash::backward_workspace_bytes(p);
      CHECK((unsplit_ws > base_ws) == (flash::backward_tail_split(p) > 1));
      for (const int split : s.splits) {
        INFO("split forced to " << split);
        ForcedFlashSplit forced(split);
        const int used = flash::backward_head_split(p);
        // Off Hopper-sized shared memory (the fallback kernel) or under an FB_FLASH_BWD probe other
        // than `splitrows` and `cap8` (the default's split, dQ by rows / at most 8 subsets) the split
        // does not run;
        // everywhere else it is the forced count, at most one head a unit.
        if (used == 1 && split > 1) {
          WARN("flash's head split does not run here (" << c.key() << ")");
        } else {
          CHECK(used == std::min(split, s.heads / s.kv_heads));
          // The fp32 dK/dV accumulators are in the workspace exactly when a split runs (the head split, or at a
          // forced 1 the tail split).
          CHECK((flash::backward_workspace_bytes(p) > base_ws) == (used > 1 || flash::backward_tail_split(p) > 1));
          split_runs += used > 1;
        }
        check_flash_beside_naive(b, c);
      }
      b.release();
    }
  if (split_runs == 0) WARN("no run of flash's head split: only the unsplit backward was checked");

  // Without a forced count the model splits MQA with one K/V plane and few key tiles under the causal
  // mask (8 query heads, 4k keys: 32 key tiles against a GPU of blocks) and never MHA.
  ForcedFlashSplit automatic(0);
  fb::AttentionParams mqa = make_case(1, 8, 1, 4096, 4096, 128, fb::Dtype::bf16, true, fb::Pass::bwd).params();
  fb::AttentionParams mha = mqa;
  mha.kv_heads = 8;
  CHECK(flash::backward_head_split(mha) == 1);
  if (split_runs > 0) CHECK(flash::backward_head_split(mqa) > 1);

  // The subset cap (flash_bwd.cu max_head_split()): non-causal groups may split past 8 subsets (session 27 at
  // d = 128, session 35 at d = 64: the cap is the group there). 40 q / 1 kv head, batch 2, N = 4500 on 132 SMs: 72
  // blocks unsplit, whose model rates 8 subsets (five rounds of 359 steps: 1795) behind 20 (1606) and 40 (1650); the
  // causal d = 128 cap is 16. Under the probe `cap8` every cap is 8. Other SM counts: only that each pick divides
  // the group within its cap.
  const char* grid_env = std::getenv("FB_FLASH_BWD");
  const bool cap8 = grid_env != nullptr && std::string(grid_env) == "cap8";
  const int sms = sm_count();
  fb::AttentionParams big = make_case(2, 40, 1, 4500, 4500, 128, fb::Dtype::bf16, false, fb::Pass::bwd).params();
  fb::AttentionParams big64 = big;
  big64.head_dim = 64;
  fb::AttentionParams big_causal = big;
  big_causal.causal = true;
  const int s128 = flash::backward_head_split(big), s64 = flash::backward_head_split(big64),
            sc = flash::backward_head_split(big_causal);
  INFO("splits: d = 128 " << s128 << ", d = 64 " << s64 << ", causal " << sc << " on " << sms << " SMs");
  if (split_runs > 0) {
    CHECK(40 % s128 == 0);
    CHECK(40 % s64 == 0);
    CHECK(40 % sc == 0);
    CHECK(sc <= (cap8 ? 8 : 16));
    if (cap8) {
      CHECK(s128 <= 8);
      CHECK(s64 <= 8);
    } else if (sms == 132) {
      CHECK(s128 > 8);
      CHECK(s64 > 8);
    }
  }
}

// The tail split (flash_bwd.cu tail_split(); the default at d = 128 non-causal since session 11): on
// grids of at least one whole wave of blocks (since session 38 also on smaller grids, every block then a tail block;
// FB_FLASH_BWD=nosubwave: whole waves only) the last partial wave's blocks run as several units each,
// starting mid-walk over their (query head, query tile) steps, their dK/dV partials added into fp32
// accumulators for the tail's key rows only and converted into those rows. Shapes of 144 to 288 blocks
// (a whole wave and a tail on a 132-SM H100/H200), MHA and GQA, lengths that cut the key tiles and
// query steps at odd offsets, seq_q != seq_k both ways; each run verified against the fp64 reference
// beside naive, every gradient element written. A unit walking the wrong steps, a partial added to
// the wrong row, or a tail row not converted fails dK or dV. The causal rows (never split) are
// controls. Under FB_FLASH_BWD=tail the same shapes run session 10's probe; under notail no split. Since session 18 the
// MHA rows run kDescend's walk unsplit by default (flash_bwd.cu descend_walk()); the GQA rows still split.
TEST_CASE("flash's backward with the grid's last partial wave split verifies", "[gpu][bwd_gqa][flash_tail]") {
  using namespace fb::test;
  namespace flash = fb::cuda::flash;
  CudaBackend& b = gpu();
  struct Row {
    int batch, heads, kv_heads, q, k;
    bool causal;
    fb::Dtype dtype;
  };
  const Row rows[] = {{3, 12, 6, 1000, 1000, false, fb::Dtype::bf16},
                      {3, 12, 6, 1000, 1000, true, fb::Dtype::bf16},
                      {2, 16, 16, 1025, 1025, false, fb::Dtype::fp16},
                      {2, 32, 8, 700, 1500, false, fb::Dtype::bf16},
                      {1, 24, 24, 1600, 777, false, fb::Dtype::fp16},
                      // Since session 26 none of the rows above splits on an H200 (the GQA rows head-split, the
                      // MHA rows walk kDescend unsplit): two MHA rows of more than 4096 keys (no kDescend) that do,
                      // 432 blocks with a tail of 36 (S = 3) and 330 with a tail of 66 (S = 2) on 132 SMs.
                      {1, 12, 12, 700, 4500, false, fb::Dtype::bf16},
                      {1, 10, 10, 513, 4200, false, fb::Dtype::fp16},
                      // Since session 38 grids of less than one wave split too (every block a tail block; not under
                      // `nosubwave`): 108, 104 and 102 blocks on 132 SMs, no head split (S = 6, 5, 5 on an H200).
                      {3, 10, 2, 2300, 2300, false, fb::Dtype::bf16},
                      {1, 16, 4, 2400, 3300, false, fb::Dtype::fp16},
                      {1, 4, 1, 3000, 13000, false, fb::Dtype::bf16}};
  const int sms = sm_count();
  const char* probe = std::getenv("FB_FLASH_BWD");
  const bool as_built = probe == nullptr || *probe == '\0';
  const bool no_subwave = probe != nullptr && std::string(probe) == "nosubwave";
  int split_runs = 0;
  for (const Row& s : rows) {
    const fb::Case c =
        make_case(s.batch, s.heads, s.kv_heads, s.q, s.k, 128, s.dtype, s.causal, fb::Pass::bwd);
    INFO("case " << c.key());
    const fb::AttentionParams p = c.params();
    const int tail = flash::backward_tail_split(p);
    INFO("tail split " << tail);
    if (s.causal) CHECK(tail == 1);
    const long long blocks = (long long)((s.k + 127) / 128) * s.batch * s.kv_heads;
    if (sms == 132 && blocks < sms && (as_built || no_subwave)) CHECK((tail > 1) == as_built);
    split_runs += tail > 1;
    b.prepare(c, kFlashSplitSeed);
    if (const auto why = b.check_fits(c, kernel("flash"))) FAIL("flash refused: " << *why);
    REQUIRE(b.run(kernel("naive"), 0, 1).times_ms.size() == 1);
    check_flash_beside_naive(b, c);
    b.release();
  }
  if (split_runs == 0) WARN("no run of flash's tail split (a probe, or a GPU these grids fill differently)");
  // On the GPU the rows were chosen for (132 SMs) the default must split some: else this test checks nothing.
  if (sms == 132 && as_built) CHECK(split_runs >= 5);
}

// Since session 39 (call A, the probe `subwave64`) d = 64 grids of less than one wave run the tail split with the tiled dQ
// (TcConfig<*, 64>::tail_dq_tiled), every block a tail block, as d = 128 ones do; under FB_FLASH_BWD=nosubwave (and the
// words that leave the default's grid) they run whole. Shapes no config names of 104, 102 and 99 blocks on 132 SMs
// without a head split (S = 5, 5, 4 by the model), seq_q != seq_k in two, MQA in one, fp16 and bf16; each verified
// beside naive with every gradient written.
TEST_CASE("flash's d = 64 backward on grids of less than one wave splits and verifies",
          "[gpu][bwd_gqa][flash_tail64]") {
  using namespace fb::test;
  namespace flash = fb::cuda::flash;
  CudaBackend& b = gpu();
  struct Row {
    int batch, heads, kv_heads, q, k;
    fb::Dtype dtype;
  };
  const Row rows[] = {{1, 16, 4, 2400, 3300, fb::Dtype::fp16},
                      {1, 4, 1, 3000, 13000, fb::Dtype::bf16},
                      {1, 6, 3, 4200, 4200, fb::Dtype::bf16}};
  const std::string word = env_word("FB_FLASH_BWD");
  const bool as_built = word.empty();
  const int sms = sm_count();
  int split_runs = 0;
  for (const Row& s : rows) {
    const fb::Case c = make_case(s.batch, s.heads, s.kv_heads, s.q, s.k, 64, s.dtype, false, fb::Pass::bwd);
    INFO("case " << c.key());
    const int tail = flash::backward_tail_split(c.params());
    INFO("tail split " << tail);
    if (word == "nosubwave") CHECK(tail == 1);
    split_runs += tail > 1;
    b.prepare(c, kFlashSplitSeed);
    if (const auto why = b.check_fits(c, kernel("flash"))) FAIL("flash refused: " << *why);
    REQUIRE(b.run(kernel("naive"), 0, 1).times_ms.size() == 1);
    check_flash_beside_naive(b, c);
    b.release();
  }
  // On the GPU the rows were chosen for (132 SMs) the default splits all three: else this test checks nothing.
  if (as_built && sms == 132) CHECK(split_runs == 3);
}

// Session 66 (calls C and D, results/h100/s66/) had d = 64 non-causal MHA passes of 8192 keys or more with seq_q >=
// seq_k on grids of at least a whole wave walk their query tiles from the last down (kDescend:
// TcConfig<*, 64>::noncausal_desc_dq_tiled, no tail split); session 67's call E (results/h100/s67/E/) withdrew it by
// its rule (0.985x at 142 blocks). So by default no d = 64 pass walks; under FB_FLASH_BWD=desc2 every row does (the
// walk's kernel verified). Shapes no config names on both sides of each old condition (keys, seq_q against seq_k, a
// grid of 130 blocks against 132 SMs, GQA), fp16 and bf16; each verified beside naive with every gradient written.
TEST_CASE("flash's d = 64 non-causal backward walks from the last query tile only under desc2 and verifies",
          "[gpu][bwd_gqa][flash_desc64]") {
  using namespace fb::test;
  namespace flash = fb::cuda::flash;
  CudaBackend& b = gpu();
  struct Row {
    int batch, heads, kv_heads, q, k;
    fb::Dtype dtype;
  };
  const Row rows[] = {{1, 3, 3, 9000, 9000, fb::Dtype::bf16}, {1, 4, 4, 9500, 8192, fb::Dtype::fp16},
                      {1, 2, 2, 8300, 8300, fb::Dtype::fp16}, {1, 3, 3, 1000, 9000, fb::Dtype::bf16},
                      {1, 4, 4, 8192, 8191, fb::Dtype::bf16}, {2, 6, 6, 3000, 5000, fb::Dtype::fp16},
                      {1, 8, 2, 1200, 9000, fb::Dtype::bf16}};
  const std::string word = env_word("FB_FLASH_BWD");
  const int sms = sm_count();
  for (const Row& s : rows) {
    const fb::Case c = make_case(s.batch, s.heads, s.kv_heads, s.q, s.k, 64, s.dtype, false, fb::Pass::bwd);
    INFO("case " << c.key());
    const bool walks = flash::backward_descends(c.params());
    if (word.empty() && sms == 132) CHECK_FALSE(walks);  // as built, on 132 SMs
    if (word == "nodesc2") CHECK_FALSE(walks);
    if (word == "desc2") CHECK(walks);
    if (walks) CHECK(flash::backward_tail_split(c.params()) == 1);
    b.prepare(c, kFlashSplitSeed);
    if (const auto why = b.check_fits(c, kernel("flash"))) FAIL("flash refused: " << *why);
    REQUIRE(b.run(kernel("naive"), 0, 1).times_ms.size() == 1);
    check_flash_beside_naive(b, c);
    b.release();
  }
}
