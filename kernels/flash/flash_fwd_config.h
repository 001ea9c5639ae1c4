// The forward's tile configuration for each (dtype, head_dim): the one table to edit when tuning.
// Host and device code read it (query_tile reports kBr; the launchers instantiate the kernels).
#pragma once

#include <limits>
#include <type_traits>

#include "common/types.cuh"
#include "flash/flash_fwd_traits.h"
#include "flash/fp32_math.h"

namespace fb::cuda::flash {

// Tensor-core tiles per head_dim (fp16/bf16): kBr x kBc with kWarps warps, 32 query rows per warp
// (the m16n8k16 B fragments are then reused by two m16 blocks: half the shared-memory traffic of
// 16 rows per warp). d <= 64 keeps Q fragments in registers. d = 128 cannot (O alone takes 128
// registers a thread): Q is re-read from shared memory. Its 128 x 64 tiles spilled ~200 bytes and ran 17%
// slower than 128 x 32 in session 1 while each K/V copy kept its own pointer (docs/perf-notes.md); with
// kFwdLeanCopy they fit (TcTiles<128>).
// kStages (K/V tiles in flight) and kOpt (the kernel's variant bits, flash_fwd_traits.h) default to TcLoop's:
// double buffering, two barriers per tile (session 7's loop).
// kSmallBc > 0: the key tile (with variant bits kSmallOpt, two stages) on GPUs whose blocks cannot opt in to
// the shared memory of kBc's tiles (sm_86/89: 99 KB).
// kPlaneGroup > 0: non-causal grids take that many planes' query tiles at a time instead of set_tile_order's
// L2-sized groups (flash_fwd_args.cuh), for the default tiles (not the kSmallBc ones).
// kCausalBand > 0: causal launches of the default tiles take their work tiles in bands of that many query tiles
// (kFwdQBand). kCausalTail > 0 (with a band): the shortest query tiles of every plane, at least kCausalTail
// device-fulls of blocks, go last in grouped order (kFwdQBandTail).
// kFullOpt: variant bits added to kOpt on non-causal launches of the default tiles (kFwdPersist, ...).
// kShortOpt: variant bits added to kOpt on short launches of the default tiles, those whose query rows see at most
// kShortKeys keys on average (short_launch, flash_fwd_launch.cuh: seq_k, or under the causal mask seq_k - seq_q / 2);
// kShortKeys = kEveryLaunch: on every launch.
inline constexpr int kEveryLaunch = std::numeric_limits<int>::max();
struct TcLoop {
  static constexpr int kStages = 2;
  static constexpr unsigned kOpt = 0;
  static constexpr int kSmallBc = 0;
  static constexpr unsigned kSmallOpt = 0;
  static constexpr int kPlaneGroup = 0;
  static constexpr int kCausalBand = 0;
  static constexpr int kCausalTail = 0;
  static constexpr unsigned kFullOpt = 0;
  static constexpr unsigned kShortOpt = 0;
  static constexpr int kShortKeys = 0;
};
template <int D> struct TcTiles;
template <> struct TcTiles<32> : TcLoop { static constexpr int kBr = 128, kBc = 64, kWarps = 4; static constexpr bool kQInRegs = true; };
// d = 64, causal: work tiles in bands of 8 query tiles of a plane (kFwdQBand) since session 11: session 10's final
// call measured bands of 4 and of 8 at 1.031-1.064x the grouped order at N = 1k/2k/4k (bf16 and fp16), level with
// each other (8: 1.033/1.049 at 4k against 4's 1.031/1.032; 4: 1.044/1.037 at 1k against 8's 1.034/1.032).
// Since session 12 the shortest query tiles of every plane, one device-full of blocks, go last in grouped order
// (kCausalTail = 1, kFwdQBandTail): call A, 1.010 / 1.034 / 1.018x the bands alone at N = 512 / 1k / 2k.
// The lean prologue and epilogue (kFwdLeanPrologue | kFwdLeanEpi, as d = 128's) on every launch since session 33's
// call B (`epi,pro` against the shipped kernel, three interleaved rounds on the grid's d = 64 forward at N 512-2048,
// bf16 and fp16, both masks, and six shapes no config names; rule written before the call: the launches up to a mean
// key count T take it at a geomean >= 1.005 with no row below 0.985, T the largest that passes): non-causal
// 1.024-1.042x (geomean 1.034), causal 1.027-1.085x (1.052), every round of every row above 1.0, so T = every
// launch. Session 14 had read +1.0-1.2% at N = 512 and level at 1k, one reading each. `FB_FLASH_FWD_PROBE=nolean64`
// runs the kernels before.
template <> struct TcTiles<64> : TcLoop {
  static constexpr int kBr = 128, kBc = 64, kWarps = 4;
  static constexpr bool kQInRegs = true;
  static constexpr int kCausalBand = 8;
  static constexpr int kCausalTail = 1;
  static constexpr unsigned kShortOpt = kFwdLeanPrologue | kFwdLeanEpi;
  static constexpr int kShortKeys = kEveryLaunch;
};
// d = 96 as d = 128 (O 96 registers a thread at 32 rows per warp; Q in registers would add 48).
template <> struct TcTiles<96> : TcLoop { static constexpr int kBr = 128, kBc = 32, kWarps = 4; static constexpr bool kQInRegs = false; };
// d = 128: FlashAttention-2's 128 x 64 since session 8 (call A: 1.058-1.067x the 128 x 32 kernel's speed, causal N 2k
// 1.066x), possible once the K/V copies stopped keeping per-chunk pointers in registers (kFwdLeanCopy; ptxas:
// 255 registers, 16 B of spills) — 104 KB of shared memory a block, so 128 x 32 (session 7's kernel) where a
// block cannot have that.
template <> struct TcTiles<128> : TcLoop {
  static constexpr int kBr = 128, kBc = 64, kWarps = 4;
  static constexpr bool kQInRegs = false;
  // Lazy rescale since call B (1.019-1.031x at d = 128 bf16; the sharp-softmax GPU test passes with it). L2
  // prefetch of the next wave's first Q/K/V (kFwdL2Prefetch) since session 11's call A: 0.996-1.013x on all 8
  // d = 128 rows (geomean 1.006; at d = 64 it lost 1-3%, so not there).
  // The next K/V tile's V copies after S (kFwdVAfterS) since session 28's call B (the copylate / vlate probes, three
  // interleaved rounds against the shipped kernel on 28 rows, 16k-token grid N 512-16k, batch 3 / 12 x 12 heads N
  // 1280-6000, fp16 batch 5 x 20 heads N 1536 / 3300; rule written before the call: a class takes a variant at a
  // geomean >= 1.005 with no row below 0.985): non-causal 1.026x (0.994-1.047), causal 1.035x (1.023-1.058);
  // copylate (K's copies after S too) 1.016 / 1.019x, 0.976x at batch 12 N = 1280. Held out in call D (batch 6 x
  // 10 heads N 900-4500 bf16, 32 q / 8 kv heads N 2900 / 7000 fp16, novlate against it): 1.024x (1.007-1.032) /
  // 1.040x (1.032-1.052). At d = 64 (vlate64, call D) 1.003 / 1.005x: not there.
  static constexpr unsigned kOpt =
      kFwdWarpSkip | kFwdLeanCopy | kFwdLazyRescale | kFwdL2Prefetch | kFwdVAfterS;
  static constexpr int kSmallBc = 32;
  // Non-causal: one plane's query tiles after another (FlashAttention-2's grid order) since session 9's call A:
  // 1.011-1.018x at N = 1k (the rows furthest behind FA2), 0.995-1.003x at 4k/16k (docs/perf-notes.md).
  static constexpr int kPlaneGroup = 1;
  // Non-causal: S = Q K^T's fragments double-buffered (kFwdFragPipe, FlashAttention-2's gemm order: a k16 step's Q
  // and K fragments loaded before the previous step's MMAs) since session 15, each launch's kernel otherwise as
  // before. Short launches (epi,pro | it, kernel 721994) since call A (`kpipe`, three repeats, each between two
  // shipped runs): N = 512 1.014 / 1.003 / 1.009 (bf16), 1.010 / 1.009 / 1.009 (fp16), 1k 1.014 / 1.013 / 1.005,
  // 1.015 / 1.016 / 1.013; confirmed in call B (`nokpipe` against it on N = 512 / 640 / 768 / 1000 / 1024: geomean
  // 0.992). Long launches (kOpt | it, kernel 525386; no spill) since call B (`kpipelong`): 2k 1.026 / 1.025, 4k 1.009 /
  // 1.002 (bf16 / fp16, two repeats each), with call A's three 2k bf16 0.981-0.998 the five readings' geomean >= 1.004
  // on each row; that job's no-op control (nokpipe at 2k / 4k) read 0.981-1.014, so one reading's noise is ~1.5%.
  // Causal launches keep their kernels (call A: 512 1.012 / 0.995 / 0.994, 2k 0.989-0.994).
  // A grid's partial last wave of at most one block an SM as a programmatically dependent launch at one block an SM
  // (kFwdPdlTail, pdl_tail_plan; sm_90+, one launch elsewhere) since session 30's call E (`pdltail`, three
  // interleaved rounds against the shipped kernel on nine fresh shapes of 1-3 whole waves and tails of 12-132 of 132
  // SMs, rule written before the call: a geomean >= 1.005 with no row below 0.985): 1.048x (1.000-1.128), the
  // papers' grid (no split) 1.004x; FlashAttention-2 over it 0.890-0.991x -> 0.984-1.019x. The same split launched
  // after the first launch's end (solotail, calls A-C) lost at short blocks, small tails and d = 64.
  // That tail's work tiles in pieces over their keys, two blocks an SM, merged by each tile's last piece (kFwdKvTail,
  // kv_tail_splits; with params.workspace: forward_workspace_bytes) since session 31's call B (`kvtail`, three
  // interleaved rounds against the shipped kernel on ten fresh shapes of 1-4 whole waves and tails of 24-120 blocks in
  // 2-11 pieces, rule written before the call: a geomean >= 1.005 with no row below 0.985): 1.149x (1.013-1.337), the
  // control (no split) 1.002x; FlashAttention-2 over it 0.952-1.009x -> 1.004-1.272x.
  static constexpr unsigned kFullOpt = kFwdFragPipe | kFwdPdlTail | kFwdKvTail;
  // Causal: bands of 4 query tiles since session 11 (session 10's final call: 1.037/1.028x the grouped order at
  // N = 1k bf16/fp16, 1.005/0.998 at 2k; bands of 8 gave 1.001/1.017 and 1.012/0.994). Since session 12 with a
  // grouped tail of one device-full of blocks (kCausalTail = 1): on grids of a few waves the bands' last band
  // left the last wave ragged (8 query heads, 1024 blocks: 3-7% behind the grouped order). Call A, tail1 over the
  // bands alone: 8 heads N = 1k 1.066 / 1.035 (kv1 / kv8; band0 1.064 / 1.019), 4k 0.992 / 1.003 (band0 1.018 /
  // 1.026), 16k 1.010 / 0.997; MHA N = 512 / 1k 1.039 / 1.023; 32 heads 0.987-1.007.
  static constexpr int kCausalBand = 4;
  static constexpr int kCausalTail = 1;
  // The lean prologue and epilogue (kFwdLeanPrologue | kFwdLeanEpi: the Q copy as the K/V copies, the epilogue's rows
  // side by side on the MUFU, no branch) on launches whose rows see <= 1024 keys on average (non-causal N <= 1k,
  // causal N <= 2k at seq_q = seq_k) since session 14's call B (`epi,pro`, three repeats, each between two shipped
  // runs): non-causal N = 512 1.028 / 1.027 (bf16 / fp16), 1k 1.010 / 0.998; causal N = 512 1.075 / 1.057, 1k 1.034,
  // 2k 1.009. Longer launches kept kOpt without them until session 26: non-causal 2k / 4k lost 0.985-0.991 in call B
  // (before kFwdFragPipe; the probe's KV loop scheduled differently by ptxas).
  // Since session 26 on every launch (kShortKeys = kEveryLaunch): call D found the shipped long kernel 0.82x
  // FlashAttention-2 at N = 1280 (batch 3 x 12 heads) and 0.96x at batch 12, epi,pro on the same launches 0.98x and
  // 1.00x; call E (epi,pro against the shipped kernels on 52 shapes of N 1100-16k, three interleaved rounds; rule
  // written before it: a class takes it at a geomean >= 1.005 with no row below 0.985): non-causal launches above
  // 1024 keys 0.985-1.200x, geomean 1.011 (N = 1280 1.057 / 1.200; N >= 3300 0.994-1.004), causal above 1024 keys
  // 0.988-1.021x, geomean 1.006; the short rows (the same kernel both ways) read 0.984-1.005x.
  static constexpr unsigned kShortOpt = kFwdLeanPrologue | kFwdLeanEpi;
  static constexpr int kShortKeys = kEveryLaunch;
};
// d = 256: O takes 128 registers a thread at 16 rows per warp (256 at 32), so 8 warps x 16 rows;
// Q from shared memory as at d = 128. Shared memory 135 KB (Q 66 KB, K/V 2 x 2 x 16.5 KB): one
// block per SM on sm_80/sm_90, none on GPUs with 99 KB per block (unsupported() says so).
template <> struct TcTiles<256> : TcLoop { static constexpr int kBr = 128, kBc = 32, kWarps = 8; static constexpr bool kQInRegs = false; };

// Head dims with a tensor-core instantiation (flash_fwd_hdim*.cu) and those the fp32/fp64 paths
// (TF32 and CUDA-core tiles) have too.
inline constexpr int kTcHeadDims[] = {32, 64, 96, 128, 256};
inline constexpr int kFp32HeadDims[] = {32, 64, 128};

// CUDA-core tiles (fp32/fp64): kBr rows of 4 lanes each; kBc keys per tile (fewer for fp64, whose
// tiles take twice the shared memory).
template <typename Elem> struct SimtTiles { static constexpr int kBr = 32, kBc = 32; };
template <> struct SimtTiles<double> { static constexpr int kBr = 32, kBc = 16; };

// TF32 tensor-core tiles (fp32 with Fp32Math::tf32x3 / tf32x1). kBc = 32: P's TF32 parts for the
// whole tile (2 x 4 registers per k8 step and m16 block) live in registers during P V. S is added in
// fp32 after every k8 step (kSChunk = 1): in a rounding model of the tensor core (TF32 inputs, each
// MMA's sum truncated to fp32) O's error at d = 64/128, N = 1024..2048 was 1.4e-7 this way against
// 1.2-3.1e-7 with chunks of 2 and 2.2-4.6e-7 with chunks of 4 (N up to 4099), the FP32 rule's bound
// being 2.6-6.5e-7.
// d <= 64: 32 query rows per warp (every K/V fragment, split once, feeds two m16 blocks); d = 128: 16
// rows per warp and 8 warps (O alone would take 128 registers at 32 rows; ptxas spilled 168 bytes with
// 4 warps of 32 rows, none with this). Not tuned on a GPU yet.
template <int D> struct Tf32Tiles;
template <> struct Tf32Tiles<32> { static constexpr int kBr = 128, kBc = 32, kWarps = 4, kSChunk = 1; };
template <> struct Tf32Tiles<64> { static constexpr int kBr = 128, kBc = 32, kWarps = 4, kSChunk = 1; };
template <> struct Tf32Tiles<128> { static constexpr int kBr = 128, kBc = 32, kWarps = 8, kSChunk = 1; };

template <int D>
using Tf32FwdConfig = Tf32FwdTraits<D, Tf32Tiles<D>::kBr, Tf32Tiles<D>::kBc, Tf32Tiles<D>::kWarps,
                                    Tf32Tiles<D>::kSChunk>;

template <Dtype T, int D>
struct FwdConfig {
  static constexpr Dtype kDtype = T;
  static constexpr int kHeadDim = D;
  using Elem = typename DtypeTraits<T>::elem;
  static constexpr bool kTensorCores = sizeof(Elem) == 2;
  using Traits = std::conditional_t<
      kTensorCores,
      FwdTraits<Elem, D, TcTiles<D>::kBr, TcTiles<D>::kBc, TcTiles<D>::kWarps, TcTiles<D>::kQInRegs, 1,
                TcTiles<D>::kStages>,
      SimtFwdTraits<Elem, D, SimtTiles<Elem>::kBr, SimtTiles<Elem>::kBc>>;
  // The tensor-core kernel's variant bits (flash_fwd_traits.h).
  static constexpr unsigned kOpt = TcTiles<D>::kOpt;
  // The tiles for GPUs with less shared memory a block (TcLoop::kSmallBc); Traits where there are none.
  static constexpr bool kHasSmall = kTensorCores && TcTiles<D>::kSmallBc > 0;
  static constexpr int kSmallBc = kHasSmall ? TcTiles<D>::kSmallBc : TcTiles<D>::kBc;
  using SmallTraits = std::conditional_t<
      kHasSmall, FwdTraits<Elem, D, TcTiles<D>::kBr, kSmallBc, TcTiles<D>::kWarps, TcTiles<D>::kQInRegs>, Traits>;
  static constexpr unsigned kSmallOpt = TcTiles<D>::kSmallOpt;
  static constexpr int kPlaneGroup = kTensorCores ? TcTiles<D>::kPlaneGroup : 0;
  static constexpr int kCausalBand = kTensorCores ? TcTiles<D>::kCausalBand : 0;
  static constexpr int kCausalTail = kTensorCores ? TcTiles<D>::kCausalTail : 0;
  static constexpr unsigned kFullOpt = kTensorCores ? TcTiles<D>::kFullOpt : 0u;
  static constexpr unsigned kShortOpt = kTensorCores ? TcTiles<D>::kShortOpt : 0u;
  static constexpr int kShortKeys = kTensorCores ? TcTiles<D>::kShortKeys : 0;
};

// Timing probes of the tensor-core forward, for A/B runs in one device call: FB_FLASH_FWD_PROBE, comma-separated
// words, read once per process (fwd_probe(), flash_fwd.cu; an unknown word throws, naming the variable).
// Only bf16 and fp16 at d = 64 and d = 128 have them (kProbed); other cases ignore it:
//   old     : the kernel of GPUs whose blocks cannot have the default's shared memory (TcTiles<D>::kSmallBc: at
//             d = 128 session 7's 128 x 32 loop, two barriers a tile, grouped_tile's order); where there is none
//             (d = 64), the default tiles in grouped_tile's order (causal too: session 10's d = 64 kernel)
//   l2order : the default kernel with set_tile_order's L2-sized plane groups on non-causal launches too (the
//             grid order before session 9; TcTiles<D>::kPlaneGroup)
//   bandN   : causal launches: the work tiles in bands of N adjacent query tiles of one plane (banded_tile,
//             flash_fwd_args.cuh; kernel bit kFwdQBand), for L2 reuse of K/V among the blocks that run together;
//             band0: grouped_tile's order, one group of every plane, longest tiles first (the causal default
//             before session 11; TcTiles<D>::kCausalBand is the default band). Non-causal launches: the default
//   tailN   : causal launches in bands: the shortest query tiles of every plane, at least N device-fulls of blocks,
//             last and in grouped_tile's order (banded_tail_tile; kernel bit kFwdQBandTail), so the grid's last wave
//             balances as band0's does; tail0: no tail (the causal default before session 12;
//             TcTiles<D>::kCausalTail is the default, 1 at d = 64 and 128). No effect with band0 or on non-causal
//             launches
//   persist : d = 128 non-causal launches: one wave of blocks that each run every gridDim.x-th work tile, the next
//             tile's Q, K_0 and V_0 in flight during the current tile's epilogue (kernel bit kFwdPersist); causal
//             launches and d = 64 run the default
//   persist2: persist with the next tile's K_0 loaded at the start of the current tile's last KV step and its Q and
//             V_0 once that step's S is done (kFwdPersistEarly)
//   pf      : every launch: in its last KV step a block prefetches into L2 the Q tile, K_0 and V_0 of the work tile
//             one device-full of blocks after its own (kFwdL2Prefetch), the order as the other words say; d = 128's
//             default has it since session 11
//   nopf    : the default without kFwdL2Prefetch (d = 128: the default before session 11's flip)
//   pro     : every launch: the default kernel with kFwdLeanPrologue (the Q copy as lean as the K/V copies, the L2
//             prefetch target worked out after the first copies); the order as the other words say
//   epi     : with pro only (`epi,pro`): kFwdLeanEpi too (the epilogue's rows side by side, no branch; 1 / sum and the
//             LSE's log2 on the MUFU). Alone it made ptxas spill a P value in every KV step at d = 128. pro and epi do
//             not combine with old, persist, persist2, pf, nopf
//   nokpipe : the shipped kernels and orders with d = 128's non-causal launches as before session 15: kOpt, and
//             epi,pro on short launches (every launch since session 26), without kFwdFragPipe
//             (TcTiles<128>::kFullOpt); d = 64 runs its default. Takes no other word
//   novlate : d = 128: the shipped kernels and orders without kFwdVAfterS (the next K/V tile's V copies at the KV
//             step's start, beside K's: the kernels before session 28); d = 64 runs its default. Takes no other word
//   nopdltail: the shipped kernels and orders without kFwdPdlTail (d = 128's non-causal grids in one launch, their
//             partial last wave included: the kernels before session 30's call E); d = 64 runs its default. Takes no
//             other word
//   nolean64: d = 64: the shipped kernels and orders without kShortOpt (the lean prologue and epilogue: the kernels
//             before session 33's call B); d = 128 runs its default. Takes no other word
//   nokvtail: the shipped kernels and orders without kFwdKvTail (d = 128's non-causal partial last wave as kFwdPdlTail's
//             solo blocks, one an SM: the kernels before session 31's call B; nopdltail drops both bits); d = 64 runs
//             its default. Takes no other word
//   kvsubwave: the shipped kernels and orders with kFwdKvTail's pieces on every non-causal d = 128 grid of less than
//             one wave where a tile gets two pieces or more (at most one block an SM: the whole grid as the pieces'
//             launch, their counters zeroed by a block of its own ahead of it; kv_tail_plan, flash_fwd_kernel.cuh):
//             session 45's probe, call K's rule in docs/perf-notes.md; d = 64 runs its default. Takes no other word
//   nokvsubwave: the shipped kernels and orders with every grid of less than one wave whole (the kernels before call N
//             (session 47's rule), which made session 46's kvsubwave3 the default: such grids in pieces where each tile
//             gets three or more of at least kKvSubwaveMinTiles K/V tiles, subwave_pieces in common/tile_order.h: at 2
//             blocks an SM, grids of at most a third of a wave with 15 K/V tiles or more). Takes no other word
//   br64    : d = 128: non-causal grids of less than one wave (of the default's 128 x 64 tiles, resident_blocks) run
//             64 x 64 tiles (4 warps of 16 query rows: Br64Traits, flash_fwd_launch.cuh) with the default's non-causal
//             bits, so twice the work tiles and, where the grid is still under a wave, fewer pieces of more K/V tiles
//             (FlashAttention-2's split-KV kernel runs 64-query tiles there: session 53's call V); other launches
//             and d = 64 run the default. Session 53's probe; call Y (docs/perf-notes.md, "Session 53"): not met,
//             1.175-1.358x at N <= 2053, 0.619-0.923x at N >= 2604. Takes no other word
//   br64short: br64 only where no block of the 64-row launch runs more than kBr64ShortMaxTiles K/V tiles
//             (longest_kv_run, common/tile_order.h): call Y's five rows in that scope all gained (1.175-1.358x), its
//             four outside lost or gained (0.619-1.296x). Session 53's probe for a later call under its own rule
//             (docs/perf-notes.md). Takes no other word
// Every word but nokpipe, novlate, nopdltail, nokvtail, nolean64, kvsubwave, nokvsubwave, br64 and br64short runs the
// default's kOpt (persist and persist2 without kFwdVAfterS; with kFullOpt on non-causal launches, persist and persist2
// aside: at d = 128 kFwdFragPipe) without the short-launch bits (TcLoop::kShortOpt): at d = 128 (every launch since
// session 26) and d = 64 (since session 33), where every launch takes them, a word's baseline is kOpt | kFullOpt alone
// (the default is `epi,pro`).
// Session 28's copylate (kFwdVAfterS with K's copies after S too: below it on 27 of 28 rows in call B), vlate64
// (kFwdVAfterS at d = 64: call D 1.003 / 1.005x non-causal / causal, below the rule) and kmid (K's copies after S's
// first k16 step, on branch fwdkmid28: call G 1.001 / 1.002x, 0.874x at batch 3 N = 1280) were measured and removed;
// copylate, vlate, vlate64 and kmid are refused, naming the session.
// Session 14's stag (the first wave's second half of blocks started ~half a KV step late: level in call B) and
// session 15's lse (epi's row statistics alone: call A geomean 1.003, causal 0.96-0.99) were measured and removed;
// session 15's kpipe (short launches) and kpipelong (long ones) are the default on non-causal d = 128 launches
// (kFullOpt). The three words are refused, naming the session. Session 19's clusterN (non-causal launches of the
// default's kernels in one plane's order, in thread-block clusters of N blocks, for the L2 request coalescer: call B,
// cluster2 0.993-1.008x, cluster4 0.946-0.960x, ~2% of the K/V sectors merged) was measured and removed (host code
// only); cluster2 / cluster4 / cluster8 are refused, naming the session. Session 8's probes (onebar, skip, copy, s3,
// s4, ovl, lazy, bc64) and session 9's losers (kperm, noskip, rowmask, bc128) and session 11's pfstart and latev
// (level in call A) and session 13's expv, expv2 (the exponentials between the P V HMMAs: 0.94-0.99x in call A) and
// plane (d = 64 in one plane's order: level) were measured (docs/perf-notes.md, "Session 8", "Session 9", "Session
// 11", "Session 13") and removed with their code; the winners are in TcTiles<D>.
struct FwdProbe {
  bool set = false;  // some word given
  bool old = false;
  bool l2order = false;
  int band = -1;  // bandN: N (0: grouped_tile's order; -1: TcTiles<D>::kCausalBand)
  int tail = -1;  // tailN: N device-fulls (0: none; -1: TcTiles<D>::kCausalTail)
  bool persist = false;
  bool persist_early = false;  // persist2
  bool prefetch = false;     // pf
  bool no_prefetch = false;  // nopf
  bool lean_epi = false;     // epi (with pro)
  bool lean_pro = false;     // pro
  bool no_frag_pipe = false;  // nokpipe
  bool no_v_late = false;     // novlate
  bool no_pdl_tail = false;   // nopdltail
  bool no_kv_tail = false;    // nokvtail
  bool no_lean64 = false;     // nolean64
  bool kv_subwave = false;    // kvsubwave
  bool no_kv_subwave = false;  // nokvsubwave
  bool br64 = false;           // br64
  bool br64_short = false;     // br64short
};
// br64short's scope: at most this many K/V tiles (of 64 keys) a block.
inline constexpr int kBr64ShortMaxTiles = 12;
const FwdProbe& fwd_probe();
template <Dtype T, int D>
inline constexpr bool kProbed = (T == Dtype::bf16 || T == Dtype::fp16) && (D == 64 || D == 128);

// One launch of the forward for (T, D); defined in flash_fwd_launch.cuh, instantiated in the
// flash_fwd_*.cu files (one group per file, so they compile in parallel).
template <Dtype T, int D> void run_fwd(const AttentionParams& p, cudaStream_t stream);
// The workspace bytes run_fwd<T, D> takes for p (kFwdKvTail's; 0 for the others); defined beside run_fwd,
// instantiated where run_fwd<T, 128> is (the only head dim that can take any). Asks the device: call it only where
// one answers (forward_workspace_bytes).
template <Dtype T, int D> std::size_t fwd_workspace(const AttentionParams& p);
// The fp32 forward on TF32 tensor cores (flash_fwd_tf32.cuh), instantiated in flash_fwd_tf32*.cu.
template <int D, Fp32Math M> void run_fwd_tf32(const AttentionParams& p, cudaStream_t stream);

}  // namespace fb::cuda::flash
