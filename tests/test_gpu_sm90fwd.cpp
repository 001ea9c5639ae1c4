// GPU tests [gpu][sm90fwd] ([tailsplit]: the tail split's two): flash-sm90's 16-bit forward on the shapes its
// session-10 changes touch (kernels/flash_sm90/flash_sm90_launch.cuh): `qalign` (causal query tiles aligned to the
// sequence's end, the first one starting before row 0; the default at d = 64) and the `trec` probe (each work tile's
// plane, rows and K/V tile count from the producer's record instead of derived); session 10's `xskip` (measured and
// removed) ran them too, as did session 11's probes (`stlate`, `ostg`, `kv4`: measured and removed; `l2hint`). trec
// is the default at d = 128 since session 11 (`notrec` turns it off); session 12's `ustage` (the main loop once per
// ring stage of a work tile's first K/V tile: odd and even K/V tile counts, partial tiles) passed them with `poly`
// (measured and removed) and is the default at d = 64 since (`noustage` turns it off); session 14's `qahead` (Q loads
// and tickets on a second producer thread; measured and removed in session 15) and `ncalign` (qalign's shift without
// the mask; measured and removed) passed them. Session 15's tail split (d = 64 non-causal: the last partial round of
// work tiles split along K/V, merged by a second kernel; the default since session 15's call A, `notailsplit` the
// kernel before it) runs them with cases that split on 132 SMs (the last round's tiles in 2 to 8 parts, partial last
// K/V and query tiles, GQA, seq_q != seq_k); its workspace is checked against the plan and the run's tracked peak,
// and a launch given no workspace runs unsplit. FB_SM90_FWD_PROBE is read once per process, so a device call runs
// this binary once per probe setting (`noqalign` for the tiles from row 0, `notailsplit`; session 15's round-2
// `fullfirst`, each plane's partial last query tile last in its group, passed [tailsplit]: measured and removed).
// Session 16's `lazyres` (d = 64: a warp rescales O only when one of its rows' max rises more than 2^8 above the kept
// one; the tail split as by default; the default since call A, `nolazyres` the kernel before; session 16's `lazyres128`, the
// same at d = 128, and session 17's `lazyres2`, the vote before the quad's shuffles, measured and removed) runs them
// all, and a sharp softmax ([lazyres]: Q, K x 3, so that rows' maxima rise that far after the first K/V tile and the
// rescale branch runs too; d = 64 and 128) under every setting. Session 19's `pinq` (d = 128 non-causal launches on
// the static round-robin over a grid of whole planes; measured and removed) ran them all; `static` runs the d = 128
// non-causal cases on 132 blocks, several rounds each. Session 20's `shortstatic` (the static round-robin on d = 128
// non-causal launches of at most 4 K/V tiles a work tile; the default since session 20) runs it on those of them: 500 x 300, 1000 x 64, 700 x 200,
// 512 (GQA, 640 tiles) and 320 (576 tiles of 3 K/V tiles, the last query and K/V tiles partial). Session 20's `trec64`
// (the producer's work-tile record on d = 64's shipped variant, unsplit launches) and `trec64,fastlse` (its epilogue's
// inverses and LSE by rcp.approx / lg2.approx) run every d = 64 case here on it but the split ones (which keep the
// default's split kernel): qalign's first tiles before row 0, partial tiles, GQA, O and LSE checked. Both are d = 64's
// default since session 20's call B (`notrec64` runs the kernel before them, `nofastlse` trec64 alone).
// Session 25's `qreg` (d = 128's shipped variant with Q's fragments in registers for S = Q K^T; measured and removed)
// passed them all. Session 29's `fastlse128` (d = 128's shipped variant with fastlse's epilogue) runs every d = 128
// case here on it. Session 56's `k0ahead` (the next work tile's Q and K_0 issued inside this tile's last K/V step;
// measured and removed) passed these, [sched] and seq_q != seq_k. Session 57's `k0rec` (the same order with one tile
// in the producer's registers; d = 128's default where work tiles are at most 16 K/V tiles long)
// keeps d = 64's split launches as built. Session 57's `k0try` (beside k0rec, the last V before the next tile's loads
// where its stage is free; measured in session 58 and removed) passed these, [sched] and seq_q != seq_k.
// gpu_main.cpp skips the tests without a device; a device that is not Hopper (or a build without sm_90a) is told
// apart with a warning, as in test_gpu.cpp.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime.h>

#include "catch.h"
#include "flash_sm90/flash_sm90_split.h"
#include "gpu_cases.h"
#include "registry.h"
#include "runner.h"
#include "spec.h"
#include "support.h"

namespace {

using namespace fb::test;
using namespace fb;

constexpr std::uint64_t kSeed = 20261210;

const char* probe_setting() {
  const char* probe = std::getenv("FB_SM90_FWD_PROBE");
  return probe ? probe : "(unset)";
}

// Whether FB_SM90_FWD_PROBE turns the tail split off (`notailsplit`), or leaves it on for sure (unset, or only words
// that keep d = 64's shipped variant: `tailsplit`, `lazyres`, `nolazyres`, `trec64`, `fastlse`, `fastlse128` and their
// no-forms, `k0rec`, `nok0rec`; another variant word runs its variant unsplit: then either may hold).
bool tail_split_off() {
  const char* probe = std::getenv("FB_SM90_FWD_PROBE");
  const std::string v = "," + std::string(probe ? probe : "") + ",";
  return v.find(",notailsplit,") != std::string::npos;
}
bool tail_split_on() {
  const char* probe = std::getenv("FB_SM90_FWD_PROBE");
  std::string v = probe ? probe : "";
  for (std::size_t at = 0; at <= v.size();) {
    const std::size_t end = std::min(v.find(',', at), v.size());
    const std::string w = v.substr(at, end - at);
    if (!w.empty() && w != "tailsplit" && w != "lazyres" && w != "nolazyres" && w != "trec64" && w != "notrec64" &&
        w != "fastlse" && w != "nofastlse" && w != "fastlse128" && w != "nofastlse128" && w != "k0rec" &&
        w != "nok0rec")
      return false;
    at = end + 1;
  }
  return true;
}

// The workspace the tail split's plan for d = 64 case c takes on this device (0 where it does not split).
std::size_t planned_workspace(const Case& c) {
  using namespace fb::cuda::flash_sm90;
  constexpr int kRows = 192, kKeys = 128;  // d = 64's tiles (flash_sm90_config.h)
  const int sms = sm_count();
  const int n_work = c.batch * c.heads * ((c.seq_q + kRows - 1) / kRows);
  const TailSplit ts = tail_split_plan(n_work, n_work < sms ? n_work : sms, (c.seq_k + kKeys - 1) / kKeys);
  return tail_split_workspace_bytes(ts, kRows, c.head_dim);
}

// d = 64 non-causal launches whose last round of work tiles is partial after a whole one (the tail split, on 132 SMs,
// TailSplitLimits::kMinKvTiles = 8): 176 tiles (44 in the last round, 3 parts of 10-11 K/V tiles); 176 tiles of 18
// K/V tiles, the last one partial (seq_k = 2300: 2 parts of 9), seq_q != seq_k, GQA; one query tile per plane, its
// last warpgroup partly past the end (seq_q = 150), 140 planes on 20 K/V heads (8 in the last round, 3 parts of 8,
// the last K/V tile partial: seq_k = 3000); 324 tiles with a last query tile of 8 rows and a last K/V tile of 8 keys
// (N = 5000: 60 in the last round, 2 parts of 20); seq_k > seq_q with a 40-row last query tile (5 x 6 planes, 48 in
// the last round, 2 parts of 16-17); 4 tiles in the last round in 6 parts of 8-9 (4 heads, N = 6400); one tile
// in the last round in 8 parts of 8 (133 planes of one query tile on 7 K/V heads, seq_k = 8192).
const std::vector<Case>& tail_split_cases() {
  static const std::vector<Case> cases = {
      make_case(1, 8, 8, 4096, 4096, 64, Dtype::bf16, false, Pass::fwd),
      make_case(2, 8, 2, 2000, 2300, 64, Dtype::fp16, false, Pass::fwd),
      make_case(1, 140, 20, 150, 3000, 64, Dtype::bf16, false, Pass::fwd),
      make_case(1, 12, 4, 5000, 5000, 64, Dtype::bf16, false, Pass::fwd),
      make_case(5, 6, 6, 1000, 4100, 64, Dtype::fp16, false, Pass::fwd),
      make_case(1, 4, 4, 6400, 6400, 64, Dtype::bf16, false, Pass::fwd),
      make_case(1, 133, 7, 192, 8192, 64, Dtype::fp16, false, Pass::fwd),
  };
  return cases;
}

// d = 64 (192-row query tiles of three 64-row warpgroups, 128-key tiles) at lengths whose last query tile
// is partial by one or two warpgroups (N = 512, 1024, 300, 700, 100: qalign moves those rows before row 0)
// or whole (576), causal or not, seq_q != seq_k both ways (causal: rows with no key, whole warpgroups
// of them), enough planes that every block runs several work tiles (a work tile's epilogue deferred into
// the next one at d = 128), GQA and MHA; d = 128 on a few, causal and not (work tiles of one K/V tile and
// of several, partial last query tiles).
std::vector<Case> sm90fwd_cases() {
  const SeqLens lengths[] = {{512, 512}, {1024, 1024}, {300, 300}, {700, 700}, {100, 100}, {576, 576},
                             {300, 500}, {500, 300},   {1000, 64}, {130, 1000}};
  std::vector<Case> cases;
  int i = 0;
  for (const SeqLens& l : lengths)
    for (bool causal : {true, false}) {
      const Dtype t = i % 2 == 0 ? Dtype::bf16 : Dtype::fp16;
      const int heads = i % 3 == 0 ? 8 : 16, kv_heads = i % 3 == 0 ? 2 : heads;
      // More work tiles than SMs (132 on the H200) wherever seq_q >= 100: blocks run several each.
      const int batch = l.q >= 1000 ? 4 : 16;
      cases.push_back(make_case(batch, heads, kv_heads, l.q, l.k, 64, t, causal, Pass::fwd));
      if (i % 4 == 0 || i % 4 == 3) cases.push_back(make_case(4, 16, 16, l.q, l.k, 128, t, causal, Pass::fwd));
      ++i;
    }
  // d = 128 non-causal work tiles of one and of two K/V tiles (session 14's `qahead`: the Q thread's slot turns
  // and the K/V thread's first K/V tiles of a work tile at their shortest).
  cases.push_back(make_case(4, 16, 16, 1000, 64, 128, Dtype::bf16, false, Pass::fwd));
  cases.push_back(make_case(4, 16, 16, 700, 200, 128, Dtype::fp16, false, Pass::fwd));
  // d = 128 non-causal launches of several rounds on 132 SMs, with 4 / 6 / 5 query tiles a plane (session 19's `pinq`,
  // measured and removed, ran them on the static round-robin over 132 / 132 / 130 blocks): 640 tiles (GQA 4:1), 792
  // (6 whole rounds), 400.
  cases.push_back(make_case(10, 16, 4, 512, 512, 128, Dtype::bf16, false, Pass::fwd));
  cases.push_back(make_case(11, 12, 12, 768, 768, 128, Dtype::fp16, false, Pass::fwd));
  cases.push_back(make_case(5, 16, 8, 640, 640, 128, Dtype::bf16, false, Pass::fwd));
  // d = 128 non-causal, 3 K/V tiles a work tile, the last query and K/V tiles of 64 rows / keys: 576 tiles (4.4 rounds
  // on 132 blocks; `shortstatic`, the default, runs it on the static round-robin).
  cases.push_back(make_case(12, 16, 16, 320, 320, 128, Dtype::fp16, false, Pass::fwd));
  return cases;
}

}  // namespace

TEST_CASE("flash-sm90 forward, the shapes of qalign and trec: verifies beside naive, outputs all written",
          "[gpu][sm90fwd]") {
  INFO("FB_SM90_FWD_PROBE=" << probe_setting());
  CudaBackend& b = gpu();
  const Descriptor& sm90 = kernel("flash-sm90");
  for (const Case& c : sm90fwd_cases()) {
    INFO("case " << c.key());
    if (const auto why = b.check_fits(c, sm90)) {  // not Hopper, or a build without sm_90a
      WARN("flash-sm90 not run: " << *why);
      return;
    }
    check_beside_naive(b, c, "flash-sm90", kSeed);
  }
}

// Sharp softmax at d = 64 and 128 (Q and K scaled by 3, scores by 9: a row's max climbs by many powers of two across
// its K/V tiles, not only on the first), so that under the lazy rescale (d = 64's default) warps take the rescale
// branch in the main loop as well as skipping it; causal and not, bf16 and fp16, partial last tiles, seq_q != seq_k,
// and a launch the tail split splits (176 work tiles: 44 in the last round on 132 SMs, 3 parts each).
TEST_CASE("flash-sm90 forward, d = 64 / 128, sharp softmax (Q, K x 3): verifies beside naive",
          "[gpu][sm90fwd][lazyres]") {
  INFO("FB_SM90_FWD_PROBE=" << probe_setting());
  CudaBackend& b = gpu();
  const Descriptor& sm90 = kernel("flash-sm90");
  const SeqLens lengths[] = {{1025, 1025}, {4099, 4099}, {300, 1000}};
  std::vector<Case> cases;
  for (int dim : {64, 128})
    for (const SeqLens& l : lengths)
      for (bool causal : {false, true})
        for (Dtype t : {Dtype::bf16, Dtype::fp16})
          cases.push_back(make_case(1, 4, 2, l.q, l.k, dim, t, causal, Pass::fwd));
  cases.push_back(tail_split_cases().front());
  for (const Case& c : cases) {
    INFO("case " << c.key());
    if (const auto why = b.check_fits(c, sm90)) {  // not Hopper, or a build without sm_90a
      WARN("flash-sm90 not run: " << *why);
      return;
    }
    check_beside_naive(b, c, "flash-sm90", kSeed, 3.0);
  }
}

TEST_CASE("flash-sm90 forward, the tail split's workspace: sized from the plan, in the run's tracked peak, the "
          "backward's covering it",
          "[gpu][sm90fwd][tailsplit]") {
  INFO("FB_SM90_FWD_PROBE=" << probe_setting());
  CudaBackend& b = gpu();
  const Descriptor& sm90 = kernel("flash-sm90");
  for (const Case& c : tail_split_cases()) {
    INFO("case " << c.key());
    if (const auto why = b.check_fits(c, sm90)) {  // not Hopper, or a build without sm_90a
      WARN("flash-sm90 not run: " << *why);
      return;
    }
    const std::size_t ws = sm90.cuda.workspace_bytes(Pass::fwd, c.params());
    CHECK((ws == 0 || ws == planned_workspace(c)));
    if (tail_split_off()) CHECK(ws == 0);
    if (tail_split_on()) CHECK(ws == planned_workspace(c));
    if (tail_split_on() && sm_count() == 132) CHECK(ws > 0);  // each of them splits on the H200's 132 SMs
    // A backward case runs the forward with the backward's workspace: it holds the forward's parts too.
    CHECK(sm90.cuda.workspace_bytes(Pass::bwd, c.params()) >= ws);
    CHECK(sm90.cuda.workspace_bytes(Pass::fwd_bwd, c.params()) >= ws);
    b.prepare(c, kSeed);
    const KernelRun run = b.run(sm90, 0, 1);
    REQUIRE(run.times_ms.size() == 1);
    CHECK(run.peak_bytes >= ws);
    std::vector<Record> records = run_each(b, c, {"naive"}, never_refused);
    records.push_back(ok_record(c, "flash-sm90"));
    verify_and_check(b, records, each_written(b, c, Tensors::outputs));
    b.release();
  }
  // Causal launches never split.
  Case causal = tail_split_cases().front();
  causal.causal = true;
  CHECK(sm90.cuda.workspace_bytes(Pass::fwd, causal.params()) == 0);
}

TEST_CASE("flash-sm90 forward given no workspace: the unsplit kernel where the plan splits, verified",
          "[gpu][sm90fwd][tailsplit]") {
  INFO("FB_SM90_FWD_PROBE=" << probe_setting());
  CudaBackend& b = gpu();
  // flash-sm90 as registered, except that it asks for no workspace: the backend passes a null one.
  Descriptor bare = kernel("flash-sm90");
  bare.cuda.workspace_bytes = [](Pass, const AttentionParams&) { return std::size_t(0); };
  for (const Case& c : tail_split_cases()) {
    INFO("case " << c.key());
    if (const auto why = b.check_fits(c, bare)) {
      WARN("flash-sm90 not run: " << *why);
      return;
    }
    b.prepare(c, kSeed);
    std::vector<Record> records = run_each(b, c, {"naive"}, never_refused);
    REQUIRE(b.run(bare, 0, 1).times_ms.size() == 1);
    records.push_back(ok_record(c, "flash-sm90"));
    verify_and_check(b, records, each_written(b, c, Tensors::outputs));
    b.release();
  }
}

// The C API's inference forward (capi.h: call.lse NULL): flash-sm90's forward given no LSE pointer writes the same O,
// bit for bit, and no LSE (the backend's poison, NaN, stays in its buffer). Every forward path that stores the LSE: the
// 16-bit kernel at d = 64 / 128 / 256 (fastlse's epilogue and the plain one, xtile's deferred epilogue, rows with no
// key), the tail split's merge, the fp32 (3xTF32) and fp8 kernels.
TEST_CASE("flash-sm90 forward without an LSE pointer: the same O, no LSE written", "[gpu][sm90fwd][nolse]") {
  INFO("FB_SM90_FWD_PROBE=" << probe_setting());
  CudaBackend& b = gpu();
  const Descriptor& sm90 = kernel("flash-sm90");
  REQUIRE(sm90.cuda.lse_optional);
  // Under `noones`: what skipping the LSE changes, whatever d = 64's inference default (`ones` takes its row sums
  // from P V, other bits of O: [ones] below).
  const Descriptor sums = make_variant(sm90, "sm90-noones", {{"FB_SM90_FWD_PROBE", "noones"}});
  Descriptor no_lse = sm90;
  no_lse.name = "flash-sm90-nolse";
  no_lse.cuda.forward = [forward = sums.cuda.forward](const AttentionParams& p, const cuda::Context& ctx,
                                                      NoState& state) {
    AttentionParams without = p;
    without.lse = nullptr;
    forward(without, ctx, state);
  };
  const std::vector<Case> cases = {
      make_case(16, 16, 16, 512, 512, 64, Dtype::bf16, true, Pass::fwd),
      make_case(16, 8, 2, 700, 700, 64, Dtype::fp16, false, Pass::fwd),
      make_case(16, 16, 16, 500, 300, 64, Dtype::bf16, true, Pass::fwd),  // 200 rows a head with no key
      make_case(4, 16, 16, 1000, 1000, 128, Dtype::bf16, true, Pass::fwd),
      make_case(10, 16, 4, 512, 512, 128, Dtype::fp16, false, Pass::fwd),
      make_case(2, 8, 8, 300, 700, 256, Dtype::bf16, false, Pass::fwd),
      tail_split_cases().front(),
      make_case(2, 8, 8, 640, 640, 64, Dtype::fp32, true, Pass::fwd),
      make_case(2, 8, 4, 333, 400, 128, Dtype::fp32, false, Pass::fwd),
      make_case(4, 8, 8, 1024, 1024, 128, Dtype::fp8, false, Pass::fwd),
  };
  for (const Case& c : cases) {
    INFO("case " << c.key());
    if (const auto why = b.check_fits(c, sm90)) {  // not Hopper, or a build without sm_90a
      WARN("flash-sm90 not run: " << *why);
      return;
    }
    b.prepare(c, kSeed);
    REQUIRE(b.run(sm90, 0, 1).times_ms.size() == 1);
    REQUIRE(b.run(no_lse, 1, 1).times_ms.size() == 1);
    const auto tensor = [&](const char* kernel_name, const char* name) {
      for (HostTensor& t : b.fetch(kernel_name))
        if (t.name == name) return std::move(t.values);
      FAIL("no " << name << " from " << kernel_name);
      return std::vector<double>{};
    };
    const std::vector<double> o = tensor("flash-sm90", "O"), o_bare = tensor("flash-sm90-nolse", "O");
    const std::vector<double> lse = tensor("flash-sm90", "LSE"), lse_bare = tensor("flash-sm90-nolse", "LSE");
    REQUIRE(o.size() == o_bare.size());
    REQUIRE(lse.size() == lse_bare.size());
    std::size_t differ = 0, unwritten = 0, written = 0;
    for (std::size_t i = 0; i < o.size(); ++i) differ += !(o[i] == o_bare[i]);  // NaN differs from everything
    for (const double v : lse) unwritten += std::isnan(v);
    for (const double v : lse_bare) written += !std::isnan(v);
    CHECK(differ == 0);     // the same O, bit for bit (NaN nowhere)
    CHECK(unwritten == 0);  // given a pointer, every LSE row is written
    CHECK(written == 0);    // given none, no LSE row is
    b.release();
  }
}

// The inference forward under the probe `ones` (d = 64: P's row sums from P V over a tile of ones, FwdTraits::kOnesSum)
// writes O only. Its O is judged by the runner's rule beside naive's, as any forward's: the record's LSE comes from the
// shipped training forward, run first, and O is poisoned (NaN) between the two, so every O element judged is the
// inference forward's. Its O must differ somewhere from the training forward's (other sums: the path ran), and on
// launches it does not take (split, fp32, d = 128) equal it bit for bit.
TEST_CASE("flash-sm90's inference forward under `ones`: O verified beside naive", "[gpu][sm90fwd][ones]") {
  CudaBackend& b = gpu();
  const Descriptor& sm90 = kernel("flash-sm90");
  const Descriptor infer = make_variant(sm90, "sm90-ones-infer", {{"FB_SM90_FWD_PROBE", "ones"}});
  Descriptor ones = sm90;
  ones.name = "flash-sm90-ones";
  ones.cuda.forward = [train = sm90.cuda.forward, run = infer.cuda.forward](const AttentionParams& p,
                                                                           const cuda::Context& ctx, NoState& state) {
    train(p, ctx, state);
    const std::size_t o_bytes = std::size_t(p.q_elems()) * dtype_bytes(output_dtype(p.dtype));
    REQUIRE(cudaMemsetAsync(p.o, 0xFF, o_bytes, static_cast<cudaStream_t>(ctx.stream)) == cudaSuccess);
    AttentionParams without = p;
    without.lse = nullptr;
    run(without, ctx, state);
  };
  const KernelSet set({kernel("naive"), sm90, ones});
  enum class Takes { yes, no, either };  // whether `ones` applies to the launch (d = 64, 16-bit, unsplit)
  struct Row {
    Case c;
    Takes takes;
  };
  const std::vector<Row> rows = {
      {make_case(16, 16, 16, 512, 512, 64, Dtype::bf16, true, Pass::fwd), Takes::yes},
      {make_case(3, 20, 4, 700, 700, 64, Dtype::fp16, true, Pass::fwd), Takes::yes},
      {make_case(4, 6, 6, 333, 900, 64, Dtype::bf16, false, Pass::fwd), Takes::yes},
      {make_case(16, 16, 16, 500, 300, 64, Dtype::bf16, true, Pass::fwd), Takes::yes},  // 200 rows a head with no key
      {make_case(2, 12, 3, 1111, 1111, 64, Dtype::fp16, false, Pass::fwd), Takes::yes},
      // Split on 132 SMs (the split kernel's parts keep fp32 sums); elsewhere the plan may not split.
      {tail_split_cases().front(), tail_split_on() && sm_count() == 132 ? Takes::no : Takes::either},
      {make_case(4, 16, 16, 1000, 1000, 128, Dtype::bf16, true, Pass::fwd), Takes::no},
      {make_case(2, 8, 8, 640, 640, 64, Dtype::fp32, true, Pass::fwd), Takes::no},
  };
  for (const Row& row : rows) {
    const Case& c = row.c;
    INFO("case " << c.key());
    if (const auto why = b.check_fits(c, sm90)) {  // not Hopper, or a build without sm_90a
      WARN("flash-sm90 not run: " << *why);
      return;
    }
    b.prepare(c, kSeed);
    std::vector<Record> records;
    for (const Descriptor& d : set.all()) {
      REQUIRE(b.run(d, 0, 1).times_ms.size() == 1);
      records.push_back(ok_record(c, d.name));
    }
    verify_case(b, records, set);
    require_verified(records);
    const auto o_of = [&](const char* name) {
      for (HostTensor& t : b.fetch(name))
        if (t.name == "O") return std::move(t.values);
      FAIL("no O from " << name);
      return std::vector<double>{};
    };
    const std::vector<double> o = o_of("flash-sm90"), o_ones = o_of("flash-sm90-ones");
    REQUIRE(o.size() == o_ones.size());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < o.size(); ++i) differ += !(o[i] == o_ones[i]);
    if (row.takes == Takes::yes) CHECK(differ > 0);
    if (row.takes == Takes::no) CHECK(differ == 0);
    b.release();
  }
}

TEST_CASE("variants on the GPU: flash-sm90 beside itself under its probe words, in one interleaved run",
          "[gpu][sm90fwd][variant]") {
  CudaBackend& b = gpu();
  const Descriptor& sm90 = kernel("flash-sm90");
  const Case c = tail_split_cases().front();  // b1-h8 N = 4096, d = 64: the shipped forward splits its tail
  if (const auto why = b.check_fits(c, sm90)) {
    WARN("flash-sm90 not run: " << *why);
    return;
  }
  std::vector<Descriptor> ds;
  for (const char* k : {"naive", "flash", "flash-sm90"}) ds.push_back(kernel(k));
  ds.push_back(make_variant(sm90, "sm90-unsplit", {{"FB_SM90_FWD_PROBE", "notailsplit"}}));
  ds.push_back(make_variant(sm90, "sm90-removed", {{"FB_SM90_FWD_PROBE", "wide192"}}));  // removed in session 63
  ds.push_back(make_variant(kernel("flash"), "flash-typo", {{"FB_FLASH_FWD_PROBE", "no-such-word"}}));
  const KernelSet set(ds);
  // The overlay reaches the workspace query: the unsplit kernel asks for none where the shipped one splits.
  const Descriptor& unsplit = *set.find("sm90-unsplit");
  const std::size_t ws = sm90.cuda.workspace_bytes(Pass::fwd, c.params());
  CHECK(unsplit.cuda.workspace_bytes(Pass::fwd, c.params()) == 0);
  if (tail_split_on() && sm_count() == 132) CHECK(ws > 0);

  const nlohmann::json spec = {{"seq_q", {c.seq_q}},     {"seq_k", {c.seq_k}},   {"batch", {c.batch}},
                               {"heads", {c.heads}},     {"kv_heads", {c.kv_heads}}, {"head_dim", {c.head_dim}},
                               {"dtype", {"bf16"}},      {"causal", {false}},    {"pass", {"fwd"}},
                               {"warmup", 1},            {"reps", 3},            {"kernels", {"naive"}}};
  Sweep sweep = sweep_from_json(spec);
  sweep.kernels = {"naive", "flash", "flash-typo", "flash-sm90", "sm90-unsplit", "sm90-removed"};
  sweep.rep_order = RepOrder::interleaved;
  RunnerOptions opts;
  opts.kernels = &set;
  const Results res = run_sweep(sweep, b, opts);
  const auto rec = [&](const std::string& k) -> const Record& {
    for (const Record& r : res.records)
      if (r.kernel == k) return r;
    FAIL("no record of " << k);
    return res.records.front();
  };
  for (const char* k : {"flash", "flash-sm90", "sm90-unsplit"}) {
    INFO(k << ": " << rec(k).reason);
    CHECK(rec(k).status == Status::ok);
    CHECK(rec(k).verified == std::optional<bool>(true));
    CHECK(rec(k).time_ms.samples.size() == 3);
  }
  CHECK(rec("flash-sm90").peak_bytes >= rec("sm90-unsplit").peak_bytes + ws);  // its workspace among the peak
  // A word the kernel refuses fails its variant alone, the message naming the setting.
  for (const auto& [k, var] : {std::pair{"sm90-removed", "FB_SM90_FWD_PROBE"}, {"flash-typo", "FB_FLASH_FWD_PROBE"}}) {
    INFO(k << ": " << rec(k).reason);
    CHECK(rec(k).status == Status::failed);
    CHECK(rec(k).reason.find(var) != std::string::npos);
  }
}
