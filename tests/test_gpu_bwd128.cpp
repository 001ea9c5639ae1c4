// GPU tests [gpu][bwd128]: the flash-sm90 backward at head dim 128 (kernels/flash_sm90/
// flash_sm90_bwd_traits.h: 128 keys a block, 80 queries a step where whole 80-query tiles pad little and
// 64 elsewhere (q80_kernel(), flash_sm90_bwd.cu; FB_SM90_BWD128=q80c: 80 on every shape, q64: 64),
// dQ split by columns of d between the two consumers) beside naive, against the fp64 reference, on shapes that reach the paths the session-8
// variants change: the block's last rows past seq_k (dK/dV stored through shared memory as whole rows),
// ring stages wrapping many times, more work tiles than SMs (persistent blocks loop), GQA groups looped
// inside a block. Run under FB_SM90_BWD128=... (read once per process) it tests that variant
// (scripts/sm90bwd_h200.sh). Causal passes without a head split run in the key-tail block order (MHA since
// session 13, GQA since session 14; FB_SM90_BWD128=ktailmha: MHA only): on an H200
// the launcher's model runs the 2 x 16-head causal case as 7 of its 9 key tiles
// in plane groups and the rest over all planes (both branches of the order); FB_SM90_BWD_GROUPED=T forces T,
// and FB_SM90_BWD128=kgroup runs session 12's order (every key tile grouped). gpu_main.cpp skips them without
// a device; off Hopper flash-sm90 says why.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "backend/cuda/cuda_backend.h"
#include "catch.h"
#include "flash_sm90/flash_sm90_bwd.h"
#include "gpu_support.h"
#include "judge.h"
#include "registry.h"
#include "runner.h"

namespace {

using namespace fb::test;
using namespace fb;

constexpr std::uint64_t kSeed = 20261201;

std::vector<Case> hdim128_bwd_cases() {
  struct Len {
    int q, k;
  };
  // Around the 128-key block and the 64- and 80-query steps; seq_q != seq_k both ways (causal: empty
  // rows and diagonals at odd offsets); a block with one step (q = 1) and blocks with 65 steps
  // (q = 4099). 81, 240 (whole 80-query tiles, not 64-query ones), 161 x 400 and 400 x 161: with 80
  // queries a step under the causal mask (the default at 4099; every case under FB_SM90_BWD128=q80c) a
  // key tile's first step starts up to 79 rows before its first visible row and the diagonal crosses
  // 80-row tiles at every offset.
  const Len lengths[] = {{1, 1},     {63, 63},   {129, 129}, {200, 200},  {1025, 1025}, {17, 300},
                         {300, 17},  {1, 4099},  {4099, 1000}, {4099, 4099}, {81, 81},   {240, 240},
                         {161, 400}, {400, 161}};
  const int heads[][2] = {{4, 1}, {4, 2}, {2, 2}, {8, 8}};
  std::vector<Case> cases;
  int i = 0;
  for (const Len& l : lengths)
    for (bool causal : {false, true}) {
      const Dtype t = i % 2 == 0 ? Dtype::bf16 : Dtype::fp16;
      cases.push_back(make_case(1, heads[i % 4][0], heads[i % 4][1], l.q, l.k, 128, t, causal, Pass::bwd));
      ++i;
    }
  // More work tiles than an H100/H200 has SMs: 9 key tiles x 32 K/V planes (MHA), and 17 x 2 x 8 with
  // GQA 4:1 (the group looped inside a block or split over blocks, as the launcher picks).
  cases.push_back(make_case(2, 16, 16, 1025, 1025, 128, Dtype::bf16, false, Pass::bwd));
  cases.push_back(make_case(2, 16, 16, 1025, 1025, 128, Dtype::fp16, true, Pass::bwd));
  cases.push_back(make_case(2, 32, 8, 1500, 2100, 128, Dtype::bf16, true, Pass::bwd));
  // An odd batch under the causal mask (added in session 20 for the pipe2 probe, kept: 5 sequences, 4 heads).
  cases.push_back(make_case(5, 4, 4, 1100, 1100, 128, Dtype::bf16, true, Pass::bwd));
  return cases;
}

// Non-causal shapes no config names (session 17; written for the key-tile pairs of a 2-block-cluster probe that was
// withdrawn before it ran, docs/perf-notes.md): odd numbers of 128-key tiles (3, 9), seq_q != seq_k both ways, one key
// tile (seq_k = 1 and 100), GQA 4:1, several batches and heads; seq_q = 80, 300, 1000, 1100 take the 80-query kernel
// (q80_kernel()), seq_q = 1 and 100 too since session 34 (with a short last step of 32 queries; under
// FB_SM90_BWD128=noshort the 64-query kernel).
std::vector<Case> hdim128_odd_cases() {
  struct Shape {
    int batch, heads, kv_heads, q, k;
  };
  const Shape shapes[] = {{2, 2, 2, 1, 1},       {1, 3, 3, 100, 100},   {2, 2, 2, 300, 300},  {1, 4, 4, 1000, 1000},
                          {1, 3, 3, 1100, 1100}, {2, 2, 2, 300, 1100},  {2, 2, 2, 1100, 300}, {3, 2, 2, 1000, 100},
                          {2, 2, 2, 80, 1},      {2, 8, 2, 1100, 1000}, {1, 4, 1, 300, 1100}, {1, 4, 1, 1000, 1}};
  std::vector<Case> cases;
  int i = 0;
  for (const Shape& x : shapes) {
    const Dtype t = i++ % 2 == 0 ? Dtype::bf16 : Dtype::fp16;
    cases.push_back(make_case(x.batch, x.heads, x.kv_heads, x.q, x.k, 128, t, false, Pass::bwd));
  }
  return cases;
}

// Many short blocks, more than an H200 has SMs (written in session 21 for the `edges` probe, measured and removed;
// docs/perf-notes.md): every block's epilogue and dQ reductions overlap other blocks' steps. Blocks of 1-5 steps: 80-query non-causal (300 x 300: 384 blocks of 4 steps; 129 x 1000: 320 blocks of 2 steps, a partial
// last key tile), the 64-query causal kernel in the key-tail order (520 x 520: 200 blocks), and causal seq_q > seq_k
// (700 x 260: 144 blocks, 440 query rows that see no key, so their dQ rows must be exactly 0).
std::vector<Case> hdim128_short_block_cases() {
  return {make_case(8, 16, 16, 300, 300, 128, Dtype::bf16, false, Pass::bwd),
          make_case(4, 10, 10, 129, 1000, 128, Dtype::fp16, false, Pass::bwd),
          make_case(5, 8, 8, 520, 520, 128, Dtype::fp16, true, Pass::bwd),
          make_case(4, 12, 12, 700, 260, 128, Dtype::bf16, true, Pass::bwd)};
}

// Every dQ, dK and dV element is finite (outputs are NaN-poisoned before a run, so an element left
// unwritten shows), and dQ rows of query rows with no visible key are exactly 0.
void check_written(CudaBackend& b, const Case& c, const std::string& name) {
  const int empty = c.causal && c.seq_q > c.seq_k ? c.seq_q - c.seq_k : 0;
  for (const HostTensor& t : b.fetch(name)) {
    if (t.name != "dQ" && t.name != "dK" && t.name != "dV") continue;
    std::size_t bad = 0;
    for (std::size_t x = 0; x < t.values.size(); ++x) {
      const bool empty_row =
          t.name == "dQ" && int(x / std::size_t(c.head_dim) % std::size_t(c.seq_q)) < empty;
      bad += empty_row ? t.values[x] != 0.0 : !std::isfinite(t.values[x]);
    }
    INFO(name << " " << t.name << ": " << bad << " elements unwritten or wrong");
    CHECK(bad == 0);
  }
}

// Each case: naive and flash-sm90 verified against the reference; flash-sm90's gradients all written.
void verify_cases(const std::vector<Case>& cases) {
  CudaBackend& b = gpu();
  for (const Case& c : cases) {
    INFO("case " << c.key());
    b.prepare(c, kSeed);
    std::vector<Record> records;
    for (const char* name : {"naive", "flash-sm90"}) {
      if (const auto why = b.check_fits(c, kernel(name))) {
        INFO(name << ": " << *why);
        REQUIRE(std::string(name) == "flash-sm90");  // only flash-sm90 may be refused (off Hopper)
        WARN("flash-sm90 not run: " << *why);
        continue;
      }
      REQUIRE(b.run(kernel(name), 0, 1).times_ms.size() == 1);
      records.push_back(ok_record(c, name));
    }
    verify_case(b, records, builtin_kernels());
    for (const Record& r : records) {
      INFO(r.kernel << " errors " << r.errors.dump());
      REQUIRE(r.verified.has_value());
      CHECK(*r.verified);
      check_written(b, c, r.kernel);
    }
    b.release();
  }
}

}  // namespace

TEST_CASE("head dim 128: the flash-sm90 backward verifies beside naive; poisoned gradients all written",
          "[gpu][bwd128]") {
  verify_cases(hdim128_bwd_cases());
}

TEST_CASE("head dim 128, non-causal shapes no config names (odd key tiles, seq_q != seq_k, GQA 4:1) verify",
          "[gpu][bwd128]") {
  verify_cases(hdim128_odd_cases());
}

TEST_CASE("head dim 128, many short blocks (more than the SMs) verify", "[gpu][bwd128]") {
  verify_cases(hdim128_short_block_cases());
}

// The query tail (kBwd128QTail, flash_sm90_bwd.cu qtail_parts(); the default on non-causal d = 128 passes without a
// head split since session 24; on grids of less than one wave too since session 38): the grid's
// last partial wave of (key tile, K/V plane) tiles runs as units, each
// walking a range of query tiles of every head of its group, their partial dK / dV added into fp32 accumulators for
// the tail's tiles only and converted into those rows. Shapes of 168-288 tiles (a whole wave and a tail on the H200's
// 132 SMs) that no config names: 80-query (1025, 1600, 1300; MHA 576 since session 34, with a short last step) and
// 64-query (GQA 576; MHA 576 under FB_SM90_BWD128=noshort) kernels, MHA and GQA 2:1, partial
// last key tiles (1025, 777, 700), seq_q != seq_k both ways; each verified against the fp64 reference beside naive,
// every gradient element written (NaN-poisoned before the run). A unit walking the wrong query tiles, a partial added
// to the wrong tile's slot, or a tail row not converted fails dK or dV. The causal row (never split) is a control.
// On 132 SMs each non-causal row of a whole wave or more splits (the model's S in the comment), two of the three smaller
// grids (none under =nosubwave); FB_SM90_BWD_QTAIL=off runs them unsplit and =S forces S units (on every grid).
TEST_CASE("head dim 128: the backward with the grid's last partial wave split along the queries verifies",
          "[gpu][bwd128][sm90_qtail]") {
  namespace sm90 = fb::cuda::flash_sm90;
  struct Row {
    int batch, heads, kv_heads, q, k;
    bool causal;
    Dtype dtype;
  };
  const Row rows[] = {{2, 16, 16, 1025, 1025, false, Dtype::bf16},  // 288 tiles, tail 24, S = 5
                      {1, 24, 24, 1600, 777, false, Dtype::fp16},   // 168, tail 36, S = 3
                      {3, 18, 18, 576, 700, false, Dtype::bf16},    // 324, tail 60 (80 queries, a short last step)
                      {7, 16, 8, 576, 576, false, Dtype::fp16},     // GQA 2:1, 280, tail 16, S = 5
                      {5, 8, 4, 1300, 1300, false, Dtype::bf16},    // GQA 2:1, 220, tail 88, S = 3
                      // Less than one wave, no head split (since session 38): every tile a tail tile where the model
                      // saves 5% (the last two, S = 5), whole under FB_SM90_BWD_QTAIL=nosubwave.
                      {3, 10, 2, 2300, 2300, false, Dtype::bf16},   // 108 tiles
                      {1, 16, 4, 2400, 3300, false, Dtype::fp16},   // 104 tiles, seq_q != seq_k
                      {1, 4, 1, 3000, 13000, false, Dtype::bf16},   // MQA, 102 tiles
                      {2, 16, 16, 1025, 1025, true, Dtype::fp16}};  // causal: never split
  const int sms = sm_count();
  const char* env = std::getenv("FB_SM90_BWD_QTAIL");
  const bool model_on = env == nullptr || std::string(env).empty() || std::string(env) == "default";
  const bool no_subwave = env != nullptr && std::string(env) == "nosubwave";
  int split_runs = 0, subwave_runs = 0;
  for (const Row& s : rows) {
    const Case c = make_case(s.batch, s.heads, s.kv_heads, s.q, s.k, 128, s.dtype, s.causal, Pass::bwd);
    INFO("case " << c.key());
    const int parts = sm90::backward_tail_split(c.params());
    INFO("query tail units " << parts);
    if (s.causal) CHECK(parts == 1);
    const long long tiles = (long long)((s.k + 127) / 128) * s.batch * s.kv_heads;
    if (!s.causal && model_on && sms == 132 && tiles >= sms) CHECK(parts > 1);
    if (!s.causal && no_subwave && sms == 132 && tiles < sms) CHECK(parts == 1);
    if (!s.causal && model_on && tiles < sms) subwave_runs += parts > 1;
    split_runs += parts > 1;
    verify_cases({c});
  }
  if (split_runs == 0) WARN("no run of the query tail (FB_SM90_BWD_QTAIL=off, or a GPU these grids fill differently)");
  if (model_on && sms == 132) CHECK(subwave_runs >= 2);
}

// Since session 39 (call C, the probe `causal8`) causal d = 128 passes of groups of >= 8 query heads take the head split
// where its model saves 0.5% (5% before, and for smaller groups), into split_key_tail()'s most subsets. Shapes no config
// names whose grids the 5% bar leaves whole on 132 SMs (the model's best split 2.7% / 2.7% / 4.5% faster): as built
// they split (5, 4 and 5 subsets, the virtual planes in the key-tail order), under FB_SM90_BWD_SPLIT=bar5 they run
// whole; a group of 4 (the last row, modelled 3.3% faster at 2 subsets) keeps the 5% bar and runs whole under both.
// Each verified (dQ, dK, dV) beside naive with every gradient written.
TEST_CASE("head dim 128: causal GQA head splits of groups of >= 8 at the lower bar verify",
          "[gpu][bwd128][sm90_causal8]") {
  namespace sm90 = fb::cuda::flash_sm90;
  struct Row {
    int batch, heads, kv_heads, q;
    Dtype dtype;
  };
  const Row rows[] = {{4, 40, 4, 2300, Dtype::bf16},   // 288 blocks: 5 subsets
                      {3, 32, 4, 2400, Dtype::fp16},   // 228 blocks: 4
                      {4, 40, 4, 2400, Dtype::bf16},   // 304 blocks: 5
                      {2, 12, 3, 4900, Dtype::fp16}};  // group 4, 234 blocks: the 5% bar, whole (modelled 3.3%)
  const std::string word = env_word("FB_SM90_BWD_SPLIT");
  const bool as_built = is_default_word(word);
  const int sms = sm_count();
  int split_runs = 0;
  for (const Row& s : rows) {
    const Case c = make_case(s.batch, s.heads, s.kv_heads, s.q, s.q, 128, s.dtype, true, Pass::bwd);
    INFO("case " << c.key());
    const int split = sm90::backward_head_split(c.params());
    INFO("head split " << split);
    const bool big_group = s.heads / s.kv_heads >= 8;
    if (sms == 132 && as_built && big_group) CHECK(split > 1);
    if (sms == 132 && word == "bar5" && big_group) CHECK(split == 1);
    if (sms == 132 && (as_built || word == "bar5") && !big_group) CHECK(split == 1);
    split_runs += split > 1;
    verify_cases({c});
  }
  // On the GPU the rows were chosen for (132 SMs) the default splits three: else this test checks nothing.
  if (as_built && sms == 132) CHECK(split_runs == 3);
}

// Since session 40 (call A, the probe `big8`) every causal d = 128 grid of a group of >= 8 query heads that the model
// leaves whole splits into the most subsets of long-enough units of >= 2 heads. Shapes no config names that the model
// leaves whole on 132 SMs (its gain under 0.5%; the last two past its gate of 8 blocks an SM): as built groups of 8 take
// 4 subsets and of 16 take 8; under FB_SM90_BWD_SPLIT=nobig8 (session 39's choice) and bar5 they run whole. The first
// two run and verify (dQ, dK, dV beside naive, every gradient written); the last two are the choice only (their naive
// scores would take 7-55 GB).
TEST_CASE("head dim 128: causal GQA grids of groups of >= 8 the model leaves whole split and verify",
          "[gpu][bwd128][sm90_big8]") {
  namespace sm90 = fb::cuda::flash_sm90;
  struct Row {
    int batch, heads, kv_heads, q;
    Dtype dtype;
    bool run;
  };
  const Row rows[] = {{8, 32, 4, 1024, Dtype::bf16, true},    // 256 blocks
                      {8, 16, 2, 2048, Dtype::fp16, true},    // 256 blocks
                      {12, 64, 8, 1536, Dtype::bf16, false},  // 1152 blocks: past the gate
                      {6, 64, 4, 6000, Dtype::bf16, false}};  // 1128 blocks (session 39's call E)
  const std::string word = env_word("FB_SM90_BWD_SPLIT");
  const bool as_built = is_default_word(word);
  const int sms = sm_count();
  for (const Row& s : rows) {
    const Case c = make_case(s.batch, s.heads, s.kv_heads, s.q, s.q, 128, s.dtype, true, Pass::bwd);
    INFO("case " << c.key());
    const int split = sm90::backward_head_split(c.params());
    INFO("head split " << split);
    if (sms == 132 && as_built) CHECK(split == (s.heads / s.kv_heads) / 2);
    if (sms == 132 && (word == "nobig8" || word == "bar5")) CHECK(split == 1);
    if (s.run) verify_cases({c});
  }
}

// The probe long1h (session 44, FB_SM90_BWD_SPLIT=long1h; head_split(), flash_sm90_bwd.cu): causal d = 128 splits take
// one-head units where those average >= 48 64-query steps a key tile. Shapes no config names: an MQA group of 8 at
// N = 6500 (51 blocks unsplit: it splits as built; one-head units of ~51 steps: 8 subsets under the probe on any GPU)
// and a group of 8 at N = 3000 (~23 steps: the probe leaves the default's choice). Each runs and verifies (dQ, dK, dV
// beside naive, every gradient written) under whichever word is set.
TEST_CASE("head dim 128: causal splits into one-head units where those are long (probe long1h) verify",
          "[gpu][bwd128][sm90_long1h]") {
  namespace sm90 = fb::cuda::flash_sm90;
  struct Row {
    int batch, heads, kv_heads, q;
    Dtype dtype;
    bool long_units;
  };
  const Row rows[] = {{1, 8, 1, 6500, Dtype::bf16, true},    // 51 key tiles
                      {1, 16, 2, 3000, Dtype::fp16, false}};  // 24 key tiles x 2 planes
  const std::string word = env_word("FB_SM90_BWD_SPLIT");
  const bool as_built = is_default_word(word);
  for (const Row& s : rows) {
    const Case c = make_case(s.batch, s.heads, s.kv_heads, s.q, s.q, 128, s.dtype, true, Pass::bwd);
    INFO("case " << c.key());
    const int split = sm90::backward_head_split(c.params());
    const int group = s.heads / s.kv_heads;
    INFO("head split " << split);
    if (as_built && s.long_units) CHECK(split > 1);
    if (word == "long1h" && s.long_units) CHECK(split == group);
    verify_cases({c});
  }
}

// The short last step (kBwd128Short, flash_sm90_bwd_traits.h; short_last_step(), flash_sm90_bwd.cu; the default on
// d = 128 passes without a head split since session 34): where a head's last 80-query tile holds at most 32 rows, it
// runs as a step of 32 queries (m64n32 S^T, dP^T and dQ^T, two k16 steps of dV and dK, an 8 KB dQ^T reduction) after
// the block's whole steps. Shapes no config names: last tiles of 32, 16, 10 and 1 rows, seq_q != seq_k both ways, one
// block with one (short) step, GQA 3:1 looped in a block (each head's last tile short, every short step after the
// whole ones) unless the launcher splits its heads, a grid whose last partial wave is split along the queries (the
// unit holding the last tile ends short), and two causal rows (80 queries at N = 4096: the short step takes the causal
// mask's compares on the key tile at the diagonal). A short step that summed the wrong rows, reduced too few or too
// many of dQ^T's bytes (the 80-row block's tail is other queries' padding), or dropped its dK / dV terms fails the
// reference; every gradient element must be written. Under FB_SM90_BWD128=noshort the same shapes run the kernels
// before (80 queries with whole last steps, or 64), and no short step.
TEST_CASE("head dim 128: a head's short last query tile as a step of 32 queries verifies",
          "[gpu][bwd128][sm90_short]") {
  namespace sm90 = fb::cuda::flash_sm90;
  struct Row {
    int batch, heads, kv_heads, q, k;
    Dtype dtype;
    bool causal;
  };
  const Row rows[] = {{2, 6, 6, 512, 512, Dtype::bf16, false},     // 6 whole tiles and 32 rows (the grid's N = 512)
                      {3, 4, 4, 416, 300, Dtype::fp16, false},     // 16 rows, seq_q > seq_k
                      {1, 3, 3, 330, 700, Dtype::bf16, false},     // 10 rows, seq_q < seq_k
                      {2, 2, 2, 1, 129, Dtype::fp16, false},       // one step, short, 1 row
                      {2, 6, 2, 592, 400, Dtype::fp16, false},     // GQA 3:1, 32 rows (unless its heads are split)
                      {4, 20, 20, 656, 656, Dtype::bf16, false},   // 480 tiles: a query tail on 132 SMs, 16 rows
                      {1, 2, 2, 4096, 4096, Dtype::fp16, true},    // causal: 16 rows, the diagonal tile's mask
                      {1, 4, 2, 4096, 4096, Dtype::bf16, true}};   // causal GQA 2:1 (unless its heads are split)
  const char* env = std::getenv("FB_SM90_BWD128");
  const std::string word = env != nullptr ? env : "";
  const bool by_default = word.empty() || word == "default";
  int short_runs = 0;
  for (const Row& s : rows) {
    const Case c = make_case(s.batch, s.heads, s.kv_heads, s.q, s.k, 128, s.dtype, s.causal, Pass::bwd);
    INFO("case " << c.key());
    const bool short_step = sm90::backward_short_step(c.params());
    const int split = sm90::backward_head_split(c.params());
    INFO("short last step " << short_step << ", head split " << split);
    if (by_default) CHECK(short_step == (split == 1));
    if (word == "noshort") CHECK(!short_step);
    short_runs += short_step;
    verify_cases({c});
  }
  if (by_default && short_runs == 0) WARN("no run of the short last step (every shape's heads split)");
}
