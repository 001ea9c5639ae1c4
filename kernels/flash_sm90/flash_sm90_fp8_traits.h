// Tile configuration of the Hopper fp8 (e4m3) forward (flash_sm90_fp8_kernel.cuh): every size the
// kernel and its launcher use is derived here, once, and checked at compile time.
#pragma once

#include <cstddef>

#include "common/mask.h"  // FB_HOST_DEVICE

namespace fb::cuda::flash_sm90 {

// The roles are the 16-bit forward's (flash_sm90_traits.h): warpgroup 0 is the TMA producer, the
// consumers own 64 query rows each. What differs for e4m3:
//   - wgmma is m64nNk32 (32 one-byte values of K per instruction);
//   - both shared-memory operands must be K-major, so P V reads V^T: the launcher transposes V once
//     into the workspace, [kv plane][d][key] with the keys of every 32 permuted (kVPermutation below),
//     and the kernel loads tiles of it (d rows of kBc keys);
//   - a Q or K row is d bytes: 128-byte swizzle at d = 128, 64-byte swizzle at d = 64 (one
//     swizzle row either way, so a K step is a start-address offset of 32 bytes);
//   - a V^T tile is kBc / 128 column chunks of (d rows, 128 keys), 128-byte swizzled (kBc = 192, 224:
//     three and four chunks of 64 keys, 64-byte swizzled);
//   - O is bf16: staged as d / 64 chunks of (kBr, 64) bf16 with 128-byte rows, as the 16-bit kernel
//     does, and stored by TMA.
//   kHeadDim       64 or 128
//   kBc            keys per K/V tile: 96, 128, 192 or 224 (one V^T chunk is one swizzle row: 128 keys, or
//                  64 otherwise; 256 spills at d = 128, see docs/perf-notes.md; 96 is for three
//                  consumer warpgroups at d = 128, whose 160 registers hold S 48 + P 12 + O 64)
//   kConsumerWgs   consumer warpgroups per block (64 query rows each)
//   kStages        K/V ring depth
//   kExp2PolyEighths  eighths of the scores whose exponential is computed on the FMA pipe
//                  (common/exp2_poly.h) instead of the MUFU pipe (ex2.approx): 0 = all on MUFU
//   kStageO        true: O staged in shared memory (bf16, swizzled) and stored by TMA, as the 16-bit
//                  kernel; false: each thread stores its bf16 pairs straight to global memory, which
//                  frees the staging tile (32 KB at d = 128) for a third K/V stage of 224 keys
//   kPinSoftmax    true: the wait for P V is placed where ptxas cannot hoist it above the softmax
//                  (flash_sm90_fp8_kernel.cuh); false: session 6's code, where it did
template <int kHeadDim_, int kBc_, int kConsumerWgs_, int kStages_, int kExp2PolyEighths_,
          bool kStageO_ = true, bool kPinSoftmax_ = true>
struct Fp8FwdTraits {
  static constexpr bool kPinSoftmax = kPinSoftmax_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kExp2PolyEighths = kExp2PolyEighths_;
  static constexpr bool kStageO = kStageO_;
  static constexpr int kBc = kBc_;
  static constexpr bool kIntraOverlap = true;  // flash_sm90_traits.h: both overlaps, always on here
  static constexpr bool kPingPong = true;

  // ---- threads ----
  static constexpr int kWarpSize = 32;
  static constexpr int kWgThreads = 128;
  static constexpr int kWgWarps = kWgThreads / kWarpSize;
  static constexpr int kConsumerWgs = kConsumerWgs_;
  static constexpr int kConsumerThreads = kConsumerWgs * kWgThreads;
  static constexpr int kConsumerWarps = kConsumerWgs * kWgWarps;
  static constexpr int kThreads = kWgThreads + kConsumerThreads;

  // ---- wgmma shape: m64 nN k32 ----
  static constexpr int kWgRows = 64;
  static constexpr int kWarpRows = kWgRows / kWgWarps;
  static constexpr int kMmaK = 32;
  static constexpr int kMmaN = 8;  // accumulator column block
  static constexpr int kBr = kConsumerWgs * kWgRows;

  // ---- registers per consumer thread ----
  static constexpr int kSRegs = kWgRows * kBc / kWgThreads;       // S, f32
  static constexpr int kORegs = kWgRows * kHeadDim / kWgThreads;  // O, f32
  static constexpr int kPRegs = kSRegs / 4;                       // P, four e4m3 per register
  static constexpr int kQKSteps = kHeadDim / kMmaK;
  static constexpr int kPVSteps = kBc / kMmaK;
  static constexpr int kPRegsPerStep = 4;  // the A fragment of one k32 step
  static constexpr int kSRegsPerStep = kMmaK / kMmaN * 4;  // 16 accumulators: 4 n8 blocks

  // ---- shared memory ----
  static constexpr int kAtomRows = 8;
  static constexpr int kQKRowBytes = kHeadDim;  // e4m3: one byte per element, one swizzle row
  static constexpr int kQKAtomBytes = kAtomRows * kQKRowBytes;
  // 128 keys of one d row (128-byte swizzle), or 64 (64-byte swizzle) when kBc is not a multiple of 128
  static constexpr int kVtRowBytes = kBc_ % 128 == 0 ? 128 : 64;
  static constexpr int kVtChunkKeys = kVtRowBytes;
  // Whole chunks: at kBc = 224 the last 64-key chunk is half used (its other 32 keys are the next
  // tile's, loaded again then), since a 32-key chunk would need 32-byte swizzle.
  static constexpr int kVtChunks = (kBc + kVtChunkKeys - 1) / kVtChunkKeys;
  static constexpr int kVtChunkBytes = kHeadDim * kVtRowBytes;
  static constexpr int kAlign = 1024;           // 128-byte swizzle atoms (64-byte ones need 512)
  static constexpr int kUnitBytes = 16;
  static constexpr int kMmaKBytes = kMmaK;      // one k32 step along a row

  static constexpr int kQBytes = kBr * kHeadDim;
  static constexpr int kWgQBytes = kWgRows * kHeadDim;  // one consumer's rows of Q
  static constexpr int kKBytes = kBc * kHeadDim;
  static constexpr int kVtBytes = kVtChunks * kVtChunkBytes;
  static constexpr int kStages = kStages_;

  // O staging (bf16): chunks of 64 columns, 128-byte rows, as flash_sm90_kernel.cuh's epilogue.
  static constexpr int kOElemBytes = 2;
  static constexpr int kOSwizzleBytes = 128;
  static constexpr int kOChunkElems = kOSwizzleBytes / kOElemBytes;  // 64
  static constexpr int kOChunks = kHeadDim / kOChunkElems;
  static constexpr int kOChunkBytes = kBr * kOSwizzleBytes;
  static constexpr int kWgOBytes = kWgRows * kOSwizzleBytes;  // one consumer's rows of an O chunk
  static constexpr int kOBytes = kStageO ? kOChunks * kOChunkBytes : 0;

  static constexpr int kOffQ = 0;
  static constexpr int kOffK = kOffQ + kQBytes;
  static constexpr int kOffV = kOffK + kStages * kKBytes;
  static constexpr int kOffO = kOffV + kStages * kVtBytes;
  static constexpr int kOffBar = kOffO + kOBytes;
  static constexpr int kBarBytes = 8;
  static constexpr int kNumBars = 2 + 4 * kStages;
  static constexpr int kSmemOptIn = 227 * 1024;
  static constexpr std::size_t kSmemBytes = std::size_t(kOffBar + kNumBars * kBarBytes + kAlign);

  // ---- registers (setmaxnreg), as flash_sm90_traits.h ----
  static constexpr int kRegFile = 64 * 1024;
  static constexpr int kLaunchRegs = kRegFile / kThreads / 8 * 8;
  static constexpr int kProducerRegs = 24;
  static constexpr int kConsumerRegsLeft =
      (kRegFile - kProducerRegs * kWgThreads) / kConsumerThreads / 8 * 8;
  static constexpr int kConsumerRegs = kConsumerRegsLeft < 240 ? kConsumerRegsLeft : 240;

  // ---- named barriers ----
  static constexpr int kBarTurn0 = 1;
  static constexpr int kTurnThreads = 2 * kWgThreads;
  static constexpr int kBarEpilogue0 = kBarTurn0 + kConsumerWgs;

  static_assert(kExp2PolyEighths >= 0 && kExp2PolyEighths <= 8, "a share of eighths");
  static_assert(kSRegs % 8 == 0, "the FMA-pipe share is taken as s[i], i % 8 < kExp2PolyEighths");
  static_assert(kHeadDim == 64 || kHeadDim == 128, "a Q/K row is one 64- or 128-byte swizzle row");
  static_assert(kBc % kMmaK == 0 && kBc <= 256, "whole k32 steps; one wgmma N <= 256");
  static_assert(kBc == 96 || kBc == 128 || kBc == 192 || kBc == 224,
                "ptx_sm90_fp8.cuh has the S wgmma for N = 96, 128, 192 and 224");
  static_assert(kBr <= 256, "Q tile: one TMA box (<= 256 rows)");
  static_assert(kConsumerWgs >= 1 && kConsumerWgs <= 3, "a block of at most 4 warpgroups");
  static_assert(kSRegs % kSRegsPerStep == 0, "P splits into whole k32 fragments");
  static_assert(kOffK % kAlign == 0 && kOffV % kAlign == 0 && kOffO % kAlign == 0 &&
                    kKBytes % kAlign == 0 && kVtBytes % kAlign == 0 && kVtChunkBytes % kAlign == 0 &&
                    kWgQBytes % kQKAtomBytes == 0 && kWgOBytes % kAlign == 0 &&
                    kOChunkBytes % kAlign == 0,
                "every tile and every warpgroup's rows start on a swizzle atom");
  static_assert(kSmemBytes <= std::size_t(kSmemOptIn), "one block's tiles fit in shared memory");
  // setmaxnreg.inc draws only on what the block's own setmaxnreg.dec released: the budget is the
  // block's launch allocation (kLaunchRegs a thread), not the register file (a split 1024 registers
  // over it hung the fp32 backward's consumers in session 5).
  static_assert(kProducerRegs * kWgThreads + kConsumerRegs * kConsumerThreads <= kLaunchRegs * kThreads,
                "the launch allocation holds the producer and the consumers after setmaxnreg");
  static_assert(kBarEpilogue0 + kConsumerWgs <= 16, "16 hardware named barriers");
};

// Key order inside the transposed V (the workspace): position k of every 32-key group holds key
// kVPermutation(k) of that group. The accumulator of S gives a thread, for its row, keys 2t, 2t + 1
// of each n8 block (t = lane % 4); the e4m3 A fragment wants k = 4t .. 4t + 3 in one register
// (ptx_sm90_fp8.cuh). Packing n8 blocks 0 and 1 into a[0] (and 2, 3 into a[2]) puts key
// 8 (i / 2) + 2t + i % 2 at position 4t + i, so V^T is stored in that order and P needs no shuffle:
//   positions 0..15 -> keys 0 1 8 9 2 3 10 11 4 5 12 13 6 7 14 15, and the same + 16 for 16..31.
constexpr int kVPermutationGroup = 32;
FB_HOST_DEVICE constexpr int v_key_of_position(int k) {
  return (k & 16) | ((k & 2) << 2) | (((k >> 2) & 3) << 1) | (k & 1);
}

// The S accumulator register (index into the thread's kSRegs) that byte `byte` of P register `reg`
// of k32 step kk takes (fp8_pack_p): a[reg] holds row g + 8 (reg % 2) and n8 blocks
// 4kk + 2 (reg / 2) and the next, two columns of each; accumulator 4j + 2 hf + c is block j, row
// g + 8 hf, column 2t + c (ptx_sm90.cuh). tests/test_fp8_sm90_layout.cpp checks that this and
// v_key_of_position put the same key at every position of the A fragment.
FB_HOST_DEVICE constexpr int fp8_p_acc_index(int kk, int reg, int byte) {
  return 16 * kk + 8 * (reg / 2) + 2 * (reg % 2) + 4 * (byte / 2) + byte % 2;
}

}  // namespace fb::cuda::flash_sm90
