// Tile configuration of the Hopper fp32 forward (3xTF32 on wgmma): every size the kernel, its
// launcher and its tests use is derived here and checked at compile time. Host and device code read it.
#pragma once

#include <cstddef>

namespace fb::cuda::flash_sm90 {

// Warp-specialised forward for fp32 inputs on TF32 tensor cores (flash_sm90_tf32_kernel.cuh):
//   warpgroup 0      producer: one thread issues the TMA copies (Q once; K tiles into a ring of
//                    kStages buffers; V tiles into a ring of kVStages staging buffers, each
//                    copy issued as soon as its buffer is free); all 128 threads then
//                    prepare the tiles for wgmma: K is split in place into hi = tf32(K) plus a
//                    K_lo buffer, V is transposed (wgmma TF32 takes B only K-major, i.e. keys
//                    contiguous), its keys permuted inside each group of 8 (see below) and split
//                    into Vt_hi / Vt_lo.
//   warpgroups 1, 2  consumers: 64 query rows each. S = Q K^T with Q's TF32 fragments built in
//                    registers from the raw Q tile (RS wgmma: no Q_hi/Q_lo copies in shared memory)
//                    and K_hi/K_lo from shared memory; online softmax in registers; P split into
//                    hi/lo in registers as the A operand of O_tile = P V (fresh per K/V tile,
//                    added to O in fp32).
//   kHeadDim         d (64 or 128)
//   kBc              keys per K/V tile (the N of S; a multiple of 32: whole 128-byte key rows of Vt)
//   kStages          depth of the K ring and of the Vt ring
//   kVStages         depth of the raw V staging ring (the TMA copies in flight ahead of the
//                    transposition: with 1, V_{j+1} is requested only once V_j is transposed)
//   kSplit           true: 3xTF32 (hi*hi + hi*lo + lo*hi); false: 1xTF32 (hi*hi only), a diagnostic
//                    that must fail the FP32 rule
template <int kHeadDim_, int kBc_, int kStages_, int kVStages_, bool kSplit_>
struct Tf32FwdTraits {
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBc = kBc_;
  static constexpr int kStages = kStages_;
  static constexpr int kVStages = kVStages_;
  static constexpr bool kSplit = kSplit_;

  // ---- threads ----
  static constexpr int kWarpSize = 32;
  static constexpr int kWgThreads = 128;
  static constexpr int kWgWarps = kWgThreads / kWarpSize;
  static constexpr int kConsumerWgs = 2;
  static constexpr int kConsumerThreads = kConsumerWgs * kWgThreads;
  static constexpr int kConsumerWarps = kConsumerWgs * kWgWarps;
  static constexpr int kThreads = kWgThreads + kConsumerThreads;

  // ---- wgmma m64nNk8 (TF32): each warp of a warpgroup owns 16 rows ----
  static constexpr int kWgRows = 64;
  static constexpr int kWarpRows = kWgRows / kWgWarps;
  static constexpr int kMmaK = 8;
  static constexpr int kMmaN = 8;  // accumulator column block
  static constexpr int kBr = kConsumerWgs * kWgRows;
  static constexpr int kFragRegs = 4;  // A fragment of one k8 step, per thread

  // ---- accumulators per consumer thread ----
  static constexpr int kSRegs = kWgRows * kBc / kWgThreads;       // S (and P), f32
  static constexpr int kORegs = kWgRows * kHeadDim / kWgThreads;  // O and O_tile, f32
  static constexpr int kQKSteps = kHeadDim / kMmaK;
  static constexpr int kPVSteps = kBc / kMmaK;
  // S's hi*hi products go to two accumulators, the first half of d's k8 steps and the second (the
  // latter after all the small products): the tensor core truncates each sum it adds into an
  // accumulator, and a chain of d/8 such sums at |S|'s scale would cost more than fp32 rounding.
  static constexpr int kQKHalf = kQKSteps / 2;
  static constexpr int kQKGroup = 4;  // k8 steps per wgmma commit group (bounds live Q fragments)
  // Q's raw A fragments (4 registers per k8 step) held across the K/V tiles instead of re-read
  // from shared memory per tile: d = 64 (32 registers; its consumers used ~170 of 224); at d = 128
  // (64 registers) they would not fit beside O, O_tile and P's hi/lo.
  static constexpr bool kQInRegs = kHeadDim == 64;

  // ---- shared memory: 128-byte swizzled tiles ----
  // A (rows, d) fp32 tile is d / 32 column chunks of (rows, 32) with 128-byte rows; 8 rows form a
  // 1024-byte swizzle atom (16-byte unit u of row r sits at unit u ^ (r % 8)). Vt, the transposed
  // V tile (d, kBc), is kBc / 32 key chunks of (d, 32) in the same form.
  static constexpr int kSwizzleBytes = 128;
  static constexpr int kChunkElems = kSwizzleBytes / 4;  // 32 floats
  static constexpr int kChunks = kHeadDim / kChunkElems;
  static constexpr int kAtomRows = 8;
  static constexpr int kAtomBytes = kAtomRows * kSwizzleBytes;
  static constexpr int kUnitBytes = 16;
  static constexpr int kUnitElems = kUnitBytes / 4;
  static constexpr int kMmaKBytes = kMmaK * 4;  // 32: one k8 step inside a 128-byte row
  static constexpr int kStepsPerChunk = kChunkElems / kMmaK;

  static constexpr int kQChunkBytes = kBr * kSwizzleBytes;
  static constexpr int kQBytes = kChunks * kQChunkBytes;
  static constexpr int kWgQBytes = kWgRows * kSwizzleBytes;  // a consumer's rows in one Q chunk
  static constexpr int kKVChunkBytes = kBc * kSwizzleBytes;
  static constexpr int kKVBytes = kChunks * kKVChunkBytes;  // one (kBc, d) tile
  static constexpr int kVtChunks = kBc / kChunkElems;
  static constexpr int kVtChunkBytes = kHeadDim * kSwizzleBytes;
  static constexpr int kVtBytes = kVtChunks * kVtChunkBytes;  // one (d, kBc) tile

  // Layout from the 1024-aligned base: Q | per stage K_hi, K_lo | kVStages V staging buffers | per
  // stage Vt_hi, Vt_lo | barriers. (The 1xTF32 diagnostic leaves the lo buffers unused.)
  static constexpr int kOffQ = 0;
  static constexpr int kOffK = kOffQ + kQBytes;
  static constexpr int kOffVraw = kOffK + kStages * 2 * kKVBytes;
  static constexpr int kOffVt = kOffVraw + kVStages * kKVBytes;
  static constexpr int kOffBar = kOffVt + kStages * 2 * kVtBytes;
  static constexpr int kBarBytes = 8;
  // q_full, per staging buffer v_full, per stage and column chunk k_full and k_ready (a K tile is
  // copied, split and handed over chunk by chunk: S's first k8 steps start before the last chunk
  // lands), then per stage k_empty, vt_ready, vt_empty, k_empty_half.
  static constexpr int kNumBars = 1 + kVStages + kStages * (2 * kChunks + 4);
  // true: the consumers release the K stage's first half of column chunks (read by S's first pass
  // only) as soon as that pass is past it, and the producer refills it before S is done.
  static constexpr bool kEarlyKRelease = false;
  // true (one stage only): K tiles land in the staging buffer and are split out of place; V tiles
  // land in K_lo's space once S's first pass is done with it (tf32_produce_shared_lo).
  static constexpr bool kSharedLo = false;
  // true: S's commit groups built fragments first, then one fence (tf32::gemm_split_rs_gated).
  static constexpr bool kBatchedS = false;
  // true: S in one pass over d's steps into three accumulators (tf32::gemm_split_rs_gated3): every Q
  // fragment built and split once per tile (the two-pass form builds the second half's twice).
  static constexpr bool kOnePassS = false;
  // true: every TF32 split rounds with cvt.rn (one SASS instruction, ptx::to_tf32_rn) instead of
  // cvt.rna (three): Q's fragments, P, and the producer's K and V^T splits.
  static constexpr bool kRn = false;
  // true: each wgmma's shared-memory descriptor is the tile's plus a constant (tf32::desc_add: one
  // uniform add) instead of rebuilt from its address (~6 uniform instructions per wgmma).
  static constexpr bool kDescBase = false;
  static constexpr std::size_t kSmemBytes =
      std::size_t(kOffBar + kNumBars * kBarBytes + kAtomBytes);
  static constexpr std::size_t kMaxSmemOptin = 232448;  // 227 KB per block on sm_90

  // ---- producer work items ----
  static constexpr int kKUnits = kKVChunkBytes / kUnitBytes;         // float4s of a K chunk
  static constexpr int kVItems = kHeadDim * (kBc / kMmaK);           // (column, 8-key group)

  // ---- registers (setmaxnreg) ----
  static constexpr int kRegFile = 64 * 1024;
  static constexpr int kLaunchRegs = kRegFile / kThreads / 8 * 8;
  // A V ring of more than one buffer adds loop state to the producer: 40 registers spilled there
  // (d = 64), so it takes 56 and the consumers 224 (d = 64's consumers use ~170).
  static constexpr int kProducerRegs = kVStages > 1 ? 56 : 40;
  static constexpr int kConsumerRegs = kVStages > 1 ? 224 : 232;

  static constexpr int kBarProducer = 1;  // named barrier of the producer warpgroup
  // true: the consumers take turns on the tensor cores (ping-pong, see tf32_consume; named barriers
  // kBarTurn0 + cw, one per consumer warpgroup). Off: measured (session 6, call F) the consumers in
  // lockstep ran 1-10% faster (d = 128 non-causal N = 4096: 85.9 against 78.0 TFLOP/s); a turn holds
  // S until it is complete, and S's fragments are built between its wgmma groups, so the other
  // warpgroup's tensor work no longer fills those gaps.
  static constexpr bool kPingPong = false;
  static constexpr int kBarTurn0 = 2;

  static_assert(kHeadDim % kChunkElems == 0, "d is a whole number of 128-byte chunks");
  static_assert(kBc % kChunkElems == 0 && kBc <= 256, "K/V tile: whole Vt key chunks, one TMA box");
  static_assert(kBc == 64 || kBc == 128, "wgmma wrappers exist for N = 64 and 128");
  static_assert(kStages >= 1 && kVStages >= 1, "at least one buffer of each ring");
  static_assert(kBarTurn0 + kConsumerWgs <= 16, "sm_90 has 16 named barriers");
  static_assert(kHeadDim == 64 || kHeadDim == 128, "wgmma wrappers exist for N = 64 and 128");
  static_assert(kQKSteps % kQKGroup == 0 && kQKHalf % kQKGroup == 0, "whole commit groups");
  static_assert(kStepsPerChunk % kQKGroup == 0, "a commit group reads one K chunk");
  static_assert(kQKHalf % kStepsPerChunk == 0, "S's halves of k8 steps are whole K chunks");
  static_assert(kKUnits % kWgThreads == 0 && kVItems % kWgThreads == 0,
                "the producer's 128 threads share the tile preparation evenly");
  static_assert(kOffK % kAtomBytes == 0 && kOffVraw % kAtomBytes == 0 && kOffVt % kAtomBytes == 0 &&
                    kKVBytes % kAtomBytes == 0 && kVtBytes % kAtomBytes == 0,
                "every tile starts on a swizzle atom");
  static_assert(kSmemBytes <= kMaxSmemOptin, "fits the 227 KB a block may opt in to");
  // setmaxnreg.inc draws only on what the block's setmaxnreg.dec released (the launch allocation).
  static_assert(kProducerRegs * kWgThreads + kConsumerRegs * kConsumerThreads <= kLaunchRegs * kThreads,
                "the register file holds the producer and the consumers after setmaxnreg");
  static_assert(kProducerRegs <= kLaunchRegs && kConsumerRegs >= kLaunchRegs,
                "setmaxnreg lowers the producer and raises the consumers");
};

// The same forward with ping-pong turns between the consumers: a timing probe
// (FB_SM90_FP32_FWD_PROBE=pingpong, flash_sm90_tf32_launch.cuh).
template <typename Tr> struct Tf32PingPong : Tr {
  static constexpr bool kPingPong = true;
};

// The same forward with the K stage refilled in halves (kEarlyKRelease): a timing probe
// (FB_SM90_FP32_FWD_PROBE=khalf).
template <typename Tr> struct Tf32KHalves : Tr {
  static constexpr bool kEarlyKRelease = true;
};

// The same forward with K landing in the staging buffer and V in K_lo's space (kSharedLo, one
// stage): a timing probe (FB_SM90_FP32_FWD_PROBE=shared).
template <typename Tr> struct Tf32SharedLo : Tr {
  static_assert(Tr::kStages == 1 && Tr::kVStages == 1, "one stage: the staging buffer holds K");
  static constexpr bool kSharedLo = true;
};

// The same forward with S's commit groups issued as one batch each (kBatchedS), groups of 2 k8 steps
// (the fragments of the group in flight and of the next one: the registers of today's group of 4):
// a timing probe (FB_SM90_FP32_FWD_PROBE=batch).
template <typename Tr> struct Tf32BatchedS : Tr {
  static constexpr bool kBatchedS = true;
  static constexpr int kQKGroup = 2;
  static_assert(Tr::kStepsPerChunk % kQKGroup == 0 && Tr::kQKHalf % kQKGroup == 0, "whole groups");
};

// The same forward with S in one pass, three accumulators, groups of 2 k8 steps issued as one batch
// each (kOnePassS; with a third 32-register accumulator the group in flight and the one being built
// must stay at 2 steps): a timing probe (FB_SM90_FP32_FWD_PROBE=onepass).
template <typename Tr> struct Tf32OnePassS : Tr {
  static constexpr bool kOnePassS = true;
  static constexpr int kQKGroup = 2;
  static_assert(Tr::kStepsPerChunk % kQKGroup == 0 && Tr::kQKHalf % kQKGroup == 0, "whole groups");
};

// The same forward with cvt.rn splits (kRn): a timing probe (FB_SM90_FP32_FWD_PROBE=rn).
template <typename Tr> struct Tf32Rn : Tr {
  static constexpr bool kRn = true;
};

// The same forward with descriptors from a per-tile base (kDescBase): a timing probe
// (FB_SM90_FP32_FWD_PROBE=desc).
template <typename Tr> struct Tf32DescBase : Tr {
  static constexpr bool kDescBase = true;
};

// The fp32 forward's tiles per head_dim. d = 128: Q (64 KB) + one stage of K_hi/K_lo (64 KB) +
// V staging (32 KB) + one stage of Vt_hi/Vt_lo (64 KB) = 224 KB, the most that fits; d = 64 has
// room for two stages and two V staging buffers (32 + 64 + 32 + 64 = 192 KB): K_{j+2} and V_{j+2}
// are requested while tile j is prepared, so a copy's latency overlaps a whole tile.
// Traits is what ships (session 7, calls A and B: cvt.rn splits +17-24% at both head dims; at d = 128
// S in one pass and per-tile descriptors another 0-2%; at d = 64 cvt.rn alone measured best, the one
// pass ~1% slower); Session6 is session 6's kernel (cvt.rna, S in two passes, descriptors rebuilt per
// wgmma), the probe word "s6".
template <int D, bool kSplit> struct Tf32FwdConfig;
template <bool kSplit> struct Tf32FwdConfig<64, kSplit> {
  using Session6 = Tf32FwdTraits<64, 64, 2, 2, kSplit>;
  using Traits = Tf32Rn<Session6>;
};
template <bool kSplit> struct Tf32FwdConfig<128, kSplit> {
  using Session6 = Tf32FwdTraits<128, 64, 1, 1, kSplit>;
  using Traits = Tf32DescBase<Tf32OnePassS<Tf32Rn<Session6>>>;
};

}  // namespace fb::cuda::flash_sm90
