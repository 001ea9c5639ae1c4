// The backwards' GQA/MQA head-split model (kernels/common/head_split.h): host code, so its choices are
// checked here without a GPU; the GPU tests ([bwd_gqa], [flash_split]) check the kernels at every split.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "catch.h"
#include "common/head_split.h"

namespace {

using namespace fb;
using fb::cuda::model_head_split;

AttentionParams shape(int batch, int heads, int kv_heads, int seq, bool causal) {
  AttentionParams p{};
  p.batch = batch;
  p.heads = heads;
  p.kv_heads = kv_heads;
  p.seq_q = seq;
  p.seq_k = seq;
  p.head_dim = 128;
  p.dtype = Dtype::bf16;
  p.causal = causal;
  return p;
}

}  // namespace

TEST_CASE("head split: causal MQA with few key tiles splits, MHA and GPU-filling shapes do not", "[head_split]") {
  constexpr int kSms = 132, kBlockN = 128, kBlockM = 64;
  // 8 query heads on 1 K/V head, 16k tokens: the issue-13 MQA rows (b16 N=1k, b4 N=4k, b1 N=16k).
  for (const auto& [batch, seq] : {std::pair{16, 1024}, std::pair{4, 4096}, std::pair{1, 16384}}) {
    const int split = model_head_split(shape(batch, 8, 1, seq, true), kSms, kBlockN, kBlockM);
    INFO("batch " << batch << " N " << seq << " split " << split);
    CHECK(split > 1);
    CHECK(8 % split == 0);
  }
  // MHA: nothing to split.
  CHECK(model_head_split(shape(1, 8, 8, 16384, true), kSms, kBlockN, kBlockM) == 1);
  // 32 q / 8 kv heads at N = 1024, batch 16: 8 key tiles x 128 planes fill the GPU many times over.
  CHECK(model_head_split(shape(16, 32, 8, 1024, true), kSms, kBlockN, kBlockM) == 1);
  // No device (sms = 0) or no tiles: no split.
  CHECK(model_head_split(shape(1, 8, 1, 16384, true), 0, kBlockN, kBlockM) == 1);
  CHECK(model_head_split(shape(1, 8, 1, 16384, true), kSms, 0, kBlockM) == 1);
}

TEST_CASE("head split: the split grows with the imbalance and never exceeds the cap or the group", "[head_split]") {
  constexpr int kSms = 132;
  // Causal MQA at batch 1: key tile j does the work of the rows below it; splitting evens it out.
  const int causal = model_head_split(shape(1, 32, 1, 16384, true), kSms, 128, 64);
  const int full = model_head_split(shape(1, 32, 1, 16384, false), kSms, 128, 64);
  CHECK(causal >= full);
  CHECK(causal <= 8);  // HeadSplitModel::max_split
  cuda::HeadSplitModel capped;
  capped.max_split = 2;
  CHECK(model_head_split(shape(1, 32, 1, 16384, true), kSms, 128, 64, capped) <= 2);
  // A group of 3 can only split into 3 (or not at all).
  const int three = model_head_split(shape(1, 3, 1, 16384, true), kSms, 128, 64);
  CHECK((three == 1 || three == 3));
}

TEST_CASE("head split: equal units (no causal mask) under near_best 0 take the fastest modelled split", "[head_split]") {
  // flash-sm90's non-causal d = 128 backward since session 23 (flash_sm90_bwd.cu head_split()): every unit as long
  // as the others, the model's time is its wave count. 24 q / 4 kv heads, batch 2: at N = 5120 (320 key tiles and
  // planes on 132 SMs: three waves unsplit, the third under half full) the model rates splits 1 / 2 / 3 / 6 at
  // 1452 / 1220 / 1312 / 1260 steps; the largest within 5% of the best is 6, the fastest 2. At N = 2500: 488 / 372
  // / 336 / 352: 6 against 3.
  constexpr int kSms = 132, kBlockN = 128, kBlockM = 64;
  cuda::HeadSplitModel fastest;
  fastest.near_best = 0.0;
  CHECK(model_head_split(shape(2, 24, 4, 5120, false), kSms, kBlockN, kBlockM) == 6);
  CHECK(model_head_split(shape(2, 24, 4, 5120, false), kSms, kBlockN, kBlockM, fastest) == 2);
  CHECK(model_head_split(shape(2, 24, 4, 2500, false), kSms, kBlockN, kBlockM) == 6);
  CHECK(model_head_split(shape(2, 24, 4, 2500, false), kSms, kBlockN, kBlockM, fastest) == 3);
  // The GQA grid's non-causal rows (32 / 8, 32 / 1, 8 / 1 heads, 16k tokens, N = 1k / 4k / 16k) split under
  // neither: no split is modelled within 5% of no split's time there.
  for (const auto& [heads, kv] : {std::pair{32, 8}, std::pair{32, 1}, std::pair{8, 1}})
    for (const auto& [batch, seq] : {std::pair{16, 1024}, std::pair{4, 4096}, std::pair{1, 16384}}) {
      INFO(heads << " q / " << kv << " kv heads, batch " << batch << " N " << seq);
      CHECK(model_head_split(shape(batch, heads, kv, seq, false), kSms, kBlockN, kBlockM, fastest) == 1);
      CHECK(model_head_split(shape(batch, heads, kv, seq, false), kSms, kBlockN, kBlockM) == 1);
    }
}

TEST_CASE("head split: non-causal groups of more than 8 query heads past the cap of 8", "[head_split]") {
  // flash's non-causal d = 128 backward since session 27 (flash_bwd.cu max_head_split(): the cap is the group). Equal
  // units: the model's time is its rounds of units. 40 q / 1 kv head, batch 2, N = 4500 (session 27's call B: 8
  // subsets 1.126x the time of 20): 36 key tiles x 2 planes = 72 blocks of 71 query tiles x 40 heads; 8 subsets run
  // 576 units in five rounds of 355 + 4 steps (1795), 20 subsets 1440 in eleven of 142 + 4 (1606), 40 subsets 2880 in
  // 22 of 71 + 4 (1650).
  constexpr int kSms = 132, kBlockN = 128, kBlockM = 64;
  cuda::HeadSplitModel group_cap;
  group_cap.max_split = 40;
  cuda::HeadSplitModel fastest = group_cap;
  fastest.near_best = 0.0;
  CHECK(model_head_split(shape(2, 40, 1, 4500, false), kSms, kBlockN, kBlockM) == 8);  // the cap of 8
  CHECK(model_head_split(shape(2, 40, 1, 4500, false), kSms, kBlockN, kBlockM, fastest) == 20);
  CHECK(model_head_split(shape(2, 40, 1, 4500, false), kSms, kBlockN, kBlockM, group_cap) == 40);  // within 5%
  // At N = 3000 (48 blocks of 47 x 40 steps) 8 subsets fill three rounds of 239 steps (717), ahead of every finer
  // split by more than 5% (40: 15 rounds of 51, 765): 8 under either cap (call B: 8 the fastest measured).
  CHECK(model_head_split(shape(2, 40, 1, 3000, false), kSms, kBlockN, kBlockM, group_cap) == 8);
  CHECK(model_head_split(shape(2, 40, 1, 3000, false), kSms, kBlockN, kBlockM, fastest) == 8);
  // Every pick divides the group (units of equal head counts).
  for (int seq : {1200, 2600, 4500, 8000})
    for (const auto& [heads, kv] : {std::pair{12, 1}, std::pair{48, 1}, std::pair{64, 4}, std::pair{24, 2}}) {
      cuda::HeadSplitModel m;
      m.max_split = heads / kv;
      const int split = model_head_split(shape(1, heads, kv, seq, false), kSms, kBlockN, kBlockM, m);
      INFO(heads << " q / " << kv << " kv heads, N " << seq << ": " << split);
      CHECK((heads / kv) % split == 0);
    }
}

TEST_CASE("tail split: the grid's last partial wave splits where its units shorten the tail", "[head_split]") {
  using fb::cuda::model_tail_split;
  using fb::cuda::TailSplitModel;
  constexpr int kSms = 132;
  // flash's warp-grid kernel (units cut the walk anywhere), d = 128, 16k tokens: 2048 blocks, a tail of 68, 64 queries
  // a step: S = 5 / 5 / 9 at N = 4k / 8k / 16k (flash_bwd.cu tail_split()'s comment, session 10).
  CHECK(model_tail_split(2048, kSms, 4096 / 64, 1) == 5);
  CHECK(model_tail_split(2048, kSms, 8192 / 64, 1) == 5);
  CHECK(model_tail_split(2048, kSms, 16384 / 64, 1) == 9);
  // flash-sm90 (units of whole query tiles): 5 x 20 heads at N = 1536, 64 queries a step: 1200 tiles, 9 waves and
  // 12 tiles; 8 units of 3 tiles (ceil(24 / 8)) fit one round, as do 9-11 units (still 3 tiles): the first, 8.
  TailSplitModel sm90;
  sm90.whole_tiles = true;
  CHECK(model_tail_split(1200, kSms, 24, 1, sm90) == 8);
  // The grid at N = 2k (80 queries a step: 26 tiles): halves of the 68-tile tail are 136 units, two rounds of 13 +
  // 4 steps, longer than one whole block (30); thirds, two rounds of 9 + 4 = 26: 3.
  CHECK(model_tail_split(2048, kSms, 26, 1, sm90) == 3);
  // GQA: a unit walks its range over every head of the group (2 heads: ceil(9 / 5) x 2 = 4 steps + 4).
  CHECK(model_tail_split(280, kSms, 9, 2, sm90) == 5);
  // Whole waves, no device, nothing to split, or a tail too full to gain 1%: no split.
  CHECK(model_tail_split(2 * kSms, kSms, 24, 1, sm90) == 1);
  CHECK(model_tail_split(1200, 0, 24, 1, sm90) == 1);
  CHECK(model_tail_split(1200, kSms, 1, 1, sm90) == 1);
  CHECK(model_tail_split(2 * kSms - 2, kSms, 24, 1, sm90) == 1);
  // Never more units than query tiles (none would be empty), nor than max_split.
  for (int tiles = 1; tiles <= 40; ++tiles)
    for (long long blocks : {140LL, 200LL, 300LL, 1200LL}) {
      const int s = model_tail_split(blocks, kSms, tiles, 1, sm90);
      INFO("tiles " << tiles << " blocks " << blocks << " split " << s);
      CHECK(s >= 1);
      CHECK(s <= std::min(tiles, sm90.max_split));
    }
}

// Session 38: grids of fewer blocks than SMs (every block a tail block), which the backwards' tail splits take since then
// (flash_bwd.cu tail_split(): min_gain 1%; flash_sm90_bwd.cu qtail_parts(): kSubwaveMinGain 5%). The shapes and figures
// of docs/perf-notes.md, "Session 38: the tail split on grids of less than one wave".
TEST_CASE("tail split: grids of less than one wave split every block where the model saves enough", "[head_split]") {
  using fb::cuda::model_tail_split_choice;
  using fb::cuda::TailSplitModel;
  constexpr int kSms = 132;
  // 1 x 64 q / 4 kv heads, d = 128, N = 3700: 4 planes x 29 key tiles = 116 blocks of 16 heads. No head split: every
  // divisor of the group leaves part of a last round (flash's cap is the whole group without a mask).
  cuda::HeadSplitModel flash;
  flash.max_split = 16;
  flash.unsplit_plane_major = true;
  CHECK(model_head_split(shape(1, 64, 4, 3700, false), kSms, 128, 64, flash) == 1);
  // flash (units cut the walk anywhere; 58 steps of 64 queries a head): S = 9, 1044 units in 8 rounds of 103 + 4
  // steps, 857 against 932 whole (call B measured 1.245x).
  const auto f = model_tail_split_choice(116, kSms, 58, 16);
  CHECK(f.splits == 9);
  CHECK(f.time < 0.93 * (58 * 16 + 4));
  // flash-sm90 (units of whole query tiles, 47 of 80 queries): at the 1% bar 12 units for 1.1% (call B: 0.983x), at
  // the 5% bar of the default none; 1 x 20 / 2 N = 7800 the same (14 units for 2.3%, call B 0.986x).
  TailSplitModel sm90;
  sm90.whole_tiles = true;
  CHECK(model_tail_split_choice(116, kSms, 47, 16, sm90).splits == 12);
  CHECK(model_tail_split_choice(122, kSms, 98, 10, sm90).splits == 14);
  sm90.min_gain = 0.05;
  CHECK(model_tail_split_choice(116, kSms, 47, 16, sm90).splits == 1);
  CHECK(model_tail_split_choice(122, kSms, 98, 10, sm90).splits == 1);
  // 1 x 4 q / 2 kv N = 4500: 72 tiles on 132 SMs, 3 units of 19 of 57 query tiles (call B: 1.282x).
  const auto w = model_tail_split_choice(72, kSms, 57, 2, sm90);
  CHECK(w.splits == 3);
  CHECK(w.time < 0.75 * (57 * 2 + 4));
  // 128 blocks on 132 SMs (the GQA grids' non-causal MQA rows): nothing worth it for either.
  CHECK(model_tail_split_choice(128, kSms, 256, 8).splits == 1);
  CHECK(model_tail_split_choice(128, kSms, 205, 8, sm90).splits == 1);
}

TEST_CASE("shared tail: the d = 64 backward's last partial round is shared out where that saves a tenth of it",
          "[head_split]") {
  using fb::cuda::model_tail_share;
  constexpr int kSms = 132;
  // The issue-13 grid at d = 64 (32 heads, 16k tokens: 4096 tiles, 31 rounds and 4 tiles): the 4 tiles' query tiles
  // in runs of one (two pieces at most, 2 steps each) against a whole tile: N = 1024 5 < 8 steps, N = 4096 5 < 32;
  // N = 512 (4 query tiles) 5 > 4: not shared.
  CHECK(model_tail_share(4096, kSms, 8, 1).share);
  CHECK(model_tail_share(4096, kSms, 32, 1).share);
  CHECK_FALSE(model_tail_share(4096, kSms, 4, 1).share);
  CHECK(model_tail_share(4096, kSms, 32, 1).shared == 1 + 2 * 2.0);
  CHECK(model_tail_share(4096, kSms, 32, 1).unshared == 32.0);
  // A tail of 99 tiles of 63 query tiles (15 heads, seq_k 4100, seq_q 8000): runs of 48 (47.25) + 2 pieces = 52
  // steps against 63: shared; of 13 query tiles (100 tiles of 13: runs of 10 + 4 against 13): not.
  CHECK(model_tail_share(495, kSms, 63, 1).share);
  CHECK_FALSE(model_tail_share(364, kSms, 13, 1).share);
  // GQA: a query tile is a step of every head of the group.
  CHECK(model_tail_share(402, kSms, 16, 2).shared == 2 + 2 * 2.0);
  // Whole rounds, at most one round, or no device: not shared.
  CHECK_FALSE(model_tail_share(2 * kSms, kSms, 32, 1).share);
  CHECK_FALSE(model_tail_share(kSms - 4, kSms, 32, 1).share);
  CHECK_FALSE(model_tail_share(kSms, kSms, 32, 1).share);
  CHECK_FALSE(model_tail_share(4096, 0, 32, 1).share);
}

TEST_CASE("head split: with the shared tail in the d = 64 unsplit time, non-causal splits give way to it",
          "[head_split]") {
  using fb::cuda::HeadSplitModel;
  constexpr int kSms = 132, kBlock = 128;  // BwdTraits<*, 64>: 128 keys a block, 128 queries a step
  HeadSplitModel m;
  m.near_best = 0.0;
  HeadSplitModel share = m;
  share.unsplit_tail_share = true;
  auto at = [](int batch, int heads, int kv_heads, int n) {
    AttentionParams p = shape(batch, heads, kv_heads, n, false);
    p.head_dim = 64;
    return p;
  };
  // 3 x 24 q / 4 kv heads N = 1536: 144 tiles of 12 query tiles x 6 heads, one round and a tail of 12 (a whole 72-step
  // round against 6 one-head subsets' 864 units); shared, the tail is runs of 2 query tiles (12 steps + 2 pieces).
  CHECK(model_head_split(at(3, 24, 4, 1536), kSms, kBlock, kBlock, m) == 6);
  CHECK(model_head_split(at(3, 24, 4, 1536), kSms, kBlock, kBlock, share) == 1);
  // Where the tail is not shared (whole rounds: 2 x 33 heads x 2 key tiles = 132) or the split stays ahead, as before.
  CHECK(model_head_split(at(2, 66, 33, 256), kSms, kBlock, kBlock, share) ==
        model_head_split(at(2, 66, 33, 256), kSms, kBlock, kBlock, m));
  CHECK(model_head_split(at(2, 16, 2, 3000), kSms, kBlock, kBlock, share) == 4);
  // Causal passes ignore it.
  AttentionParams causal = at(3, 24, 4, 1536);
  causal.causal = true;
  CHECK(model_head_split(causal, kSms, kBlock, kBlock, share) == model_head_split(causal, kSms, kBlock, kBlock, m));
}

TEST_CASE("head split: with the query tail in the unsplit time, non-causal splits give way to it", "[head_split]") {
  using fb::cuda::HeadSplitModel;
  using fb::cuda::model_tail_split;
  using fb::cuda::model_tail_split_choice;
  using fb::cuda::TailSplitModel;
  constexpr int kSms = 132, kBlockN = 128, kBlockM = 64;
  HeadSplitModel plain;
  plain.near_best = 0.0;  // flash-sm90's non-causal passes
  HeadSplitModel qtail = plain;
  qtail.unsplit_query_tail = true;
  // 40 q / 8 kv heads, batch 2, N = 4500 (session 25's call B: 0.843x torch-cudnn split): 36 key tiles x 16 planes =
  // 576 blocks of 71 x 5 + 4 steps, 4.4 waves. Against a whole fifth wave (1795), 5 one-head subsets model 8% faster
  // (2880 units, 22 rounds of 75: 1650); against 4 waves and the tail's 48 blocks in eighths (384 units of 9 query
  // tiles x 5 heads + 4, 3 rounds: 1583), the split is 4% slower: no split.
  CHECK(model_head_split(shape(2, 40, 8, 4500, false), kSms, kBlockN, kBlockM, plain) == 5);
  CHECK(model_head_split(shape(2, 40, 8, 4500, false), kSms, kBlockN, kBlockM, qtail) == 1);
  // 40 q / 1 kv head at the same N: 72 blocks, one partial wave, which the query tail leaves whole: the split stays.
  CHECK(model_head_split(shape(2, 40, 1, 4500, false), kSms, kBlockN, kBlockM, qtail) == 5);
  // Causal passes ignore it (their blocks differ in length; the query tail is non-causal only).
  for (const auto& [batch, seq] : {std::pair{16, 1024}, std::pair{4, 4096}, std::pair{2, 4500}}) {
    HeadSplitModel causal;
    HeadSplitModel causal_qtail = causal;
    causal_qtail.unsplit_query_tail = true;
    CHECK(model_head_split(shape(batch, 8, 1, seq, true), kSms, kBlockN, kBlockM, causal) ==
          model_head_split(shape(batch, 8, 1, seq, true), kSms, kBlockN, kBlockM, causal_qtail));
  }
  // Never a split the plain model would not take: the tail only shortens the unsplit time.
  for (int kv : {1, 2, 4, 8})
    for (int group : {2, 3, 4, 5, 6, 8})
      for (int seq : {1000, 2300, 3100, 4500, 6500}) {
        const AttentionParams p = shape(2, kv * group, kv, seq, false);
        const int with = model_head_split(p, kSms, kBlockN, kBlockM, qtail);
        INFO("kv " << kv << " group " << group << " N " << seq << " split " << with);
        CHECK((with == 1 || with == model_head_split(p, kSms, kBlockN, kBlockM, plain)));
      }
  // The tail's modelled time: none for whole waves; the chosen units' rounds, never longer than a whole block.
  TailSplitModel sm90;
  sm90.whole_tiles = true;
  CHECK(model_tail_split_choice(2 * kSms, kSms, 24, 1, sm90).time == 0.0);
  const auto c = model_tail_split_choice(576, kSms, 71, 5, sm90);
  CHECK(c.splits == model_tail_split(576, kSms, 71, 5, sm90));
  CHECK(c.splits == 8);
  CHECK(c.time == 3 * (9 * 5 + 4));
  CHECK(c.time <= 71 * 5 + 4);
}

TEST_CASE("head split: flash's unsplit causal grid plane-major as it runs", "[head_split]") {
  using fb::cuda::HeadSplitModel;
  constexpr int kSms = 132, kBlockN = 128, kBlockM = 64;  // flash's warp-grid kernel at d = 128
  // flash_bwd.cu head_split()'s model; `before` it: the unsplit causal blocks longest first over every plane.
  auto pick = [&](int batch, int heads, int kv, int seq, bool causal, bool as_run) {
    HeadSplitModel m;
    m.max_split = causal ? 16 : 8;
    m.unsplit_plane_major = as_run;
    return model_head_split(shape(batch, heads, kv, seq, causal), kSms, kBlockN, kBlockM, m);
  };
  // Session 26's call G (results/h200/s26/callG/table.txt): the whole group was far behind a split that the old model
  // did not take: 40 / 8 N = 2000 (5 subsets 1.37x), 40 / 8 N = 4500 (5, 1.13x), 56 / 8 N = 3500 (7, 1.44x), 32 / 8
  // N = 1500 (2, 1.17x).
  CHECK(pick(2, 40, 8, 2000, true, false) == 1);
  CHECK(pick(2, 40, 8, 2000, true, true) == 5);
  CHECK(pick(2, 40, 8, 4500, true, true) == 5);
  CHECK(pick(1, 56, 8, 3500, true, false) == 1);
  CHECK(pick(1, 56, 8, 3500, true, true) == 7);
  CHECK(pick(4, 32, 8, 1500, true, true) == 2);
  // Splits both take stay: 20 / 4 N = 1800 (5), 24 / 4 N = 3000 (3).
  CHECK(pick(3, 20, 4, 1800, true, true) == 5);
  CHECK(pick(2, 24, 4, 3000, true, true) == 3);
  // Where the old model splits too, the count stays its own (call H: 6 in place of 3 ran 0.968x / 0.979x; 4 in place
  // of 2 at d = 64, 0.998x), though the larger unsplit time would let more subsets pass min_gain.
  CHECK(pick(2, 24, 4, 5120, true, true) == 3);
  CHECK(pick(1, 48, 8, 5000, true, true) == 3);
  for (int kv : {1, 2, 4, 8})
    for (int group : {2, 3, 4, 5, 6, 7, 8})
      for (int seq : {1000, 1700, 3000, 4500, 8000}) {
        const int before = pick(2, kv * group, kv, seq, true, false), now = pick(2, kv * group, kv, seq, true, true);
        INFO("kv " << kv << " group " << group << " N " << seq << ": " << before << " -> " << now);
        CHECK((before == now || before == 1));
        CHECK(group % now == 0);
        // Non-causal passes: no order to model (their blocks are equal).
        CHECK(pick(2, kv * group, kv, seq, false, true) == pick(2, kv * group, kv, seq, false, false));
      }
  // MQA at 16k tokens keeps its splits (sessions 8-13's measured ones; the unsplit grid is far behind in either order).
  for (const auto& [batch, seq] : {std::pair{16, 1024}, std::pair{4, 4096}, std::pair{1, 16384}})
    for (int heads : {8, 32}) {
      INFO("MQA " << heads << " heads, batch " << batch << ", N " << seq);
      CHECK(pick(batch, heads, 1, seq, true, true) == pick(batch, heads, 1, seq, true, false));
    }
  // Grids of many key tiles a SM fill the GPU either way: no split (32 / 8 heads at 32k tokens).
  for (const auto& [batch, seq] : {std::pair{32, 1024}, std::pair{8, 4096}, std::pair{4, 8192}})
    CHECK(pick(batch, 32, 8, seq, true, true) == 1);
}

TEST_CASE("head split: without a mask, a cap of 8 subsets can leave a long last round", "[head_split]") {
  // 40 q / 1 kv head, batch 1, N = 7100: 56 key tiles (results/h200/s35/A/, 0.963x torch-cudnn under the cap). Every
  // unit is as long as the others; at most 8 subsets the fastest is 2 (112 units of 20 heads, one round on 132 SMs,
  // 20 of them idle); the whole group as the cap (flash_sm90_bwd.cu and flash_bwd.cu, max_head_split()) lets the
  // model even the rounds with more, shorter units.
  constexpr int kSms = 132;
  cuda::HeadSplitModel capped;
  capped.near_best = 0.0;
  cuda::HeadSplitModel whole = capped;
  whole.max_split = 40;
  const AttentionParams p = shape(1, 40, 1, 7100, false);
  const int at8 = model_head_split(p, kSms, 128, 64, capped);
  const int at40 = model_head_split(p, kSms, 128, 64, whole);
  INFO("cap 8: " << at8 << ", cap 40: " << at40);
  CHECK(at8 <= 8);
  CHECK(at40 > 8);
  CHECK(40 % at40 == 0);
  // The cap never forces a split: a shape that fills the GPU stays whole under either cap.
  CHECK(model_head_split(shape(4, 32, 8, 8192, false), kSms, 128, 64, whole) == 1);
}

TEST_CASE("causal plane groups: widened where the last groups' longest blocks would start late", "[head_split]") {
  using fb::cuda::causal_plane_group;
  constexpr int kSms = 132;
  // flash-sm90's d = 64 backward: 128 x 128 tiles, a block of key tile j runs (q_tiles - j) query tiles of each of the
  // group's heads plus 3 steps (flash_sm90_bwd.cu, causal_group()).
  auto costs = [](int seq, int group) {
    const int tiles = (seq + 127) / 128;
    std::vector<double> c;
    for (int j = 0; j < tiles; ++j) c.push_back(double(tiles - j) * group + 3.0);
    return c;
  };
  // 40 q / 8 kv heads, batch 1 (results/h200/s35/E/: 0.928x / 0.962x torch-cudnn at N = 3300 / 7100 in groups of what
  // fits L2, 2 and 1 planes on the H200; call A: groups of 4, 1.240x / 1.140x).
  CHECK(causal_plane_group(costs(3300, 5), 8, 2, kSms) == 4);
  CHECK(causal_plane_group(costs(7100, 5), 8, 1, kSms) == 4);
  // Groups of at most two device-fulls of blocks (session 36's call C): 32 q / 8 kv, batch 16, N = 1024 (128 planes of
  // 8 key tiles) widens from 8, but not to every plane (0.89x the L2 group there), at most 33.
  const std::int64_t b16 = causal_plane_group(costs(1024, 4), 128, 8, kSms);
  CHECK(b16 > 8);
  CHECK(b16 <= 2 * kSms / 8);
  // MHA: blocks short beside a SM's share; the L2 group stays (32 heads, N = 16384, 2 planes; batch 4 N = 4096, 8).
  CHECK(causal_plane_group(costs(16384, 1), 32, 2, kSms) == 2);
  CHECK(causal_plane_group(costs(4096, 1), 128, 8, kSms) == 8);
  // Every block starts in the first wave (88 blocks on 132 SMs): no order to gain, the L2 group.
  CHECK(causal_plane_group(costs(1300, 5), 8, 5, kSms) == 5);
  // Within [the L2 group, two device-fulls] (never below the L2 group, never above the planes).
  for (int planes : {2, 3, 6, 7, 10, 24, 96})
    for (int l2 : {1, 2, 3, 5, 100})
      for (int seq : {900, 2300, 5000})
        for (int group : {1, 4, 8}) {
          const std::vector<double> c = costs(seq, group);
          const std::int64_t g = causal_plane_group(c, planes, l2, kSms);
          const std::int64_t low = std::min<std::int64_t>(l2, planes);
          const std::int64_t high = std::max<std::int64_t>(low, std::min<std::int64_t>(planes, 2 * kSms / c.size()));
          INFO("planes " << planes << " l2 " << l2 << " N " << seq << " group " << group << ": " << g);
          CHECK(g >= low);
          CHECK(g <= high);
        }
  // No device, one plane, no tiles: every plane in one group.
  CHECK(causal_plane_group(costs(3300, 5), 8, 2, 0) == 8);
  CHECK(causal_plane_group(costs(3300, 5), 1, 1, kSms) == 1);
  CHECK(causal_plane_group({}, 8, 2, kSms) == 8);
}

// flash-sm90's short causal d = 64 GQA backward passes in the dynamic tile order (session 51; flash_sm90_bwd.cu
// dyn_tiles_on(), unsplit_causal_group()): the order runs blocks greedily in launch order, as plane_group_makespan()
// models, so it takes causal_group()'s plane group. 8 x 12 q / 4 kv heads N = 1024 (32 planes, 8 key tiles, 11 planes
// fit a third of the H100's 50 MiB L2): in the L2 group the order models 45 steps, worse than the persistent kernel's
// static round-robin there (42; call T read it 0.953x), in causal_group()'s 16 planes 33 (call D: 1.191x).
// results/h100/s51/model/order_model.py mirrors these functions for every row of calls T and D.
TEST_CASE("causal plane groups: the dynamic order of short GQA passes in the model's group", "[head_split]") {
  using fb::cuda::causal_plane_group;
  using fb::cuda::plane_group_makespan;
  constexpr int kSms = 132;
  std::vector<double> c;
  for (int j = 0; j < 8; ++j) c.push_back(double(8 - j) * 3 + 3.0);
  CHECK(plane_group_makespan(c, 32, 11, kSms) == 45.0);
  CHECK(causal_plane_group(c, 32, 11, kSms) == 16);
  CHECK(plane_group_makespan(c, 32, 16, kSms) == 33.0);
  // The static round-robin of the same order (tile t on block t mod 132), what the persistent kernel ran before.
  double longest = 0.0;
  std::vector<double> busy(kSms, 0.0);
  int t = 0;
  for (int first = 0; first < 32; first += 11)
    for (const double cost : c)
      for (int u = 0; u < std::min(11, 32 - first); ++u) busy[std::size_t(t++ % kSms)] += cost;
  for (const double b : busy) longest = std::max(longest, b);
  CHECK(longest == 42.0);
}

TEST_CASE("a head split's causal plane groups: bounded, or one group where that models faster", "[head_split]") {
  using fb::cuda::causal_plane_group;
  using fb::cuda::plane_group_makespan;
  using fb::cuda::split_causal_plane_group;
  constexpr int kSms = 132;
  auto costs = [](int seq, int heads) {
    const int tiles = (seq + 127) / 128;
    std::vector<double> c;
    for (int j = 0; j < tiles; ++j) c.push_back(double(tiles - j) * heads + 3.0);
    return c;
  };
  // 32 q / 1 kv, batch 4, N = 4096 split into 4 subsets of 8 heads: 16 virtual planes of 32 key tiles; the L2 group
  // (1) widens to 4, and one group of 16 models no faster: the bounded group.
  CHECK(split_causal_plane_group(costs(4096, 8), 16, 1, kSms) == causal_plane_group(costs(4096, 8), 16, 1, kSms));
  CHECK(split_causal_plane_group(costs(4096, 8), 16, 1, kSms) == 4);
  // 4 q / 1 kv, batch 7, N = 3112 split into one-head subsets: 28 virtual planes of 25 key tiles whose L2 group (13)
  // is past two device-fulls already, and 28 in one group models 16% faster than groups of 13: one group.
  CHECK(causal_plane_group(costs(3112, 1), 28, 13, kSms) == 13);
  CHECK(split_causal_plane_group(costs(3112, 1), 28, 13, kSms) == 28);
  // Whatever it picks is never modelled 2% or more slower than one group, nor than the bounded pick.
  for (int planes : {4, 9, 16, 28, 40})
    for (int l2 : {1, 3, 13})
      for (int seq : {1000, 3112, 7000})
        for (int heads : {1, 2, 8}) {
          const std::vector<double> c = costs(seq, heads);
          const std::int64_t g = split_causal_plane_group(c, planes, l2, kSms);
          const double t = plane_group_makespan(c, planes, g, kSms);
          INFO("planes " << planes << " l2 " << l2 << " N " << seq << " heads " << heads << ": " << g);
          CHECK(t <= 1.02 * plane_group_makespan(c, planes, planes, kSms));
          CHECK(t <= plane_group_makespan(c, planes, causal_plane_group(c, planes, l2, kSms), kSms));
        }
}

TEST_CASE("flash's causal GQA plane groups: where head-major starts the last planes' long blocks late",
          "[head_split]") {
  using fb::cuda::gqa_causal_plane_group;
  constexpr int kSms = 132;
  // flash's warp-grid backward tiles: 128 keys by 128 queries at d = 64, by 64 at d = 128 (flash_bwd_tc.cuh).
  auto group64 = [](int batch, int heads, int kv, int seq, bool causal = true) {
    return gqa_causal_plane_group(shape(batch, heads, kv, seq, causal), kSms, 128, 128);
  };
  auto group128 = [](int batch, int heads, int kv, int seq, bool causal = true) {
    return gqa_causal_plane_group(shape(batch, heads, kv, seq, causal), kSms, 128, 64);
  };
  // Session 37's call C row: 6 x 20 q / 4 kv, N = 2600 (24 planes of 21 key tiles) read 0.973x FlashAttention-2
  // head-major; call D: groups of 6, 1.265x.
  CHECK(group64(6, 20, 4, 2600) == 6);
  // The GQA grids' causal 32 q / 8 kv batch 16 N = 1024 rows (128 planes of 8 key tiles): groups of 33 / 26, within
  // two device-fulls of blocks (call D: 1.097x / 1.091x).
  CHECK(group64(16, 32, 8, 1024) == 33);
  CHECK(group128(16, 32, 8, 1024) == 26);
  // The [flash_pgroup] GPU test's shapes: groups that do not divide the planes.
  CHECK(group128(8, 16, 8, 1300) == 22);
  CHECK(group64(12, 8, 4, 800) == 26);
  // One K/V plane's long key tiles fill the device alone (8 planes of 128 key tiles at N = 16384): plane after plane.
  CHECK(group128(1, 32, 8, 16384) == 1);
  // MHA (one head a block), non-causal passes (every block alike): plane after plane.
  CHECK(group64(4, 8, 8, 4096) == 1);
  CHECK(group64(6, 20, 4, 2600, false) == 1);
  // Every pick within [1, two device-fulls of blocks] and the planes.
  for (int batch : {1, 3, 8})
    for (int kv : {1, 2, 8})
      for (int group : {2, 5, 8})
        for (int seq : {700, 2600, 9000}) {
          const std::int64_t g = group64(batch, kv * group, kv, seq);
          const std::int64_t planes = std::int64_t(batch) * kv;
          const std::int64_t key_tiles = (seq + 127) / 128;
          INFO("batch " << batch << " kv " << kv << " group " << group << " N " << seq << ": " << g);
          CHECK(g >= 1);
          CHECK(g <= std::max<std::int64_t>(1, std::min<std::int64_t>(planes, 2 * kSms / key_tiles)));
        }
}
