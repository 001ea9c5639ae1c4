// flash-sm90's 16-bit forward, d = 64 non-causal: the tail split's plan and workspace (kernels/flash_sm90/
// flash_sm90_split.h), host code, so checked here without a GPU; the GPU tests ([sm90fwd]) run the kernels on shapes
// that split and check that the run's tracked memory holds the workspace. Also `shortstatic`'s rule (short_tile_static,
// the same header): which d = 128 launches it puts on the static round-robin; and `k0rec`'s (k0_rec_on): which launches
// run the producer order kOptK0Rec.

#include <vector>

#include "catch.h"
#include "flash_sm90/flash_sm90_split.h"

namespace {

using namespace fb::cuda::flash_sm90;

constexpr int kSms = 132;      // the H200
constexpr int kRows = 192;     // d = 64's query tile (three 64-row warpgroups)
constexpr int kHeadDim = 64;
constexpr int kKeys = 128;     // d = 64's K/V tile

int ceil_div(int a, int b) { return (a + b - 1) / b; }

// The plan of a d = 64 launch of batch x heads planes of seq tokens (seq_q = seq_k) on 132 SMs.
TailSplit plan(int batch, int heads, int seq) {
  const int n_work = batch * heads * ceil_div(seq, kRows);
  return tail_split_plan(n_work, n_work < kSms ? n_work : kSms, ceil_div(seq, kKeys));
}

}  // namespace

TEST_CASE("tail split: call A's rows split as measured, parts of 4 K/V tiles no longer", "[sm90fwd_split]") {
  // b4-h8 N = 4k: 704 tiles, 44 in the last round, 3 parts each (1.058 / 1.084x in session 15's call A).
  TailSplit ts = plan(4, 8, 4096);
  CHECK(ts.from == 660);
  CHECK(ts.splits == 3);
  CHECK(ts.units() == 132);
  // b1-h8 N = 16k: 688 tiles, 28 in the last round, 4 parts of 32 K/V tiles (1.096 / 1.076x).
  ts = plan(1, 8, 16384);
  CHECK(ts.from == 660);
  CHECK(ts.splits == 4);
  CHECK(ts.units() == 112);
  // b4-h32 N = 4k: 2816 tiles, 44 in the last round, 3 parts (1.012 / 1.006x).
  ts = plan(4, 32, 4096);
  CHECK(ts.splits == 3);
  // b16-h32 N = 1k: 3072 tiles of 8 K/V tiles, 36 in the last round: 2 parts of 4 in call A (0.990 / 0.972x), which
  // TailSplitLimits::kMinKvTiles = 8 rules out.
  ts = plan(16, 32, 1024);
  CHECK(ts.splits == 1);
  CHECK(ts.units() == 0);
  CHECK(tail_split_workspace_bytes(ts, kRows, kHeadDim) == 0);
  // b8-h32 N = 2k: 16 K/V tiles, 2 parts of 8, the shortest the limit allows.
  ts = plan(8, 32, 2048);
  CHECK(ts.splits == 2);
  // b1-h32 N = 16k: 2752 tiles, 112 in the last round (over half full): nothing to split.
  CHECK(plan(1, 32, 16384).splits == 1);
  // No whole round before the partial one, or no partial round: nothing split.
  CHECK(tail_split_plan(100, 100, 64).splits == 1);
  CHECK(tail_split_plan(264, kSms, 64).splits == 1);
}

TEST_CASE("tail split: the parts cover each split tile's K/V tiles once, none shorter than the limit",
          "[sm90fwd_split]") {
  for (int n_work = kSms + 1; n_work <= 4 * kSms; ++n_work)
    for (int kv : {8, 15, 16, 17, 24, 31, 32, 50, 64, 128, 1000}) {
      const TailSplit ts = tail_split_plan(n_work, kSms, kv);
      INFO("n_work " << n_work << ", " << kv << " K/V tiles");
      CHECK(ts.items == ts.from + ts.units());
      if (ts.splits == 1) {
        CHECK(ts.from == n_work);
        continue;
      }
      CHECK(ts.from == n_work - n_work % kSms);
      CHECK(ts.units() == (n_work - ts.from) * ts.splits);
      CHECK(ts.units() <= kSms);  // the parts never outnumber the blocks
      CHECK(ts.units() <= TailSplitLimits::kMaxUnits);
      std::vector<int> seen(std::size_t(kv), 0);
      int next = 0;
      for (int part = 0; part < ts.splits; ++part) {
        const TailPart tp = tail_split_part(kv, ts.splits, part);
        CHECK(tp.kv_first == next);
        CHECK(tp.kv_tiles >= TailSplitLimits::kMinKvTiles);
        for (int j = tp.kv_first; j < tp.kv_first + tp.kv_tiles; ++j) ++seen[std::size_t(j)];
        next = tp.kv_first + tp.kv_tiles;
      }
      CHECK(next == kv);
      bool once = true;
      for (int c : seen) once = once && c == 1;
      CHECK(once);
    }
}

TEST_CASE("tail split: the workspace holds each part's O and LSE, O first and 16-byte aligned", "[sm90fwd_split]") {
  const TailSplit ts = plan(1, 8, 16384);  // 112 parts
  const std::size_t o_floats = tail_split_o_floats(ts, kRows, kHeadDim);
  CHECK(o_floats == std::size_t(112) * kRows * kHeadDim);
  CHECK(o_floats * sizeof(float) % 16 == 0);  // the LSE parts start 16-byte aligned after the O parts
  CHECK(tail_split_workspace_bytes(ts, kRows, kHeadDim) == (o_floats + std::size_t(112) * kRows) * sizeof(float));
  // At most kMaxUnits parts: under 8 MB at d = 64.
  const TailSplit most{0, 2, TailSplitLimits::kMaxUnits};
  CHECK(tail_split_workspace_bytes(most, kRows, kHeadDim) < (std::size_t(8) << 20));
}

TEST_CASE("shortstatic: the static round-robin only on non-causal plane-major launches of short work tiles",
          "[sm90fwd_split]") {
  constexpr int kKeys128 = 128;  // d = 128's K/V tile (flash_sm90_config.h)
  constexpr int kMax = 4;        // FwdDefaults::kShortStaticMaxKvTiles
  // Session 20's rows (results/h200/s20/calls/job1-sm90fwd-static.sh): N = 256 / 384 / 512 take it, 640 / 768 / 1024
  // and causal launches do not.
  for (int n : {256, 384, 512}) {
    INFO("N = " << n);
    CHECK(short_tile_static(false, true, n, kKeys128, kMax));
    CHECK_FALSE(short_tile_static(true, true, n, kKeys128, kMax));
    CHECK_FALSE(short_tile_static(false, false, n, kKeys128, kMax));  // nopairq: the grouped order
  }
  for (int n : {513, 640, 768, 1024, 4096}) {
    INFO("N = " << n);
    CHECK_FALSE(short_tile_static(false, true, n, kKeys128, kMax));
  }
  // The GPU test's shapes (seq_k decides: every non-causal work tile runs all of its K/V tiles): 500 x 300, 1000 x 64,
  // 700 x 200, 320 take it; 300 x 500 (4 K/V tiles) too; 130 x 1000 does not.
  for (int seq_k : {300, 64, 200, 320, 500, 1}) CHECK(short_tile_static(false, true, seq_k, kKeys128, kMax));
  CHECK_FALSE(short_tile_static(false, true, 1000, kKeys128, kMax));
  CHECK_FALSE(short_tile_static(false, true, 0, kKeys128, kMax));
  CHECK_FALSE(short_tile_static(false, true, 256, kKeys128, 0));  // a limit of 0: nowhere
}

TEST_CASE("k0rec: by default d = 128 launches of up to 16 K/V tiles a work tile; the words override it",
          "[sm90fwd_split]") {
  constexpr int kKeys = 128;  // d = 64's and d = 128's K/V tile (flash_sm90_config.h)
  constexpr int kHd = 128;    // FwdDefaults::kK0RecHeadDim
  constexpr int kMax = 16;    // FwdDefaults::kK0RecMaxKvTiles
  // Session 57's calls A and B: d = 128's rows of N 298-2046 take it, causal or not; d = 64's do not.
  for (int n : {1, 128, 298, 512, 703, 1271, 2046, 2048}) {
    INFO("N = " << n);
    CHECK(k0_rec_on(-1, 128, n, kKeys, kHd, kMax));
    CHECK_FALSE(k0_rec_on(-1, 64, n, kKeys, kHd, kMax));
    CHECK_FALSE(k0_rec_on(0, 128, n, kKeys, kHd, kMax));  // nok0rec
    CHECK(k0_rec_on(1, 64, n, kKeys, kHd, kMax));         // k0rec: wherever the variant takes it
  }
  // Past 16 K/V tiles (unmeasured against a rule) only under the word.
  for (int n : {2049, 4096, 8192}) {
    INFO("N = " << n);
    CHECK_FALSE(k0_rec_on(-1, 128, n, kKeys, kHd, kMax));
    CHECK(k0_rec_on(1, 128, n, kKeys, kHd, kMax));
  }
  CHECK_FALSE(k0_rec_on(-1, 128, 0, kKeys, kHd, kMax));
  CHECK_FALSE(k0_rec_on(-1, 128, 256, kKeys, kHd, 0));  // a limit of 0: nowhere
}
