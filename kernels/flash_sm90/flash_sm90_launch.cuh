// Definition of run_fwd<T, D> and the launcher of one traits configuration. Included only by the
// instantiation files flash_sm90_hdim*.cu (and by out-of-tree harnesses that time other traits).
#pragma once

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdlib>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <cuda_runtime.h>

#include "common/check.h"
#include "common/device_caps.h"
#include "common/settings.h"
#include "common/softmax.cuh"
#include "flash_sm90/flash_sm90_config.h"
#include "flash_sm90/flash_sm90_kernel.cuh"
#include "flash_sm90/flash_sm90_tma.h"

namespace fb::cuda::flash_sm90 {

// Blocks for n_work work tiles with the static round-robin schedule (produce_ring; the fp8 forward):
// persistent (one block per SM) hides each tile's prologue and epilogue under the next one's loads:
// 7-17% less kernel time at N <= 1024 on the H200 (docs/perf-notes.md). A static round-robin
// balances a causal triangle worse than the hardware's block scheduler, though, and once the longest
// tile spans kLongCausalKvTiles K/V tiles that costs more than it saves (d = 128 causal, N = 8192:
// +3%), so long causal passes launch one block per tile. `longest_kv_tiles` is 0 without causal.
inline long long fwd_blocks(long long n_work, int longest_kv_tiles) {
  constexpr int kLongCausalKvTiles = 48;
  if (longest_kv_tiles >= kLongCausalKvTiles) return n_work;
  return std::min<long long>(n_work, current_sm_count());
}

// Blocks for n_work work tiles with the dynamic schedule (produce_ring_dynamic; the 16-bit forward):
// persistent at every shape, the blocks taking tiles from a tile counter, which balances the causal
// triangle's tiles of unequal length (session 6; until then the 16-bit forward used the rule above).
inline long long fwd_blocks_dynamic(long long n_work) {
  return std::min<long long>(n_work, current_sm_count());
}

// Timing probes, so that one binary times variants side by side in the same device call.
// FB_SM90_FWD_PROBE is a comma-separated list of:
//   static   the schedule before the tile counter (static round-robin; one block per tile for long
//            causal passes, fwd_blocks)
//   noskip   warpgroups run every K/V tile of their block (no kSkipUnseen)
//   eager    O's TMA store is waited for right after it is issued (not before the next epilogue)
//   oneq     one Q tile (the next tile's Q loads once the consumers are done with this one's)
//   old      all four: session 5's schedule and epilogue (with today's main loop: until session 8 it also
//            meant session 6's descriptors, nodesc below)
// Variants (d = 64 and 128; other head dims ignore them), each also as no<word> (noxtile, ...): off
// whatever the default (FwdDefaults):
//   xtile    a work tile's last P V in one turn with the next tile's S_0, its epilogue after both
//            (kOptXTile; d = 128 only; default since session 8's call A)
//   l2small  L2 plane groups half as large (K/V of a group at most a sixth of L2, not a third; default
//            at d = 128 since session 8's call A)
//   early    O rescaled under S_{j+1}'s wgmmas, before P_j V_j's issue (kOptEarlyRescale; at d = 128
//            on top of xtile since session 9, `early,noxtile` is session 8's `early`; default at d = 128
//            since session 9's call A)
//   nopp     no ping-pong: the consumer warpgroups issue their GEMMs without taking turns (no xtile)
//   trec     the producer hands the consumers each work tile's plane, first row and K/V tile count
//            (kOptTileRec), which they derived from its index (two integer divisions) at every tile start
//            (session 10; default at d = 128 since session 11's call A)
//   l2hint   the TMA loads under L2 policies: Q evict-first, K/V evict-last (kOptL2Hint; session 11; on top
//            of the head dim's shipped variant only: with another variant word it is ignored)
//   ustage   the main loop once per ring stage of a work tile's first K/V tile, two K/V tiles a pass, so that
//            every stage in it is a literal and the wgmma descriptors and barrier addresses are built on the
//            uniform datapath (kOptUniformStage; session 12; on top of the head dim's shipped variant only;
//            default at d = 64 since session 12's call A)
//   tailsplit d = 64 non-causal launches (the default since session 15's call A; `notailsplit` runs the kernel shipped
//            before it, unsplit): the launch's last, partial round of work tiles split along K/V into about as many
//            parts as there are idle SMs, their partial O and LSE (in the launch's workspace) merged by a second
//            kernel (kOptTailSplit, fwd_tail_split, flash_sm90_split.h, flash_sm90_split_combine_kernel). Aimed at 8
//            query heads (n_work = 688 / 704 192-row tiles on 132 SMs at N = 16k / 4k: 5.2 / 5.3 rounds run as 6).
//            Call A: 1.058 / 1.084x at b4-h8 N = 4k, 1.096 / 1.076x at b1-h8 16k, 1.012 / 1.006x at b4-h32 4k; parts
//            of 4 K/V tiles (b16-h32 N = 1k) 0.990 / 0.972x, hence parts of at least TailSplitLimits::kMinKvTiles.
//            On d = 64's shipped variant only: another variant word (trec, l2hint, noustage, early, nopp, oneq, static,
//            old) runs its variant unsplit, and naming `tailsplit` beside one is an error. Causal launches, those whose
//            plan splits nothing (no whole round before a partial one, a last round over half full, parts under
//            kMinKvTiles) and those given no workspace run the unsplit kernel (causal tiles differ in length: the tile
//            counter balances them)
//   lazyres  d = 64 (the default since session 16's call A; `nolazyres` runs the kernel shipped before it): d = 64's
//            shipped variant (ustage, the tail split where it splits) with kOptLazyRescale: a warp moves its rows'
//            running max only when one of them rises more than kLazyRescaleLog2 (a factor 256) above it, so most K/V
//            tiles skip O's 32 multiplies (flash_sm90_kernel.cuh softmax_step_lazy). Call A: 1.017x over six
//            non-causal rows (1.033x at 33 heads x 12288, the loop alone), 1.006x over four causal ones. Another
//            variant word runs its variant without it; naming `lazyres` beside one is an error
//   qalign   causal: query tiles aligned to the end of the sequence, so that a partial tile (seq_q not a
//            multiple of kBr: d = 64's 192 rows at N = 512, 1024) is the first, shortest one, its missing
//            rows before row 0, rather than the last, longest one, with warpgroups that sit out all its
//            K/V tiles (FwdParams::q_shift; default at d = 64 since session 10's call A; the word applies
//            at d = 256 too)
//   pairq    d = 64 and 128 non-causal launches (the default at d = 128 since session 18's call A; `nopairq` the order
//            before it): the work tiles in the plane-major order (common/tile_order.h plane_major_tile: a plane's query
//            tiles on consecutive tickets, its last first), so that blocks taking consecutive tickets at about the same
//            time stream one plane's K/V together and the L2 request coalescer serves two SMs' identical requests with
//            one L2 read. The same kernels, launched with plane_group = 1 (plane_major_tile is grouped_tile's order
//            with groups of one plane): no device code of its own. With `static` (t = blockIdx.x + k x grid on 132
//            blocks), blocks 2i and 2i + 1 run two query tiles of one plane in every round where q_tiles is even. Call
//            A (two runs, pairq / default): d = 128 N <= 2k geomean 1.030 / 1.031x, N = 4k 1.007 / 1.042x, d = 64 1.010
//            / 1.008x (under its rule: off there); ncu at d = 128 N = 1k: 0.7-0.8M -> 18.3-18.7M sectors coalesced in
//            hardware, L2 reads 0.50x, the clock at the 692 W cap 1710 -> 1785 MHz. Causal launches and d = 256
//            ignore it
//   shortstatic d = 128 non-causal launches in pairq's order whose work tiles are at most
//            FwdDefaults::kShortStaticMaxKvTiles (4) K/V tiles long (N <= 512 at seq_q = seq_k): the static
//            round-robin (`static`'s launch there, on min(n_work, SMs) blocks) in place of the tile counter
//            (short_tile_static, flash_sm90_split.h; the default at d = 128: FwdDefaults::kShortStaticHeadDim,
//            `noshortstatic` = the tile counter there). Host-only: the kernels are the default's. Session 19's call B
//            read the static launch 1.022x over the tile counter at d = 128 N = 512 (4 K/V tiles a tile; ncu 7.4M ->
//            11.5M sectors coalesced, 1860 -> 1898 MHz at the cap) and level at 5 / 6 / 8 / 12 K/V tiles; session 20's
//            call A (results/h200/s20/callA/sm90fwd-static) read `static` 1.015x over seven N = 256-512 rows no
//            config names (N = 512 1.020x, 1.001-1.027x a row; N = 640 0.993x), its pre-registered rule met. Causal launches,
//            `nopairq`, d = 64 (whose shipped variant runs the tile counter's tail split) and d = 256 ignore it
//   trec64   d = 64 (the default since session 20's call B, FwdDefaults::kTileRec64; `notrec64` the kernel before):
//            d = 64's shipped variant (ustage, lazyres) with kOptTileRec, on launches the tail split does not split:
//            the consumers read each work tile's plane, first row and K/V tile count from the producer's record (trec,
//            d = 128's default since session 11) instead of deriving them with work_tile's two integer divisions by
//            launch values between the Q wait and the first turn (SASS, bf16: ~120 -> ~46 instructions from the Q wait
//            to the K_0 wait; the K/V loop the same code). A work tile's start is on the three warpgroups' rotation at
//            the tile boundary, paid once a work tile: 3072 tiles on 132 SMs at d = 64 N = 512 / 1k (16k tokens, 32
//            heads), 1-4 K/V tiles a tile at N = 512. Session 11 (before ustage and lazyres) read `trec` at d = 64
//            1.037x causal and 1.015x non-causal at N = 512, level at 1k, 0.962x at 16k (its loop then differed).
//            Session 20's call B: 1.026x over seven d = 64 N <= 640 rows (causal 1.036x), 1.011x at N = 1k, 1.012x at
//            causal 8k; with fastlse 1.056x / 1.049x / 1.015x (results/h200/s20/callB/sm90fwd)
//            Split launches (d = 64 non-causal, N >= 2k on the issue-13 grid), `nolazyres`, another variant word and
//            other head dims ignore it
//   fastlse  on top of trec64 only (the default since session 20's call B, FwdDefaults::kFastLse64; `nofastlse` trec64
//            alone; naming it beside `notrec64` is an error): the epilogue's row-sum inverses and LSE logarithms by
//            rcp.approx / lg2.approx (kOptFastLse), not IEEE division and log2f's ~35-instruction polynomial a row
//            inside the LSE-storing lanes' branch (the two rows' chains in series there), between a work tile's last
//            P V wait and its O store
//   fastlse128 d = 128 (the default since session 29's call A, FwdDefaults::kFastLse128; `nofastlse128` runs the
//            kernel before it): d = 128's shipped variant (desc32, early, xtile, trec) with fastlse's epilogue
//            (kOptFastLse, kOpt 8215); another variant word runs its variant without it. Call A: 1.007x over 17
//            non-causal rows, 1.012x over 17 causal ones (N = 512: 1.019-1.030x)
//   k0rec    d = 128 launches whose work tiles are at most FwdDefaults::kK0RecMaxKvTiles (16) K/V tiles long (the
//            default since session 57's calls A and B, FwdDefaults::kK0RecHeadDim; `k0rec` runs it at every length and
//            at d = 64 too, `nok0rec` nowhere), on the shipped variants that carry fastlse's epilogue (d = 128's, and
//            d = 64's unsplit launches): the producer issues the next work tile's Q and K_0 inside this tile's last K/V
//            step, before that step's V (kOptK0Rec, produce_ring_k0_rec), keeping one tile in registers (session 56's
//            k0ahead kept two and took a 40-byte stack frame). Call A (an H100, results/h100/s57/A): 1.029x over eight
//            short rows drawn for it (d = 128 1.031-1.097x, d = 64 0.984-0.991x), the mid rows (5-12 K/V tiles) d = 128
//            1.018 / 1.037x and d = 64 0.979-0.987x. Call B (results/h100/s57/B): at every length against the default
//            up to 4, 1.010x over eight d = 128 rows of 6-16 K/V tiles drawn for it (1.002-1.016x). `oneq`, split
//            launches and other variants ignore it
//   ones     d = 64 inference forwards (AttentionParams::lse null: the C API's forward without call.lse), on the
//            shipped variant's unsplit launches (trec64, fastlse; session 70, default off): P V with N = 72 over V and
//            a tile of ones (FwdTraits::kOnesSum), so O's accumulator carries P's row sums and the softmax adds none
//            (64 FADD a K/V tile and thread). Session 9's `ones` measured 1.023-1.031x at d = 64 but its LSE, from
//            those sums of 16-bit P, missed flashbench's LSE bound; an inference forward writes no LSE, and O = sum
//            P V / sum P divides by the weights applied. A forward asked for its LSE, split launches and other
//            variants ignore it
// Measured and removed (docs/perf-notes.md has each one's result): session 7's `order` (the softmax
// pinned ahead of the P V wait: 2-6% slower), `nodesc` (64-bit descriptor adds: 2% slower) and with
// it `s6` (which implied nodesc), a 3-stage K/V ring, d = 64 on two warpgroups x 192-key
// tiles, d = 128 on 176-key tiles; session 8's `lateepi` (the epilogue under the next tile's S_0:
// 0.97-0.98x at d = 64, below xtile at d = 128) and `lean` (level in sessions 7 and 8); session 9's
// `pin` (the P V wait held below the softmax on top of xtile, session 7's `order` again: 0.93-0.97x),
// `wg2` (d = 64 on two warpgroups with xtile: 0.95-0.99x) and `ones` (d = 64 row sums from a P V of
// N = 72 over a tile of ones: 1.02-1.04x, but its sums of 16-bit P miss the LSE bound; back in session 70
// for the inference forward, which writes no LSE: above); session 10's
// `xskip` (xtile beside the skip on d = 64's three warpgroups: 0.86-0.98x); session 11's `ostg` (O from
// registers straight to global memory: 0.85-1.00x), `stlate` (d = 128: O staged and stored under the next
// tile's first two-GEMM turn: level, 0.99-1.01x) and `kv4` (d = 64, a 4-stage K/V ring: level); session 12's
// `poly` (one exponential in 8 on the FMA pipe, exp2_poly: 0.93-0.99x alone, below ustage beside it); session
// 13's `kvpf` and `kvpf8` (the producer prefetching each work tile's K/V tiles into L2 with
// cp.async.bulk.prefetch.tensor, 4 or 8 ring loads ahead: 0.92-0.98x and 0.87-0.98x, every row, 16k included);
// session 14's `backoff` and `backoff256` (the producer's barrier waits with a 10 ms / 256 ns suspend-time hint,
// as cuDNN's producer sleeps: geomean 1.003 / 1.002x over nine rows, 0.98-1.03x, no head dim consistently ahead);
// session 14's round-2 `ncalign` (qalign's shift for non-causal launches, d = 64's partial query tile after the full
// ones: 0.99-1.02x, geomean 0.999x over ten rows in call B); session 15's `qahead` (non-causal launches: the Q loads
// and tickets on a second producer thread, each tile's Q loaded as soon as its slot frees: call A at d = 128 geomean
// 0.998 / 0.994x over 11 rows, 0.974-1.017x) and round-2 `fullfirst` (d = 64 non-causal: each plane's partial last
// query tile last in its plane group: call B 1.018 / 1.012x at b16-h32 N = 1k, 0.995 / 0.993x at b32-h32 512, level
// elsewhere; geomean 1.005x over N <= 1k, under its 1.01x rule); session 16's `lazyres128` (the lazy rescale on d = 128's
// shipped variant, where early runs O's 64 multiplies inside the turn: call B 0.993x non-causal, 0.985x causal);
// session 17's (call A) `lazyres2` (lazyres with the warp's vote on its lanes' partial maxima before the quad's
// shuffles: 0.999x d = 64 non-causal, 0.965x causal), `halfdiag` and `halfgemm` (d = 64 causal: a warpgroup's last
// K/V tile on the 64 keys its rows see, GEMMs and softmax / GEMMs only: 0.993x / 0.969x at causal N <= 1k); session
// 17's `mcast` (non-causal: two-block clusters on query tiles 2i, 2i + 1 of a plane, each K/V tile read from L2 once
// and multicast into both: L2 reads 0.56x and the clock at the power cap 1695 -> 1845 MHz, but +17% cycles from the
// pair's coupling through the 2-stage ring: 0.948x at d = 128 N <= 2k in call C; the code is in history at 5d46b87);
// session 18's `cpairq` (causal launches at d = 64 / 128 in the plane-major order with the last ~2 rounds of tiles in
// the causal order: call B 1.007x at d = 64 causal, 1.023x at d = 128 causal, but 0.98M sectors coalesced at d = 64
// N = 1k causal (1.4M for pairq non-causal there), under its rule's 3M; the code is in history at 6acab52); session
// 19's `pinq` (d = 128 non-causal launches in pairq's order on the static round-robin over a grid of whole planes, the
// largest multiple of q_tiles at most the SM count adding no round: call B 1.022x at N = 512 (coalesced 7.4M -> 11.5M
// sectors, 1860 -> 1898 MHz at the cap), but 1.008x over its 132-block rows (N = 768 0.996x, 1536 1.002x), under its
// rule's 1.010x; 128-block grids at N = 1k / 2k 1.011x; `static` runs its launch where q_tiles divides 132; the code is
// in history at 78b1f07); session 56's `k0ahead` (the producer issuing the next work tile's Q and K_0 inside this
// tile's last K/V step, before that step's V: call A 1.001x over ten short rows drawn for it, 0.990-1.034x, the one
// row at 4 K/V tiles a work tile 1.034x; results/h100/s56/A; its producer took a 40-byte stack frame, and the same
// order scoped to short tiles spilled 60 / 48 bytes at d = 128 / 64 past the producer warpgroup's 24 registers, which
// ptxas_spills rejects; the code is in history at 7a8b738); session 57's `k0try` (beside k0rec, the last step's V
// before the next tile's Q and K_0 where its stage is free already, mbarrier.test_wait: session 58's call C, an H100,
// 0.998x of the default over eight d = 64 rows drawn for it, 0.985-1.017x, under its rule's 1.01x; k0rec alone there
// 1.000x; results/h100/s58/C; the code is in history at 36a20f0); session 63's `wide192` and `wide256` (d = 64 on two
// consumer warpgroups x 192-key tiles with the shipped bits, or x 256-key tiles without the intra-warpgroup overlap,
// the in-binary cuDNN 9.14's d = 64 non-causal tile: call D, an H100, def / probe geomean 0.868x and 0.844x over ten
// non-causal rows, 0.757-0.935x a round; results/h100/s63/D; the code is in history at c688375).
// Naming one of those is an error (a run would otherwise time the shipping forward under a variant's name).
// Read once (once per variant: common/settings.h); unset is the shipping forward.

// The variants in the shipping forward (each flipped on only after a measured win; docs/perf-notes.md).
// Session 8's call A (same-process ratios to cudnn, bf16): xtile 1.032 / 1.008 / 1.029x at d = 128
// non-causal N = 1k / 4k / 16k; with l2small 1.057 / 1.022 / 1.019x (l2small alone 1.019 / 1.008 /
// 1.001x); d = 64 causal rows level within the call's +-1.5% (l2small 1.011 / 0.990x).
// Session 9's call A: early on top of xtile at d = 128 1.005 / 1.024x causal N = 1k / 16k, 0.991 / 1.005 /
// 1.045x non-causal N = 1k / 4k / 16k (session 8: 1.015-1.022x alone); at d = 64 (alone) 0.993-1.009x.
struct FwdDefaults {
  static constexpr int kEarlyRescaleHeadDim = 128;  // early where d is this (level at d = 64)
  static constexpr bool kXTile = true;  // where it exists: d = 128
  static constexpr int kL2SmallHeadDim = 128;  // l2small where d is this (measured at d = 128 only)
  static constexpr bool kNoPingPong = false;
  // Session 10's call A (same-process ratios to cudnn, bf16, d = 64 causal): qalign 1.018 / 1.047 / 0.995x at
  // N = 512 / 1024 / 16384 (that call's drift 1.023 / 1.003 / 0.982; non-causal rows, where it changes
  // nothing, 0.987-1.029x). On where measured: d = 64, whose 192-row tiles leave whole warpgroups of a
  // partial tile idle (at d = 128 a partial tile's rows run either way: no skip beside xtile).
  static constexpr int kQAlignHeadDim = 64;
  // Session 11's call A (same-process ratios to cudnn, bf16, non-causal): trec at d = 128 1.037 / 1.002 / 1.003 /
  // 1.020 / 1.017x at N = 512 / 1k / 4k / 8k / 16k (that call's drift 0.988-1.013); at d = 64 mixed (1.037x
  // causal N = 512, 0.962x non-causal 16k), so off there.
  static constexpr int kTileRecHeadDim = 128;
  static constexpr bool kL2Hint = false;
  // Session 12's call A (same-process ratios to cudnn, bf16): ustage at d = 64 1.001 / 1.025 / 1.029 / 1.032x causal
  // and 0.997 / 1.013 / 1.042 / 1.043x non-causal at N = 512 / 1k / 4k / 16k (that call's drift 0.974-1.058); at
  // d = 128 0.984 / 1.016 / 1.001x non-causal at N = 512 / 1k / 4k: level, so off there.
  static constexpr int kUniformStageHeadDim = 64;
  // Session 15's call A (same-process ratios, tailsplit / shipped, bf16, d = 64 non-causal; results/h200/s15/callA/
  // sm90fwd/): 1.058 / 1.084x at b4-h8 N = 4k, 1.096 / 1.076x at b1-h8 16k, 1.012 / 1.006x at b4-h32 4k, 0.990 / 0.972x
  // at b16-h32 1k (parts of 4 K/V tiles: none that short since, TailSplitLimits::kMinKvTiles); causal: never split.
  static constexpr int kTailSplitHeadDim = 64;
  // Session 16's call A (same-process ratios, lazyres / shipped, results/h200/s16/callA/sm90fwd/): d = 64 bf16
  // non-causal 1.033 / 1.010 / 1.024 / 1.006 / 1.020 / 1.008x at 33 heads x 12288 / N = 6144 / 1536 / 1024 / 768 / 512,
  // causal 1.020 / 0.998 / 1.004x at N = 1024 / 768 / 512, fp16 causal 512 1.001x; Q, K x 3 inputs 1.005 / 1.015x.
  static constexpr int kLazyRescaleHeadDim = 64;
  // Session 18's call A (results/h200/s18/callA/pairq1, pairq2; pairq / default, two runs): d = 128 non-causal bf16
  // 1.013 / 1.031x at N = 512, 1.038 / 1.034x at 1k, 1.028 / 1.040x at 2k, 1.007 / 1.042x at 4k; fp16 1k 1.059 /
  // 1.035x; GQA 32/8 1k 1.015 / 1.015x; d = 64 1.003-1.016x (geomean 1.010 / 1.008x, under its 1.010x rule).
  static constexpr int kPairQHeadDim = 128;
  // shortstatic: the static round-robin on d = 128 non-causal launches in pairq's order with work tiles of at most
  // kShortStaticMaxKvTiles K/V tiles. Session 20's call A (results/h200/s20/callA/sm90fwd-static; four readings a row
  // between default runs): static / default 1.015x over the seven N = 256-512 rows (N = 256 1.004x, 384 1.019x, 512
  // 1.020x), the pre-registered rule (docs/perf-notes.md, flash-sm90 forward, "Session 19, prepared for session 20")
  // met; N = 640 (5 K/V tiles) 0.993x, outside the limit.
  static constexpr int kShortStaticHeadDim = 128;
  static constexpr int kShortStaticMaxKvTiles = 4;
  // trec64 and fastlse: kOptTileRec, and kOptFastLse on top of it, on d = 64's shipped variant (unsplit launches: kOpt
  // 12313). Session 20's call B (results/h200/s20/callB/sm90fwd; docs/perf-notes.md, flash-sm90 forward, "Session 20:
  // the tile boundary at d = 64"; two readings a setting between default runs, beside cudnn): over the seven d = 64
  // N <= 640 rows trec64 / default 1.026x, trec64,fastlse / default 1.056x (causal 1.066x, non-causal 1.043x; N = 1k
  // 1.049x; causal 8k 1.015x; the default's launches 0.998x); ncu at causal N = 512: 5.67M fewer warp instructions,
  // cycles 0.898x. The pre-registered rule met for both: `notrec64` runs the kernel before both, `nofastlse` trec64's.
  static constexpr bool kTileRec64 = true;
  static constexpr bool kFastLse64 = true;
  // fastlse128: kOptFastLse on d = 128's shipped variant (kOpt 23 -> 8215). Session 29's call A (results/h200/s29/
  // callA/, three interleaved rounds beside torch-cudnn, the rule in docs/perf-notes.md before the call):
  // default / fastlse128 time 1.007x over 17 non-causal rows (0.989-1.023; N = 512 1.019 / 1.022x bf16 / fp16) and
  // 1.012x over 17 causal ones (0.996-1.030), the papers' grid and held-out MHA / GQA shapes; both classes passed.
  static constexpr bool kFastLse128 = true;
  // k0rec: kOptK0Rec on d = 128's shipped variant where work tiles are at most kK0RecMaxKvTiles K/V tiles long
  // (k0_rec_on, flash_sm90_split.h). Session 57's call A (an H100, results/h100/s57/A; three interleaved rounds, the
  // rule in docs/perf-notes.md before the call): default / k0rec time 1.029x over eight rows of at most 4 K/V tiles a
  // work tile (0.984-1.097; the rule's 1.02x met), controls 1.005x; its mid check (5-12 K/V tiles) not met. The rule
  // licensed both head dims at that length; d = 64's rows read 0.984-0.991x (its mid rows 0.979-0.987x) and d = 128's
  // 1.031-1.097x, so it ships at d = 128 only. Session 57's call B (results/h100/s57/B, its rule written before it):
  // k0rec at every length / the default up to 4 K/V tiles, 1.0102x over eight d = 128 rows of 6-16 K/V tiles (N
  // 703-2046; 1.002-1.016, the rule's 1.01x met), controls of at most 4 (the same kernel on both sides) 1.001x: up to
  // 16 since. Longer work tiles were not measured against a rule (call A's N = 8192 control read 1.005x).
  static constexpr int kK0RecHeadDim = 128;
  static constexpr int kK0RecMaxKvTiles = 16;
  // ones: the row sums from P V over a tile of ones in d = 64's inference forwards (FwdTraits::kOnesSum). Off until
  // measured (session 70).
  static constexpr bool kOnesSum64 = false;
};
struct FwdProbe {
  bool static_schedule = false;
  bool no_skip = false;
  bool eager_store_wait = false;
  bool one_q = false;
  int early_rescale = -1;  // 1 on, 0 off, -1 the default (FwdDefaults::kEarlyRescaleHeadDim)
  bool x_tile = false;
  int l2_small = -1;  // 1 on, 0 off, -1 the default (FwdDefaults::kL2SmallHeadDim)
  bool no_ping_pong = false;
  int q_align = -1;  // 1 on, 0 off, -1 the default (FwdDefaults::kQAlignHeadDim)
  int tile_rec = -1;  // 1 on, 0 off, -1 the default (FwdDefaults::kTileRecHeadDim)
  bool l2_hint = false;
  int uniform_stage = -1;  // 1 on, 0 off, -1 the default (FwdDefaults::kUniformStageHeadDim)
  int tail_split = -1;  // 1 on, 0 off, -1 the default (FwdDefaults::kTailSplitHeadDim)
  int lazy_rescale = -1;  // 1 lazyres, 0 nolazyres, -1 the default (FwdDefaults::kLazyRescaleHeadDim)
  int pair_q = -1;  // pairq: non-causal launches in the plane-major order (plane_group = 1); 1 on, 0 off, -1 the
                   // default (FwdDefaults::kPairQHeadDim)
  int short_static = -1;  // shortstatic: 1 on, 0 off, -1 the default (FwdDefaults::kShortStaticHeadDim)
  bool tile_rec64 = FwdDefaults::kTileRec64;  // trec64 (the default unless `trec64` / `notrec64` is named)
  int fast_lse = -1;  // fastlse: 1 on, 0 off, -1 the default (FwdDefaults::kFastLse64); applies where trec64 does
  bool fast_lse128 = FwdDefaults::kFastLse128;  // fastlse128 / nofastlse128: d = 128's shipped variant
  int k0_rec = -1;  // k0rec: 1 on (every launch it applies to), 0 off, -1 the default (k0_rec_on)
  int ones = -1;  // ones: 1 on, 0 off, -1 the default (FwdDefaults::kOnesSum64); inference forwards at d = 64 only
  const char* removed = nullptr;  // a removed word that was named (an error at launch)
  const char* removed_in = nullptr;  // the session that removed it, where the message names one
};
// A probe word's tri-state (1 on, 0 off, -1 the default) for a variant that ships at one head dim.
inline bool variant_on(int word, int head_dim, int default_head_dim) {
  return word < 0 ? head_dim == default_head_dim : word > 0;
}
inline FwdProbe fwd_probe() {
  static fb::settings::PerOverlay<FwdProbe> probe_cache;
  const FwdProbe& probe = probe_cache.get([] {
    FwdProbe f;
    const char* env = fb::settings::get("FB_SM90_FWD_PROBE");
    const std::string v = "," + std::string(env ? env : "") + ",";
    const auto has = [&](const char* w) { return v.find("," + std::string(w) + ",") != std::string::npos; };
    // A removed word names its session where the message can (sessions 15 on; nullptr: the ones before).
    const auto refuse = [&](std::initializer_list<const char*> words, const char* session) {
      for (const char* w : words)
        if (has(w)) {
          f.removed = w;
          f.removed_in = session;
        }
    };
    refuse({"s6", "nodesc", "order", "bc176", "stages3", "d64wide", "lateepi", "lean", "pin", "wg2", "xskip", "ostg",
            "stlate", "kv4", "poly", "kvpf", "kvpf8", "backoff", "backoff256", "ncalign"},
           nullptr);
    refuse({"qahead", "fullfirst"}, "session 15");
    refuse({"lazyres128"}, "session 16");
    refuse({"lazyres2", "halfdiag", "halfgemm", "mcast"}, "session 17");
    refuse({"cpairq"}, "session 18");
    refuse({"pinq"}, "session 19");
    refuse({"qreg"}, "session 25");
    refuse({"k0ahead"}, "session 56");
    refuse({"k0try"}, "session 58");
    refuse({"wide192", "wide256"}, "session 63");
    const bool old = has("old");
    f.static_schedule = old || has("static");
    f.no_skip = old || has("noskip");
    f.eager_store_wait = old || has("eager");
    f.one_q = old || has("oneq");
    // word: on; no<word>: off; else the default.
    const auto pick = [&](const char* w, bool def) {
      if (has(w)) return true;
      if (has((std::string("no") + w).c_str())) return false;
      return def;
    };
    f.early_rescale = has("early") ? 1 : has("noearly") ? 0 : -1;
    f.x_tile = pick("xtile", FwdDefaults::kXTile);
    f.l2_small = has("l2small") ? 1 : has("nol2small") ? 0 : -1;
    f.no_ping_pong = pick("nopp", FwdDefaults::kNoPingPong);
    f.q_align = has("qalign") ? 1 : has("noqalign") ? 0 : -1;
    f.tile_rec = has("trec") ? 1 : has("notrec") ? 0 : -1;
    f.l2_hint = pick("l2hint", FwdDefaults::kL2Hint);
    f.uniform_stage = has("ustage") ? 1 : has("noustage") ? 0 : -1;
    f.tail_split = has("tailsplit") ? 1 : has("notailsplit") ? 0 : -1;
    f.lazy_rescale = has("lazyres") ? 1 : has("nolazyres") ? 0 : -1;
    f.pair_q = has("pairq") ? 1 : has("nopairq") ? 0 : -1;
    f.short_static = has("shortstatic") ? 1 : has("noshortstatic") ? 0 : -1;
    f.tile_rec64 = pick("trec64", FwdDefaults::kTileRec64);
    f.fast_lse = has("fastlse") ? 1 : has("nofastlse") ? 0 : -1;
    f.fast_lse128 = pick("fastlse128", FwdDefaults::kFastLse128);
    f.k0_rec = has("k0rec") ? 1 : has("nok0rec") ? 0 : -1;
    f.ones = has("ones") ? 1 : has("noones") ? 0 : -1;
    return f;
  });
  return probe;
}

// Consecutive launches take consecutive tile counters (kTileCounters of them per instantiation file),
// so launches on different streams that overlap in time use different ones.
inline int next_tile_counter() {
  static std::atomic<unsigned> launches{0};
  return int(launches.fetch_add(1u, std::memory_order_relaxed) % unsigned(kTileCounters));
}

// One launch of the forward with traits Tr and consumer variant kOpt (flash_sm90_kernel.cuh) on
// `stream` (unsupported() has vetted p). kOptTailSplit launches take `split`, fwd_tail_split's plan for p on the SMs
// this launch's grid fills (launch_fwd_ship): the launcher does not plan again.
template <typename Tr, unsigned kOpt = 0>
void launch_fwd(const AttentionParams& p, Dtype t, cudaStream_t stream, const TailSplit& split = TailSplit{}) {
  // k0rec: the shipped variants with fastlse's epilogue (the tile record, unsplit) launch with kOptK0Rec where
  // k0_rec_on says (d = 128's short work tiles by default).
  if constexpr ((kOpt & kOptFastLse) != 0 && (kOpt & kOptTileRec) != 0 && (kOpt & (kOptTailSplit | kOptK0Rec)) == 0) {
    if (k0_rec_on(fwd_probe().k0_rec, Tr::kHeadDim, p.seq_k, Tr::kBc, FwdDefaults::kK0RecHeadDim,
                  FwdDefaults::kK0RecMaxKvTiles))
      return launch_fwd<Tr, kOpt | kOptK0Rec>(p, t, stream, split);
  }
  FwdParams prm{};
  const std::int64_t q_planes = std::int64_t(p.batch) * p.heads;
  const std::int64_t kv_planes = std::int64_t(p.batch) * p.kv_heads;
  encode_bhsd_map(&prm.tm_q, t, p.q, p.head_dim, p.seq_q, q_planes, Tr::kChunkElems, Tr::kBr);
  encode_bhsd_map(&prm.tm_k, t, p.k, p.head_dim, p.seq_k, kv_planes, Tr::kChunkElems, Tr::kBc);
  encode_bhsd_map(&prm.tm_v, t, p.v, p.head_dim, p.seq_k, kv_planes, Tr::kChunkElems, Tr::kBc);
  encode_bhsd_map(&prm.tm_o, t, p.o, p.head_dim, p.seq_q, q_planes, Tr::kChunkElems, Tr::kWgRows);
  prm.lse = static_cast<float*>(p.lse);
  prm.heads = p.heads;
  prm.kv_heads = p.kv_heads;
  prm.group = p.group();
  prm.scale_log2 = float(p.scale * kLog2e);
  prm.mask = p.mask();
  prm.planes = int(q_planes);
  prm.q_tiles = (p.seq_q + Tr::kBr - 1) / Tr::kBr;
  // qalign: the rows a partial query tile lacks go before row 0, whole warpgroups of them (a
  // warpgroup's rows are all before row 0 or none: store_o and finish_rows rely on it).
  const bool q_align = variant_on(fwd_probe().q_align, Tr::kHeadDim, FwdDefaults::kQAlignHeadDim);
  prm.q_shift = q_align && p.causal ? (prm.q_tiles * Tr::kBr - p.seq_q) / Tr::kWgRows * Tr::kWgRows : 0;
  // Query planes per L2 group: the K/V planes they read (group() query planes share one) each
  // 2 x seq_k x d elements.
  const std::int64_t kv_plane_bytes = 2 * std::int64_t(p.seq_k) * p.head_dim * std::int64_t(sizeof(typename Tr::Elem));
  const FwdProbe probe = fwd_probe();
  const bool l2_small = variant_on(probe.l2_small, Tr::kHeadDim, FwdDefaults::kL2SmallHeadDim);
  const int l2_share = l2_small ? 6 : 3;
  prm.plane_group = int(std::min<std::int64_t>(
      std::int64_t(l2_plane_group(kv_plane_bytes, kv_planes, l2_share)) * p.group(), q_planes));
  // pairq: groups of one plane, which makes work_tile's grouped_tile the plane-major order (plane_major_tile,
  // common/tile_order.h); a host value only, so every kernel runs it as it is.
  const bool plane_major = (Tr::kHeadDim == 64 || Tr::kHeadDim == 128) && !p.causal &&
                           variant_on(probe.pair_q, Tr::kHeadDim, FwdDefaults::kPairQHeadDim);
  if (plane_major) prm.plane_group = 1;
  // shortstatic: the static round-robin (below, as `static`) on d = 128 non-causal launches in that order whose work
  // tiles are short (short_tile_static, flash_sm90_split.h); a host choice only, the kernels as they are.
  const bool short_static =
      Tr::kHeadDim == 128 && variant_on(probe.short_static, Tr::kHeadDim, FwdDefaults::kShortStaticHeadDim) &&
      short_tile_static(p.causal, plane_major, p.seq_k, Tr::kBc, FwdDefaults::kShortStaticMaxKvTiles);

  const auto kernel = flash_sm90_fwd_kernel<Tr, kOpt>;
  FB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     int(Tr::kSmemBytes)));
  const long long n_work = q_planes * prm.q_tiles;
  long long blocks = 0;
  prm.skip_unseen = probe.no_skip ? 0 : 1;
  prm.eager_store_wait = probe.eager_store_wait ? 1 : 0;
  prm.q_slots_log2 = Tr::kQStages > 1 && !probe.one_q ? 1 : 0;
  if (probe.static_schedule || short_static) {
    prm.tile_counter = -1;
    blocks = fwd_blocks(n_work, p.causal ? prm.mask.kv_tiles(0, p.seq_q, Tr::kBc) : 0);
  } else {
    prm.tile_counter = next_tile_counter();
    blocks = fwd_blocks_dynamic(n_work);
  }
  // kOptTailSplit: fwd_tail_split's plan (the kernel derives the same one from its grid: blocks = min(n_work, SMs),
  // the n_work and SM count that plan was made for) and its parts' workspace (launch_fwd_ship runs this kernel only
  // where that plan splits and p.workspace holds tail_split_workspace_bytes of it).
  if constexpr ((kOpt & kOptTailSplit) != 0) {
    if (split.splits < 2 || split.items != split.from + split.units() || split.from >= n_work)
      throw std::logic_error("flash-sm90 forward: kOptTailSplit launched without fwd_tail_split's plan");
    prm.split_o = static_cast<float*>(p.workspace);
    prm.split_lse = prm.split_o + tail_split_o_floats(split, Tr::kBr, Tr::kHeadDim);
  }
  kernel<<<unsigned(blocks), Tr::kThreads, Tr::kSmemBytes, stream>>>(prm);
  FB_CUDA_CHECK_LAUNCH();
  if constexpr ((kOpt & kOptTailSplit) != 0) {
    // The split work tiles' parts merged.
    constexpr int kRowsPerBlock = kCombineThreads / 32;  // a warp a row
    const long long rows = (n_work - split.from) * Tr::kBr;
    flash_sm90_split_combine_kernel<Tr><<<unsigned((rows + kRowsPerBlock - 1) / kRowsPerBlock), kCombineThreads, 0,
                                          stream>>>(prm, static_cast<typename Tr::Elem*>(p.o), split);
    FB_CUDA_CHECK_LAUNCH();
  }
}

// Whether the consumers read the producer's work-tile record (kOptTileRec): `trec` / `notrec`, else the default.
template <typename Tr> bool tile_rec_on() {
  return variant_on(fwd_probe().tile_rec, Tr::kHeadDim, FwdDefaults::kTileRecHeadDim);
}

// kOpt, or kOpt | kOptTileRec (tile_rec_on).
template <typename Tr, unsigned kOpt> void launch_fwd_rec(const AttentionParams& p, Dtype t, cudaStream_t stream) {
  if (tile_rec_on<Tr>()) launch_fwd<Tr, kOpt | kOptTileRec>(p, t, stream);
  else launch_fwd<Tr, kOpt>(p, t, stream);
}

// kOpt with those of the bits kBit, kRest... that `want` holds (one instantiation per subset).
template <typename Tr, unsigned kOpt>
void launch_fwd_bits(unsigned, const AttentionParams& p, Dtype t, cudaStream_t stream) {
  launch_fwd<Tr, kOpt>(p, t, stream);
}
template <typename Tr, unsigned kOpt, unsigned kBit, unsigned... kRest>
void launch_fwd_bits(unsigned want, const AttentionParams& p, Dtype t, cudaStream_t stream) {
  if (want & kBit) launch_fwd_bits<Tr, kOpt | kBit, kRest...>(want, p, t, stream);
  else launch_fwd_bits<Tr, kOpt, kRest...>(want, p, t, stream);
}

// The probe bits launch_fwd_ship adds to its kOpt: trec, l2hint, ustage (the head dim's defaults unless named).
template <typename Tr> unsigned fwd_ship_bits() {
  const FwdProbe probe = fwd_probe();
  const bool ustage = variant_on(probe.uniform_stage, Tr::kHeadDim, FwdDefaults::kUniformStageHeadDim);
  return (tile_rec_on<Tr>() ? kOptTileRec : 0u) | (probe.l2_hint ? kOptL2Hint : 0u) | (ustage ? kOptUniformStage : 0u);
}

// Whether the probe words leave d = 64's shipped variant as it is (launch_fwd_ship with the head dim's default bits:
// no trec, l2hint, noustage, early, nopp, oneq, static or old; xtile and l2small change nothing the split depends on).
template <typename Tr> bool shipped_variant() {
  const FwdProbe probe = fwd_probe();
  constexpr unsigned kShipped = (Tr::kHeadDim == FwdDefaults::kTileRecHeadDim ? kOptTileRec : 0u) |
                                (Tr::kHeadDim == FwdDefaults::kUniformStageHeadDim ? kOptUniformStage : 0u);
  const bool early = variant_on(probe.early_rescale, Tr::kHeadDim, FwdDefaults::kEarlyRescaleHeadDim);
  return fwd_ship_bits<Tr>() == kShipped && early == (Tr::kHeadDim == FwdDefaults::kEarlyRescaleHeadDim) &&
         !probe.no_ping_pong && !probe.one_q && !probe.static_schedule;
}

// The tail split's plan for the launch of p with traits Tr on `sms` SMs (splits == 1: the unsplit kernel). The one
// place that decides whether a launch splits: launch_fwd_ship and fwd_workspace_bytes both ask it, and launch_fwd
// takes launch_fwd_ship's plan (session 16: it planned again). Splits at d = 64 (FwdDefaults::kTailSplitHeadDim;
// `notailsplit`: nowhere) with d = 64's shipped variant (shipped_variant: another variant word runs that variant
// unsplit), non-causal launches, where the plan splits (tail_split_plan).
template <typename Tr> TailSplit fwd_tail_split(const AttentionParams& p, int sms) {
  const long long n_work = std::int64_t(p.batch) * p.heads * ((p.seq_q + Tr::kBr - 1) / Tr::kBr);
  const int n = int(std::min<long long>(n_work, INT_MAX));
  const TailSplit none{n, 1, n};
  if constexpr (Tr::kConsumerWgs != 3) {
    return none;  // d = 64's kernel (three consumer warpgroups) only
  } else {
    if (!variant_on(fwd_probe().tail_split, Tr::kHeadDim, FwdDefaults::kTailSplitHeadDim) || !shipped_variant<Tr>() ||
        p.causal || n_work >= INT_MAX || sms <= 0)
      return none;
    return tail_split_plan(n, int(std::min<long long>(n_work, sms)), (p.seq_k + Tr::kBc - 1) / Tr::kBc);
  }
}

// The shipped variant kOpt with the probes that apply on top of it: trec, l2hint, ustage; d = 64's shipped variant
// split (kOptTailSplit) where fwd_tail_split says so and the launch has a workspace (without one: unsplit), with
// that plan (launch_fwd's grid is min(n_work, SMs) for the same SM count), and with its lazy rescale (kOptLazyRescale:
// the default at d = 64, FwdDefaults::kLazyRescaleHeadDim; `nolazyres` off; another variant word runs that variant
// without it).
template <typename Tr, unsigned kOpt> void launch_fwd_ship(const AttentionParams& p, Dtype t, cudaStream_t stream) {
  const unsigned want = fwd_ship_bits<Tr>();
  if constexpr (Tr::kConsumerWgs == 3) {
    constexpr unsigned kShipped = Tr::kHeadDim == FwdDefaults::kUniformStageHeadDim ? kOptUniformStage : 0u;
    const TailSplit ts = fwd_tail_split<Tr>(p, current_sm_count());
    const bool split = ts.splits > 1 && p.workspace != nullptr;
    // The shipped variant with the bits `b` adds, split where the plan splits.
    const auto ship = [&](auto b) {
      constexpr unsigned kBits = kOpt | kShipped | decltype(b)::value;
      if (split) launch_fwd<Tr, kBits | kOptTailSplit>(p, t, stream, ts);
      else launch_fwd<Tr, kBits>(p, t, stream);
    };
    // lazyres (the default at d = 64): the shipped variant with kOptLazyRescale.
    int lazy = fwd_probe().lazy_rescale;
    if (lazy < 0) lazy = Tr::kHeadDim == FwdDefaults::kLazyRescaleHeadDim && shipped_variant<Tr>() ? 1 : 0;
    // trec64: that kernel with kOptTileRec where the launch is not split (a split kernel's consumers take each item
    // from the plan, not from the record: nothing to gain there, so no kernel for it).
    // fastlse: trec64's kernel with kOptFastLse.
    if (lazy == 1 && !split && fwd_probe().tile_rec64 && shipped_variant<Tr>()) {
      constexpr unsigned kRec = kOpt | kShipped | kOptLazyRescale | kOptTileRec;
      const int fast = fwd_probe().fast_lse;
      if (fast > 0 || (fast < 0 && FwdDefaults::kFastLse64)) {
        // ones: an inference forward's row sums from P V (kOnesSum's traits: the same tiles, a tile of ones more).
        const int ones = fwd_probe().ones;
        if (p.lse == nullptr && (ones > 0 || (ones < 0 && FwdDefaults::kOnesSum64))) {
          using TrOnes = FwdTraits<typename Tr::Elem, Tr::kHeadDim, Tr::kBc, Tr::kIntraOverlap, Tr::kPingPong,
                                   Tr::kConsumerWgs, Tr::kSkipUnseen, Tr::kStages, true>;
          return launch_fwd<TrOnes, kRec | kOptFastLse>(p, t, stream);
        }
        return launch_fwd<Tr, kRec | kOptFastLse>(p, t, stream);
      }
      return launch_fwd<Tr, kRec>(p, t, stream);
    }
    if (lazy == 1) return ship(std::integral_constant<unsigned, kOptLazyRescale>{});
    if (split) return ship(std::integral_constant<unsigned, 0u>{});
  } else if constexpr (kOpt == (kOptDescLo32 | kOptXTile | kOptEarlyRescale)) {
    // fastlse128: d = 128's shipped variant (kOpt 23) with kOptFastLse.
    if (fwd_probe().fast_lse128 && shipped_variant<Tr>())
      return launch_fwd<Tr, kOpt | kOptTileRec | kOptFastLse>(p, t, stream);
  }
  launch_fwd_bits<Tr, kOpt, kOptTileRec, kOptL2Hint, kOptUniformStage>(want, p, t, stream);
}

// Bytes of p.workspace the forward with (T, D) uses: the tail split's parts where it splits (fwd_tail_split), else
// none. Asked where no device may be (a plan): no device, no split.
template <Dtype T, int D> std::size_t fwd_workspace_bytes(const AttentionParams& p) {
  using Tr = typename FwdConfig<T, D>::Traits;
  const int sms = device_sm_count_or_zero();
  if (sms == 0) return 0;
  return tail_split_workspace_bytes(fwd_tail_split<Tr>(p, sms), Tr::kBr, Tr::kHeadDim);
}

// The consumer variant's bits from the probe (kOpt of the kernel); descriptors always by 32-bit adds.
template <typename Tr> void launch_fwd_opt(const AttentionParams& p, Dtype t, cudaStream_t stream) {
  const FwdProbe probe = fwd_probe();
  constexpr unsigned kD = kOptDescLo32, kE = kOptEarlyRescale;
  const bool early = variant_on(probe.early_rescale, Tr::kHeadDim, FwdDefaults::kEarlyRescaleHeadDim);
  if constexpr (Tr::kConsumerWgs == 2) {
    // xtile is a code variant only with two consumer warpgroups (d = 128; kOptXTile).
    constexpr unsigned kX = kOptXTile;
    if (probe.x_tile) {
      if (early) launch_fwd_ship<Tr, kD | kX | kE>(p, t, stream);
      else launch_fwd_rec<Tr, kD | kX>(p, t, stream);
      return;
    }
  }
  if (early) launch_fwd_rec<Tr, kD | kE>(p, t, stream);
  else if constexpr (Tr::kConsumerWgs == 2) launch_fwd_rec<Tr, kD>(p, t, stream);  // d = 128, noxtile
  else launch_fwd_ship<Tr, kD>(p, t, stream);  // d = 64 as shipped
}

template <Dtype T, int D> void run_fwd(const AttentionParams& p, cudaStream_t stream) {
  using Tr = typename FwdConfig<T, D>::Traits;
  if (const FwdProbe probe = fwd_probe(); probe.removed)
    throw std::invalid_argument(std::string("FB_SM90_FWD_PROBE: '") + probe.removed + "' was measured and removed" +
                                (probe.removed_in ? std::string(" in ") + probe.removed_in : std::string()) +
                                " (docs/perf-notes.md)");
  if constexpr (D == 64 || D == 128) {
    if (Tr::kConsumerWgs == 3 && fwd_probe().tail_split > 0 && !shipped_variant<Tr>())
      throw std::invalid_argument("FB_SM90_FWD_PROBE: 'tailsplit' runs on d = 64's shipped variant only, with two Q "
                                  "slots and the tile counter (no trec, l2hint, noustage, early, nopp, oneq, static or "
                                  "old beside it)");
    if (fwd_probe().fast_lse > 0 && !fwd_probe().tile_rec64)
      throw std::invalid_argument("FB_SM90_FWD_PROBE: 'fastlse' runs on top of trec64 only (not beside notrec64)");
    if (Tr::kConsumerWgs == 3 && fwd_probe().ones > 0 && !shipped_variant<Tr>())
      throw std::invalid_argument("FB_SM90_FWD_PROBE: 'ones' runs on d = 64's shipped variant only (no trec, l2hint, "
                                  "noustage, early, nopp, oneq, static or old beside it)");
    if (Tr::kConsumerWgs == 3 && fwd_probe().lazy_rescale > 0 && !shipped_variant<Tr>())
      throw std::invalid_argument("FB_SM90_FWD_PROBE: 'lazyres' runs on d = 64's shipped variant only (no trec, "
                                  "l2hint, noustage, early, nopp, oneq, static or old beside it)");
    // The probes' variants are instantiated for the head dims sessions 7 and 8 tuned (issue 13).
    if (fwd_probe().no_ping_pong) {
      using TrN = FwdTraits<typename Tr::Elem, D, Tr::kBc, true, false, Tr::kConsumerWgs, Tr::kSkipUnseen, 2>;
      launch_fwd<TrN, kOptDescLo32>(p, T, stream);
      return;
    }
    launch_fwd_opt<Tr>(p, T, stream);
  } else {
    launch_fwd<Tr>(p, T, stream);
  }
}

}  // namespace fb::cuda::flash_sm90
