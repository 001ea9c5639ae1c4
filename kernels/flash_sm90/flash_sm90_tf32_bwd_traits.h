// Tile configuration of the Hopper fp32 backward (3xTF32 on wgmma): every size the kernel and its
// launcher use, derived once and checked at compile time. Host and device code read it.
#pragma once

#include <cstddef>
#include <type_traits>

namespace fb::cuda::flash_sm90 {

// The work of the 16-bit backward (flash_sm90_bwd_traits.h): one block per (tile of kBlockN keys,
// batch, K/V head), looping over the group's query heads and their tiles of kBlockM queries, dK and
// dV for its keys in registers. Each GEMM is hi*hi + hi*lo + lo*hi on TF32 wgmma (m64nNk8), whose
// operands in shared memory must both be K-major (no transpose for TF32):
//   warpgroup 0      producer: one thread loads K and V once (raw fp32: the consumers build their
//                    A fragments from them), then per query tile Q, dO, LSE and D (TMA and bulk
//                    copies). All 128 threads then prepare the tile in two halves, each as soon as
//                    the consumers free its space: Q and dO split in place (hi) and into a lo
//                    buffer (the operands of S^T, dP^T); then Q^T and dO^T (the B operands of dK
//                    and dV, which sum over queries) transposed from the split tiles, each group
//                    of 8 queries permuted (see kernels/common/tf32_tiles.cuh).
//   consumers        kConsumerWgs warpgroups; each computes, for 64 keys (the wgmma M):
//                      S^T  = K Q^T, dP^T = V dO^T      A: K / V fragments from the raw tiles,
//                                                       split in registers; B: Q / dO hi, lo
//                      P^T  = exp2(S^T scale log2 e - LSE log2 e), dS^T = P^T o (dP^T - D)
//                      dV  += P^T dO, dK += dS^T Q      A: P^T / dS^T hi, lo; B: dO^T / Q^T hi,
//                                                       lo; a fresh sum per query tile in
//                                                       64-column parts, added to dV / dK in fp32
//                      dQ^T = K^T dS^T                  A: K^T fragments from the raw K tile;
//                                                       B: dS (queries x keys, K-major) hi, lo,
//                                                       written to shared memory by the consumers
//                    and adds scale * dQ^T into dQ (fp32, the output itself, zeroed by the
//                    pre-pass): staged in shared memory as tm_dq's boxes, added by TMA
//                    reductions. The work splits between the consumers one of two ways:
//   kShareKeys false each consumer its own 64 keys (kBlockN = 64 x consumers): all the query tile's
//                    columns of S^T, dP^T; all of d for dV, dK (P^T's A fragments straight from
//                    its accumulators), dQ^T over its own keys. No barrier between consumers.
//   kShareKeys true  two consumers share 64 keys (kBlockN = 64) and split the rest: consumer 0
//                    computes S^T and P, consumer 1 dP^T and dS (P passed through shared memory),
//                    each for the whole query tile (wgmma N = kBlockM), and consumer c dV, dK, dQ^T
//                    for d's columns [64 c, 64 c + 64): dK and dV take 64 registers a thread
//                    instead of 128 at d = 128. P and dS go through shared memory (barriers
//                    between the consumers per tile), and dV's A fragments come from there.
// dK's A fragments are read back from dS in shared memory (freeing its registers early), except with
// kDsFromRegs (own keys, d = 64 since session 11), where they come from the consumer's dS registers.
// fp32 takes twice the shared memory of 16-bit data and each operand two parts, so the query tile
// is 32. 1xTF32 (kSplit = false) is the diagnostic that must fail the FP32 rule: hi*hi only.
// kPresplit: K and V are split into hi / lo in shared memory once per block (by the producer), so
// that S^T and dP^T run with A from shared memory (wgmma SS: no fragments built per tile) and dQ^T
// reads K^T's hi / lo fragments without splitting them; it costs a second copy of K and V.
template <int kHeadDim_, int kConsumerWgs_, int kBlockM_, int kStages_, bool kShareKeys_, bool kSplit_,
          bool kPresplit_ = false>
struct Tf32BwdTraits {
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kConsumerWgs = kConsumerWgs_;
  static constexpr int kBlockM = kBlockM_;
  static constexpr int kStages = kStages_;
  static constexpr bool kShareKeys = kShareKeys_;
  static constexpr bool kSplit = kSplit_;
  static constexpr bool kPresplit = kPresplit_;
  // true: every TF32 split rounds with cvt.rn (one SASS instruction, ptx::to_tf32_rn) instead of
  // cvt.rna (three): the producer's K, V, Q, dO splits and the consumers' fragments, P and dS.
  static constexpr bool kRn = false;
  // true: each wgmma's shared-memory descriptor is the tile's plus a constant (tf32::kstep_desc).
  static constexpr bool kDescBase = false;
  // true (own keys only; Tf32BwdEarlyQd, shipped at d = 64 since session 10): the stage's Q / dO half
  // released as soon as S^T / dP^T are complete rather than after the softmax (with one stage, the next
  // tile's loads and splits start a softmax earlier); LSE and D then take two slots per stage.
  static constexpr bool kEarlyQdEmpty = false;
  static constexpr int kLseSlots = kStages;  // LSE / D rows held at once (slot = tile % kLseSlots)
  // true (own keys only; Tf32BwdDsRegs, shipped at d = 64 since session 11): dK's A fragments (dS^T) from the
  // consumer's dS registers, as dV's come from P's, instead of read back from dS in shared memory.
  static constexpr bool kDsFromRegs = false;
  // true (own keys, presplit, 3xTF32; Tf32BwdHiLoB, shipped at d = 64 since session 12): Q and dO laid out per
  // 32-column chunk as [hi | lo] (each chunk's lo right after its hi), so that B = [Q hi | Q lo] is one K-major
  // N = 2 kBlockM operand: A hi x [B hi | B lo] is one wgmma (hi*hi and hi*lo side by side) reading A once.
  static constexpr bool kHiLoB = false;
  // true (shared keys; Tf32BwdRaceBar, session 12's racecheck-only probe `racebar`): a second barrier over both
  // consumers right after the one that orders consumer 1's dS stores before consumer 0's dK fragment loads.
  static constexpr bool kRaceBar = false;

  // ---- threads ----
  static constexpr int kWarpSize = 32;
  static constexpr int kWgThreads = 128;
  static constexpr int kWgWarps = kWgThreads / kWarpSize;
  static constexpr int kConsumerThreads = kConsumerWgs * kWgThreads;
  static constexpr int kThreads = kWgThreads + kConsumerThreads;

  // ---- tiles ----
  static constexpr int kWgKeys = 64;                      // wgmma M of S^T, dP^T, dK, dV
  static constexpr int kWarpKeys = kWgKeys / kWgWarps;    // 16
  static constexpr int kBlockN = kShareKeys ? kWgKeys : kConsumerWgs * kWgKeys;  // keys per block
  static constexpr int kMmaK = 8;
  static constexpr int kMmaN = 8;
  static constexpr int kPart = 64;                        // N of one dK / dV (and M of one dQ^T) GEMM
  static constexpr int kParts = kHeadDim / kPart;
  static constexpr int kWgParts = kShareKeys ? 1 : kParts;          // a consumer's parts of d
  static constexpr int kWgQueries = kBlockM;                        // N of S^T, dP^T

  // ---- accumulators per consumer thread ----
  static constexpr int kSRegs = kWgKeys * kWgQueries / kWgThreads;  // S^T, dP^T (each of 2 parts)
  static constexpr int kPartRegs = kWgKeys * kPart / kWgThreads;    // one part's fresh sum
  static constexpr int kDkvRegs = kWgParts * kPartRegs;             // dK, dV
  static constexpr int kDqRegs = kPart * kBlockM / kWgThreads;      // one part of dQ^T (of 2 parts)
  static constexpr int kQKSteps = kHeadDim / kMmaK;                 // k8 steps of S^T, dP^T
  static constexpr int kKVSteps = kBlockM / kMmaK;                  // of dV, dK
  static constexpr int kDqSteps = kWgKeys / kMmaK;                  // of dQ^T
  // k8 steps per commit group of the split GEMMs (two groups in flight: 16 fragment registers a
  // step) and whether dV's and dK's fresh parts are in flight together (32 registers each): when a
  // consumer holds all 128 columns of dK and dV at d = 128, it has 255 registers, so both are halved.
  static constexpr bool kWide = kDkvRegs > 32;
  static constexpr int kGroup = kWide ? 1 : 4;
  static constexpr bool kPairParts = !kWide;
  // Small wgmmas (N 16, 32) chained on one accumulator wait for the tensor pipe's latency, so the
  // backward's split GEMMs use tf32::gemm_split_rs_multi: S^T and dP^T issued interleaved, each into
  // kSdpAccs accumulators, kSdpGroup k8 steps per commit group; dQ^T into kDqAccs, kDqGroup steps a
  // group. Chosen by ptxas -v (0 spills under the consumers' 224 registers): S^T/dP^T's accumulators
  // (2 x kSdpAccs x kSRegs) and two groups of fragments (16 registers per step) live beside dK, dV.
  static constexpr int kSdpGemms = kShareKeys ? 1 : 2;  // shared keys: S^T or dP^T per consumer
  static constexpr int kSdpAccs = kSdpGemms == 1 || kSRegs <= 8 || kPresplit ? 4 : 3;
  static constexpr int kSdpGroup = kSdpGemms == 1 ? 2 : 1;
  static constexpr int kDqAccs = kHeadDim == 64 ? 3 : 4;
  static constexpr int kDqGroup = kHeadDim == 64 ? 1 : 4;

  // ---- shared memory: fp32 tiles in 32-float column chunks, 128-byte swizzle (tf32_tiles.cuh) ----
  static constexpr int kRowBytes = 128;
  static constexpr int kChunkElems = 32;
  static constexpr int kChunks = kHeadDim / kChunkElems;
  static constexpr int kAtomBytes = 1024;
  static constexpr int kKVChunkBytes = kBlockN * kRowBytes;
  static constexpr int kKVBytes = kChunks * kKVChunkBytes;   // K or V, raw
  static constexpr int kWgKVBytes = kWgKeys * kRowBytes;     // a consumer's rows in one chunk
  static constexpr int kQChunkBytes = kBlockM * kRowBytes;
  static constexpr int kQBytes = kChunks * kQChunkBytes;     // one part of Q or dO
  static constexpr int kQLoOff = kQBytes;                    // Q lo (dO lo) from Q hi (dO hi)
  static constexpr int kQChunkStride = kQChunkBytes;         // chunk c of a part at c * kQChunkStride
  static constexpr int kQtChunkBytes = kHeadDim * kRowBytes;
  static constexpr int kQtBytes = (kBlockM / kChunkElems) * kQtChunkBytes;  // one part of Q^T
  static constexpr int kPartBytes = kPart * kRowBytes;       // 64 rows of Q^T / dO^T
  static constexpr int kDsChunkBytes = kBlockM * kRowBytes;
  static constexpr int kDsBytes = (kBlockN / kChunkElems) * kDsChunkBytes;  // one part of dS
  static constexpr int kWgDsBytes = (kWgKeys / kChunkElems) * kDsChunkBytes;
  static constexpr int kRowVecBytes = kBlockM * int(sizeof(float));

  // A stage: Q hi, lo | dO hi, lo | Q^T hi, lo | dO^T hi, lo; its LSE and D apart (after dS).
  static constexpr int kStOffQ = 0;
  static constexpr int kStOffDo = kStOffQ + 2 * kQBytes;
  static constexpr int kStOffQt = kStOffDo + 2 * kQBytes;
  static constexpr int kStOffDot = kStOffQt + 2 * kQtBytes;
  static constexpr int kStageBytes = kStOffDot + 2 * kQtBytes;

  static constexpr int kOffK = 0;
  static constexpr int kOffV = kOffK + kKVBytes;
  static constexpr int kOffKLo = kOffV + kKVBytes;                   // kPresplit: K lo, V lo
  static constexpr int kOffVLo = kOffKLo + (kPresplit ? kKVBytes : 0);
  static constexpr int kOffStage = kOffVLo + (kPresplit ? kKVBytes : 0);
  static constexpr int kOffDs = kOffStage + kStages * kStageBytes;  // dS hi, lo
  static constexpr int kOffP = kOffDs + 2 * kDsBytes;               // kShareKeys: P hi, lo
  static constexpr int kOffLse = kOffP + (kShareKeys ? 2 * kDsBytes : 0);  // per slot
  static constexpr int kOffD = kOffLse + kLseSlots * kRowVecBytes;
  static constexpr int kOffBar = kOffD + kLseSlots * kRowVecBytes;
  static constexpr int kBarBytes = 8;
  // K/V full; per stage: raw (TMA) full, Q/dO ready, Q^T/dO^T ready, Q/dO empty, Q^T/dO^T empty.
  static constexpr int kNumBars = 2 + 5 * kStages;  // + K/V split (kPresplit)
  static constexpr std::size_t kSmemBytes =
      std::size_t(kOffBar + kNumBars * kBarBytes + kAtomBytes);  // + slack to align the base
  static constexpr std::size_t kMaxSmemOptin = 232448;          // 227 KB per block on sm_90

  // ---- registers (setmaxnreg; one consumer needs none: 256 threads have 256 registers each) ----
  static constexpr int kRegFile = 64 * 1024;
  static constexpr int kLaunchRegs = kRegFile / kThreads / 8 * 8;
  static constexpr bool kSetMaxNreg = kConsumerWgs > 1;
  static constexpr int kProducerRegs = 56;
  static constexpr int kConsumerRegs = 224;

  // ---- named barriers (0 is __syncthreads) ----
  static constexpr int kBarProducer = 1;
  static constexpr int kBarConsumer0 = 2;  // + consumer index: its dS rows are written / free
  static constexpr int kBarConsumers = kBarConsumer0 + kConsumerWgs;  // kShareKeys: P, dS of all

  static_assert(kHeadDim == 64 || kHeadDim == 128, "wgmma wrappers: d is one or two 64-wide parts");
  static_assert(!kPresplit || !kShareKeys, "presplit K/V: each consumer computes S^T and dP^T (own keys)");
  static_assert(kWgQueries == 16 || kWgQueries == 32 || kWgQueries == 64,
                "TF32 wgmma wrappers exist for N = 16, 32 and 64");
  static_assert(!kShareKeys || (kParts == kConsumerWgs && kConsumerWgs == 2),
                "shared keys: one 64-column part of d per consumer; one computes S^T, the other dP^T");
  static_assert(kBlockM % kChunkElems == 0 && kBlockN <= 256 && kBlockM <= 256,
                "whole transposed chunks; one TMA box per chunk");
  static_assert(kQKSteps % kSdpGroup == 0 && (kQKSteps / 2) % kSdpGroup == 0 && kDqSteps % kDqGroup == 0 &&
                    (kDqSteps / 2) % kDqGroup == 0,
                "whole commit groups");
  static_assert(kQKSteps % kGroup == 0 && (kQKSteps / 2) % kGroup == 0 && kDqSteps % kGroup == 0 &&
                    (kDqSteps / 2) % kGroup == 0,
                "whole commit groups");
  static_assert(kQBytes % kAtomBytes == 0 && kQtBytes % kAtomBytes == 0 && kKVBytes % kAtomBytes == 0 &&
                    kDsBytes % kAtomBytes == 0 && kStageBytes % kAtomBytes == 0,
                "every wgmma operand starts on a swizzle atom");
  static_assert(kSmemBytes <= kMaxSmemOptin, "fits the 227 KB a block may opt in to");
  // setmaxnreg.inc takes registers only from what the block's own setmaxnreg.dec released: the
  // block's launch allocation (kLaunchRegs a thread), not the whole register file, is the budget.
  // Over it, the consumers' setmaxnreg.inc waits forever.
  static_assert(!kSetMaxNreg ||
                    (kProducerRegs * kWgThreads + kConsumerRegs * kConsumerThreads <= kLaunchRegs * kThreads &&
                     kProducerRegs <= kLaunchRegs && kConsumerRegs >= kLaunchRegs),
                "setmaxnreg lowers the producer and raises the consumers within the block's registers");
};

// The same backward with cvt.rn splits (kRn): a timing probe (FB_SM90_FP32_BWD_PROBE=rn).
template <typename Tr> struct Tf32BwdRn : Tr {
  static constexpr bool kRn = true;
};

// The same backward with descriptors from a per-tile base (kDescBase): a timing probe
// (FB_SM90_FP32_BWD_PROBE=desc).
template <typename Tr> struct Tf32BwdDescBase : Tr {
  static constexpr bool kDescBase = true;
};

// The same backward releasing Q / dO before the softmax (kEarlyQdEmpty): d = 64's since session 10
// (call A: +1.5-4.7% at d = 64, docs/perf-notes.md).
template <typename Tr> struct Tf32BwdEarlyQd : Tr {
  static constexpr bool kEarlyQdEmpty = true;
  // LSE / D of tile t stay in slot t % kLseSlots until the consumers' softmax of t; the producer
  // loads tile t + 1's into the other slot once Q / dO are released (before that softmax).
  static constexpr int kLseSlots = 2 * Tr::kStages;
  static constexpr int kOffD = Tr::kOffLse + kLseSlots * Tr::kRowVecBytes;
  static constexpr int kOffBar = kOffD + kLseSlots * Tr::kRowVecBytes;
  static constexpr std::size_t kSmemBytes =
      std::size_t(kOffBar + Tr::kNumBars * Tr::kBarBytes + Tr::kAtomBytes);
  static_assert(!Tr::kShareKeys, "early Q / dO release: consumers with their own keys");
  static_assert(kSmemBytes <= Tr::kMaxSmemOptin, "fits the 227 KB a block may opt in to");
};

// The same backward with dK's A fragments from the dS registers (kDsFromRegs): the same values as the
// read-back, bit for bit; d = 64's since session 11 (call A: level, +0.3-0.5%; 32 fewer shared loads per
// consumer thread and tile, and no spill: docs/perf-notes.md).
template <typename Tr> struct Tf32BwdDsRegs : Tr {
  static constexpr bool kDsFromRegs = true;
  static_assert(!Tr::kShareKeys, "dS fragments from registers: each consumer holds its keys' dS^T");
};

// S^T and dP^T with B's hi and lo side by side as one N = 64 operand (kHiLoB): per k8 step and GEMM two wgmmas
// instead of three, A hi read once, 7 KB of operand reads instead of 9 (the wgmma operand reads are 59% of the
// kernel's shared-memory wavefronts: session 12's profile). The same products into the same accumulation chains:
// dK, dV bit-identical. d = 64's 3xTF32 kernel since session 12 (call A, probe `hilo`: +4.7-8.4%, docs/perf-notes.md).
template <typename Tr> struct Tf32BwdHiLoB : Tr {
  static constexpr bool kHiLoB = true;
  static constexpr int kQLoOff = Tr::kQChunkBytes;           // [hi chunk 0 | lo chunk 0 | hi chunk 1 | ...]
  static constexpr int kQChunkStride = 2 * Tr::kQChunkBytes;
  static_assert(!Tr::kShareKeys && Tr::kPresplit && Tr::kSplit && Tr::kSdpAccs == 4,
                "hi | lo B: own keys, A split in shared memory, 3xTF32, hi*lo in its own accumulator");
  static_assert(2 * Tr::kWgQueries == 64, "[hi | lo] is one m64n64k8 B operand");
};

// Session 12's racecheck-only probe `racebar` (FB_SM90_FP32_BWD_PROBE, d = 128 3xTF32): kRaceBar.
template <typename Tr> struct Tf32BwdRaceBar : Tr {
  static constexpr bool kRaceBar = true;
  static_assert(Tr::kShareKeys, "the barrier between the consumers' dS stores and dK loads (shared keys)");
};

// The fp32 backward's tiles per head_dim (shared memory, with LSE, D, barriers and alignment slack
// under the 227 KB): d = 64: two consumers with their own keys (128), K and V split once (hi, lo:
// 128 KB), one stage (64 KB; refilled in two halves, flash_sm90_tf32_bwd_kernel.cuh) + dS 32 KB =
// 224 KB. d = 128: two consumers sharing 64 keys (consumer 0 S^T, consumer 1 dP^T; each half of d
// for dV, dK, dQ^T), one stage: K, V 64 KB (raw: no room for a split copy) + 128 KB + dS and P
// 32 KB = 224 KB.
// Traits is what ships (session 7, call A: cvt.rn splits and per-tile descriptors, +4-20%; session 10,
// call A: at d = 64 Q / dO released before the softmax, +1.5-4.7%; session 11, call A: at d = 64 dK's A
// fragments from registers, level; session 12, call A: at d = 64 3xTF32 B = [hi | lo], +4.7-8.4%; the 1xTF32
// diagnostic has no lo to pair); Session6 is session 6's kernel (cvt.rna, descriptors rebuilt per wgmma), no longer
// instantiated.
template <int D, bool kSplit> struct Tf32BwdConfig;
template <bool kSplit> struct Tf32BwdConfig<64, kSplit> {
  using Session6 = Tf32BwdTraits<64, 2, 32, 1, false, kSplit, true>;
  using Session11 = Tf32BwdDsRegs<Tf32BwdEarlyQd<Tf32BwdDescBase<Tf32BwdRn<Session6>>>>;
  using Traits = std::conditional_t<kSplit, Tf32BwdHiLoB<Session11>, Session11>;
};
template <bool kSplit> struct Tf32BwdConfig<128, kSplit> {
  using Session6 = Tf32BwdTraits<128, 2, 32, 1, true, kSplit>;
  using Traits = Tf32BwdDescBase<Tf32BwdRn<Session6>>;
};

}  // namespace fb::cuda::flash_sm90
