// The Hopper backward's host side: checks, workspace, the launch of the main kernel and the dQ
// convert kernel (flash_sm90_bwd_kernel.cuh has the device side). The pre-pass (D = rowsum(dO o O)
// and the padded LSE) is the portable flash backward's (flash/flash_bwd.h).
//
// dQ is summed in fp32 by bulk reductions in global memory, so its last bits may differ from run to
// run; dK and dV are summed in a fixed order and repeat exactly, except under a head split (GQA/MQA,
// head_split() below) and in the query tail's tiles (qtail_parts() below), where they are summed as dQ is.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <cuda_runtime.h>

#include "common/check.h"
#include "common/device_caps.h"
#include "common/settings.h"
#include "common/head_split.h"
#include "common/pdl.cuh"
#include "common/types.cuh"
#include "flash/flash_bwd.h"
#include "common/softmax.cuh"
#include "flash_sm90/flash_sm90_bwd.h"
#include "flash_sm90/flash_sm90_bwd_kernel.cuh"
#include "flash_sm90/flash_sm90_tma.h"

namespace fb::cuda::flash_sm90 {
namespace {

constexpr std::size_t kWsAlign = 256;
constexpr std::int64_t kMaxGridX = std::numeric_limits<int>::max();

// FB_SM90_BWD64=nopmajor64 (a host code, not a traits variant): the order before session 19's call A, for A/B runs.
// Non-causal d = 64 passes without a head split take their work tiles in plane groups of plane_group() planes, key
// tiles outermost, where the default now runs them plane-major (plane_major() below; `pmajor64`, session 18's prepared
// probe word, is the default). Every other pass (causal; head splits, which head_split() still takes as the default
// does) runs as the default.
constexpr int kBwd64NoPlaneMajor = 1 << 20;
// FB_SM90_BWD64=pgl2 (a host code): the order before session 36, for A/B runs. Causal d = 64 passes launched a block a
// tile (no head split, blocks too long for the persistent kernel) take their work tiles in plane groups of
// plane_group() planes (what fits L2), where the default now widens the group where the schedule model says the last
// groups' longest blocks start too late (causal_group() below). Every other pass runs as the default.
constexpr int kBwd64PlaneGroupL2 = 1 << 21;
// FB_SM90_BWD64=splitone (a host code): causal d = 64 head-split passes run every virtual plane (a K/V plane and a
// subset of its query heads) in one group, key tiles outermost: the order before session 37, where the default takes
// them in the plane groups causal_group() picks (split_causal_group()). Every other pass runs as the default.
constexpr int kBwd64SplitOneGroup = 1 << 22;

// FB_SM90_BWD64 picks a d = 64 variant (flash_sm90_bwd_traits.h) for A/B runs in one binary and one
// device call: per-consumer-dq (the first d = 64 kernel), direct (dK/dV stored straight from the
// accumulators, session 7's default), nopmajor64, pgl2, splitone (above); unset, empty, `default` or `pmajor64`: the
// default. Any other word is refused, removed ones included (a typo in an A/B would otherwise time the default twice
// and read as "level").
int bwd64_variant() {
  static fb::settings::PerOverlay<int> v_cache;
  const int& v = v_cache.get([] {
    const char* e = fb::settings::get("FB_SM90_BWD64");
    const std::string s = e != nullptr ? e : "";
    if (s.empty() || s == "default" || s == "pmajor64") return kBwd64Default;
    if (s == "per-consumer-dq") return kBwd64PerConsumerDq;
    if (s == "direct") return kBwd64Direct;
    if (s == "nopmajor64") return kBwd64NoPlaneMajor;
    if (s == "pgl2") return kBwd64PlaneGroupL2;
    if (s == "splitone") return kBwd64SplitOneGroup;
    throw std::invalid_argument("FB_SM90_BWD64: '" + s +
                                "' is not a flash-sm90 d = 64 backward variant (per-consumer-dq, direct, nopmajor64, "
                                "pgl2, splitone; "
                                "unset, default or pmajor64 for the default; cvwave was removed in session 15, "
                                "qtail in session 16, splitpg (the default since) in session 37: docs/perf-notes.md)");
  });
  return v;
}

// The default, nopmajor64, pgl2 and splitone: the default's choice of d = 64 kernels (the host codes change an order
// only).
bool default_choice64() {
  const int v = bwd64_variant();
  return v == kBwd64Default || v == kBwd64NoPlaneMajor || v == kBwd64PlaneGroupL2 || v == kBwd64SplitOneGroup;
}

// FB_SM90_BWD128=q80c (a host code, not a traits variant): 80 queries a step on every d = 128 pass,
// GQA head splits too, without q80_kernel()'s padding rules (session 12's probe; tests use it to run the
// 80-query kernels on every shape).
constexpr int kBwd128Q80C = 1 << 20;
// FB_SM90_BWD128=kgroup (a host code): causal passes in session 12's order, plane groups over every key tile
// (the kernels without kBwd128KeyTail; the default's choice of 64 or 80 queries and of the head split), for
// A/B runs against the key-tail order (the default since session 13's call B).
constexpr int kBwd128KeyGroup = 1 << 21;
// FB_SM90_BWD128=ktailmha (a host code): session 13's default, the key-tail order on causal MHA passes only
// (GQA passes without a head split in session 12's order), for A/B runs against the default since session 14.
constexpr int kBwd128KeyTailMha = 1 << 22;
// FB_SM90_BWD128=splitflat (a host code): the head split before session 14's call B, for A/B runs. Causal d = 128
// head-split passes take head_split()'s model choice of subsets and run every virtual plane as one group, key
// tiles outermost (kBwdHeadSplit without kBwd128KeyTail), where the default now splits into the most subsets in
// L2 plane groups and the key-tail order (split_key_tail() below). Every other pass runs as the default.
constexpr int kBwd128SplitFlat = 1 << 23;
// FB_SM90_BWD128=splitmost (a host code): the default before session 15's call B, for A/B runs. A causal d = 128
// head split takes the most subsets (at most 8) on every pass, where the default now keeps its units at least
// kMinUnitSteps query-tile steps long (long_enough_units() below). Every other pass runs as the default.
constexpr int kBwd128SplitMost = 1 << 24;
// FB_SM90_BWD128=unit1h (a host code): the default before session 15's call D, for A/B runs. A causal d = 128 head
// split whose group has 4 or more query heads may take one-head units (up to the group's subsets, at most 8), where
// the default now takes at most group / 2 subsets (units of >= 2 heads; head_split() below). Every other pass runs
// as the default.
constexpr int kBwd128Unit1h = 1 << 25;
// FB_SM90_BWD128=nopmajor (a host code): the default before session 18's call B, for A/B runs. Non-causal d = 128
// passes without a head split take their blocks in plane groups of plane_group() planes, key tiles outermost, where the
// default now runs them plane-major (plane_major() below; `pmajor`, session 18's probe word, is the default). Every
// other pass runs as the default.
constexpr int kBwd128NoPlaneMajor = 1 << 26;
constexpr int kBwd128NoShort = 1 << 27;
// Session 20's pipe2 (a d = 128 pass without a head split, batch >= 2, as two half-batch passes on three streams of
// descending priority) ran in session 21's call A: 1.005x over its six target rows, under its 1.015x rule, with the
// causal N = 1k and fp16 N = 512 rows below the default (0.988x, 0.986x); removed (code in the history, commit 071e5bb;
// docs/perf-notes.md "Session 20, prepared for session 21: pipe2").
// Session 21's edges (session 9's tail on the 80-query and key-tail kernels, the next block's K/V prefetched into L2)
// ran in session 21's call C: 1.003x over its eight target rows, under its 1.008x rule, two rows below 0.995; removed
// (code in the history, branch sm90bwds21 at 74d2586; docs/perf-notes.md "Session 21: the block's edges").

// FB_SM90_BWD128 picks a d = 128 variant for A/B runs (flash_sm90_bwd_traits.h): q64 (the 64-query
// kernel on every pass, head splits too: session 11's default under a causal mask and session 10's
// without), q80c (above), direct (session 7's kernel, dK/dV stored straight from the accumulators),
// tail, poly (session 9's probes), mbranch (session 11's); the last four run the 64-query kernel and
// no head split; kgroup, ktailmha, splitflat, splitmost, unit1h, nopmajor (above). Unset, empty, `default` or `pmajor`:
// the default (q80_kernel() below; causal passes without a head split in the key-tail order, kBwd128KeyTail,
// key_tail_order() and grouped_key_tiles() below; non-causal passes plane-major, plane_major() below). Any other word
// is refused, removed ones included (an A/B under a removed word would time the default and read as "level").
int bwd128_variant() {
  static fb::settings::PerOverlay<int> v_cache;
  const int& v = v_cache.get([] {
    const char* e = fb::settings::get("FB_SM90_BWD128");
    const std::string s = e != nullptr ? e : "";
    if (s.empty() || s == "default" || s == "pmajor") return kBwd64Default;
    if (s == "direct") return kBwd128Direct;
    if (s == "tail") return kBwd128Tail;
    if (s == "poly") return kBwd128Poly;
    if (s == "mbranch") return kBwd128MaskBranch;
    if (s == "q64") return kBwd128Q64;
    if (s == "q80c") return kBwd128Q80C;
    if (s == "kgroup") return kBwd128KeyGroup;
    if (s == "ktailmha") return kBwd128KeyTailMha;
    if (s == "splitflat") return kBwd128SplitFlat;
    if (s == "splitmost") return kBwd128SplitMost;
    if (s == "unit1h") return kBwd128Unit1h;
    if (s == "nopmajor") return kBwd128NoPlaneMajor;
    if (s == "noshort") return kBwd128NoShort;
    throw std::invalid_argument("FB_SM90_BWD128: '" + s +
                                "' is not a flash-sm90 d = 128 backward variant (direct, tail, poly, mbranch, "
                                "q64, q80c, kgroup, ktailmha, splitflat, splitmost, unit1h, nopmajor, noshort; "
                                "unset, default or pmajor for the default; "
                                "ktail, klpt, ktailr and pdl were removed in session 13, ktailgqa and splitkt8 "
                                "(now the default), ktailmem and splitkt in session 14, cvwave and splitunit (now the "
                                "default, at 12 steps) and unit2h (now the default) in session 15, pipe2 and edges "
                                "in session 21, short and shortc (now the default) in session 34: "
                                "docs/perf-notes.md)");
  });
  return v;
}

// The default, kgroup, ktailmha, splitflat, splitmost, unit1h and nopmajor: the default's choice of kernels (the others
// change the causal order only, splitflat, splitmost and unit1h the head split's number of subsets, nopmajor the
// non-causal order).
bool default_choice_variant() {
  const int v = bwd128_variant();
  return v == kBwd64Default || v == kBwd128KeyGroup || v == kBwd128KeyTailMha || v == kBwd128SplitFlat ||
         v == kBwd128SplitMost || v == kBwd128Unit1h || v == kBwd128NoPlaneMajor || v == kBwd128NoShort;
}

// The default's order on causal passes (splitmost, unit1h: only a head split's number of subsets differs; nopmajor:
// only the non-causal order).
bool default_order_variant() {
  const int v = bwd128_variant();
  return v == kBwd64Default || v == kBwd128SplitMost || v == kBwd128Unit1h || v == kBwd128NoPlaneMajor ||
         v == kBwd128NoShort;
}

// Whether a head-split pass (head_split(p) > 1) splits into the most subsets and runs its units (key tile,
// virtual plane = K/V plane and head subset) in L2 plane groups and the key-tail order: the default on causal
// d = 128 passes since session 14's call B (16k tokens, bf16, same process, against the split before it: 32 q /
// 1 kv head N = 1024 +14.5% (4 -> 8 subsets), 16 / 1 N = 1024 +12.9% (2 -> 8), 32 / 1 N = 4096 +1.0% (8 subsets
// both); results/h200/s14/callB/r2-sm90bwd/, probe splitkt8). Before it the units ran as one group, key tiles
// outermost, so the blocks in flight were key tiles 0-1 of 64-132 virtual planes sharing no rows; with 8
// subsets of 32 heads a plane group is 5 virtual planes of 4 heads, the blocks and order of an unsplit 32 q /
// 8 kv pass. The same order with the model's subsets (4 / 2: units of 8 heads) was level (probe splitkt,
// removed). splitflat, kgroup and ktailmha keep the split before it.
bool split_key_tail(const AttentionParams& p) {
  return p.causal && p.head_dim == 128 && default_order_variant();
}

int round_up(int x, int m) { return (x + m - 1) / m * m; }

// Query rows a causal pass computes per (K/V plane, query head) in tiles of block_m queries: each
// 128-key tile runs from the query tile that holds its first visible row to the last one.
std::int64_t causal_rows(const AttentionParams& p, int block_m) {
  constexpr int kKeyTile = 128;  // BwdTraits<*, 128>::kBlockN
  const CausalMask mask = p.mask();
  const int tiles = (p.seq_q + block_m - 1) / block_m;
  std::int64_t rows = 0;
  for (int n0 = 0; n0 < p.seq_k; n0 += kKeyTile)
    rows += std::int64_t(tiles - mask.first_q_tile(n0, block_m)) * block_m;
  return rows;
}

// Whether p runs the 80-query kernel (BwdTraits::kQ80; head splits too): the default at d = 128 where
// the query rows it computes are not too many more than 64-query tiles': both steps cost about the same
// per row, the 80-query one some 6-9% less.
//   No causal mask (session 11's call A, bf16, 16 heads: +5.9% / +3.1% / +5.6% over 64 queries at
//   N = 1024 / 4096 / 16384): whole tiles of 80 pad seq_q by at most kMaxQ80Padding over tiles of 64
//   (N = 512: 7 tiles of 80, 9.4% more rows, keeps 64; not measured there).
//   Causal mask (session 12's call A, bf16: +4.6% / +4.9% at N = 4096 / 16384 with 16 heads, +1.8% /
//   +5.9% with 32 q / 8 kv heads, +2.7% / +7.1% with 32 q / 1 kv head (head split), 0.995x at N = 1024):
//   each key tile's steps start at the 80-query tile holding its first visible row, so the rows over a
//   plane (causal_rows) grow by 7.6% / 5.7% / 4.5% / 0.6% over 64-query tiles at N = 1k / 2k / 4k / 16k;
//   at most kMaxQ80CausalRowsPct percent of those (N = 3072 and 4096 in; 1024 and 2048 out, 2048 not
//   measured).
// FlashAttention-3 keeps 64 queries a step under a causal mask.
//   Session 34: on non-causal MHA passes that run a short last step (short_last_step() below) the last tile counts
//   its 32 rows, not 80: N = 512 is 6 tiles of 80 and one of 32 (512 rows), so it takes 80 queries since (call B:
//   1.004 / 1.010x bf16 / fp16 against 64; FB_SM90_BWD128=noshort keeps 64 there). (GQA passes may split their heads,
//   whose units keep whole steps; the split's model asks q80_kernel(). The causal rule is unchanged.)
bool short_step_candidate(const AttentionParams& p) {
  constexpr int kBlockM = BwdTraits<__half, 128, kBwd128Q80>::kBlockM;
  constexpr int kShortRows = BwdTraits<__half, 128, kBwd128Q80 | kBwd128Short>::kShortRows;
  const int last_rows = p.seq_q - (p.seq_q - 1) / kBlockM * kBlockM;
  return p.head_dim == 128 && p.seq_q >= 1 && last_rows <= kShortRows && bwd128_variant() == kBwd64Default;
}
bool q80_kernel(const AttentionParams& p) {
  constexpr double kMaxQ80Padding = 1.03;
  constexpr std::int64_t kMaxQ80CausalRowsPct = 105;  // integers: N = 3072 is exactly 105%
  if (p.head_dim != 128) return false;
  if (bwd128_variant() == kBwd128Q80C) return true;  // every pass (probe, tests)
  if (!default_choice_variant()) return false;
  if (p.causal) return causal_rows(p, 80) * 100 <= kMaxQ80CausalRowsPct * causal_rows(p, 64);
  const int rows80 = short_step_candidate(p) && p.group() == 1 ? (p.seq_q - 1) / 80 * 80 + 32 : round_up(p.seq_q, 80);
  return rows80 <= kMaxQ80Padding * round_up(p.seq_q, 64);
}
// Whether p, if it runs without a head split, takes the 80-query kernel with its short last step (kBwd128Short,
// flash_sm90_bwd_traits.h): the default's d = 128 passes whose last query tile holds at most 32 rows, where they take
// 80 queries: non-causal since session 34's call B (0.987-1.036x the kernels before where it acts, geomean 1.009),
// causal since call D (0.997-1.031x, geomean 1.016; q80_kernel()'s causal rule unchanged); docs/perf-notes.md.
// FB_SM90_BWD128=noshort runs the kernels before (and 64 queries where only the short step made 80 pad little).
bool short_last_step(const AttentionParams& p) { return short_step_candidate(p) && q80_kernel(p); }

// Whether p (a pass without a head split) runs in the key-tail block order (kBwd128KeyTail): the default's
// causal d = 128 passes, MHA (session 13's call B: +5.8 / +6.0 / +4.1% at 8 heads N = 1k / 2k / 4k, level at
// 16 heads) and GQA (session 14's call A, 16k tokens, bf16, against session 13's default in the same process:
// 32 q / 8 kv heads N = 1k / 4k +2.4 / +4.0%, 16 / 8 heads +2.7 / +3.9%; results/h200/s14/callA/sm90bwd/).
// ktailmha: MHA passes only (session 13's default); kgroup: none; splitflat, splitmost, unit1h: as the default.
bool key_tail_order(const AttentionParams& p) {
  if (!p.causal) return false;
  const int v = bwd128_variant();
  if (default_order_variant() || v == kBwd128SplitFlat) return true;
  return v == kBwd128KeyTailMha && p.group() == 1;
}

// Calls f(BwdTraits<Elem, D>{}) for the runtime (dtype, head_dim; q80: q80_kernel(p), causal: the
// pass's mask, key_tail: key_tail_order(p), short_step: short_last_step(p)); backward_unsupported vets the
// first two.
template <typename Elem, typename F>
auto with_head_dim(int head_dim, bool q80, bool causal, bool key_tail, bool qtail, bool share, bool short_step,
                   bool dyn, F&& f) {
  switch (head_dim) {
    case 64:
      switch (bwd64_variant()) {
        case kBwd64PerConsumerDq: return f(BwdTraits<Elem, 64, kBwd64PerConsumerDq>{});
        case kBwd64Direct: return f(BwdTraits<Elem, 64, kBwd64Direct>{});
        default:  // nopmajor64, pgl2, splitone too
          if (share) return f(BwdTraits<Elem, 64, kBwd64TailShare>{});  // tail_share_on()
          if (dyn) return f(BwdTraits<Elem, 64, kBwd64Dyn>{});             // dyn_tiles_on()
          return f(BwdTraits<Elem, 64>{});
      }
    case 128:
      switch (bwd128_variant()) {
        case kBwd128Direct: return f(BwdTraits<Elem, 128, kBwd128Direct>{});
        case kBwd128Tail: return f(BwdTraits<Elem, 128, kBwd128Tail>{});
        case kBwd128Poly: return f(BwdTraits<Elem, 128, kBwd128Poly>{});
        case kBwd128MaskBranch: return f(BwdTraits<Elem, 128, kBwd128MaskBranch>{});
        default:  // q64, q80c, kgroup too
          if (key_tail) {  // a head split runs the split kernels (with_split_traits)
            // grouped_key_tiles() may keep every key tile grouped (session 12's order).
            if (q80 && short_step)
              return f(BwdTraits<Elem, 128, kBwd128Q80 | kBwd128Q80Mask | kBwd128KeyTail | kBwd128Short>{});
            if (q80) return f(BwdTraits<Elem, 128, kBwd128Q80 | kBwd128Q80Mask | kBwd128KeyTail>{});
            return f(BwdTraits<Elem, 128, kBwd128KeyTail>{});
          }
          if (q80 && causal && short_step) return f(BwdTraits<Elem, 128, kBwd128Q80 | kBwd128Q80Mask | kBwd128Short>{});
          if (q80 && causal) return f(BwdTraits<Elem, 128, kBwd128Q80 | kBwd128Q80Mask>{});
          if (qtail) {  // non-causal (qtail_parts())
            if (q80 && short_step) return f(BwdTraits<Elem, 128, kBwd128Q80 | kBwd128QTail | kBwd128Short>{});
            if (q80) return f(BwdTraits<Elem, 128, kBwd128Q80 | kBwd128QTail>{});
            return f(BwdTraits<Elem, 128, kBwd128QTail>{});
          }
          if (q80 && short_step) return f(BwdTraits<Elem, 128, kBwd128Q80 | kBwd128Short>{});
          if (q80) return f(BwdTraits<Elem, 128, kBwd128Q80>{});
          return f(BwdTraits<Elem, 128>{});
      }
    case 256: return f(BwdTraits<Elem, 256>{});
    default: break;
  }
  throw std::invalid_argument("flash-sm90 backward: head_dim must be 64, 128 or 256");
}
int qtail_parts(const AttentionParams& p);  // below
bool qtail_possible(const AttentionParams& p);  // below
bool tail_share_possible(const AttentionParams& p);  // below
bool tail_share_on(const AttentionParams& p);  // below
bool dyn_tiles_on(const AttentionParams& p);  // below
template <typename F> auto with_traits(const AttentionParams& p, F&& f) {
  switch (p.dtype) {
    case Dtype::fp16:
      return with_head_dim<__half>(p.head_dim, q80_kernel(p), p.causal, key_tail_order(p), qtail_parts(p) > 1,
                                   tail_share_on(p), short_last_step(p), dyn_tiles_on(p), f);
    case Dtype::bf16:
      return with_head_dim<__nv_bfloat16>(p.head_dim, q80_kernel(p), p.causal, key_tail_order(p),
                                          qtail_parts(p) > 1, tail_share_on(p), short_last_step(p),
                                          dyn_tiles_on(p), f);
    default: break;
  }
  throw std::invalid_argument("flash-sm90 backward: dtype must be fp16 or bf16");
}

// f(BwdTraits<Elem, D, kBwdHeadSplit>{}): the head-split kernel, d = 64 or 128 (head_split() is 1
// elsewhere); q80 (q80_kernel(), d = 128): with 80 queries a step and the causal mask's compares.
// key_tail (split_key_tail(), causal d = 128): the units in plane groups and the key-tail order.
template <typename Elem, typename F> auto with_split_head_dim(int head_dim, bool q80, bool key_tail, F&& f) {
  if (head_dim == 64) return f(BwdTraits<Elem, 64, kBwdHeadSplit>{});
  if (key_tail) {
    if (q80) return f(BwdTraits<Elem, 128, kBwdHeadSplit | kBwd128Q80 | kBwd128Q80Mask | kBwd128KeyTail>{});
    return f(BwdTraits<Elem, 128, kBwdHeadSplit | kBwd128KeyTail>{});
  }
  if (q80) return f(BwdTraits<Elem, 128, kBwdHeadSplit | kBwd128Q80 | kBwd128Q80Mask>{});
  return f(BwdTraits<Elem, 128, kBwdHeadSplit>{});
}
template <typename F> auto with_split_traits(const AttentionParams& p, F&& f) {
  if (p.dtype == Dtype::fp16)
    return with_split_head_dim<__half>(p.head_dim, q80_kernel(p), split_key_tail(p), f);
  return with_split_head_dim<__nv_bfloat16>(p.head_dim, q80_kernel(p), split_key_tail(p), f);
}

// Keys per block and queries per step of the default kernel at this head dim.
template <typename F> auto with_default_tiles(int head_dim, F&& f) {
  if (head_dim == 64) return f(BwdTraits<__half, 64>{});
  return f(BwdTraits<__half, 128>{});
}

// Whether units of `heads` query heads (a head split's subset) on causal pass p average at least kMinUnitSteps
// query-tile steps a key tile (splitmost: always). A unit adds what a step does not: its launch, K/V load and
// pipeline fill, and its 128-key tile's fp32 dK / dV partials (128 KB of bulk reductions, as many bytes as 4 steps'
// dQ reductions at 64 queries). Session 14's default took the most subsets (8) on every causal split: at 8 q / 1 kv
// head N = 1k its units were one head, 9 steps on average, and the partials added 44% to the dQ reduction bytes;
// 16 / 1 N = 1k has the same blocks, plane groups and waves with 2-head units (18 steps, 22%) and ran 320 TFLOP/s
// against 283 (session 15's call B). There (probe splitunit, at 16 steps; 16k tokens, bf16, both readings against the
// default's mean; results/h200/s15/callB/r2-sm90bwd/): units of 9 steps made 18: 8 / 1 N = 1k +4.8 / +4.2%
// (8 -> 4 subsets), b12 8 / 1 N = 1k +8.0 / +7.2%, 4 / 1 N = 1k +5.5 / +4.5% (4 -> 2); 13 steps made 26: b12 8 / 1
// N = 1536 +4.1 / +3.8%, b12 4 / 1 N = 1536 +1.9 / +1.6%, under the +2% rule in both readings, so the threshold
// is 12: units under 12 steps (one head up to N ~ 1.3k with 64-query steps, ~1.7k where the pass takes 80-query
// steps; two heads up to N = 576) take fewer, longer ones; N = 1536 keeps the most subsets. Seven rows it left alone (16 / 1 N = 1k; 4, 8, 16 q heads N = 2k and 4k) read 0.992-1.016.
constexpr std::int64_t kMinUnitSteps = 12;
// long64 (below, the default since session 43) asks for units four times as long: session 40's call F split d = 64
// grids of groups >= 8 into 2-head units of 31-45 64-query steps a key tile (N 2000-2900) at 0.786-1.024x, and of
// 72-167 steps (N >= 4600) at 1.017-1.079x.
constexpr std::int64_t kMinUnitSteps64 = 48;
bool long_enough_units(const AttentionParams& p, int heads, std::int64_t min_steps = kMinUnitSteps) {
  if (bwd128_variant() == kBwd128SplitMost) return true;
  const int block_m = q80_kernel(p) ? BwdTraits<__half, 128, kBwd128Q80>::kBlockM : BwdTraits<__half, 128>::kBlockM;
  constexpr int kKeyTile = BwdTraits<__half, 128>::kBlockN;
  const std::int64_t key_tiles = (p.seq_k + kKeyTile - 1) / kKeyTile;
  const std::int64_t steps = causal_rows(p, block_m) / block_m * heads;  // a subset's steps over every key tile
  return steps >= min_steps * key_tiles;
}

// How many subsets a K/V plane's query heads are split into (kBwdHeadSplit, flash_sm90_bwd_traits.h):
// 1 (no split: the default kernel) unless a split shortens the modelled time by 5% or more. The model
// (model_head_split(), common/head_split.h, shared with flash's backward) is the hardware's block scheduling: units in launch order (key tiles outermost), each to the SM
// that frees first, a unit costing its query-tile steps plus kUnitOverhead steps (its launch, K/V
// load, pipeline fill and dK/dV reductions). Of the splits within kNearBest of the best modelled time
// it takes the largest: measured (session 7 call A, d = 128 causal MQA, splits 1/2/4/8 forced), long
// units cost more than the model says (32 q / 1 kv head at N = 4096: 8 subsets 431 TFLOP/s, 2 subsets
// 395, modelled equal), and short ones more overhead than 2 steps (8 / 1 at N = 1024: 8 subsets 233,
// 2 subsets 291). kUnitOverhead = 4, kNearBest = 5% and at most 8 subsets picked the measured best or
// within 1% of it on all 12 MQA cases (non-causal: no split; since session 23 (d = 128) and 24 (d = 64) non-causal
// passes take the fastest modelled split, below). Only GQA/MQA at d = 64 or 128 with few
// K/V tiles per SM are modelled; the answer is cached per shape. FB_SM90_BWD_SPLIT=N forces N subsets
// (1: off) where N divides the group, for A/B runs; the probe words below change non-causal head splits (nobig8,
// bar5 and nolong64: causal ones).
//
// Non-causal head splits since session 35 (docs/perf-notes.md, "Session 35: the non-causal head split past 8
// subsets"): the model's cap is the whole group (max_head_split()) and the virtual planes (a K/V plane and a subset of
// its query heads) run in L2 plane groups (split_plane_groups()), key tiles outermost within a group, not all in one
// group: the blocks that run together then share a few subsets' Q, dO and dQ accumulator in L2 rather than stream
// every subset's (40 one-head units a key tile at 40 q / 1 kv N = 7100 would read all 40 heads' rows, 290 MB, for
// every 2-3 key tiles). Call B (results/h200/s35/B/): the cap alone 0.922-1.092x the choice before (geomean 1.002,
// rule not met). Call C (results/h200/s35/C/, three interleaved rounds on 22 non-causal GQA/MQA shapes no config
// names, rule written before it): the plane groups alone 0.988-1.053x (geomean 1.007), both 1.003-1.169x (geomean
// 1.056), causal control 0.995x. FB_SM90_BWD_SPLIT words (the first three change non-causal head splits only):
//   cap8     the choice before session 35: at most 8 subsets, every virtual plane in one group;
//   pg       the plane groups with the cap of 8 (a probe);
//   whole    the whole group as the cap, one group (a probe);
//   nobig8   causal d = 128 grids of groups of >= 8 split only where the model saves 0.5%, session 39's choice
//            (head_split(): big8 is the default since session 40);
//   bar5     the causal d = 128 head split before session 39: a 5% bar for every group (causal_min_gain()), no big8;
//   nolong64 causal d = 64 grids of groups of >= 8 split only where the model saves 5%, the choice before session 43
//            (head_split(): long64 is the default since session 43; `big64`, the same for units as short as at
//            d = 128, was session 40's call F, rule not met, and is refused);
//   long1h   a probe (session 44): causal d = 128 splits (the key-tail split and big8) take one-head units where
//            those average at least kMinUnitSteps64 steps a key tile (head_split(), most_subsets), not the default's
//            units of >= 2 heads.
// `subq` (non-causal d = 128 grids of less than one wave weighed against the unsplit grid with its query tail) was
// session 43's call B, rule not met (results/h200/s43/B/), and is refused.
enum SplitWord : int {
  kSplitWhole = 1,
  kSplitPlaneGroups = 2,
  kSplitCausal8 = 4,
  kSplitBig8 = 8,
  kSplitLong64 = 16,
  kSplitLong1h = 32  // a probe, off by default
};
constexpr int kSplitCausal128 = kSplitCausal8 | kSplitBig8;  // the default's causal d = 128 choice (bar5 clears it)
constexpr int kSplitCausal = kSplitCausal128 | kSplitLong64;   // the default's causal choice (cap8, pg, whole keep it)
struct SplitSetting {
  int forced = 0;                                             // > 0: that many subsets
  int bits = kSplitWhole | kSplitPlaneGroups | kSplitCausal;  // SplitWord bits
};
const SplitSetting& split_setting() {
  static fb::settings::PerOverlay<SplitSetting> setting_cache;
  const SplitSetting& setting = setting_cache.get([] {
    const char* e = fb::settings::get("FB_SM90_BWD_SPLIT");
    const std::string v = e != nullptr ? e : "";
    SplitSetting st;
    if (v.empty() || v == "default") return st;
    if (v == "cap8") {
      st.bits = kSplitCausal;
    } else if (v == "pg") {
      st.bits = kSplitPlaneGroups | kSplitCausal;
    } else if (v == "whole") {
      st.bits = kSplitWhole | kSplitCausal;
    } else if (v == "nobig8") {
      st.bits &= ~kSplitBig8;
    } else if (v == "bar5") {
      st.bits &= ~kSplitCausal128;
    } else if (v == "nolong64") {
      st.bits &= ~kSplitLong64;
    } else if (v == "long1h") {
      st.bits |= kSplitLong1h;
    } else if (v == "long64") {
      throw std::invalid_argument("FB_SM90_BWD_SPLIT: 'long64' is the default since session 43 (nolong64: before)");
    } else if (v == "subq") {
      throw std::invalid_argument("FB_SM90_BWD_SPLIT: 'subq' was session 43's call B, rule not met");
    } else if (v == "big64") {
      throw std::invalid_argument(
          "FB_SM90_BWD_SPLIT: 'big64' was session 40's call F, rule not met (long64: its successor)");
    } else if (v == "big8") {
      throw std::invalid_argument("FB_SM90_BWD_SPLIT: 'big8' is the default since session 40 (nobig8: before)");
    } else if (v == "causal8") {
      throw std::invalid_argument("FB_SM90_BWD_SPLIT: 'causal8' is the default since session 39 (bar5: before)");
    } else if (v == "wholepg") {
      throw std::invalid_argument("FB_SM90_BWD_SPLIT: 'wholepg' is the default since session 35");
    } else {
      st.forced = std::atoi(v.c_str());
      if (st.forced < 1 || std::to_string(st.forced) != v)
        throw std::invalid_argument("FB_SM90_BWD_SPLIT: '" + v +
                                    "' is not default, cap8, pg, whole, nobig8, bar5, nolong64, long1h or a "
                                    "number of subsets >= 1");
    }
    return st;
  });
  return setting;
}
// The most query-head subsets the model may give a K/V plane (HeadSplitModel::max_split), the one place that decides
// it: the whole group on non-causal passes, 8 (the shared model's) under a causal mask and under `cap8` / `pg`.
// Without a mask every unit is as long as the others and the model's time is its rounds of units, so a cap of 8 can
// leave a long last round: 40 q / 1 kv head, batch 1, N = 7100 (56 key tiles) took 2 subsets, 112 units of 20 heads in
// one round on 132 SMs (0.963x torch-cudnn at d = 128, results/h200/s35/A/), where 40 one-head units model 1.13x
// faster (call C: 1.089x the choice before, 1.055x torch-cudnn). The portable backward's cap is the whole group there
// too (kernels/flash/flash_bwd.cu, max_head_split()).
int max_head_split(const AttentionParams& p) {
  const int cap = HeadSplitModel{}.max_split;
  if (p.causal || (split_setting().bits & kSplitWhole) == 0) return cap;
  return std::max(p.group(), cap);
}
// The share of the unsplit grid's modelled time a causal d = 128 split must save (HeadSplitModel::min_gain): 5%, the
// shared model's, but 0.5% for groups of >= 8 query heads since session 39 (not 0: a split whose makespan ties the
// unsplit one, both set by the longest block, would pass); FB_SM90_BWD_SPLIT=bar5: 5% for every group, the choice
// before. Call B (results/h200/s39/B/, forced splits, three interleaved rounds): on grids the 5% bar left whole, groups
// of 8-12 heads split into split_key_tail()'s most subsets (4-6) ran 1.079-1.106x faster where the model said 2.7-4.6%,
// groups of 2-4 split in 2 ran 0.952-0.980x. Call C (results/h200/s39/C/, the probe `causal8`, its rule written
// before it): 1.057-1.166x on ten drawn shapes of groups 8-16 (geomean 1.098), controls 0.997x / 1.006x; beside
// torch-cudnn those rows went from 0.877-0.972x to 0.966-1.105x. The unsplit blocks of a large group run group x
// query-tile steps each, and the makespan model underrates what splitting them saves.
double causal_min_gain(const AttentionParams& p) {
  const double bar = HeadSplitModel{}.min_gain;
  return p.causal && p.head_dim == 128 && p.group() >= 8 && (split_setting().bits & kSplitCausal8) != 0 ? 0.005 : bar;
}
// Whether a head-split pass takes its virtual planes in L2 plane groups without the key-tail order: non-causal passes
// (not under `cap8` / `whole`). Causal ones in the key-tail order have them since session 14 (split_key_tail()).
bool split_plane_groups(const AttentionParams& p) {
  return !p.causal && (split_setting().bits & kSplitPlaneGroups) != 0;
}
int qtail_forced();  // below
constexpr int kQTailNoSubwave = -2;
constexpr double kSubwaveMinGain = 0.05;
int head_split(const AttentionParams& p) {
  const int forced = split_setting().forced;
  const int group = p.group();
  if (group <= 1 || (p.head_dim != 64 && p.head_dim != 128) ||
      (p.dtype != Dtype::fp16 && p.dtype != Dtype::bf16))
    return 1;
  // The split variant exists for the default kernels only (64 or 80 queries a step at d = 128).
  const int v128 = bwd128_variant();
  if ((p.head_dim == 64 && !default_choice64()) ||
      (p.head_dim == 128 && v128 != kBwd128Q64 && v128 != kBwd128Q80C && !default_choice_variant()))
    return 1;
  if (forced > 0) return group % forced == 0 ? forced : 1;
  // Not current_sm_count(): the workspace size is asked for where no device may be (a plan); no
  // device, no split (nothing runs there).
  const int sms = device_sm_count_or_zero();
  if (sms == 0) return 1;
  const auto [block_n, block_m] = with_default_tiles(
      p.head_dim, [](auto tr) { return std::pair<int, int>(decltype(tr)::kBlockN, decltype(tr)::kBlockM); });
  // Without a causal mask every unit of a split is as long as the others, so the model's time is its wave count,
  // and more subsets only add fp32 dK / dV partials: such passes take the modelled fastest split (near_best 0), not
  // the largest within 5% of it (a preference fitted on causal MQA, whose first key tiles' units run long).
  // Session 23's call D (results/h200/s23/callD/; a shape no config names, 24 q / 4 kv heads, batch 2, bf16):
  // N = 5120 split 2 (the fastest modelled, 1220 against 1260 for 6) read 1.038 / 1.063x the default's 6,
  // N = 2500 split 3 1.028 / 1.005x; the GQA grid's non-causal rows model no split either way (unchanged). Call E
  // (results/h200/s23/callE/, this rule against the one before, two interleaved rounds) on four shapes out of that
  // sample whose split it changes (64 q / 8 kv N = 1536 4 -> 2, 32 / 4 N = 6000 8 -> 2, 16 / 2 N = 4096 8 -> 2,
  // 12 / 2 N = 4096 6 -> 2): 1.026-1.103x, geomean 1.069x (its rule, written before the run: >= 1.02x); 24 / 4
  // 1.036-1.083x. d = 64 since session 24's call A (results/h200/s24/callA/split64/, the job and rule prepared in
  // session 23; the fastest split forced against the default, two interleaved rounds, verified; 16 / 2 b3 N = 4096
  // 4 -> 2, 32 / 4 b2 N = 3000 4 -> 2, 64 / 8 b1 N = 3000 4 -> 2, 16 / 2 b1 N = 6000 8 -> 4, 12 / 2 b6 N = 6000
  // 6 -> 3): 1.013-1.105x, geomean 1.039x (rule >= 1.02x, every shape >= 0.99x in both rounds).
  HeadSplitModel model;
  model.max_split = max_head_split(p);
  if (!p.causal) model.near_best = 0.0;
  model.min_gain = causal_min_gain(p);
  // Since session 25 (call C, results/h200/s25/callC/): non-causal d = 128 passes set the split against the unsplit
  // grid with its query tail (qtail_parts() below splits that grid's last partial wave), not against a whole last
  // wave. Call B had 40 q / 8 kv heads, batch 2, N = 4500 at 0.843x torch-cudnn: split into 5 one-head subsets (2880
  // units of 71 steps, each with its 128 KB of fp32 dK / dV partials) for a modelled 8% over the unsplit grid, which
  // with the query tail models 4% faster than the split.
  model.unsplit_query_tail = qtail_possible(p);
  // Under one wave the unsplit grid is modelled whole, not as the query tail would run it (that was the probe `subq`):
  // session 40's call E row (2 x 16 q / 4 kv heads, N = 1300, fp16, 88 tiles, 4 subsets) ran 1.115x faster whole, but
  // session 43's call B (results/h200/s43/B/, eight drawn rows, three interleaved rounds) read 0.953-1.089x (geomean
  // 1.003): rule not met, the split stays.
  // Since session 32: non-causal d = 64 passes against the unsplit persistent grid with its shared tail. Call E
  // (results/h200/s32/callE/, three interleaved rounds against the choice before, forced): eight shapes it flips from
  // 2-6 subsets to none 1.029-1.130x (geomean 1.077), controls 0.996 / 0.998x.
  model.unsplit_tail_share = tail_share_possible(p);
  const int split = model_head_split(p, sms, block_n, block_m, model);
  // The most subsets above `floor` whose units are long enough (split_key_tail()'s count, below); `floor` if none.
  // The probe long1h (session 44): causal d = 128 splits may take one-head units where those are long. Session 44's
  // call D (results/h200/s44/D/): eight subsets forced where the default takes four (2 x 48 q / 6 kv N = 6800,
  // 4 x 8 / 1 N = 7900, 8 x 8 / 1 N = 8500) ran 1.014-1.018x faster, units of 53-66 64-query steps a key tile;
  // session 15's call D had one-head units at N 1536-4096 (12-32 steps) 1.1-5.3% slower than two-head ones.
  const bool one_head_units = (split_setting().bits & kSplitLong1h) != 0 && p.head_dim == 128 &&
                              long_enough_units(p, 1, kMinUnitSteps64);
  const auto most_subsets = [&](int floor, std::int64_t min_steps = kMinUnitSteps) {
    const int v = bwd128_variant();
    const int most = group >= 4 && v != kBwd128SplitMost && v != kBwd128Unit1h && !one_head_units
                         ? std::min(group / 2, HeadSplitModel{}.max_split)
                         : std::min(group, HeadSplitModel{}.max_split);
    for (int s = most; s > floor; --s)
      if (group % s == 0 && long_enough_units(p, group / s, min_steps)) return s;
    return floor;
  };
  if (split > 1 && split_key_tail(p)) {
    // Causal d = 128 (split_key_tail()): where the model splits, the most subsets it allows (the largest divisor
    // of the group, at most HeadSplitModel::max_split) whose units are long enough (long_enough_units(), since
    // session 15; else the model's), in L2 plane groups and the key-tail order. Since session 15's call D a group
    // of 4 or more heads takes at most group / 2 subsets (units of >= 2 heads; never fewer than the model's):
    // probe unit2h, 12 causal bf16 rows at 4 q / 1 kv and 8 / 1 heads, N = 1536-4096, 7-18k tokens, where the split
    // went 4 -> 2 and 8 -> 4: 48 readings over calls D and E, each 1.001-1.071x the default's mean, per-row means
    // +1.1% (4 / 1 N = 2000) to +5.3% (8 / 1 N = 1536); controls 0.981-1.022 (results/h200/s15/callD/r3-sm90bwd/,
    // callE/r3-sm90bwd/). A one-head unit pays its launch, K/V load, pipeline fill and 128 KB of fp32 dK/dV partials
    // for 12-28 steps there; two heads halve that. The pre-registered rule (+2% in both readings of every changed
    // row) held on 7 of 12 rows in call D; the lead shipped it on both calls' evidence. unit1h: the split before.
    return most_subsets(split);
  }
  // Since session 40 (call A, the probe `big8`, its rule written in session 39 before its first look): a causal d = 128
  // grid of a group of >= 8 query heads that the model leaves whole (its gain under 0.5%, or past its gate of
  // few_tiles_per_sm blocks an SM, where it is not asked) splits into the most subsets of units of >= 2 heads that are
  // long enough, as split_key_tail() does. Session 39's call E (results/h200/s39/E/): 6 x 64 q / 4 kv heads, N = 6000,
  // 1128 blocks, ran 1.12-1.15x faster split in 4, 8 or 16. Session 40's call A (results/h200/s40/A/, three
  // interleaved rounds): 1.010-1.100x on ten drawn shapes (geomean 1.056), controls 1.003x / 0.995x; beside
  // torch-cudnn those rows went from 0.911-1.000x to 0.993-1.056x. The makespan model misses what a large group's
  // unsplit blocks lose (they run group x query-tile steps each). Cost: each unit's 128 KB of fp32 dK / dV partials
  // (1.2 GB at call E's row). FB_SM90_BWD_SPLIT=nobig8: session 39's choice.
  if (split == 1 && group >= 8 && split_key_tail(p) && (split_setting().bits & kSplitBig8) != 0)
    return most_subsets(1);
  // Since session 43 (call A, the probe `long64`, its rule written in session 40): the same for causal d = 64 grids
  // (which keep the model's 5% bar), into units of at least kMinUnitSteps64 64-query steps a key tile (the d = 64
  // kernels step 128 queries, each about a 64-query d = 128 step's work). Session 40's call E (results/h200/s40/E/):
  // 7 x 16 q / 1 kv heads, N = 5200, bf16, modelled 4.8% faster split in 4 and so left whole, ran 1.12-1.20x faster
  // split in 2-16. Call F (results/h200/s40/F/, its predecessor `big64`, units of >= 12 steps as at d = 128):
  // 0.786-1.079x on eight drawn rows, the losses on the short units (N <= 2500), rule not met. Session 43's call A
  // (results/h200/s43/A/, three interleaved rounds, flash-sm90 alone): 1.032-1.233x on eight fresh rows (seed 4300,
  // N 3600-7100; geomean 1.086), controls 0.995-1.013x; beside torch-cudnn those rows went from 0.922-1.094x to
  // 1.109-1.162x. FB_SM90_BWD_SPLIT=nolong64: the choice before.
  if (split == 1 && group >= 8 && p.causal && p.head_dim == 64 && (split_setting().bits & kSplitLong64) != 0)
    return most_subsets(1, kMinUnitSteps64);
  return split;
}

// Into how many units each tile of the grid's last partial wave runs (BwdTraits::kQTail; 1: none, the kernels
// without it). Non-causal d = 128 passes without a head split, on the default's kernels (64 or 80 queries a step),
// grids of at least one whole wave: every (key tile, K/V plane) tile is the same work, so n_tiles tiles run as whole
// waves and a partial last one (2048 tiles on 132 SMs: 15.5 waves run as 16; 1200: 9.1 as 10). The model is flash's
// (common/head_split.h, model_tail_split(), units of whole query tiles of every head). Session 24's call B
// (results/h200/s24/callB/, against FB_SM90_BWD_QTAIL=off, two interleaved rounds, 16 split cases: the issue-13 grid
// N = 2k-16k bf16 / fp16, MHA 5 x 20 / 40 heads N 1536-6144, GQA 32 q / 8 kv N = 1900): geomean 1.0105x, 0.994-1.048x
// (its rule, written before the run: >= 1.01x, no case below 0.98x in both rounds); below the model (+0.8-8.1%): a
// unit's fp32 partials cost more than the 4 steps it charges. Since session 38 grids of less than one wave too (every
// tile a tail tile), where the model saves kSubwaveMinGain ("Session 38: the tail split on grids of less than one
// wave" in docs/perf-notes.md): call B (results/h200/s38/B/) split them where it saved 1%: 0.983-1.282x (the two rows
// whose model gain was 1-2.3%, S = 12 and 14, lost 1.4-1.7%; an unchanged control read 0.985x: rule not met); call C
// (results/h200/s38/C/, flash-sm90 alone, three interleaved rounds, its rule written before it) with the 5% bar:
// 1.011-1.280x on fourteen rows (eight fresh), geomean 1.111, controls 0.996-1.008x. FB_SM90_BWD_QTAIL=nosubwave:
// whole waves only (the choice before session 38); =off: never (the kernels before session 24); =S: S units wherever
// the pass could split (at most its query tiles, less than one wave too), for tests and A/B runs.
// FB_SM90_BWD_QTAIL: 0 the model, -1 off, -2 the model on whole waves only, S > 1 forced.
constexpr int kQTailOff = -1;
int qtail_forced() {
  static fb::settings::PerOverlay<int> forced_cache;
  const int& forced = forced_cache.get([] {
    const char* e = fb::settings::get("FB_SM90_BWD_QTAIL");
    const std::string v = e != nullptr ? e : "";
    if (v.empty() || v == "default") return 0;
    if (v == "off") return kQTailOff;
    if (v == "nosubwave") return kQTailNoSubwave;
    if (v == "subwave")
      throw std::invalid_argument("FB_SM90_BWD_QTAIL: 'subwave' is the default since session 38 (nosubwave: before)");
    const int s = std::atoi(v.c_str());
    if (s < 2 || std::to_string(s) != v)
      throw std::invalid_argument("FB_SM90_BWD_QTAIL: '" + v +
                                  "' is not off, nosubwave, default or a number of units >= 2");
    return s;
  });
  return forced;
}
// A non-causal 16-bit pass at head dim d with sizes a grid can be planned for: what the tails (the query tail, the
// shared tail) ask before their own conditions.
bool tail_candidate(const AttentionParams& p, int d) {
  return !p.causal && p.head_dim == d && (p.dtype == Dtype::fp16 || p.dtype == Dtype::bf16) && p.seq_q >= 1 &&
         p.seq_k >= 1 && p.batch >= 1 && p.kv_heads >= 1 && p.heads % p.kv_heads == 0;
}
// Whether pass p may run the query tail, head split and model aside (head_split() asks, for its unsplit time).
bool qtail_possible(const AttentionParams& p) {
  if (qtail_forced() == kQTailOff || !tail_candidate(p, 128)) return false;
  return default_choice_variant() || bwd128_variant() == kBwd128Q64;
}
// The (key tile, K/V plane) tiles of p's unsplit grid: 128 keys a tile (BwdTraits<*, 64> and <*, 128>::kBlockN).
constexpr int kTailKeyTile = 128;
long long key_tile_planes(const AttentionParams& p) {
  return (long long)((p.seq_k + kTailKeyTile - 1) / kTailKeyTile) * p.batch * p.kv_heads;
}
int qtail_parts(const AttentionParams& p) {
  const int forced = qtail_forced();
  if (!qtail_possible(p)) return 1;
  if (head_split(p) > 1) return 1;
  // As head_split(): no device, no split (the workspace is asked for where no device may be).
  const int sms = device_sm_count_or_zero();
  if (sms == 0) return 1;
  const int block_m = q80_kernel(p) ? 80 : 64;
  const int q_tiles = (p.seq_q + block_m - 1) / block_m;
  const long long n_tiles = key_tile_planes(p);
  if (n_tiles % sms == 0) return 1;
  if (forced > 0) return std::min(forced, q_tiles);
  TailSplitModel model;
  model.whole_tiles = true;
  if (n_tiles < sms) {  // less than one wave: every tile splits, where the model saves kSubwaveMinGain
    if (forced == kQTailNoSubwave) return 1;
    model.min_gain = kSubwaveMinGain;
  }
  return model_tail_split(n_tiles, sms, q_tiles, p.group(), model);
}

// Whether a persistent backward may run (FB_SM90_BWD_PERSIST; bwd_blocks() below): kPersistAuto (unset, default, or
// `dynpg`, session 51's probe that call D made the default: the dynamic order where dyn_tiles_on() takes it, its GQA
// passes in causal_group()'s plane group; the launch model elsewhere), kPersistOn (every pass persistent, a static
// round-robin), kPersistOff (a block a tile), kPersistDyn (`dyn`, session 48's probe: on, and every causal d = 64 pass
// without a head split in the dynamic order, GQA too, in the L2 group), kPersistNoDyn (`nodyn`: the default before
// session 49, no dynamic order), kPersistDynMha (`dynmha`: the default before session 51, the order on MHA passes
// only), kPersistDynShort (`dynshort`, session 49's probe, not met in session 51's call T: the default's GQA passes
// in the order in the L2 group), kPersistDynLong (`dynlong`, session 51's probe, not met in session 52's call F: the
// default, and the causal GQA passes of kLongCausalSteps or more, launched a block a tile, in the order too, in
// causal_group()'s plane group as now). `dyngqa` (every causal GQA pass in the order, in the L2 group) was measured
// in session 49's call S and removed: refused, naming it. Any other word is refused.
enum PersistMode {
  kPersistAuto, kPersistOn, kPersistOff, kPersistDyn, kPersistNoDyn, kPersistDynShort, kPersistDynMha, kPersistDynLong
};
PersistMode persist_forced() {
  static fb::settings::PerOverlay<PersistMode> forced_cache;
  const PersistMode& forced = forced_cache.get([] {
    const char* e = fb::settings::get("FB_SM90_BWD_PERSIST");
    const std::string v = e != nullptr ? e : "";
    if (v.empty() || v == "default" || v == "dynpg") return kPersistAuto;
    if (v == "on") return kPersistOn;
    if (v == "off") return kPersistOff;
    if (v == "dyn") return kPersistDyn;
    if (v == "nodyn") return kPersistNoDyn;
    if (v == "dynshort") return kPersistDynShort;
    if (v == "dynmha") return kPersistDynMha;
    if (v == "dynlong") return kPersistDynLong;
    if (v == "dyngqa")
      throw std::invalid_argument("FB_SM90_BWD_PERSIST: 'dyngqa' (every causal GQA pass in the dynamic order) was "
                                  "measured and removed in session 49: 0.777-1.311x, geomean 0.908 "
                                  "(docs/perf-notes.md; dynshort is its short passes)");
    throw std::invalid_argument("FB_SM90_BWD_PERSIST: '" + v +
                                "' is not on, off, dyn, dynshort, dynmha, dynlong, nodyn, dynpg or default");
  });
  return forced;
}

// The shared tail of the d = 64 backward (BwdTraits::kTailShare): non-causal passes without a head split run the
// persistent kernel, n_tiles (key tile, K/V plane) tiles round-robin on min(n_tiles, SMs) blocks, so a last partial
// round of n_tiles mod SMs tiles runs while the other blocks wait (the issue-13 grid's 32 heads at 16k tokens: 4096
// tiles, 31 rounds and 4 tiles at every N, ~3% of the main kernel). Where model_tail_share() (common/head_split.h)
// says it saves a tenth of that round, the tail tiles' query tiles are shared out over every block instead. Session
// 32's call A (results/h200/s32/callA/, against FB_SM90_BWD_SHARE=off, three interleaved rounds; its rule written
// before it in docs/perf-notes.md): eight shapes no config names 1.011-1.108x (geomean 1.053), the grid at N >= 1k
// 1.011-1.026x, controls 0.997-1.003x. FB_SM90_BWD_SHARE=off: never (the kernels before session 32); =on: wherever it
// can run (tests, A/B runs); unset or default: the model.
int tail_share_forced() {
  static fb::settings::PerOverlay<int> forced_cache;
  const int& forced = forced_cache.get([] {
    const char* e = fb::settings::get("FB_SM90_BWD_SHARE");
    const std::string v = e != nullptr ? e : "";
    if (v.empty() || v == "default") return 0;
    if (v == "off") return -1;
    if (v == "on") return 1;
    throw std::invalid_argument("FB_SM90_BWD_SHARE: '" + v + "' is not off, on or default");
  });
  return forced;
}
// Whether pass p may run the shared tail, head split and model aside (head_split() asks, for its unsplit time).
bool tail_share_possible(const AttentionParams& p) {
  if (tail_share_forced() < 0 || !tail_candidate(p, 64) || persist_forced() == kPersistOff) return false;
  return default_choice64();
}
bool tail_share_on(const AttentionParams& p) {
  const int forced = tail_share_forced();
  if (!tail_share_possible(p) || head_split(p) > 1) return false;
  // As head_split(): no device, no share (the workspace is asked for where no device may be).
  const int sms = device_sm_count_or_zero();
  if (sms == 0) return false;
  constexpr int kBlockM = 128;  // BwdTraits<*, 64>::kBlockM
  const long long n_tiles = key_tile_planes(p);
  const int q_tiles = (p.seq_q + kBlockM - 1) / kBlockM;
  if (n_tiles <= sms || n_tiles % sms == 0) return false;
  if (forced > 0) return true;
  return model_tail_share(n_tiles, sms, q_tiles, p.group()).share;
}

// Query rows per (batch, head) plane of the LSE, D and dQ accumulator arrays: the portable backward's
// padding (whole tiles of 64 and 128), or whole 80-query tiles for the 80-query kernel (BwdTraits::kQ80).
template <typename Tr> int seq_pad_of(const AttentionParams& p) {
  return Tr::kQ80 ? round_up(p.seq_q, Tr::kBlockM) : flash::backward_padded_seq(p.seq_q);
}

// A causal pass whose longest key tile takes this many query-tile steps or more runs a block a tile (bwd_blocks()).
constexpr int kLongCausalSteps = 32;
// Query-tile steps of the longest key tile of a pass of Tr's kernel without a head split (its padded query rows over
// the step's queries, times the group's query heads): what bwd_blocks() weighs.
template <typename Tr> int longest_steps_of(const AttentionParams& p) {
  return seq_pad_of<Tr>(p) / Tr::kBlockM * p.group();
}

// The dynamic tile order (the default for causal d = 64 MHA passes without a head split since session 49, and for GQA
// ones whose longest key tile is under kLongCausalSteps since session 51; under FB_SM90_BWD_PERSIST=dyn, session 48's
// probe, every GQA one; `dynmha`: MHA only; `nodyn`: never): those passes run the persistent kernel
// at any length, each block taking its next tile from a counter (kBwd64Dyn, the traits) rather than
// blockIdx.x + gridDim.x, ...: the tiles in flight stay a window of the order (plane groups, key tiles outermost, the
// longest first), as under the hardware's block scheduler, and no block waits on a static share of longer tiles. Why:
// on the H100 the default's d = 64 causal backward at N = 1024 (the persistent kernel, static round-robin) read 856
// and wrote 482 MiB of DRAM against cuDNN's 388 / 240 at the papers' grid (results/h100/s48/O/ncu-summary.txt), and
// non-causal N = 4096, whose tiles are all alike, 389 / 240 like cuDNN: blocks drifting apart on tiles of unequal
// length spread the tiles in flight over more planes than L2 holds. Session 49's call Q (an H100, three interleaved
// rounds against the default before it, its rule written before in docs/perf-notes.md; results/h100/s49/Q/): the
// papers' d = 64 causal grid N 512-16k 1.019-1.353x (geomean 1.104), non-causal controls 1.023x / 0.981x; DRAM at
// N = 1024 858 / 484 MiB read / written -> 388 / 240. Call P (an H200, results/h200/s48/P/): 0.984-1.028x. Measured
// on MHA only, so GQA passes keep the plane groups of causal_group() unless a probe's word asks (`dyn`; `dynshort`:
// the GQA passes under kLongCausalSteps, nothing else changed). Session 49's call S (an H100, results/h100/s49/S/)
// read every causal GQA pass in the order (the word dyngqa, since removed) on seven causal GQA shapes
// 0.777-1.311x (geomean 0.908): the passes launched a block a tile in plane groups lose (0.777-0.886x), one pass the
// default runs persistent gains (4 x 16 q / 8 kv heads N = 1536, 1.311x), another does not (8 x 12 / 4 N = 1024 fp16,
// 0.963x). Session 51's call T (an H100, results/h100/s51/T/; dynshort, its rule written in session 49) read the
// short passes 1.162-1.611x on seven of eight rows and 0.953x on that one (rule not met): in the L2 plane group (11 of
// its 32 planes) the last group's longest key tiles start late, as session 35 found for block-a-tile launches; the
// list-scheduling model (plane_group_makespan(), 3 steps a block) has the order at 45 steps against the static
// round-robin's 42 there, and puts the seven others' gains at 1.23-1.78x (measured 1.16-1.61x, the two largest and the
// smallest the same rows). `dynpg` (unsplit_causal_group()) gave those passes causal_group()'s plane group (16
// planes there: 33 steps), and call D (an H100, results/h100/s51/D/, three interleaved rounds against the default
// before, its rule written before in docs/perf-notes.md) read it 1.090-1.762x on fourteen rows (call T's eight, 1.191x
// on that one, and six drawn shapes 1.090-1.566x), geomean 1.365, controls 0.998-1.005x: the default since. Call S's
// long passes lost in the order (0.777-0.886x) in the L2 group, where their block-a-tile launch takes causal_group()'s:
// `dynlong` (a probe) puts them in the order in that group, where the model has the order level with the launch
// (both greedy in launch order) and what is left to gain is the persistent kernel's (MHA's long passes: 1.019-1.023x in
// session 49's call Q). Session 52's call F (an H100, results/h100/s52/F/) read it 0.987-1.030x on eleven rows,
// geomean 1.007, under the 1.02 its rule asked: level, as the model says, so those passes keep their launch.
bool dyn_tiles_on(const AttentionParams& p) {
  const PersistMode forced = persist_forced();
  const bool short_gqa = forced == kPersistAuto || forced == kPersistDynShort;
  bool taken = forced == kPersistDyn || forced == kPersistDynLong ||
               ((short_gqa || forced == kPersistDynMha) && p.group() == 1);
  if (short_gqa && !taken)  // GQA passes the launch model runs persistent
    taken = with_default_tiles(64, [&](auto tr) { return longest_steps_of<decltype(tr)>(p); }) < kLongCausalSteps;
  const int v = bwd64_variant();  // the default's kernels (nopmajor64, pgl2, splitone are host codes)
  return taken && p.causal && p.head_dim == 64 && v != kBwd64PerConsumerDq && v != kBwd64Direct &&
         head_split(p) == 1 && !tail_share_on(p);
}

struct Workspace {
  std::size_t lse = 0, d = 0, dq = 0, dkv = 0, total = 0;
};
constexpr std::size_t align_up(std::size_t x) { return (x + kWsAlign - 1) / kWsAlign * kWsAlign; }

// The query tail's (and the shared tail's) tiles (BwdParams::tail_first on): the grid's last partial wave (round),
// n_tiles % SMs.
std::int64_t qtail_tiles(const AttentionParams& p) {
  return key_tile_planes(p) % current_sm_count();
}
// Its fp32 dK and dV accumulators: 128 keys x d a tile, each.
std::size_t qtail_dkv_floats(const AttentionParams& p) {
  return 2 * std::size_t(qtail_tiles(p)) * kTailKeyTile * std::size_t(p.head_dim);
}

Workspace workspace_layout(const AttentionParams& p) {
  // The 80-query kernel pads to whole tiles of 80; the larger of the two covers a head split's kernel
  // (64 queries a step) as well.
  const int seq_pad = q80_kernel(p)
                          ? std::max(flash::backward_padded_seq(p.seq_q), round_up(p.seq_q, 80))
                          : flash::backward_padded_seq(p.seq_q);
  const std::size_t rows = std::size_t(p.batch) * p.heads * seq_pad;
  Workspace w;
  w.d = align_up(rows * sizeof(float));
  w.dq = w.d + align_up(rows * sizeof(float));
  w.total = w.dq + align_up(rows * std::size_t(p.head_dim) * sizeof(float));
  if (head_split(p) > 1) {
    // fp32 dK and dV accumulators over whole key tiles (the largest key tile: 128).
    constexpr std::size_t kKeyTile = 128;
    const std::size_t keys = (std::size_t(p.seq_k) + kKeyTile - 1) / kKeyTile * kKeyTile;
    w.dkv = w.total;
    w.total = w.dkv + 2 * align_up(std::size_t(p.batch) * p.kv_heads * keys * p.head_dim * sizeof(float));
  } else if (qtail_parts(p) > 1 || tail_share_on(p)) {
    w.dkv = w.total;
    w.total = w.dkv + align_up(qtail_dkv_floats(p) * sizeof(float));
  } else if (dyn_tiles_on(p)) {  // the dynamic order's tile counter
    w.dkv = w.total;
    w.total = w.dkv + kWsAlign;
  }
  return w;
}

// dQ accumulator (wgmma register order, see flash_sm90_bwd_traits.h) -> dQ [batch, heads, seq_q, d].
// One block per accumulator block (a 64-row tile's kDqCols columns), one thread per wgmma thread:
// float4 reads in the order the consumers staged them, a transpose through shared memory, and 16-byte
// row-major writes, so both sides are coalesced.
template <typename Tr> struct Convert {
  static constexpr int kThreads = Tr::kWgThreads;
  static constexpr int kRows = Tr::kDqTileRows;  // query rows of an accumulator block
  static constexpr int kStride = Tr::kDqCols + 8;  // floats per shared row: 16-byte aligned rows
  static constexpr int kVecElems = 8;              // 16-bit elements per 16-byte write
  static constexpr int kVecsPerRow = Tr::kDqCols / kVecElems;
  static_assert(kStride % 4 == 0 && Tr::kDqCols % kVecElems == 0, "16-byte rows and writes");
};

// One accumulator block (src: kDqWgFloats in the wgmma register order) into rows [row0, row0 + kRows) and columns
// [cb kDqCols, (cb + 1) kDqCols) of the [seq, d] plane at plane; rows at or past seq are left out.
template <typename Tr, bool kTransposed>
__device__ __forceinline__ void convert_acc_block(const float* acc_block, typename Tr::Elem* plane, int row0, int cb,
                                                  int seq, float* tile) {
  using Cv = Convert<Tr>;
  using Elem = typename Tr::Elem;
  const int tid = threadIdx.x;
  const int warp = tid / 32, lane = tid % 32;
  const float4* src = reinterpret_cast<const float4*>(acc_block);
#pragma unroll
  for (int g = 0; g < Tr::kDqRegs / 4; ++g) {
    const float4 v = src[g * Cv::kThreads + tid];
    const int r = warp * 16 + lane / 4;
    const int c = g * Tr::kMmaN + 2 * (lane % 4);
    if constexpr (kTransposed) {
      // Registers 4g .. 4g+3: column r of d (within the block), queries c and c+1 of the tile, then
      // column r+8: transposed into query rows.
      tile[c * Cv::kStride + r] = v.x;
      tile[(c + 1) * Cv::kStride + r] = v.y;
      tile[c * Cv::kStride + r + 8] = v.z;
      tile[(c + 1) * Cv::kStride + r + 8] = v.w;
    } else {
      // Registers 4g .. 4g+3: row r, columns c and c+1, then row r+8, the same columns.
      tile[r * Cv::kStride + c] = v.x;
      tile[r * Cv::kStride + c + 1] = v.y;
      tile[(r + 8) * Cv::kStride + c] = v.z;
      tile[(r + 8) * Cv::kStride + c + 1] = v.w;
    }
  }
  __syncthreads();
  for (int k = tid; k < Cv::kRows * Cv::kVecsPerRow; k += Cv::kThreads) {
    const int r = k / Cv::kVecsPerRow, vec = k % Cv::kVecsPerRow;
    const int q = row0 + r;
    if (q >= seq) continue;
    const float* x = tile + r * Cv::kStride + vec * Cv::kVecElems;
    uint4 out;
    out.x = ptx::pack2<Elem>(x[0], x[1]);
    out.y = ptx::pack2<Elem>(x[2], x[3]);
    out.z = ptx::pack2<Elem>(x[4], x[5]);
    out.w = ptx::pack2<Elem>(x[6], x[7]);
    *reinterpret_cast<uint4*>(plane + std::int64_t(q) * Tr::kHeadDim + cb * Tr::kDqCols + vec * Cv::kVecElems) = out;
  }
}

// The body of both convert kernels below (kTransposed: bwd_convert_dqt_kernel's dQ^T blocks).
template <typename Tr, bool kTransposed>
__device__ __forceinline__ void convert_dq_block(const float* acc, typename Tr::Elem* dq, int seq,
                                                 int n_qtiles, float* tile, std::int64_t block = blockIdx.x) {
  // block: (bh * n_qtiles + q tile) * kDqBlocks + column block
  const int cb = int(block % Tr::kDqBlocks);
  const int qtile = int(block / Tr::kDqBlocks % n_qtiles);
  const std::int64_t bh = block / Tr::kDqBlocks / n_qtiles;
  convert_acc_block<Tr, kTransposed>(acc + block * Tr::kDqWgFloats, dq + bh * seq * Tr::kHeadDim,
                                     qtile * Convert<Tr>::kRows, cb, seq, tile);
}

template <typename Tr>
__global__ void __launch_bounds__(Convert<Tr>::kThreads)
    bwd_convert_dq_kernel(const float* __restrict__ acc, typename Tr::Elem* __restrict__ dq, int seq,
                          int n_qtiles) {
  __shared__ __align__(16) float tile[Convert<Tr>::kRows * Convert<Tr>::kStride];
  pdl_launch_dependents();  // FB_SM90_BWD_LAUNCHES=pdl: the next convert's blocks may start; they wait for these
  pdl_wait_primary();       // ... and these for the kernel before (no-ops in stream order)
  convert_dq_block<Tr, false>(acc, dq, seq, n_qtiles, tile);
}

// Q80 (BwdTraits::kQ80): the same for dQ^T blocks (registers 4g .. 4g+3 are d row r = 16 warp +
// lane / 4, query columns c = 8g + 2 (lane % 4) and c + 1, then row r + 8), transposed through shared
// memory into query rows.
template <typename Tr>
__global__ void __launch_bounds__(Convert<Tr>::kThreads)
    bwd_convert_dqt_kernel(const float* __restrict__ acc, typename Tr::Elem* __restrict__ dq, int seq,
                           int n_qtiles) {
  __shared__ __align__(16) float tile[Convert<Tr>::kRows * Convert<Tr>::kStride];
  pdl_launch_dependents();
  pdl_wait_primary();
  convert_dq_block<Tr, true>(acc, dq, seq, n_qtiles, tile);
}

// A head split's three converts in one launch (FB_SM90_BWD_LAUNCHES=fused, the default since call N; `separate`: one
// launch each): blocks [0, dq_blocks) convert dQ as bwd_convert_dq_kernel / bwd_convert_dqt_kernel (kTransposed: Q80)
// would, the next kv_blocks dK and the last kv_blocks dV as bwd_convert_dq_kernel<DkvTr> would. One kernel boundary
// instead of three: at tens of microseconds a backward, each boundary (the last blocks' drain, the launch, the first
// blocks' start) is a few percent.
struct SplitConvert {
  const float* dq_acc;
  void* dq;
  const float* dkv_acc;  // dK's kv_blocks accumulator blocks, then dV's
  void* dk;
  void* dv;
  std::int64_t dq_blocks, kv_blocks;
  int seq_q, n_qtiles, seq_k, n_ktiles;
};

template <typename Tr, typename DkvTr, bool kTransposed>
__global__ void __launch_bounds__(Convert<Tr>::kThreads)
    bwd_convert_split_kernel(const __grid_constant__ SplitConvert c) {
  static_assert(Convert<Tr>::kThreads == Convert<DkvTr>::kThreads, "one block size for both converts");
  constexpr int kDqTile = Convert<Tr>::kRows * Convert<Tr>::kStride;
  constexpr int kDkvTile = Convert<DkvTr>::kRows * Convert<DkvTr>::kStride;
  constexpr int kTileFloats = kDqTile > kDkvTile ? kDqTile : kDkvTile;
  __shared__ __align__(16) float tile[kTileFloats];
  pdl_wait_primary();  // FB_SM90_BWD_LAUNCHES=fused,pdl: the main kernel's writes (a no-op in stream order)
  using Elem = typename Tr::Elem;
  const std::int64_t b = blockIdx.x;
  if (b < c.dq_blocks) {
    convert_dq_block<Tr, kTransposed>(c.dq_acc, static_cast<Elem*>(c.dq), c.seq_q, c.n_qtiles, tile, b);
    return;
  }
  const std::int64_t k = b - c.dq_blocks;
  const bool is_dv = k >= c.kv_blocks;
  const std::int64_t kb = is_dv ? k - c.kv_blocks : k;
  convert_dq_block<DkvTr, false>(c.dkv_acc + (is_dv ? c.kv_blocks * DkvTr::kDqWgFloats : 0),
                                 static_cast<Elem*>(is_dv ? c.dv : c.dk), c.seq_k, c.n_ktiles, tile, kb);
}

// Query tail (BwdTraits::kQTail): the tail tiles' fp32 dK and dV accumulators (send_dkv_tail's layout: per tail tile
// and 64-key half, kDqBlocks blocks of 64 keys x 64 columns in the wgmma register order, dK's then dV's) into dK and
// dV rows. One block per accumulator block, as bwd_convert_dq_kernel; tile t = tail_first + slot is found as the main
// kernel finds it (bwd_work), rows past seq_k left out.
template <typename Tr, typename DkvTr>
__global__ void __launch_bounds__(Convert<DkvTr>::kThreads)
    bwd_convert_qtail_kernel(const __grid_constant__ BwdParams prm) {
#if FB_PTX_SM90A
  __shared__ __align__(16) float tile[Convert<DkvTr>::kRows * Convert<DkvTr>::kStride];
  pdl_wait_primary();  // FB_SM90_BWD_LAUNCHES=pdl: the dQ convert's (and so the main kernel's) writes
  constexpr int kHalves = Tr::kBlockN / Tr::kWgKeys;
  const std::int64_t per_matrix = std::int64_t(prm.n_tiles - prm.tail_first) * kHalves * Tr::kDqBlocks;
  const bool is_dv = blockIdx.x >= per_matrix;
  const std::int64_t block = blockIdx.x - (is_dv ? per_matrix : 0);
  const int cb = int(block % Tr::kDqBlocks);
  const int half = int(block / Tr::kDqBlocks % kHalves);
  const int slot = int(block / Tr::kDqBlocks / kHalves);
  const BwdWork w = bwd_work<Tr>(prm, unsigned(prm.tail_first + slot));
  using Elem = typename Tr::Elem;
  Elem* out = static_cast<Elem*>(is_dv ? prm.dv : prm.dk) + std::int64_t(w.kv_bh) * prm.mask.seq_k * Tr::kHeadDim;
  convert_acc_block<DkvTr, false>(prm.dkv_acc + blockIdx.x * std::int64_t(DkvTr::kDqWgFloats), out,
                                  w.n0 + half * Tr::kWgKeys, cb, prm.mask.seq_k, tile);
#else
  __trap();
#endif
}

// Blocks of a persistent backward (BwdTraits::kPersistent) for n_tiles work tiles: one per SM, each
// looping over tiles round-robin, which takes the block launch and each tile's dK/dV stores off the
// critical path (a third of the d = 64 time at N = 1024 was independent of N). A static round-robin
// balances a causal triangle worse than the hardware's block scheduler, so long causal passes (a tile
// of kLongCausalSteps steps or more) take one block per tile: at d = 64 causal, persistent measured
// +7% at N = 1024 (8 steps), -0.5 to -1% at 4096 (32 steps), -1.5% at 8192 (docs/perf-notes.md). Passes in the
// dynamic tile order (dyn_tiles: dyn_tiles_on()) balance the triangle on their own and run persistent at any length.
// FB_SM90_BWD_PERSIST=off or on overrides this for A/B runs.
long long bwd_blocks(long long n_tiles, bool causal, int longest_steps, bool dyn_tiles) {
  const PersistMode forced = persist_forced();
  bool persistent = dyn_tiles || !causal || longest_steps < kLongCausalSteps;
  if (forced == kPersistOn || forced == kPersistDyn) persistent = true;
  if (forced == kPersistOff) persistent = false;
  return persistent ? std::min<long long>(n_tiles, current_sm_count()) : n_tiles;
}

// The pre-pass of the 16-bit backward: D = rowsum(dO o O) and LSE * log2(e) per query row, padded to
// seq_pad rows per plane (padding rows and rows with no visible key: D = 0, LSE = +inf, so that every
// P of them is 0), and the whole dQ accumulator zeroed. The portable backward's pre-pass
// (flash::backward_prepass) does the same with a warp per row and 2-byte loads, which keeps ~16 KB in
// flight per SM; here each thread loads 16 bytes of O and of dO (kHeadDim / 8 threads a row) and zeroes
// its share of the accumulator with 16-byte stores, flat over the buffer. At 16k tokens x 2048 model
// dim it moves 268 MB (O, dO, the accumulator), a fixed cost beside the main kernel at every N.
template <typename Elem, int kHeadDim> struct Prepass {
  static constexpr int kVec = 8;                           // 16-bit elements per 16-byte load
  static constexpr int kThreadsPerRow = kHeadDim / kVec;   // 8, 16 or 32
  static constexpr int kThreads = 256;
  static constexpr int kRowsPerBlock = kThreads / kThreadsPerRow;
  static constexpr int kZeroF4PerThread = kHeadDim / 4 / kThreadsPerRow;  // float4 of dQ acc: 2
  static_assert(kHeadDim % (kVec * 4) == 0 && kThreadsPerRow <= 32, "whole 16-byte loads, a row per warp at most");
};

template <typename Elem> __device__ __forceinline__ float2 unpack2(std::uint32_t w);
template <> __device__ __forceinline__ float2 unpack2<__half>(std::uint32_t w) {
  __half2 h;
  memcpy(&h, &w, sizeof(w));
  return __half22float2(h);
}
template <> __device__ __forceinline__ float2 unpack2<__nv_bfloat16>(std::uint32_t w) {
  __nv_bfloat162 h;
  memcpy(&h, &w, sizeof(w));
  return __bfloat1622float2(h);
}

// row_blocks blocks take the rows; the blocks after them zero extra[0, extra_f4) (a head split's dK, dV
// accumulators by default; under FB_SM90_BWD_LAUNCHES=separate a memset before), kZeroF4PerThread float4 a thread.
template <typename Elem, int kHeadDim>
__global__ void __launch_bounds__(Prepass<Elem, kHeadDim>::kThreads)
    bwd_prepass_sm90_kernel(const Elem* __restrict__ o, const Elem* __restrict__ dout,
                            const float* __restrict__ lse, float* __restrict__ lse_pad,
                            float* __restrict__ d_pad, float4* __restrict__ dq_acc,
                            std::int64_t padded_rows, int seq_q, int seq_pad, std::int64_t row_blocks,
                            float4* __restrict__ extra, std::int64_t extra_f4) {
  using Pp = Prepass<Elem, kHeadDim>;
  pdl_launch_dependents();  // FB_SM90_BWD_LAUNCHES=pdl: the main kernel's blocks may start (they wait for these)
  if (blockIdx.x >= row_blocks) {  // the whole block: no shuffle below is reached by part of a warp
    const std::int64_t first = ((blockIdx.x - row_blocks) * Pp::kThreads + threadIdx.x) * Pp::kZeroF4PerThread;
#pragma unroll
    for (int z = 0; z < Pp::kZeroF4PerThread; ++z)
      if (first + z < extra_f4) extra[first + z] = make_float4(0.f, 0.f, 0.f, 0.f);
    return;
  }
  const std::int64_t t = std::int64_t(blockIdx.x) * Pp::kThreads + threadIdx.x;
  const std::int64_t row = t / Pp::kThreadsPerRow;
  const int part = int(t % Pp::kThreadsPerRow);
  // No early return: every lane of a warp reaches the shuffles (padded_rows is a multiple of 128,
  // so no warp is partly past the end anyway).
  const bool in_range = row < padded_rows;
  if (in_range) {
#pragma unroll
    for (int z = 0; z < Pp::kZeroF4PerThread; ++z)
      dq_acc[t * Pp::kZeroF4PerThread + z] = make_float4(0.f, 0.f, 0.f, 0.f);  // flat: padded_rows x d
  }
  const std::int64_t bh = row / seq_pad;
  const int i = int(row % seq_pad);
  float sum = 0.f;
  if (in_range && i < seq_q) {  // the whole group of a row takes the same branch
    const std::int64_t off = (bh * seq_q + i) * kHeadDim + part * Pp::kVec;
    const uint4 ov = *reinterpret_cast<const uint4*>(o + off);
    const uint4 dv = *reinterpret_cast<const uint4*>(dout + off);
    const std::uint32_t ow[4] = {ov.x, ov.y, ov.z, ov.w};
    const std::uint32_t dw[4] = {dv.x, dv.y, dv.z, dv.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float2 a = unpack2<Elem>(ow[k]);
      const float2 b = unpack2<Elem>(dw[k]);
      sum = fmaf(a.x, b.x, sum);
      sum = fmaf(a.y, b.y, sum);
    }
  }
#pragma unroll
  for (int s = Pp::kThreadsPerRow / 2; s > 0; s /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, s);
  if (in_range && part == 0) {
    const float row_lse = i < seq_q ? lse[bh * seq_q + i] : -INFINITY;
    d_pad[row] = i < seq_q ? sum : 0.f;
    lse_pad[row] = row_lse == -INFINITY ? INFINITY : row_lse * float(kLog2e);
  }
}

// Bytes a query row of one head brings into L2 for a block: Q, dO (16-bit) and the fp32 dQ accumulator.
constexpr std::int64_t kRowBytesPerElem = 2 + 2 + 4;

// K/V planes whose blocks run together: as many as keep their Q, dO and dQ accumulator (a block's `heads`
// query heads: the group, or a head split's subset) within a third of L2 (the rest holds K, V and what other
// kernels left).
int plane_group(const AttentionParams& p, std::int64_t kv_planes, int heads) {
  const std::int64_t plane_bytes = std::int64_t(p.seq_q) * p.head_dim * heads * kRowBytesPerElem;
  return l2_plane_group(plane_bytes, kv_planes);
}

// Key tiles of every plane that a causal pass in the key-tail order (BwdTraits::kKeyTail) runs in plane
// groups before the rest go over all planes (key_tiles: all of them grouped, session 12's order). The model
// is the hardware's block scheduling (as head_split()'s): blocks in launch order, each to the SM that frees
// first, a block costing its query-tile steps (the group's heads) plus kBlockOverhead steps (launch, K/V
// load, pipeline fill, dK/dV epilogue). Candidates: the choices that leave at most kMaxTailFulls
// device-fulls of blocks to the tail (at least one key tile grouped); of those within kNearBest of the best
// modelled time, the most grouped; and all key tiles grouped unless that is modelled kMinGain or more
// slower. The model has no memory term: a long tail over all planes has each block on its own plane, whose
// Q, dO and dQ accumulator then no longer share L2 (session 13's call A, tails of 5.8 / 9.7 device-fulls at
// 8 / 16 heads N = 1024: -9% / -10%, where the model said +9.5% / +1.6%), and small modelled gains did not
// appear (16 heads N = 2048 / 4096: modelled +2.5% / +2.7%, measured -0.4% / -1.1%). So the tail is short and
// taken only where the default order is badly ragged. At 16k tokens, bf16, 132 SMs: 8 heads N = 1024 / 2048
// / 4096 take T = 6 of 8 / 12 of 16 / 24 of 32 (modelled 1.031 / 1.018 / 1.011x the ideal against 1.106 /
// 1.121 / 1.129x; call B: +5.8% / +6.0% / +4.1%, fp16 N = 4096 +4.4%); 16 heads keep every key tile grouped
// (16 heads N = 4096: 1.006x in call B, the same order). GQA passes multiply a block's steps by the group: 32 q /
// 8 kv and 16 / 8 heads take T = 6 of 8 at N = 1024 and 24 of 32 at 4096 (session 14's call A: +2.4..+4.0%).
// A memory term (no tail whose Q / dO / dQ-accumulator rows in flight exceed two thirds of L2; probe ktailmem,
// session 14's call A) kept those GQA passes grouped and measured level: removed.
// Causal d = 128 head-split passes (split_key_tail()): kv_planes are the virtual planes and heads_per_block
// the subset's query heads (p.group() / split); otherwise heads_per_block is p.group().
// FB_SM90_BWD_GROUPED=T forces T (clamped to the key tiles; 0: no plane groups at all) for tests and A/B runs.
// Cached per shape.
int grouped_key_tiles(const AttentionParams& p, int key_tiles, int kv_planes, int plane_group, int block_n,
                      int block_m, int heads_per_block) {
  constexpr double kBlockOverhead = 3.0;
  constexpr double kNearBest = 0.005;
  constexpr std::int64_t kMaxTailFulls = 2;
  constexpr double kMinGain = 1.05;
  static fb::settings::PerOverlay<int> forced_cache;
  const int& forced = forced_cache.get([] {
    const char* e = fb::settings::get("FB_SM90_BWD_GROUPED");
    return e != nullptr && *e != '\0' ? std::atoi(e) : -1;
  });
  if (forced >= 0) return std::min(forced, key_tiles);
  using Key = std::tuple<int, int, int, int, int, int, bool, int, int, int>;
  static std::mutex mu;
  static std::map<Key, int> cache;
  const int sms = current_sm_count();
  const Key key{p.seq_q,     p.seq_k,  heads_per_block, key_tiles, kv_planes,
                plane_group, p.causal, block_n,         block_m,   sms};
  {
    std::lock_guard<std::mutex> lock(mu);
    if (const auto it = cache.find(key); it != cache.end()) return it->second;
  }
  const CausalMask mask = p.mask();
  const int q_tiles = (p.seq_q + block_m - 1) / block_m;
  std::vector<double> cost(static_cast<std::size_t>(key_tiles));  // a block of key tile j
  for (int j = 0; j < key_tiles; ++j)
    cost[std::size_t(j)] =
        double(q_tiles - mask.first_q_tile(j * block_n, block_m)) * heads_per_block + kBlockOverhead;
  auto makespan = [&](int grouped) {  // the blocks in bwd_work_key_tail's order
    ListSchedule schedule(sms);
    for (int first = 0; first < kv_planes; first += plane_group) {
      const int planes_here = std::min(plane_group, kv_planes - first);
      for (int j = 0; j < grouped; ++j)
        for (int u = 0; u < planes_here; ++u) schedule.place(cost[std::size_t(j)]);
    }
    for (int j = grouped; j < key_tiles; ++j)
      for (int u = 0; u < kv_planes; ++u) schedule.place(cost[std::size_t(j)]);
    return schedule.end();
  };
  std::vector<std::pair<int, double>> times;  // (grouped key tiles, modelled time), most grouped first
  double fastest = std::numeric_limits<double>::max();
  for (int grouped = key_tiles; grouped >= 1; --grouped) {
    if (std::int64_t(key_tiles - grouped) * kv_planes > kMaxTailFulls * sms) continue;
    times.emplace_back(grouped, makespan(grouped));
    fastest = std::min(fastest, times.back().second);
  }
  int best = 0;
  double best_time = 0.0;
  for (const auto& [grouped, t] : times)
    if (t <= (1.0 + kNearBest) * fastest) {
      best = grouped;
      best_time = t;
      break;
    }
  // times.front() is session 12's order (grouped = key_tiles: no tail).
  if (times.front().second < kMinGain * best_time) best = key_tiles;
  std::lock_guard<std::mutex> lock(mu);
  cache.emplace(key, best);
  return best;
}

// Whether pass p takes its blocks in the plane-major order (plane_group = 1 in bwd_work(): the key tiles of one K/V
// plane on consecutive block indices): non-causal d = 128 passes without a head split, the default since session 18's
// call B (probe pmajor; nopmajor: plane groups, the order before). Two effects, both measured there (16k tokens, bf16,
// results/h200/s18/callB/sm90bwd/):
// - DRAM: in plane groups (16 planes x 8 key tiles = 128 blocks at N = 1k, 8 x 16 at 2k) a plane's key tiles sit 16 or
//   8 block indices apart, so its blocks start spread over ~0.85 of a block's run and its Q / dO rows and fp32 dQ
//   accumulator tiles are evicted between them (30-40 MB of other tiles pass through L2; scripts/sm90bwd_l2_model.py).
//   ncu at N = 1k: DRAM read 575 -> 407 MB, written 346 -> 249 MB (cudnn's bprop: 406 / 247; the minimum, every
//   input and the accumulator once, ~407 / ~270 less what stays dirty in L2).
// - L2 reads: blocks of one plane on consecutive indices read the same Q / dO / LSE / D tiles in step, and the L2
//   request coalescer merges them: 0.69M -> 9.5M sectors coalesced, tex-source L2 reads 41.0M -> 31.5M.
// Alone at the 692 W cap the N = 1k backward ran 820.9 -> 809.4 us (1800 -> 1815 MHz); beside cudnn in the same process
// (three readings each): N = 512 / 1k / 2k / 1300 +3.3 / +8.6 / +1.1 / +1.4% (the 1k default readings sat low against
// cudnn in that call: 0.94-0.98x); causal 2k and d = 64 1k (not changed) 0.998 / 0.993. Causal passes keep their order:
// the same model finds no re-fetch there and the plane-major order lengthens the causal schedule's tail (a plane's
// longest key tile among the last to start: +4% makespan modelled).
// Non-causal d = 64 passes without a head split too, the default since session 19's call A (session 18's prepared
// probe pmajor64; nopmajor64: plane groups, the order before): the persistent kernel takes work tile t = blockIdx.x +
// i * gridDim.x, so a plane's 8 or 16 key tiles sit on consecutive blocks of one round. ncu at N = 1k (one launch
// each, results/h200/s19/callA/pmajor64/): DRAM read 469 -> 407 MB, written 286 -> 247 MB (cudnn's bprop, session 17:
// 407 / 248), 4.0M sectors coalesced (0 before); beside cudnn, three readings each: N = 1k / 2k / 1300 / 512 +1.8 /
// +2.0 / +0.2 / +0.6%.
bool plane_major(const AttentionParams& p) {
  if (p.causal) return false;
  if (p.head_dim == 64) return bwd64_variant() != kBwd64NoPlaneMajor;
  return p.head_dim == 128 && bwd128_variant() != kBwd128NoPlaneMajor;
}

// The plane group of a causal d = 64 pass launched a block a tile (no head split; bwd_blocks() below gives the
// persistent kernel a block a tile where a tile is kLongCausalSteps steps or more): l2_group (plane_group(), what fits
// L2) unless the schedule model (causal_plane_group(), common/head_split.h; a block costs its query-tile steps over the
// group's heads plus kBlockOverhead, as grouped_key_tiles()) has a wider group 2% or more faster, of groups whose
// blocks take at most two device-fulls (since session 36's call C: wider ones re-read a plane's rows; call D measured
// it). Under GQA a block runs the group's query heads, so it is long beside a SM's share of the grid, and groups of one
// or two planes start the last groups' longest key tiles a block or more late: 40 q / 8 kv heads, batch 1, d = 64 ran
// 0.928x / 0.962x torch-cudnn at N = 3300 / 7100 (results/h200/s35/E/), groups of 2 / 1 planes modelled 1.29x / 1.21x
// the makespan of 4; session 36's call D (results/h200/s36/D/): 1.030-1.371x the L2 groups on 21 shapes, 1.094-1.338x
// torch-cudnn. The causal d = 128 passes have the key-tail order for this (grouped_key_tiles()). The d = 64 head-split
// kernel's virtual planes take it too since session 37 (split_causal_group(): `heads` the subset's query heads,
// kv_planes the virtual planes, `split` true: split_causal_plane_group(), one group where that models 2% faster).
// pgl2: l2_group. FB_SM90_BWD64_PG=G forces G planes (virtual planes on a head split) a group (clamped to 1 .. the
// planes; for probes and A/B runs). Cached per shape.
int causal_group(const AttentionParams& p, std::int64_t kv_planes, int l2_group, int block_n, int block_m, int heads,
                 bool split = false) {
  if (bwd64_variant() == kBwd64PlaneGroupL2) return l2_group;
  static fb::settings::PerOverlay<int> forced_cache;
  const int& forced = forced_cache.get([] {
    const char* e = fb::settings::get("FB_SM90_BWD64_PG");
    const std::string v = e != nullptr ? e : "";
    if (v.empty()) return 0;
    const int g = std::atoi(v.c_str());
    if (g < 1 || std::to_string(g) != v)
      throw std::invalid_argument("FB_SM90_BWD64_PG: '" + v + "' is not a number of planes >= 1");
    return g;
  });
  if (forced > 0) return int(std::min<std::int64_t>(forced, kv_planes));
  constexpr double kBlockOverhead = 3.0;
  using Key = std::tuple<int, int, int, std::int64_t, int, int, int, int, bool>;
  static std::mutex mu;
  static std::map<Key, int> cache;
  const int sms = current_sm_count();
  const Key key{p.seq_q, p.seq_k, heads, kv_planes, l2_group, block_n, block_m, sms, split};
  {
    std::lock_guard<std::mutex> lock(mu);
    if (const auto it = cache.find(key); it != cache.end()) return it->second;
  }
  const std::vector<double> cost = causal_key_tile_costs(p, block_n, block_m, heads, kBlockOverhead);
  const int group = int(split ? split_causal_plane_group(cost, kv_planes, l2_group, sms)
                              : causal_plane_group(cost, kv_planes, l2_group, sms));
  std::lock_guard<std::mutex> lock(mu);
  cache.emplace(key, group);
  return group;
}

// The plane group a pass of Tr's unsplit d = 64 kernels runs under a causal mask where it is launched a block a tile
// (bwd_blocks()): causal_group()'s; 0 for every other pass (no mask, the persistent launch, other kernels). One place
// for launch() and backward_causal_plane_group().
// GQA passes in the dynamic tile order take it too since session 51 (`dynpg`, its call D; dyn and dynshort keep the
// L2 group): the order keeps the tiles in flight a window of the launch order, as the hardware's block scheduler does
// for a block-a-tile launch.
template <typename Tr> int unsplit_causal_group(const AttentionParams& p) {
  if constexpr (Tr::kHeadDim != 64 || Tr::kHeadSplit || Tr::kKeyTail) {
    return 0;
  } else {
    if (!p.causal) return 0;
    const std::int64_t kv_planes = std::int64_t(p.batch) * p.kv_heads;
    const long long n_tiles = (p.seq_k + Tr::kBlockN - 1) / Tr::kBlockN * kv_planes;
    const long long blocks =
        Tr::kPersistent ? bwd_blocks(n_tiles, true, longest_steps_of<Tr>(p), Tr::kDynTiles) : n_tiles;
    const PersistMode forced = persist_forced();
    const bool dyn_group =
        Tr::kDynTiles && (forced == kPersistAuto || forced == kPersistDynLong) && p.group() > 1;
    if (blocks != n_tiles && !dyn_group) return 0;
    return causal_group(p, kv_planes, plane_group(p, kv_planes, p.group()), Tr::kBlockN, Tr::kBlockM, p.group());
  }
}

// The plane group (of virtual planes: a K/V plane and a subset of its query heads) a causal pass of Tr's d = 64
// head-split kernel (launched a block a unit) runs `split` subsets in: causal_group()'s, the bounded group unless one
// group models 2% faster; 0 for every other pass and under splitone and pgl2 (every virtual plane in one group, key
// tiles outermost: the order before session 37). Session 37's call A (results/h200/s37/A/, three interleaved rounds
// against splitone): 0.995-1.061x on fourteen causal d = 64 MQA / GQA shapes (geomean 1.020; the GQA d = 64 grid's
// 32 q / 1 kv batch 4 N = 4096 row 1.053x), controls 1.001x / 1.008x. One place for launch() and
// backward_causal_plane_group().
template <typename Tr> int split_causal_group(const AttentionParams& p, int split) {
  if constexpr (Tr::kHeadDim != 64 || !Tr::kHeadSplit || Tr::kKeyTail) {
    return 0;
  } else {
    const int v = bwd64_variant();
    if (!p.causal || split <= 1 || v == kBwd64SplitOneGroup || v == kBwd64PlaneGroupL2) return 0;
    const std::int64_t virtual_planes = std::int64_t(p.batch) * p.kv_heads * split;
    const int heads = p.group() / split;
    return causal_group(p, virtual_planes, plane_group(p, virtual_planes, heads), Tr::kBlockN, Tr::kBlockM, heads,
                        true);
  }
}

// Which pre-pass: this file's at d = 64 and 128 (measured: 68 us against the portable one's 186 at
// 16k tokens x 2048, +10-14% at d = 64 N = 1024, +1.3% at d = 128 N = 1024), the portable one at
// d = 256 (not timed there); FB_SM90_BWD_PREPASS=own or =portable picks one for every head dim.
bool own_prepass(int head_dim) {
  static fb::settings::PerOverlay<int> forced_cache;
  const int& forced = forced_cache.get([] {  // 0 by head dim, 1 own, -1 portable
    const char* e = fb::settings::get("FB_SM90_BWD_PREPASS");
    const std::string v = e != nullptr ? e : "";
    return v == "own" ? 1 : v == "portable" ? -1 : 0;
  });
  return forced != 0 ? forced > 0 : head_dim == 64 || head_dim == 128;
}
// Whether Tr's backward runs this file's pre-pass (bwd_prepass_sm90_kernel) rather than the portable one.
template <typename Tr> bool prepass_is_own() {
  return own_prepass(Tr::kHeadDim) || Tr::kQ80;  // Q80: 80-query padding, which only this one writes
}

// A backward's launches (FB_SM90_BWD_LAUNCHES: `default`, or a comma-separated list of `separate` or `fused` (not
// both) and the probe `pdl`; anything else is refused). Read once (per variant:
// common/settings.h).
// `fused` (session 44's probe, the default since call N: session 47's rule in docs/perf-notes.md): a head split's
// launches. `separate` runs six (a memset of its fp32 dK, dV accumulators, the pre-pass, the main kernel and a convert
// each for dQ, dK and dV); `fused` three, the pre-pass zeroing the accumulators (own_prepass(); the portable one: the
// memset before it, four) and one kernel converting all three (bwd_convert_split_kernel), where its grid fits one
// launch.
// `pdl` (session 45, call J's rule in docs/perf-notes.md): every launch after the first kernel of a backward as a
// programmatic dependent (common/pdl.cuh) of the kernel before it: the main kernel of the pre-pass (where that is this
// file's kernel and no memset comes between), each convert of the kernel before it. The pre-pass and the main kernel
// let their dependents start as their own blocks start (pdl_launch_dependents), so the next kernel's blocks take the
// SMs that free while the last ones run, and its launch and set-up (the main kernel's barriers) overlap them; every
// kernel that may run as a dependent waits for the one before it (pdl_wait_primary) before it touches memory.
// Session 13 ran the main kernel and dQ convert of non-causal passes so (0.996-1.018x at 16k tokens, removed); the
// probe is for the short backwards (tens of microseconds, where a boundary is a few percent).
struct LaunchSetting {
  bool fused = true;
  bool pdl = false;
};
const LaunchSetting& launch_setting() {
  static fb::settings::PerOverlay<LaunchSetting> setting_cache;
  const LaunchSetting& setting = setting_cache.get([] {
    const char* e = fb::settings::get("FB_SM90_BWD_LAUNCHES");
    const std::string v = e != nullptr ? e : "";
    LaunchSetting st;
    if (v.empty() || v == "default") return st;
    bool separate = false, fused = false;
    std::size_t at = 0;
    while (at <= v.size()) {
      const std::size_t comma = std::min(v.find(',', at), v.size());
      const std::string word = v.substr(at, comma - at);
      if (word == "fused") {
        fused = true;
      } else if (word == "separate") {
        separate = true;
      } else if (word == "pdl") {
        st.pdl = true;
      } else {
        throw std::invalid_argument("FB_SM90_BWD_LAUNCHES: '" + v +
                                    "' is not default, or a comma-separated list of separate or fused, and pdl");
      }
      at = comma + 1;
    }
    if (separate && fused)
      throw std::invalid_argument("FB_SM90_BWD_LAUNCHES: '" + v + "' names both separate and fused");
    st.fused = !separate;
    return st;
  });
  return setting;
}
bool separate_launches() { return !launch_setting().fused; }

// split: head_split(p) (the kHeadSplit traits when > 1); dkv_acc: its zeroed dK, dV accumulators (the query tail's,
// kQTail: zeroed here).
template <typename Tr>
void launch(const AttentionParams& p, float* lse_pad, float* d_pad, float* dq_acc,
            cudaStream_t stream, int split = 1, float* dkv_acc = nullptr) {
  const Dtype t = p.dtype;
  const int seq_pad = seq_pad_of<Tr>(p);
  BwdParams prm{};
  const std::int64_t q_planes = std::int64_t(p.batch) * p.heads;
  const std::int64_t kv_planes = std::int64_t(p.batch) * p.kv_heads;
  encode_bhsd_map(&prm.tm_q, t, p.q, p.head_dim, p.seq_q, q_planes, Tr::kChunkElems, Tr::kBlockM);
  encode_bhsd_map(&prm.tm_do, t, p.dout, p.head_dim, p.seq_q, q_planes, Tr::kChunkElems,
                  Tr::kBlockM);
  encode_bhsd_map(&prm.tm_k, t, p.k, p.head_dim, p.seq_k, kv_planes, Tr::kChunkElems, Tr::kBlockN);
  encode_bhsd_map(&prm.tm_v, t, p.v, p.head_dim, p.seq_k, kv_planes, Tr::kChunkElems, Tr::kBlockN);
  prm.lse = lse_pad;
  prm.dsum = d_pad;
  prm.dq_acc = dq_acc;
  prm.dk = p.dk;
  prm.dv = p.dv;
  prm.heads = p.heads;
  prm.kv_heads = p.kv_heads;
  prm.group = p.group();
  prm.seq_pad = seq_pad;
  prm.kv_planes = int(kv_planes);
  const std::int64_t key_tiles = (p.seq_k + Tr::kBlockN - 1) / Tr::kBlockN;
  prm.key_tiles = int(key_tiles);
  prm.plane_group = plane_group(p, kv_planes, p.group());
  if (!Tr::kHeadSplit && plane_major(p)) prm.plane_group = 1;  // a plane's key tiles together
  prm.scale_log2 = float(p.scale * kLog2e);
  prm.scale = float(p.scale);
  prm.mask = p.mask();

  prm.n_tiles = int(key_tiles * kv_planes);
  if constexpr (Tr::kHeadSplit) {
    // Virtual K/V heads (a head and a subset of its query heads), all in one plane group: key tiles
    // outermost, so that under a causal mask the longest units start first (causal d = 64: split_causal_group()'s
    // plane groups, below).
    prm.kv_heads = p.kv_heads * split;
    prm.group = p.group() / split;
    prm.kv_planes = int(kv_planes * split);
    prm.plane_group = prm.kv_planes;
    prm.n_tiles = int(key_tiles * prm.kv_planes);
    prm.head_split = split;
    prm.dkv_acc = dkv_acc;
    // split_key_tail() and non-causal passes (split_plane_groups(): key tiles outermost within each group; every unit
    // is as long as the others, so the order only decides what L2 holds): virtual planes (a subset's rows:
    // p.group() / split query heads) in L2 plane groups.
    if (Tr::kKeyTail || split_plane_groups(p)) {
      prm.plane_group = plane_group(p, prm.kv_planes, prm.group);
    } else if (const int group = split_causal_group<Tr>(p, split); group > 0) {
      prm.plane_group = group;
    }
  }
  long long qtail_units = 0;  // the query tail's extra blocks (kQTail)
  if constexpr (Tr::kQTail || Tr::kTailShare) {  // the shared tail: the persistent grid, tail_share_on()
    const std::int64_t tail = qtail_tiles(p);
    prm.tail_first = prm.n_tiles - int(tail);
    prm.tail_parts = Tr::kQTail ? qtail_parts(p) : 1;
    prm.dkv_acc = dkv_acc;
    if constexpr (Tr::kQTail) qtail_units = tail * (prm.tail_parts - 1);
    FB_CUDA_CHECK(cudaMemsetAsync(dkv_acc, 0, qtail_dkv_floats(p) * sizeof(float), stream));
  }
  if constexpr (Tr::kDynTiles) {  // dkv_acc: the counter, zeroed by the pre-pass
    if (dkv_acc == nullptr) throw std::logic_error("flash-sm90 backward: dyn without its tile counter");
    prm.dkv_acc = dkv_acc;
  }
  if constexpr (Tr::kKeyTail)
    prm.grouped_tiles = grouped_key_tiles(p, prm.key_tiles, prm.kv_planes, prm.plane_group, Tr::kBlockN,
                                          Tr::kBlockM, prm.group);

  const auto kernel = flash_sm90_bwd_kernel<Tr>;
  FB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     int(Tr::kSmemBytes)));
  const long long blocks = Tr::kPersistent ? bwd_blocks(prm.n_tiles, p.causal, longest_steps_of<Tr>(p), Tr::kDynTiles)
                                           : prm.n_tiles + qtail_units;
  if (const int group = unsplit_causal_group<Tr>(p); group > 0) prm.plane_group = group;
  // `pdl`: each launch below a programmatic dependent of the kernel before it, the main kernel where that is this
  // file's pre-pass (the query tail's memset above, or the portable pre-pass's, would come between).
  const bool pdl = launch_setting().pdl;
  launch_kernel(kernel, dim3(unsigned(blocks)), Tr::kThreads, Tr::kSmemBytes, stream,
                pdl && prepass_is_own<Tr>() && !Tr::kQTail && !Tr::kTailShare, prm);

  const int n_qtiles = seq_pad / Tr::kDqTileRows;
  const std::int64_t convert_blocks = q_planes * n_qtiles * Tr::kDqBlocks;
  if constexpr (Tr::kHeadSplit && !Tr::kQTail && !Tr::kTailShare) {
    using DkvTr = BwdTraits<typename Tr::Elem, Tr::kHeadDim, kBwdHeadSplit>;
    const int n_ktiles = int(key_tiles * (Tr::kBlockN / Tr::kDqRows));
    const std::int64_t kv_blocks = kv_planes * n_ktiles * Tr::kDqBlocks;
    const std::int64_t blocks_all = convert_blocks + 2 * kv_blocks;
    if (!separate_launches() && blocks_all <= kMaxGridX) {  // dQ, dK and dV in one launch
      static_assert(DkvTr::kDqWgFloats == Tr::kDkvBlockFloats, "dK, dV partial blocks as DkvTr's dQ blocks");
      SplitConvert c{};
      c.dq_acc = dq_acc;
      c.dq = p.dq;
      c.dkv_acc = dkv_acc;
      c.dk = p.dk;
      c.dv = p.dv;
      c.dq_blocks = convert_blocks;
      c.kv_blocks = kv_blocks;
      c.seq_q = p.seq_q;
      c.n_qtiles = n_qtiles;
      c.seq_k = p.seq_k;
      c.n_ktiles = n_ktiles;
      launch_kernel(bwd_convert_split_kernel<Tr, DkvTr, Tr::kQ80>, dim3(unsigned(blocks_all)), Convert<Tr>::kThreads, 0,
                    stream, pdl, c);
      return;
    }
  }
  const auto convert_dq = [] {
    if constexpr (Tr::kQ80) return bwd_convert_dqt_kernel<Tr>;
    else return bwd_convert_dq_kernel<Tr>;
  }();
  launch_kernel(convert_dq, dim3(unsigned(convert_blocks)), Convert<Tr>::kThreads, 0, stream, pdl,
                static_cast<const float*>(dq_acc), static_cast<typename Tr::Elem*>(p.dq), p.seq_q, n_qtiles);
  if constexpr (Tr::kQTail || Tr::kTailShare) {
    // The tail's dK and dV rows from their accumulators.
    using DkvTr = BwdTraits<typename Tr::Elem, Tr::kHeadDim, kBwdHeadSplit>;
    static_assert(DkvTr::kDqWgFloats == Tr::kDkvBlockFloats, "dK, dV partial blocks as DkvTr's dQ blocks");
    const std::int64_t acc_blocks = 2 * qtail_tiles(p) * (Tr::kBlockN / Tr::kWgKeys) * Tr::kDqBlocks;
    launch_kernel(bwd_convert_qtail_kernel<Tr, DkvTr>, dim3(unsigned(acc_blocks)), Convert<DkvTr>::kThreads, 0, stream,
                  pdl, prm);
  }
  if constexpr (Tr::kHeadSplit) {
    // dK and dV from their accumulators: the same block layout as the 64-query kernel's dQ, per K/V
    // plane and 64 keys (also under Q80: its partial blocks are 64 keys, kDkvBlockFloats).
    using DkvTr = BwdTraits<typename Tr::Elem, Tr::kHeadDim, kBwdHeadSplit>;
    static_assert(DkvTr::kDqWgFloats == Tr::kDkvBlockFloats, "dK, dV partial blocks as DkvTr's dQ blocks");
    const int n_ktiles = int(key_tiles * (Tr::kBlockN / Tr::kDqRows));
    const std::int64_t kv_blocks = kv_planes * n_ktiles * Tr::kDqBlocks;
    const std::int64_t acc_floats = kv_blocks * Tr::kDkvBlockFloats;
    launch_kernel(bwd_convert_dq_kernel<DkvTr>, dim3(unsigned(kv_blocks)), Convert<DkvTr>::kThreads, 0, stream, pdl,
                  static_cast<const float*>(dkv_acc), static_cast<typename Tr::Elem*>(p.dk), p.seq_k, n_ktiles);
    launch_kernel(bwd_convert_dq_kernel<DkvTr>, dim3(unsigned(kv_blocks)), Convert<DkvTr>::kThreads, 0, stream, pdl,
                  static_cast<const float*>(dkv_acc + acc_floats), static_cast<typename Tr::Elem*>(p.dv), p.seq_k,
                  n_ktiles);
  }
}

// extra, extra_bytes (a multiple of 16): a region the pre-pass zeroes too (nullptr, 0: none).
template <typename Tr>
void launch_prepass(const AttentionParams& p, float* lse_pad, float* d_pad, float* dq_acc,
                    cudaStream_t stream, float* extra = nullptr, std::size_t extra_bytes = 0) {
  using Elem = typename Tr::Elem;
  using Pp = Prepass<Elem, Tr::kHeadDim>;
  const int seq_pad = seq_pad_of<Tr>(p);
  const std::int64_t padded_rows = std::int64_t(p.batch) * p.heads * seq_pad;
  const std::int64_t row_blocks = (padded_rows + Pp::kRowsPerBlock - 1) / Pp::kRowsPerBlock;
  const std::int64_t extra_f4 = std::int64_t(extra_bytes / sizeof(float4));
  constexpr std::int64_t kF4PerBlock = std::int64_t(Pp::kThreads) * Pp::kZeroF4PerThread;
  std::int64_t blocks = row_blocks + (extra_f4 + kF4PerBlock - 1) / kF4PerBlock;
  if (blocks > kMaxGridX) {  // past one grid: the region by a memset
    FB_CUDA_CHECK(cudaMemsetAsync(extra, 0, extra_bytes, stream));
    blocks = row_blocks;
  }
  bwd_prepass_sm90_kernel<Elem, Tr::kHeadDim><<<unsigned(blocks), Pp::kThreads, 0, stream>>>(
      static_cast<const Elem*>(p.o), static_cast<const Elem*>(p.dout), static_cast<const float*>(p.lse),
      lse_pad, d_pad, reinterpret_cast<float4*>(dq_acc), padded_rows, p.seq_q, seq_pad, row_blocks,
      reinterpret_cast<float4*>(extra), extra_f4);
  FB_CUDA_CHECK_LAUNCH();
}

}  // namespace

const char* backward_unsupported(const AttentionParams& p) {
  if (p.dtype != Dtype::fp16 && p.dtype != Dtype::bf16)
    return "flash-sm90 backward: dtype must be fp16 or bf16";
  if (p.head_dim != 64 && p.head_dim != 128 && p.head_dim != 256)
    return "flash-sm90 backward: head_dim must be 64, 128 or 256";
  // d = 256 takes 64 keys per block (both consumers on the same keys, flash_sm90_bwd_traits.h).
  const int key_tile = p.head_dim == 256 ? 64 : 128;
  const std::int64_t key_tiles = (std::int64_t(p.seq_k) + key_tile - 1) / key_tile;
  if (key_tiles * p.batch * p.kv_heads > kMaxGridX)
    return "flash-sm90 backward: batch * kv_heads * seq_k exceeds the grid limit";
  // The dQ convert: one block per (batch * head, 64-query tile, 64-column block).
  const std::int64_t qtiles = flash::backward_padded_seq(p.seq_q) / 64;
  if (qtiles * (p.head_dim / 64) * p.batch * p.heads > kMaxGridX)
    return "flash-sm90 backward: batch * heads * seq_q exceeds the grid limit";
  return nullptr;
}

std::size_t backward_smem_bytes(const AttentionParams& p) {
  if (backward_unsupported(p) != nullptr) return 0;
  return with_traits(p, [](auto tr) { return std::size_t(decltype(tr)::kSmemBytes); });
}

int backward_key_tile(const AttentionParams& p) {
  if (backward_unsupported(p) != nullptr) return 0;
  return with_traits(p, [](auto tr) { return int(decltype(tr)::kBlockN); });
}

int backward_head_split(const AttentionParams& p) {
  return backward_unsupported(p) != nullptr ? 1 : head_split(p);
}

int backward_tail_split(const AttentionParams& p) {
  return backward_unsupported(p) != nullptr ? 1 : qtail_parts(p);
}

bool backward_short_step(const AttentionParams& p) {
  if (backward_unsupported(p) != nullptr || head_split(p) > 1) return false;
  return with_traits(p, [](auto tr) { return decltype(tr)::kShort; });
}

int backward_causal_plane_group(const AttentionParams& p) {
  if (backward_unsupported(p) != nullptr) return 0;
  if (const int split = head_split(p); split > 1)
    return with_split_traits(p, [&](auto tr) { return split_causal_group<decltype(tr)>(p, split); });
  return with_traits(p, [&](auto tr) { return unsplit_causal_group<decltype(tr)>(p); });
}

bool backward_tail_share(const AttentionParams& p) {
  return backward_unsupported(p) == nullptr && tail_share_on(p);
}

bool backward_dyn_tiles(const AttentionParams& p) {
  return backward_unsupported(p) == nullptr && dyn_tiles_on(p);
}

std::size_t backward_workspace_bytes(const AttentionParams& p) {
  return workspace_layout(p).total;
}

void run_backward(const AttentionParams& p, const Context& ctx) {
  if (const char* why = backward_unsupported(p)) throw std::invalid_argument(why);
  if (!p.q || !p.k || !p.v || !p.o || !p.lse || !p.dout || !p.dq || !p.dk || !p.dv)
    throw std::invalid_argument(
        "flash-sm90 backward: q, k, v, o, lse, dout, dq, dk and dv must be device pointers");
  if (p.workspace == nullptr)
    throw std::invalid_argument("flash-sm90 backward: params.workspace is null (needs " +
                                std::to_string(backward_workspace_bytes(p)) + " bytes)");
  const auto stream = static_cast<cudaStream_t>(ctx.stream);
  const Workspace ws = workspace_layout(p);
  auto* base = static_cast<unsigned char*>(p.workspace);
  auto* lse_pad = reinterpret_cast<float*>(base + ws.lse);
  auto* d_pad = reinterpret_cast<float*>(base + ws.d);
  auto* dq_acc = reinterpret_cast<float*>(base + ws.dq);
  // The pre-pass also zeroes the whole dQ accumulator (seq_pad rows per head: whole tiles), and zero_bytes of
  // zero (a head split's dK, dV accumulators) where it is this file's (the portable one: a memset first).
  auto prepass = [&](auto tr, float* zero = nullptr, std::size_t zero_bytes = 0) {
    using Tr = decltype(tr);
    if (prepass_is_own<Tr>()) {
      launch_prepass<Tr>(p, lse_pad, d_pad, dq_acc, stream, zero, zero_bytes);
    } else {
      if (zero_bytes > 0) FB_CUDA_CHECK(cudaMemsetAsync(zero, 0, zero_bytes, stream));
      flash::backward_prepass(p, lse_pad, d_pad, dq_acc, /*dq_padded=*/true, /*lse_log2=*/true, ctx);
    }
  };
  if (const int split = head_split(p); split > 1) {
    auto* dkv_acc = reinterpret_cast<float*>(base + ws.dkv);
    const std::size_t dkv_bytes = ws.total - ws.dkv;
    with_split_traits(p, [&](auto tr) {
      using Tr = decltype(tr);
      if (separate_launches()) {
        FB_CUDA_CHECK(cudaMemsetAsync(dkv_acc, 0, dkv_bytes, stream));
        prepass(tr);
      } else {
        prepass(tr, dkv_acc, dkv_bytes);
      }
      launch<Tr>(p, lse_pad, d_pad, dq_acc, stream, split, dkv_acc);
    });
    return;
  }
  with_traits(p, [&](auto tr) {
    using Tr = decltype(tr);
    auto* extra = reinterpret_cast<float*>(base + ws.dkv);
    if constexpr (Tr::kDynTiles)
      prepass(tr, extra, kWsAlign);  // the dynamic order's tile counter, zeroed
    else
      prepass(tr);
    launch<Tr>(p, lse_pad, d_pad, dq_acc, stream, 1, Tr::kQTail || Tr::kTailShare || Tr::kDynTiles ? extra : nullptr);
  });
}

}  // namespace fb::cuda::flash_sm90
