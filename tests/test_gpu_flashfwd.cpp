// GPU tests [gpu][flashfwd]: the portable flash forward (mma.sync) at bf16 and fp16, d = 64 and 128, the cases whose
// kernel the timing probes swap (FB_FLASH_FWD_PROBE, kernels/flash/flash_fwd_config.h: e.g. `old`, the 128 x 32 kernel
// at d = 128 that GPUs with less shared memory a block run; `band0`, the causal order before session 11's bands;
// `nopdltail`, d = 128's non-causal grids in one launch, as before session 30's call E; `nokvtail`, the partial last
// wave as solo blocks, as before session 31's call B; `kvsubwave`, every grid of less than one wave in pieces over the
// keys, session 45's probe; `nokvsubwave`, none, as before call N (session 47's rule); `br64`, sub-wave d = 128 grids
// in 64-row tiles, session 53's probe: the sub-wave d = 128 non-causal cases below run them).
// The probe is read once per process, so a device call runs this binary once per probe setting; without
// the variable the shipped kernels run. gpu_main.cpp skips the tests without a device.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "catch.h"
#include "common/device_caps.h"
#include "flash/flash.h"
#include "gpu_cases.h"
#include "support.h"

namespace {

using namespace fb::test;
using namespace fb;

constexpr std::uint64_t kSeed = 20261201;

const char* probe_setting() {
  const char* probe = std::getenv("FB_FLASH_FWD_PROBE");
  return probe ? probe : "(unset)";
}

// Lengths around the tiles (128 query rows; 32 or 64 keys): one tile, a diagonal that cuts a warp's 32
// rows, seq_q != seq_k both ways (causal: rows and whole warps with no key, and warps whose first visible
// tile is not the block's), MQA/GQA/MHA, both masks; bf16 everywhere, fp16 on every other case.
std::vector<Case> flashfwd_cases() {
  const SeqLens lengths[] = {{1, 1},     {17, 17},   {33, 33},     {100, 100}, {129, 129}, {255, 257},
                             {1000, 1000}, {1025, 1025}, {300, 100}, {100, 1000}, {1000, 1}, {4099, 4099},
                             {200, 40}};
  const int heads[][2] = {{4, 1}, {4, 2}, {2, 2}};
  std::vector<Case> cases;
  int i = 0;
  for (int dim : {64, 128})
    for (const SeqLens& l : lengths)
      for (bool causal : {false, true}) {
        for (Dtype t : {Dtype::bf16, Dtype::fp16}) {
          if (t == Dtype::fp16 && i % 2 == 1) continue;
          cases.push_back(make_case(1 + i % 2, heads[i % 3][0], heads[i % 3][1], l.q, l.k, dim, t, causal,
                                    Pass::fwd));
        }
        ++i;
      }
  return cases;
}

// A d = 128 non-causal forward of batch x heads (MHA) at lengths l, bf16 and then fp16 with a sharp softmax (Q, K x 3:
// split pieces' row offsets then differ, so a merge's rescale has to be right), each verified beside naive after
// check_ws(the workspace flash asks for, which says whether a plan splits it).
template <typename CheckWs>
void check_fwd128_both_types(CudaBackend& b, int batch, int heads, SeqLens l, CheckWs&& check_ws) {
  for (Dtype t : {Dtype::bf16, Dtype::fp16}) {
    const Case c = make_case(batch, heads, heads, l.q, l.k, 128, t, false, Pass::fwd);
    const double input_scale = t == Dtype::fp16 ? 3.0 : 1.0;
    INFO("case " << c.key() << ", inputs x " << input_scale);
    check_ws(fb::cuda::flash::workspace_bytes(Pass::fwd, c.params()));
    check_beside_naive(b, c, "flash", kSeed, input_scale);
  }
}

}  // namespace

TEST_CASE("flash forward, bf16/fp16 d 64/128 (the probed kernels): verifies beside naive, outputs all written",
          "[gpu][flashfwd]") {
  INFO("FB_FLASH_FWD_PROBE=" << probe_setting());
  CudaBackend& b = gpu();
  for (const Case& c : flashfwd_cases()) {
    INFO("case " << c.key());
    check_beside_naive(b, c, "flash", kSeed);
  }
}

// Sharp softmax: Q and K scaled by 3 (scores by 9), so a row's running max climbs by many powers of two
// across its KV tiles, not only on the first: the lazy rescale's moves after the first tile (and the
// eager rescale) have to be right for O and LSE to verify.
TEST_CASE("flash forward, bf16/fp16 d 64/128, sharp softmax (Q, K x 3): verifies beside naive",
          "[gpu][flashfwd]") {
  INFO("FB_FLASH_FWD_PROBE=" << probe_setting());
  CudaBackend& b = gpu();
  const SeqLens lengths[] = {{1025, 1025}, {4099, 4099}, {300, 1000}};
  for (int dim : {64, 128})
    for (const SeqLens& l : lengths)
      for (bool causal : {false, true})
        for (Dtype t : {Dtype::bf16, Dtype::fp16}) {
          const Case c = make_case(1, 4, 2, l.q, l.k, dim, t, causal, Pass::fwd);
          INFO("case " << c.key());
          check_beside_naive(b, c, "flash", kSeed, 3.0);
        }
}

// d = 128's non-causal launches, whose default runs S = Q K^T's fragments double-buffered (kFwdFragPipe) with the
// lean prologue and epilogue (TcTiles<128>::kShortOpt: short launches, seq_k <= 1024, since session 15; every launch
// since session 26): the lengths session 15's calls A and B timed (512, 768, 1024, 640 with 24 planes), odd ones (a
// query tile of 1 or 77 rows, seq_k off the 64-key tile both ways, seq_q != seq_k), 1024 keys beside 1025 (the first
// launch past the old limit), longer ones (1280 as session 26's call D, 2100 queries on 3001 keys), MQA/GQA/MHA, and
// more query tiles than one wave (64 planes x 12-13 tiles; an H200 holds 264 blocks) so the L2 prefetch of the next
// wave's tile runs too. Under nokpipe the same cases run the kernels before session 15 (with epi,pro on all), under
// novlate the kernels before session 28 (the next K/V tile's V copies at the KV step's start, not after S).
TEST_CASE("flash forward, bf16/fp16 d 128, non-causal launches: verifies beside naive", "[gpu][flashfwd]") {
  INFO("FB_FLASH_FWD_PROBE=" << probe_setting());
  CudaBackend& b = gpu();
  struct Row {
    int batch, heads, kv_heads;
    SeqLens l;
  };
  const Row rows[] = {{2, 4, 4, {512, 512}},   {1, 6, 2, {768, 768}},   {3, 8, 8, {640, 640}},
                      {1, 4, 1, {1024, 1024}}, {2, 4, 2, {1025, 1025}}, {1, 4, 4, {1023, 1024}},
                      {2, 2, 1, {1, 1024}},    {1, 4, 2, {77, 999}},    {1, 4, 4, {700, 65}},
                      {2, 2, 2, {1000, 511}},  {4, 16, 4, {1537, 1024}}, {4, 16, 16, {1500, 960}},
                      {3, 4, 4, {1280, 1280}}, {1, 4, 2, {2100, 3001}}};
  for (const Row& r : rows)
    for (Dtype t : {Dtype::bf16, Dtype::fp16}) {
      const Case c = make_case(r.batch, r.heads, r.kv_heads, r.l.q, r.l.k, 128, t, false, Pass::fwd);
      // fp16 with a sharp softmax (Q, K x 3, as the test above): the lazy rescale's moves after the first KV tile.
      const double input_scale = t == Dtype::fp16 ? 3.0 : 1.0;
      INFO("case " << c.key() << ", inputs x " << input_scale);
      check_beside_naive(b, c, "flash", kSeed, input_scale);
    }
}

// A partial last wave (d = 128's default since session 30 runs it as a programmatically dependent launch at one block
// an SM, from work tile tile_base on; `nopdltail` in the first launch): batch 2 x 12 heads d = 128, N = 3400 (648
// blocks: on an H200's 132 SMs x 2 two whole waves and a tail of 120, the last query tile with 72 of its 128 rows and
// the last K/V tile with 8 of 64 keys) and N = 3584 (672 blocks: a tail of 144, more than one an SM, not split), bf16
// and fp16; O and LSE of every tile.
TEST_CASE("flash forward, bf16/fp16 d 128, a partial last wave: verifies beside naive", "[gpu][flashfwd]") {
  INFO("FB_FLASH_FWD_PROBE=" << probe_setting());
  CudaBackend& b = gpu();
  for (int n : {3400, 3584})
    for (Dtype t : {Dtype::bf16, Dtype::fp16}) {
      const Case c = make_case(2, 12, 12, n, n, 128, t, false, Pass::fwd);
      INFO("case " << c.key());
      check_beside_naive(b, c, "flash", kSeed);
    }
}

// The partial last wave in pieces over each work tile's keys (kFwdKvTail, d = 128's non-causal default since session
// 31's call B; the backend's workspace holds the pieces' partials): batch 1 x 12 heads N = 3000 (288 blocks: on an
// H200 a tail of 24, 11 pieces of 4-5 K/V tiles, the last tile with 56 of 64 keys), batch 3 x 4 heads 2900 queries on
// 300 keys (276: a tail of 12 in 2 pieces of 2 and 3 K/V tiles, the last query tile with 84 rows), session 29's
// N = 3400 (a tail of 120, 2 pieces of 27 tiles), bf16 and fp16 with a sharp softmax (Q, K x 3: the pieces' row
// offsets differ, so the merge's rescale has to be right). Under nokvtail the solo tail (kFwdPdlTail) runs them.
TEST_CASE("flash forward, bf16/fp16 d 128, a partial last wave in pieces over the keys: verifies beside naive",
          "[gpu][flashfwd]") {
  INFO("FB_FLASH_FWD_PROBE=" << probe_setting());
  CudaBackend& b = gpu();
  struct Row {
    int batch, heads;
    SeqLens l;
  };
  const Row rows[] = {{1, 12, {3000, 3000}}, {3, 4, {2900, 300}}, {2, 12, {3400, 3400}}};
  const std::string probe = probe_setting();
  for (const Row& r : rows)
    check_fwd128_both_types(b, r.batch, r.heads, r.l, [&](std::size_t ws) {
      // The shipped kernels on a Hopper GPU ask for the pieces' workspace (so they run); without kFwdKvTail, none.
      // (Since session 42 that takes code built for sm_90+ too, programmatic_launch_ok: these builds have it, and
      // a kernel whose ptxVersion read under 90 would fail here rather than lose its tail split unseen.)
      if (probe == "(unset)" && fb::cuda::current_device_caps()->major >= 9) CHECK(ws > 0);
      if (probe == "nokvtail" || probe == "nopdltail") CHECK(ws == 0);
    });
}

// Grids of less than one wave (at most one block an SM on an H200): the probe kvsubwave runs every tile in pieces over
// its keys, their counters zeroed by a block of their own ahead of the pieces' launch. Batch 1 x 16 heads N = 1024 (128
// blocks: 2 pieces of 8 K/V tiles), 1 x 4 heads N = 700 (24 blocks: 5 pieces of 2-3 K/V tiles, the last with 60 keys),
// 2 x 6 heads 900 queries on 2000 keys (96 blocks: 2 pieces, the last query tile with 4 rows), and 1 x 2 heads N = 129
// (4 blocks of 3 K/V tiles: one piece, whole), bf16 and fp16, fp16 with a sharp softmax (the pieces' row offsets
// differ). The default (session 46's kvsubwave3) splits only where a tile gets three pieces or more of five K/V tiles
// or more: 1 x 8 heads N = 1100 (72 blocks of 18 K/V tiles: 3 pieces of 6) and 1 x 3 heads 500 queries on 2500 keys (12
// blocks of 40 K/V tiles, the last of 4 keys: 8 pieces of 5), the others whole (no workspace); nokvsubwave runs every
// tile whole. All verify; the workspace says which ran.
TEST_CASE("flash forward, bf16/fp16 d 128, grids of less than one wave: verifies beside naive",
          "[gpu][flashfwd]") {
  INFO("FB_FLASH_FWD_PROBE=" << probe_setting());
  CudaBackend& b = gpu();
  struct Row {
    int batch, heads;
    SeqLens l;
    bool pieces;   // split under kvsubwave on a Hopper GPU of 128 or more SMs
    bool pieces3;  // and by default (three pieces or more of five K/V tiles or more)
  };
  const Row rows[] = {{1, 16, {1024, 1024}, true, false}, {1, 4, {700, 700}, true, false},
                      {2, 6, {900, 2000}, true, false},   {1, 2, {129, 129}, false, false},
                      {1, 8, {1100, 1100}, true, true},    {1, 3, {500, 2500}, true, true}};
  const std::string probe = probe_setting();
  const auto caps = fb::cuda::current_device_caps();
  const bool hopper = caps && caps->major >= 9 && fb::cuda::current_sm_count() >= 128;
  for (const Row& r : rows)
    check_fwd128_both_types(b, r.batch, r.heads, r.l, [&](std::size_t ws) {
      // Other words run other kernels (e.g. `old`, 128 x 32 tiles): their workspace is not this test's to say.
      const bool known = probe == "(unset)" || probe == "kvsubwave" || probe == "nokvsubwave";
      const bool split = probe == "kvsubwave" ? r.pieces : probe == "(unset)" && r.pieces3;
      if (known && !split) CHECK(ws == 0);
      if (known && split && hopper) CHECK(ws > 0);
    });
}

// A caller that gives the forward no workspace (params.workspace null; here the flash descriptor asking for none)
// gets kFwdPdlTail's solo tail where the default splits the tail in pieces: both verify, and write every output.
// Batch 1 x 12 heads N = 3000 bf16 (a tail of 24 in 11 pieces) and fp16 3 x 4 heads 2900 queries on 300 keys (a
// tail of 12 in 2 pieces), the fp16 one with a sharp softmax.
TEST_CASE("flash forward, d 128, a partial last wave without a workspace: the solo tail, verified",
          "[gpu][flashfwd]") {
  INFO("FB_FLASH_FWD_PROBE=" << probe_setting());
  CudaBackend& b = gpu();
  KernelSet set;
  for (const Descriptor& d : builtin_kernels().all()) set.add(d);
  Descriptor bare = *builtin_kernels().find("flash");
  bare.name = "flash-no-workspace";
  bare.cuda.workspace_bytes = [](Pass, const AttentionParams&) { return std::size_t(0); };
  set.add(bare);
  struct Row {
    int batch, heads;
    SeqLens l;
    Dtype t;
  };
  const Row rows[] = {{1, 12, {3000, 3000}, Dtype::bf16}, {3, 4, {2900, 300}, Dtype::fp16}};
  for (const Row& r : rows) {
    const Case c = make_case(r.batch, r.heads, r.heads, r.l.q, r.l.k, 128, r.t, false, Pass::fwd);
    const double input_scale = r.t == Dtype::fp16 ? 3.0 : 1.0;
    INFO("case " << c.key() << ", inputs x " << input_scale);
    if (std::string(probe_setting()) == "(unset)" && fb::cuda::current_device_caps()->major >= 9)
      CHECK(fb::cuda::flash::workspace_bytes(Pass::fwd, c.params()) > 0);  // the default does split it
    b.prepare(c, kSeed, input_scale);
    std::vector<Record> records;
    for (const char* name : {"naive", "flash", "flash-no-workspace"}) {
      const Descriptor* d = set.find(name);
      REQUIRE(d != nullptr);
      REQUIRE_FALSE(b.check_fits(c, *d).has_value());
      REQUIRE(b.run(*d, 0, 1).times_ms.size() == 1);
      records.push_back(ok_record(c, name));
    }
    verify_case(b, records, set);
    require_verified(records, each_written(b, c, Tensors::outputs));
    b.release();
  }
}

// Many more work tiles than a device runs at once (64 planes x 13-16 query tiles = 832-1024 blocks' worth; an
// H200 holds 264 of these blocks): the orders that reorder the tiles (causal: the default's bands of 8 query
// tiles at d = 64 and 4 at d = 128 with a grouped tail of one device-full, on an H200 query tiles 0-4 (d = 64, 64
// planes) or 0-8 (d = 128, 32 planes); tail0's bands alone, band0's grouped order, other bandN / tailN) or run them
// from one wave of blocks (persist, d = 128 non-causal: each block then runs 3-4 tiles, the next tile's Q/K/V
// loaded during the last one's epilogue) must still run every tile once, whatever the K/V stage parity at a
// tile's end (17 and 32 KV tiles) and with a short last band (13 query tiles); the L2 prefetch (d = 128's
// default, pf; off with nopf) asks for a tile one wave later only when there is one, the last query tile of a
// plane with 1 of its 128 rows (1537 rows). d = 64 non-causal too since session 19 (its grid orders over several
// waves: 1024 blocks of 16 query tiles, 832 of 13).
TEST_CASE("flash forward, bf16/fp16, more work tiles than one wave: verifies beside naive", "[gpu][flashfwd]") {
  INFO("FB_FLASH_FWD_PROBE=" << probe_setting());
  CudaBackend& b = gpu();
  const SeqLens lengths[] = {{2000, 2000}, {1537, 1030}};
  for (const SeqLens& l : lengths) {
    for (int dim : {64, 128})
      for (Dtype t : {Dtype::bf16, Dtype::fp16}) {
        const Case c = make_case(4, 16, 4, l.q, l.k, dim, t, false, Pass::fwd);
        INFO("case " << c.key());
        check_beside_naive(b, c, "flash", kSeed);
      }
    for (int dim : {64, 128}) {
      const Case c = make_case(4, 2048 / dim / 2, 4, l.q, l.k, dim, Dtype::bf16, true, Pass::fwd);
      INFO("case " << c.key());
      check_beside_naive(b, c, "flash", kSeed);
    }
  }
}
