// Tile configuration of the Hopper backward: every size its kernel and launcher use, derived once
// and checked at compile time. Host and device code read it.
#pragma once

#include <cstddef>

namespace fb::cuda::flash_sm90 {

// Warp-specialised FlashAttention backward (the FlashAttention-3 layout of the work):
//   one block per (tile of kBlockN keys, batch, K/V head); it loops over the group's query heads
//   and their tiles of kBlockM queries, keeping dK and dV for its keys in registers.
//   warpgroup 0      producer: one thread loads K and V once, then Q, dO, LSE and D per query
//                    tile into a ring of kStages buffers (TMA and bulk copies, full/empty mbarriers).
//   warpgroups 1, 2  consumers: each owns kWgKeys = 64 keys (the wgmma M) and computes, per query
//                    tile, the transposed products, so that P^T and dS^T come out of the
//                    accumulators in the register layout the next wgmma's A operand needs:
//                      S^T  = K Q^T,  dP^T = V dO^T                 (both operands in shared memory)
//                      P^T  = exp2(S^T * scale*log2 e - LSE*log2 e),  dS^T = P^T o (dP^T - D)
//                      dV  += P^T dO, dK += dS^T Q                 (A from registers)
//                      dQ   = dS K                                  (dS^T through shared memory)
//                    and adds its dQ part into an fp32 accumulator in global memory with one bulk
//                    reduction (cp.reduce.async.bulk .add.f32) per query tile. How dQ is split
//                    between the consumers depends on d (kSplitDq below).
// The dQ accumulator is kept in the order the wgmma accumulator holds it (a 16 KB block per query
// tile and 64-column block, float4 groups of registers by thread), so that staging it through
// shared memory is free of bank conflicts; the convert kernel maps it back to [batch, heads, seq, d].
//   kSplitDq (d = 128) dQ over all the block's keys, each consumer computing 64 of d's 128 columns:
//                    it needs both consumers' dS^T (a barrier between them every step).
//   kSplitDqRows (d = 64) 128 queries per step (FlashAttention-3's 128 x 128 tile at this head dim):
//                    dQ over all the block's keys, each consumer computing 64 of the step's 128 query
//                    rows for all 64 columns (a split by columns would leave 32, half a 128-byte
//                    swizzle row, to each). Against 64 queries per step with dQ per consumer over its
//                    own keys (the first d = 64 version): half the dQ reductions per FLOP, S^T and
//                    dP^T as m64n128 (a third less shared-memory traffic per FLOP for those), half
//                    the per-step waits and barriers per FLOP; dS^T rows are two 128-byte chunks.
//   neither (kept to compare against, d = 64 before): 64 queries per step, each consumer computes
//                    dQ over its own 64 keys for all 64 columns: no barrier, twice the reductions.
//
// kSplitHead (d = 256): a consumer's dK and dV for 64 keys over all of d would take 2 x 128 f32
// registers a thread, over the 240 it has. So both consumers work on the SAME 64 keys (kBlockN = 64)
// and split the rest:
//   S^T, dP^T  each consumer computes 32 of the tile's 64 query columns (wgmma N = 32, A = all of K
//              or V), and writes its half of P^T and dS^T to shared memory (16-bit, swizzled);
//   dV, dK     each consumer accumulates 128 of d's 256 columns (64 + 64 registers), reading the
//              whole P^T / dS^T from shared memory (A, K-major) and dO / Q MN-major (B);
//   dQ         each consumer computes its 128 columns as two 64-column blocks (32 registers each),
//              staged one at a time through one 16 KB buffer and bulk-reduced.
//   Shared memory is what limits it: K and V (64 KB), Q in two stages (64 KB), dO in one (32 KB, its
//   own empty barrier: it is free once dV is done, half a step before Q), P^T and dS^T twice (32 KB,
//   so that a consumer writes step i+1's while the other still reads step i's), and the two dQ
//   staging buffers (32 KB): 224 KB of the 227 KB a block may have.
// Variants, for A/B runs in one binary (flash_sm90_bwd.cu):
//   kBwd64Default       d = 64: split dQ rows, persistent; P^T and dS^T in one loop, then dV; barrier;
//                       dQ, dK. Issuing dV (and dK) per 64-query half of that loop measured 1-3% slower.
//   kBwd64PerConsumerDq d = 64, FB_SM90_BWD64=per-consumer-dq: the first d = 64 version (64 queries per
//                       step, dQ per consumer over its own keys).
//   (kBwd128Persistent, the d = 128 kernel made persistent, measured 1-2% slower in session 6's call F and
//   session 8's call A, with or without the staged epilogue at N >= 2048: removed.)
//   kBwdHeadSplit       d = 64 or 128, GQA/MQA: the default kernel (at d = 128 with 64 or 80 queries a
//                       step, kBwd128Q80Mask below) with a K/V tile's query heads split over several
//                       blocks (work units), one block per unit. A group's heads looped in
//                       one block leave batch * kv_heads * key tiles blocks, as few as one per SM for
//                       MQA, and under a causal mask the first key tile has twice the average work, so
//                       the slowest block set the time (0.56-0.77x cuDNN at 8 or 32 q heads / 1 kv head).
//                       Units: (key tile, K/V plane, head subset), key tiles outermost (longest first
//                       under a causal mask; the hardware hands the next unit to the first free SM).
//                       A unit's dK, dV are partial sums: staged through the dQ buffer and added into
//                       fp32 accumulators in global memory with bulk reductions, as dQ, then converted.
//                       The launcher picks the split (or none) per shape (flash_sm90_bwd.cu).
//   kBwd128Direct       d = 128, FB_SM90_BWD128=direct: dK and dV stored straight from the accumulators
//                       (4-byte stores, 8 rows and half of each 32-byte sector per warp store), session 7's
//                       kernel. The default (kEpiSmem) stages them in shared memory and writes 16-byte
//                       units of whole rows: session 8's call A measured +9% at N = 512, +4% at 2048,
//                       +1% at 8192 non-causal, +16% / +9% / +4% causal N = 512 / 1024 / 2048.
//   kBwd64Direct        d = 64, FB_SM90_BWD64=direct: the persistent d = 64 kernel with dK and dV stored
//                       straight from the accumulators (session 7's). The default stages them too (both
//                       8 KB matrices through the consumer's dQ staging buffer): session 8's call B measured
//                       +1.8-7.7% non-causal N <= 2048 and +5-8% causal N = 512/1024, -0.7% at 8192.
//   Session 9 probes at d = 128 (bits; FB_SM90_BWD128=tail|poly), kept for a call with more repetitions
//   (session 9's call A, one run each: within about 1% of the default, mixed; docs/perf-notes.md):
//   kBwd128Tail         the block's end without waiting for the last dQ reduction to complete: dV is
//                       staged in the last step's ring stage (after both consumers are done with it)
//                       instead of the dQ buffer, and one thread waits only for the reduction's read
//                       of its buffer before the block exits.
//   kBwd128Poly         a quarter of P's exponentials on the FMA pipe (common/exp2_poly.h): the MUFU's
//                       8,192 exp2 a step take about as long as the dP^T GEMM they overlap.
//   Session 11 at d = 128 (bits; FB_SM90_BWD128=mbranch probe; q80 the default without a causal
//   mask since session 11's call A, FB_SM90_BWD128=q64 runs the 64-query kernel there instead):
//   kBwd128MaskBranch   P^T's causal-mask compares behind a branch on need_mask (uniform a warpgroup):
//                       the default computes the compare and select of every element on every step
//                       (36 ISETP and 32 FSEL a thread, beside the 32 MUFU and 32 FFMA), also without a
//                       causal mask.
//   kBwd128Q80          the d = 128 default where whole 80-query tiles pad little (q80_kernel(); under a
//                       causal mask with kBwd128Q80Mask, since session 12):
//                       FlashAttention-3's 80 queries a step (call A: +3-6% over 64, 0.975-1.035x cudnn). S^T, dP^T are m64n80 (40 registers each; a step's SS operand bytes per FLOP
//                       fall by a tenth, and its waits, barriers and reductions by a fifth per FLOP); dV,
//                       dK take 5 k16 steps. dQ is computed transposed, dQ^T = K^T dS^T (m64n80: M = this
//                       consumer's 64 columns of d, N = the 80 queries, over the block's 128 keys), so
//                       dS lies in shared memory query-major (80 rows of 128 keys, two 64-key chunks,
//                       K-major B), written from the dS^T accumulators with stmatrix .trans (8 x 8
//                       tiles transposed on the way). The dQ accumulator holds 80-query tiles of dQ^T in
//                       the accumulators' order (its own convert kernel); the query padding is a multiple
//                       of 80. Shared memory 226 KB (Q, dO, dS and the dQ staging are 80 rows).
//   Session 12 at d = 128 (a bit with kBwd128Q80; the default where q80_kernel() picks 80 queries,
//   flash_sm90_bwd.cu; FB_SM90_BWD128=q64 runs the 64-query kernels instead):
//   kBwd128Q80Mask      the 80-query kernel with the causal mask's compares (causal passes; and every
//                       GQA head split at 80 queries, as kBwdHeadSplit | kBwd128Q80 | kBwd128Q80Mask).
//                       The mask at an 80-query granularity: a key tile's first step starts at the
//                       80-query tile that holds its first visible row (up to 79 rows before it,
//                       masked), and a consumer's step needs the compares where its last key is right
//                       of the step's first row's diagonal. Call A: +1.8-7.1% over 64 queries at
//                       N = 4096 and 16384 (16 heads, 32/8 and 32/1 split), 0.995x at N = 1024. The
//                       non-causal Q80 kernel stays without the compares. (Measured and removed: the
//                       compares behind a branch, q80cm, below q80c on 6 of 7 rows.)
//   (Measured and removed in session 9: dQ added from registers with red.global.add.v4.f32, 1-7% slower;
//   each key tile walking its query tiles from a different start, so that a plane's blocks in flight
//   add into different dQ tiles, 0-1% slower; the two probes above with it, 1-2.5% slower.)
//   (Measured and removed in session 10: a step's dQ over all of d by one consumer, the two taking turns
//   by step parity, one 32 KB reduction a step, the other consumer only arriving on the dS^T barrier:
//   2-7% slower; 4-7% with that consumer's dQ and dK in flight together. docs/perf-notes.md.)
//   (Measured and removed in session 11: poly3, three of every eight of P's exponentials on the FMA pipe
//   (bit 512), level with the default in call A.)
//   Session 13 at d = 128 (a bit with or without kBwd128Q80 | kBwd128Q80Mask; the default on causal MHA passes
//   since session 13's call B, key_tail_order(); FB_SM90_BWD128=kgroup runs session 12's order instead):
//   kBwd128KeyTail      the blocks' order under a causal mask: key tiles [0, BwdParams::grouped_tiles)
//                       of every K/V plane in plane groups (session 12's order: L2 holds a group's Q, dO
//                       and dQ accumulator), then key tiles [grouped_tiles, key_tiles) over ALL planes,
//                       key tiles outermost (longest first). In session 12's order each plane group's
//                       longest key tiles start only when the group before it is dispatched, so the last
//                       group's long blocks start late and the last wave runs ragged (a list-scheduling
//                       model: 13% over the ideal at 8 heads N = 4096, 32 planes in groups of 5; 3% at 16
//                       heads); with the shortest key tiles of every plane last it is within 1-2% of it.
//                       The launcher picks grouped_tiles with that model, restricted to a short tail and
//                       to shapes where it gains (grouped_key_tiles(), flash_sm90_bwd.cu): a tail over all
//                       planes of many device-fulls loses L2 (call A, unrestricted: -9/-10% at N = 1024).
//                       Call B: +4.1..+6.0% at 8 heads N = 1024 / 2048 / 4096 (bf16, fp16), 16 heads
//                       N = 4096 level (the order unchanged there).
//                       With kBwdHeadSplit too (the causal d = 128 head split since session 14's call B,
//                       split_key_tail() in flash_sm90_bwd.cu: +14.5% / +12.9% at 32 / 1 and 16 / 1 heads
//                       N = 1024): over the split's virtual planes in L2 plane groups (before it, one group,
//                       key tiles outermost: the blocks in flight shared no rows at N = 1024).
//   (Measured and removed in session 13: the non-causal main kernel and dQ convert launched as programmatic
//   dependents of the pre-pass and the main kernel, level in call A and call B, 0.996-1.018.)
//   (Measured and removed in session 15: cvwave at d = 128 and 64, the dQ convert launched as the main kernel's
//   programmatic dependent, each block waiting on per-K/V-plane counters to convert in the last wave's idle
//   SMs; 0.98-1.04x, inside the default's run-to-run spread: its two N = 1k runs were 390 and 420 TFLOP/s.)
//   (Measured and removed in session 16: qtail at d = 64, the persistent kernel's last partial round of work tiles
//   split along the queries into parts with fp32 dK/dV partials; pooled over calls A and B +0.8 to +2.8% on the split
//   rows, -0.4% with halves, while identical-kernel controls in the same call read 0.988-1.024: the rule was not met.)
//   Session 24 at d = 128 (a bit with or without kBwd128Q80; non-causal passes without a head split where the launcher's
//   model says so, qtail_parts() in flash_sm90_bwd.cu; FB_SM90_BWD_QTAIL=off runs without it):
//   kBwd128QTail        the grid's last partial wave split along the queries. Every (key tile, K/V plane) tile of a
//                       non-causal pass is the same work, so n_tiles blocks on the SMs run as whole waves and a last
//                       partial one (2048 tiles on 132 SMs: 15.5 waves run as 16; 1200: 9.1 as 10). Tiles
//                       [0, tail_first) run whole, one block each; each of the rest runs as tail_parts blocks
//                       (units), unit s walking query tiles [s n / S, (s + 1) n / S) of the tile's n (every head
//                       of the group), its partial dK and dV added into fp32 accumulators (BwdParams::dkv_acc, the
//                       tail's tiles only, the head split's block layout) that the launcher converts. The launch
//                       is one grid, the whole tiles first, so the units fill the SMs the last wave left idle.
//   Session 32 at d = 64 (a bit; non-causal passes without a head split where the launcher's model says so,
//   tail_share_on() in flash_sm90_bwd.cu; FB_SM90_BWD64=noshare runs without it, =share wherever it can run):
//   kBwd64TailShare     the persistent kernel's last partial round shared out over every block. Non-causal tiles
//                       are the same work, so n_tiles tiles on B blocks run as whole rounds and R = n_tiles mod B
//                       tiles on R blocks while B - R wait (4096 tiles: 31 rounds and 4 tiles). The whole rounds
//                       run as before (tiles [0, tail_first) round-robin); then the R tail tiles' query tiles, laid
//                       end to end (tile by tile, each tile's n query tiles of every head of its group), are cut
//                       into B equal runs, run b to block b: one or two pieces (a tile and a range of its query
//                       tiles), each adding its partial dK, dV into the tail's fp32 accumulators (kQTail's layout
//                       and convert). Against session 16's qtail (R tiles in S equal units, S <= B / R) every block
//                       takes the same share, whatever R. Call A: 1.011-1.108x on shapes no config names, the grid
//                       1.011-1.026x (docs/perf-notes.md, "Session 32").
//   Session 34 at d = 128 (a bit with kBwd128Q80, and kBwd128Q80Mask on causal passes; the default on passes without a
//   head split since session 34's calls B (non-causal) and D (causal), short_last_step() in flash_sm90_bwd.cu;
//   FB_SM90_BWD128=noshort runs without):
//   kBwd128Short        a head's last query tile, where it holds at most kShortRows = 32 of the 80 rows (seq_q mod 80
//                       in 1..32: N = 512, 4096, 8192), runs as a step of 32 queries: S^T, dP^T and dQ^T m64n32, dV
//                       and dK 2 k16 steps, a 8 KB dQ^T reduction (the first 32 queries of the tile's accumulator
//                       block, whose order is by n8 groups of queries). The 80-query step computed 48-79 rows of
//                       padding there: at N = 4096 (52 tiles of 80 for 51.2) 1.5% of the steps' work. The short steps
//                       run after all the whole ones (bwd_short_split). Call B: 0.987-1.036x the kernels before where
//                       it acts (geomean 1.009), call D on causal passes 0.997-1.031x (1.016); call A measured a first
//                       form (each head's short step right after its whole ones; bf16 8 bytes of spill) at 0.967-1.027x.
constexpr int kBwd64Default = 0, kBwd64PerConsumerDq = 1, kBwd128Direct = 2, kBwdHeadSplit = 8,
              kBwd64Direct = 32, kBwd128Tail = 128, kBwd128Poly = 256,
              kBwd128MaskBranch = 2048, kBwd128Q80 = 4096, kBwd128Q80Mask = 16384, kBwd128KeyTail = 65536,
              kBwd128QTail = 1 << 17, kBwd64TailShare = 1 << 18, kBwd128Short = 1 << 19;
//   kBwd64Dyn           d = 64, causal MHA passes without a head split (the default since session 49; session 48's
//                       probe FB_SM90_BWD_PERSIST=dyn, GQA too): the persistent kernel with its whole
//                       tiles in a dynamic order, each block's next from an atomic counter (BwdParams::dkv_acc as the
//                       counter, zeroed by the pre-pass; the producer passes each tile's number to the consumers in
//                       shared memory, kOffTile). A variant of its own, so that the default kernels keep their code
//                       (a run-time switch in them spilled 32-72 bytes).
constexpr int kBwd64Dyn = 1 << 23;
// Not a traits variant: FB_SM90_BWD128=q64 (flash_sm90_bwd.cu) runs BwdTraits<*, 128> on non-causal passes.
constexpr int kBwd128Q64 = 8192;

template <typename Elem_, int kHeadDim_, int kVariant64 = kBwd64Default> struct BwdTraits {
  using Elem = Elem_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr bool kSplitDq = kHeadDim == 128;
  static constexpr bool kSplitDqRows = kHeadDim == 64 && kVariant64 != kBwd64PerConsumerDq;
  // Persistent (split dQ rows only): a block loops over work tiles (blockIdx.x, + gridDim.x, ...);
  // the producer loads a tile's first Q/dO stage, then its K and V once the consumers are done with
  // the previous tile's (kv_empty), so that the previous tile's dK/dV stores and the block launch
  // are off the critical path. The launcher picks the grid (flash_sm90_bwd.cu).
  // Head split: a block per unit (the launcher models the hardware's scheduling of them).
  static constexpr bool kPersistent = kSplitDqRows && kVariant64 != kBwdHeadSplit;
  // Whole tiles in a dynamic order (kBwd64Dyn above).
  static constexpr bool kDynTiles = kHeadDim == 64 && kVariant64 == kBwd64Dyn;
  // The last partial round shared out over every block (kBwd64TailShare above).
  static constexpr bool kTailShare = kHeadDim == 64 && kVariant64 == kBwd64TailShare;
  static constexpr bool kSplitHead = kHeadDim == 256;
  // GQA work units (above); at d = 128 also with 80 queries a step (kBwd128Q80 | kBwd128Q80Mask) and in the
  // key-tail order (kBwd128KeyTail: the causal d = 128 default since session 14, flash_sm90_bwd.cu).
  static constexpr bool kHeadSplit =
      (kVariant64 & ~(kBwd128Q80 | kBwd128Q80Mask | kBwd128KeyTail)) == kBwdHeadSplit;
  // dK and dV leave through shared memory as whole rows (d = 128 unless direct; the persistent d = 64
  // kernel unless direct; not with the head split, whose dK and dV are partial sums reduced like dQ).
  static constexpr bool kEpiSmem = !kHeadSplit && ((kHeadDim == 128 && kVariant64 != kBwd128Direct) ||
                                                   (kHeadDim == 64 && kPersistent && kVariant64 != kBwd64Direct));
  // Session 9's probes at d = 128 (bits of kVariant64).
  static constexpr int kBits128 = kHeadDim != 128 || kHeadSplit || kVariant64 == kBwd128Direct ? 0 : kVariant64;
  static constexpr bool kTail = (kBits128 & kBwd128Tail) != 0 && kEpiSmem;
  // Of every 8 accumulator registers of S^T, this many take exp2_poly (the rest ex2.approx).
  static constexpr int kExp2PolyEighths = (kBits128 & kBwd128Poly) != 0 ? 2 : 0;
  static constexpr bool kMaskBranch = (kBits128 & kBwd128MaskBranch) != 0;
  static constexpr bool kQ80 = kHeadDim == 128 && (kVariant64 & kBwd128Q80) != 0;
  // The 80-query kernel with the causal mask's compares (the non-causal Q80 kernel has none).
  static constexpr bool kQ80Mask = kQ80 && (kVariant64 & kBwd128Q80Mask) != 0;
  // A head's last query tile as a step of kShortRows queries where it has no more rows (kBwd128Short above).
  static constexpr bool kShort = kQ80 && (kBits128 & kBwd128Short) != 0;
  static constexpr int kShortRows = 32;
  // Key tiles in plane groups, then the short ones over all planes (kBwd128KeyTail above).
  // The head split's units too (d = 128), in the order of its virtual planes (flash_sm90_bwd_kernel.cuh).
  static constexpr bool kKeyTail =
      ((kHeadSplit && kHeadDim == 128 ? kVariant64 : kBits128) & kBwd128KeyTail) != 0;
  // The last partial wave's tiles split along the queries (kBwd128QTail above): one block per unit.
  static constexpr bool kQTail = (kBits128 & kBwd128QTail) != 0;
  // Both consumers read dS^T from shared memory (a barrier between them every step).
  static constexpr bool kSharedDs = kSplitDq || kSplitDqRows || kSplitHead;

  // ---- threads ----
  static constexpr int kWarpSize = 32;
  static constexpr int kWgThreads = 128;
  static constexpr int kWgWarps = kWgThreads / kWarpSize;
  static constexpr int kConsumerWgs = 2;
  static constexpr int kConsumerThreads = kConsumerWgs * kWgThreads;
  static constexpr int kThreads = kWgThreads + kConsumerThreads;

  // ---- tiles ----
  static constexpr int kWgKeys = 64;                        // wgmma M of S^T, dP^T, dV, dK
  static constexpr int kWarpKeys = kWgKeys / kWgWarps;      // 16
  static constexpr int kBlockN = kSplitHead ? kWgKeys : kConsumerWgs * kWgKeys;  // keys per block
  static constexpr int kBlockM = kSplitDqRows ? 128 : kQ80 ? 80 : 64;  // queries per step
  static constexpr int kDqRows = 64;                        // wgmma M of dQ: rows of a dQ block
  // Query rows of a dQ accumulator block (Q80: a block is dQ^T, kDqCols rows of d by 80 queries).
  static constexpr int kDqTileRows = kQ80 ? kBlockM : kDqRows;
  static constexpr int kWgQueries = kSplitHead ? kBlockM / kConsumerWgs : kBlockM;  // S^T columns
  static constexpr int kWgCols = kSplitHead ? kHeadDim / kConsumerWgs : kHeadDim;   // dK, dV columns
  // dQ accumulator blocks per 64-row tile, each kDqCols columns; a consumer computes kDqPieces of
  // them (split dQ rows: one block of each of the step's two tiles).
  static constexpr int kDqBlocks = kSplitDq ? kConsumerWgs : kSplitHead ? kHeadDim / 64 : 1;
  static constexpr int kDqCols = kHeadDim / kDqBlocks;
  static constexpr int kDqPieces = kSplitHead ? kDqBlocks / kConsumerWgs : 1;
  static constexpr int kStages = 2;                         // Q ring depth
  static constexpr int kDoStages = kSplitHead ? 1 : kStages;  // dO ring depth
  static constexpr int kMmaK = 16;
  static constexpr int kMmaN = 8;

  // ---- accumulators per consumer thread ----
  static constexpr int kSRegs = kWgKeys * kWgQueries / kWgThreads;  // S^T and dP^T, f32
  static constexpr int kPRegs = kSRegs / 2;                         // P^T, dS^T as 16-bit pairs
  static constexpr int kDkvRegs = kWgKeys * kWgCols / kWgThreads;   // dK and dV, f32 each
  static constexpr int kDqRegs = kDqTileRows * kDqCols / kWgThreads;  // dQ (one block), f32
  static constexpr int kQKSteps = kHeadDim / kMmaK;                 // k16 steps of S^T, dP^T
  static constexpr int kKVSteps = kBlockM / kMmaK;                  // of dV, dK
  static constexpr int kDqSteps = (kSharedDs ? kBlockN : kWgKeys) / kMmaK;  // of dQ

  // ---- shared memory: 128-byte swizzled tiles (see flash_sm90_traits.h) ----
  static constexpr int kSwizzleBytes = 128;
  static constexpr int kChunkElems = kSwizzleBytes / int(sizeof(Elem));  // 64
  static constexpr int kChunks = kHeadDim / kChunkElems;
  static constexpr int kAtomRows = 8;
  static constexpr int kAtomBytes = kAtomRows * kSwizzleBytes;  // 1024
  static constexpr int kUnitBytes = 16;
  static constexpr int kMmaKBytes = kMmaK * int(sizeof(Elem));  // a k16 step along a K-major row
  static constexpr int kMmaKRowsBytes = kMmaK * kSwizzleBytes;   // ... along MN-major rows

  static constexpr int kKVChunkBytes = kBlockN * kSwizzleBytes;
  static constexpr int kKVBytes = kChunks * kKVChunkBytes;     // K or V
  static constexpr int kWgKVBytes = kWgKeys * kSwizzleBytes;   // a consumer's rows in one chunk
  static constexpr int kQChunkBytes = kBlockM * kSwizzleBytes;
  static constexpr int kQBytes = kChunks * kQChunkBytes;       // Q or dO of one stage
  static constexpr int kRowVecBytes = kBlockM * int(sizeof(float));  // LSE or D of one stage
  // dS^T: kBlockN key rows of kBlockM queries, as kBlockM / 64 chunks of kBlockN 128-byte swizzled
  // rows (a chunk is the A operand of one consumer's dQ at split dQ rows); when both consumers read
  // it two buffers, so that a consumer writes step i+1's while the other may still read step i's.
  // Split head keeps P^T the same way.
  // Q80: dS query-major, chunks of 64 keys by kBlockM query rows.
  static constexpr int kDsChunkBytes = (kQ80 ? kBlockM : kBlockN) * kSwizzleBytes;
  static constexpr int kDsBytes = kBlockN * kBlockM * int(sizeof(Elem));
  static constexpr int kDsBuffers = kSharedDs ? 2 : 1;
  static constexpr int kPBuffers = kSplitHead ? kDsBuffers : 0;
  static constexpr int kDqWgFloats = kDqTileRows * kDqCols;
  static constexpr int kDqWgBytes = kDqWgFloats * int(sizeof(float));  // one consumer's dQ block
  // Head split: a 64-key by kDqCols block of a dK or dV accumulator (its fp32 partial sums; Q80's dQ
  // blocks are 80 queries, these stay 64 keys).
  static constexpr int kDkvBlockRegs = kWgKeys * kDqCols / kWgThreads;
  static constexpr int kDkvBlockFloats = kWgKeys * kDqCols;
  static constexpr int kDkvBlockBytes = kDkvBlockFloats * int(sizeof(float));

  static constexpr int kOffK = 0;
  static constexpr int kOffV = kOffK + kKVBytes;
  static constexpr int kOffQ = kOffV + kKVBytes;
  static constexpr int kOffDo = kOffQ + kStages * kQBytes;
  static constexpr int kOffDs = kOffDo + kDoStages * kQBytes;
  static constexpr int kOffP = kOffDs + kDsBuffers * kDsBytes;
  static constexpr int kOffDq = kOffP + kPBuffers * kDsBytes;
  static constexpr int kOffLse = kOffDq + kConsumerWgs * kDqWgBytes;
  static constexpr int kOffD = kOffLse + kStages * kRowVecBytes;
  static constexpr int kOffBar = kOffD + kDoStages * kRowVecBytes;
  static constexpr int kBarBytes = 8;
  // K/V full; per Q stage Q full (Q, LSE); per dO stage dO full (dO, D); per Q stage empty (for
  // both Q and dO unless split head); split head: per dO stage dO empty; persistent: K/V empty.
  // Persistent: + K/V empty.
  static constexpr int kNumBars =
      1 + 2 * kStages + kDoStages + (kSplitHead ? kDoStages : 0) + (kPersistent ? 1 : 0);
  // kDynTiles: the tile the dynamic order gave the block next, the producer's word to the
  // consumers (written before the K/V full barrier's arrival that they wait on; -1: no tile left).
  static constexpr int kOffTile = kOffBar + kNumBars * kBarBytes;
  static constexpr std::size_t kSmemBytes =
      std::size_t(kOffTile + (kDynTiles ? kBarBytes : 0) + kAtomBytes);  // + slack to align the base

  // ---- registers (setmaxnreg) ----
  static constexpr int kRegFile = 64 * 1024;
  static constexpr int kLaunchRegs = kRegFile / kThreads / 8 * 8;
  static constexpr int kProducerRegs = 24;
  static constexpr int kConsumerRegs = 240;

  // ---- named barriers (0 is __syncthreads) ----
  // dS^T is in shared memory: both consumers' (split dQ, split head: P^T too) or this consumer's
  // (+ consumer index).
  static constexpr int kBarDs0 = 1;
  static constexpr int kBarDsThreads = kSharedDs ? kConsumerThreads : kWgThreads;
  static constexpr int kBarDq0 = kBarDs0 + kConsumerWgs;  // + consumer index: its dQ staging buffer

  static_assert(sizeof(Elem) == 2, "wgmma path: 16-bit elements");
  static_assert(kHeadDim % kChunkElems == 0, "d is a whole number of 128-byte chunks");
  static_assert(kDqCols == kChunkElems, "a consumer's dQ columns are one 64-column chunk of K");
  static_assert(kQ80 || kBlockM % kChunkElems == 0, "a dS^T row is whole 128-byte swizzled chunks");
  static_assert(!kQ80 || (kBlockN == kConsumerWgs * kChunkElems && kSplitDq && (kEpiSmem || kHeadSplit) &&
                          !kTail && !kMaskBranch && kExp2PolyEighths == 0),
                "Q80: a dS row is one 64-key chunk per consumer; the staged epilogue (or the head "
                "split's partial sums); alone");
  static_assert((kVariant64 & kBwd128Q80Mask) == 0 || kQ80, "the Q80 mask is the Q80 kernel's");
  static_assert((kVariant64 & kBwd128Short) == 0 || (kQ80 && !kHeadSplit),
                "the short last step: the 80-query kernels without a head split");
  static_assert(kShortRows % 16 == 0 && kShortRows < kBlockM, "the short step is whole k16 steps of queries");
  static_assert(!kKeyTail || (!kPersistent && !kTail && !kMaskBranch && kExp2PolyEighths == 0),
                "the key-tile tail order: one block per tile, not with session 9-11's probes");
  static_assert(!kTailShare || (kPersistent && kEpiSmem && kSplitDqRows),
                "the shared tail: the persistent d = 64 kernel with its staged epilogue");
  static_assert(!(kHeadSplit || kQTail || kTailShare) || kDkvBlockBytes <= kDqWgBytes,
                "dK, dV partial blocks stage in the dQ buffer");
  static_assert(!kQTail || (kEpiSmem && !kPersistent && !kTail && !kKeyTail && !kQ80Mask && !kMaskBranch &&
                            kExp2PolyEighths == 0),
                "the query tail: the one-block-per-tile non-causal kernels (64 or 80 queries), alone");
  static_assert(kSplitDqRows ? kBlockM == kConsumerWgs * kDqRows : kBlockM == kDqTileRows,
                "split dQ rows: one 64-row dQ block per consumer; else one per step");
  static_assert(int(kSplitDq) + int(kSplitDqRows) + int(kSplitHead) <= 1, "one way to split dQ");
  static_assert(kVariant64 == kBwd64Default ||
                    (kHeadDim == 64 && (kVariant64 == kBwd64PerConsumerDq || kHeadSplit || kVariant64 == kBwd64Direct ||
                                        kVariant64 == kBwd64TailShare || kVariant64 == kBwd64Dyn)) ||
                    (kHeadDim == 128 && (kVariant64 == kBwd128Direct || kHeadSplit ||
                                         (kVariant64 & ~(kBwd128Tail | kBwd128Poly | kBwd128MaskBranch |
                                                         kBwd128Q80 | kBwd128Q80Mask |
                                                         kBwd128KeyTail | kBwd128QTail | kBwd128Short)) == 0)),
                "the variants are d = 64's and d = 128's");
  static_assert(!(kHeadDim == 64 && kVariant64 == kBwd64Direct) || (!kEpiSmem && kPersistent),
                "d = 64 direct: the persistent kernel with the accumulators' stores");
  // One block per tile: dK in a free Q or dO stage, dV in the dQ buffer; persistent: both in the dQ buffer.
  static_assert(!kEpiSmem || (kPersistent ? 2 * kWgKeys * kHeadDim * int(sizeof(Elem)) <= kDqWgBytes
                                          : (kQ80 ? kQBytes >= kWgKeys * kHeadDim * int(sizeof(Elem))
                                                  : kQBytes == kWgKeys * kHeadDim * int(sizeof(Elem))) &&
                                                kDqWgBytes >= kQBytes),
                "the staged epilogue's buffers hold a consumer's dK and dV");
  static_assert(!(kHeadSplit || kQTail || kTailShare) || kDqCols == kChunkElems,
                "dK, dV partials are staged as dQ blocks");
  static_assert(kBlockN <= 256 && kBlockM <= 256, "one TMA box per chunk");
  static_assert(kDqRegs % 4 == 0, "dQ is staged in float4 groups");
  static_assert(kSplitHead || kDoStages == kStages, "dO has its own ring only with split head");
  static_assert(!kSplitHead || (kWgQueries % 8 == 0 && kWgCols % kChunkElems == 0 &&
                                kDqPieces * kConsumerWgs == kDqBlocks),
                "split head: whole 16-byte units of P^T per consumer, whole chunks of d");
  static_assert(kOffV % kAtomBytes == 0 && kOffQ % kAtomBytes == 0 && kOffDo % kAtomBytes == 0 &&
                    kOffDs % kAtomBytes == 0 && kOffP % kAtomBytes == 0 && kQBytes % kAtomBytes == 0 &&
                    kDsBytes % kAtomBytes == 0 && kDsChunkBytes % kAtomBytes == 0 &&
                    kWgKVBytes % kAtomBytes == 0,
                "every wgmma operand starts on a swizzle atom");
  static_assert(kOffDq % 16 == 0 && kOffLse % 16 == 0 && kOffD % 16 == 0 && kOffBar % 8 == 0,
                "bulk copies need 16-byte aligned shared memory");
  // setmaxnreg.inc draws only on what the block's own setmaxnreg.dec released: the budget is the
  // block's launch allocation (kLaunchRegs a thread), not the register file (a split 1024 registers
  // over it hung the fp32 backward's consumers in session 5).
  static_assert(kProducerRegs * kWgThreads + kConsumerRegs * kConsumerThreads <= kLaunchRegs * kThreads,
                "the launch allocation holds the producer and the consumers after setmaxnreg");
  static_assert(kProducerRegs <= kLaunchRegs && kConsumerRegs >= kLaunchRegs,
                "setmaxnreg lowers the producer and raises the consumers");
  static constexpr std::size_t kSmemOptin = 227 * 1024;  // per block on sm_90 (H100, H200)
  static_assert(kSmemBytes <= kSmemOptin, "fits one block's shared memory on sm_90");
};

}  // namespace fb::cuda::flash_sm90
