// GPU tests [gpu][sm90fwd]: flash-sm90's 16-bit forward on the shapes its session-10 changes touch
// (kernels/flash_sm90/flash_sm90_launch.cuh): `qalign` (causal query tiles aligned to the sequence's end, the
// first one starting before row 0; the default at d = 64) and the `trec` probe (each work tile's plane, rows
// and K/V tile count from the producer's record instead of derived); session 10's `xskip` (measured and
// removed) ran them too, as did session 11's probes (`stlate`, `ostg`, `kv4`: measured and removed; `l2hint`).
// trec is the default at d = 128 since session 11 (`notrec` turns it off); session 12's `ustage` (the main loop
// once per ring stage of a work tile's first K/V tile: odd and even K/V tile counts, partial tiles) passed them
// with `poly` (measured and removed) and is the default at d = 64 since (`noustage` turns it off); session 14's
// `qahead` (Q loads and tickets on a second producer thread) and `ncalign` (qalign's shift without the mask;
// measured and removed) passed them; session 15's `tailsplit` (d = 64 non-causal: the last partial round of work
// tiles split along K/V, merged by a second kernel) is to run them (three cases added for it). FB_SM90_FWD_PROBE is read once per process, so a device call runs this binary once
// per probe setting (`noqalign` for the tiles from row 0). gpu_main.cpp skips the tests without a device; a
// device that is not Hopper (or a build without sm_90a) is told apart with a warning, as in test_gpu.cpp.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "catch.h"
#include "gpu_cases.h"
#include "support.h"

namespace {

using namespace fb::test;
using namespace fb;

constexpr std::uint64_t kSeed = 20261210;

const char* probe_setting() {
  const char* probe = std::getenv("FB_SM90_FWD_PROBE");
  return probe ? probe : "(unset)";
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
  // d = 64 non-causal launches whose last round of work tiles is partial (session 15's `tailsplit`: those tiles split
  // along K/V into parts merged by a second kernel; on 132 SMs): 176 tiles (44 in the last round, 3 parts of 10-11
  // K/V tiles); the same with a partial last K/V tile in the last part (seq_k = 1900), seq_q != seq_k and GQA; one
  // query tile per plane, its last warpgroup partly past the end (seq_q = 150), 140 planes on 20 K/V heads (8 in the
  // last round, 6 parts of 4 K/V tiles, the last one partial: seq_k = 3000).
  cases.push_back(make_case(1, 8, 8, 4096, 4096, 64, Dtype::bf16, false, Pass::fwd));
  cases.push_back(make_case(2, 8, 2, 2000, 1900, 64, Dtype::fp16, false, Pass::fwd));
  cases.push_back(make_case(1, 140, 20, 150, 3000, 64, Dtype::bf16, false, Pass::fwd));
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
