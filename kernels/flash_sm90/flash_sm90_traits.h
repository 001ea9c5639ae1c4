// Tile configuration of the Hopper forward: every size the kernel and its launcher use is derived
// here, once, and checked at compile time. Host and device code read it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fb::cuda::flash_sm90 {

// Warp-specialised FlashAttention forward (FlashAttention-3 layout):
//   warpgroup 0      producer: one thread issues the TMA copies (Q once, K/V tiles into a ring of
//                    kStages buffers, full/empty mbarriers), the rest of it idles; few registers.
//   warpgroups 1..   consumers: each owns kWgRows = 64 query rows (the wgmma M), computes
//                    S = Q K^T (wgmma, both operands in shared memory), the online softmax in
//                    registers, and O += P V (P from registers, V from shared memory).
//   Elem             __half or __nv_bfloat16
//   kHeadDim         d (64, 128 or 256: whole 64-column chunks; O += P V is one wgmma N = d <= 256)
//   kBc              keys per K/V tile (the N of S = Q K^T; a multiple of 16, at most 256)
//   kIntraOverlap    issue S_{j+1} = Q K_{j+1}^T before O += P_j V_j, so that the softmax of
//                    S_{j+1} runs while the tensor cores do P_j V_j (FlashAttention-3 algorithm 2)
//   kPingPong        the consumer warpgroups take turns issuing their GEMMs (named barriers), so
//                    that one warpgroup's softmax overlaps the other's GEMMs
//   kConsumerWgs     consumer warpgroups per block (query rows per block = 64 x this): more rows
//                    share each K/V tile and hide more of one another's softmax, at fewer registers
//                    each (the register file is split among all of them)
//   kSkipUnseen      a consumer warpgroup skips the GEMMs and softmax of K/V tiles none of its rows
//                    sees (a causal diagonal that cuts the block's rows, rows past the sequence end);
//                    with kIntraOverlap only
//   kStages          K/V ring depth: more stages cover more of a K/V load's latency (L2 misses), at
//                    the cost of the second Q tile and the separate O tile where they no longer fit
//   kOnesSum         (d = 64; the inference forward's probe `ones`, flash_sm90_launch.cuh) P V runs with N = d + 8, B's
//                    last 8 columns a constant tile of ones in shared memory (kOffOnes, written once a block), so that
//                    O's accumulator carries P's row sums: the softmax adds no sums. They are sums of the 16-bit P that
//                    P V multiplies, not of fp32 P (session 9: an LSE from them misses flashbench's LSE bound), so
//                    such a kernel runs only where no LSE is asked for; O = sum P V / sum P divides by exactly the
//                    weights it applied
template <typename Elem_, int kHeadDim_, int kBc_, bool kIntraOverlap_, bool kPingPong_,
          int kConsumerWgs_ = 2, bool kSkipUnseen_ = false, int kStages_ = 2, bool kOnesSum_ = false>
struct FwdTraits {
  using Elem = Elem_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBc = kBc_;
  static constexpr bool kIntraOverlap = kIntraOverlap_;
  static constexpr bool kPingPong = kPingPong_;
  static constexpr bool kSkipUnseen = kSkipUnseen_ && kIntraOverlap_;

  // ---- threads ----
  static constexpr int kWarpSize = 32;
  static constexpr int kWgThreads = 128;  // a warpgroup: 4 consecutive warps
  static constexpr int kWgWarps = kWgThreads / kWarpSize;
  static constexpr int kConsumerWgs = kConsumerWgs_;
  static constexpr int kConsumerThreads = kConsumerWgs * kWgThreads;
  static constexpr int kConsumerWarps = kConsumerWgs * kWgWarps;
  static constexpr int kThreads = kWgThreads + kConsumerThreads;  // producer + consumers

  // ---- wgmma shape: m64 nN k16; each warp of a warpgroup owns 16 rows ----
  static constexpr int kWgRows = 64;
  static constexpr int kWarpRows = kWgRows / kWgWarps;
  static constexpr int kMmaK = 16;
  static constexpr int kMmaN = 8;  // accumulator column block (the m16n8 C layout along N)
  static constexpr int kBr = kConsumerWgs * kWgRows;  // query rows per block

  // ---- accumulators per consumer thread ----
  static constexpr bool kOnesSum = kOnesSum_;
  static constexpr int kPVN = kHeadDim + (kOnesSum ? kMmaN : 0);    // P V's N: d, and the row sums' 8 columns
  static constexpr int kSRegs = kWgRows * kBc / kWgThreads;       // S = Q K^T, f32
  static constexpr int kORegs = kWgRows * kPVN / kWgThreads;      // O (and kOnesSum's sums), f32
  static constexpr int kOSumReg = kWgRows * kHeadDim / kWgThreads;  // kOnesSum: the first of the sums' registers
  static constexpr int kPRegs = kSRegs / 2;                       // P, 16-bit pairs
  static constexpr int kQKSteps = kHeadDim / kMmaK;               // k16 steps of Q K^T
  static constexpr int kPVSteps = kBc / kMmaK;                    // k16 steps of P V
  static constexpr int kPRegsPerStep = 4;                         // A fragment of one k16 step

  // ---- shared memory: 128-byte swizzled tiles, as TMA writes them and wgmma reads them ----
  // A tile (rows, d) is stored as d / 64 column chunks, each (rows, 64) with 128-byte rows; 8 rows
  // form a 1024-byte swizzle atom (16-byte unit u of row r sits at unit u ^ (r % 8)).
  static constexpr int kSwizzleBytes = 128;
  static constexpr int kChunkElems = kSwizzleBytes / int(sizeof(Elem));  // 64
  static constexpr int kChunks = kHeadDim / kChunkElems;
  static constexpr int kAtomRows = 8;
  static constexpr int kAtomBytes = kAtomRows * kSwizzleBytes;  // 1024: tile alignment, SBO
  static constexpr int kUnitBytes = 16;                         // the swizzled unit
  static constexpr int kMmaKBytes = kMmaK * int(sizeof(Elem));  // 32: one k16 step in a row

  static constexpr int kQChunkBytes = kBr * kSwizzleBytes;
  static constexpr int kKVChunkBytes = kBc * kSwizzleBytes;
  static constexpr int kQBytes = kChunks * kQChunkBytes;    // (kBr, d)
  static constexpr int kKVBytes = kChunks * kKVChunkBytes;  // (kBc, d), one K or V tile
  static constexpr int kStages = kStages_;                  // K/V ring depth
  static constexpr int kWgQBytes = kWgRows * kSwizzleBytes;  // a consumer's rows in one Q chunk

  // Q tiles: two where they fit beside the K/V ring and a separate O staging tile (d <= 128), so
  // that the next work tile's Q loads during this one's main loop (flash_sm90_block.cuh, QRing);
  // otherwise one (d = 256), and the next Q waits until the consumers are done with this one.
  static constexpr int kSmemOptIn = 227 * 1024;
  static constexpr int kBarBytes = 8;
  static constexpr int kTileWordBytes = 8;  // one 4-byte word per Q tile (see below)
  static constexpr int kQStages =
      3 * kQBytes + 2 * kStages * kKVBytes + (8 + 4 * kStages) * kBarBytes + kTileWordBytes + kAtomBytes <=
              kSmemOptIn
          ? 2
          : 1;

  // Offsets from the 1024-aligned base. Barriers: Q full, then per stage K full, V full, K empty,
  // V empty, then Q empty; with two Q tiles, the second one's full and empty barriers after those.
  static constexpr int kOffQ = 0;  // kQStages Q tiles
  static constexpr int kOffK = kOffQ + kQStages * kQBytes;
  static constexpr int kOffV = kOffK + kStages * kKVBytes;
  static constexpr int kNumBars = 2 * kQStages + 4 * kStages;
  // O is staged for its TMA store in a tile of its own when that fits in the 227 KB a block may
  // opt in to (then the next work tile's Q loads during the epilogue); otherwise in the Q tile, each
  // warpgroup in its own rows (then the next Q waits until the stores have read them).
  static constexpr int kKVEnd = kOffV + kStages * kKVBytes;
  static constexpr bool kSeparateO =
      kKVEnd + kQBytes + kNumBars * kBarBytes + kTileWordBytes + kAtomBytes <= kSmemOptIn;
  static constexpr int kOffO = kSeparateO ? kKVEnd : kOffQ;  // O staging, shaped like Q
  static constexpr int kOffBar = kKVEnd + (kSeparateO ? kQBytes : 0);
  // After the barriers, the words through which the producer tells the consumers their next work
  // tile (flash_sm90_block.cuh, produce_ring_dynamic), one per Q tile.
  static constexpr int kOffTileWord = kOffBar + kNumBars * kBarBytes;
  // Then, per Q tile, the work tile's record (plane, first row, K/V tiles), written by the producer
  // beside the tile word so that the consumers need not derive it (kOptTileRec, flash_sm90_kernel.cuh).
  static constexpr int kTileRecBytes = 16;
  static constexpr int kOffTileRec =
      (kOffTileWord + kTileWordBytes + kTileRecBytes - 1) / kTileRecBytes * kTileRecBytes;
  // kOnesSum: one K/V-tile-sized tile of ones (every element 1), read by P V as B's second 64-column chunk; each V
  // stage's descriptor reaches it through its LBO (onesLbo(stage)).
  static constexpr int kTileRecEnd = kOffTileRec + kQStages * kTileRecBytes;
  static constexpr int kOffOnes = (kTileRecEnd + kAtomBytes - 1) / kAtomBytes * kAtomBytes;
  static constexpr int kOnesBytes = kOnesSum ? kKVChunkBytes : 0;
  static constexpr int onesLbo(int stage) { return kOffOnes - (kOffV + stage * kKVBytes); }
  // kOnesSum: the low word of V's descriptor (start address in bits 0-13, LBO in bits 16-29, both in 16-byte units)
  // for ring stage `stage` and k16 step kk, from stage 0's low word lo0 (start at the V ring, LBO onesLbo(0)): one
  // 32-bit add moves the start up by the stage and the step and the LBO down by the stage (Gemms::v_desc).
  static constexpr std::uint32_t onesVDescLo(std::uint32_t lo0, int stage, int kk) {
    return lo0 + std::uint32_t(stage * kKVBytes + kk * kMmaK * kSwizzleBytes) / kUnitBytes -
           (std::uint32_t(stage * kKVBytes) / kUnitBytes << 16);
  }
  // Whether onesVDescLo's start is stage `stage`'s rows of step kk and start + LBO the ones tile's same rows, with no
  // field carrying into another, for every stage, step and block base the shared window holds (a block's base is
  // 1024-aligned and its kSmemBytes lie inside the SM's 228 KB).
  static constexpr bool onesDescOk() {
    constexpr std::uint32_t kWindow = 228 * 1024, kField = 0x3FFF;
    for (std::uint32_t base = 0; base + kSmemBytes <= kWindow; base += kAtomBytes) {
      const std::uint32_t lo0 = ((base + kOffV) / kUnitBytes & kField) | (std::uint32_t(onesLbo(0)) / kUnitBytes << 16);
      for (int stage = 0; stage < kStages; ++stage) {
        for (int kk = 0; kk < kBc / kMmaK; ++kk) {
          const std::uint32_t lo = onesVDescLo(lo0, stage, kk);
          const std::uint32_t start = (lo & kField) * kUnitBytes, lbo = (lo >> 16 & kField) * kUnitBytes;
          const std::uint32_t step = std::uint32_t(kk * kMmaK * kSwizzleBytes);
          if ((lo >> 14 & 3u) != 0 || lo >> 30 != 0) return false;  // reserved bits, and what lies above the LBO
          if (start != base + kOffV + std::uint32_t(stage * kKVBytes) + step) return false;
          if (start + lbo != base + kOffOnes + step) return false;
        }
      }
    }
    return true;
  }
  // Dynamic shared memory starts only 16-byte aligned: one atom of slack to align it.
  static constexpr std::size_t kSmemBytes =
      std::size_t((kOnesSum ? kOffOnes + kOnesBytes : kTileRecEnd) + kAtomBytes);

  // ---- registers (setmaxnreg): the producer gives up what the consumers take ----
  static constexpr int kRegFile = 64 * 1024;
  static constexpr int kLaunchRegs = kRegFile / kThreads / 8 * 8;  // the cap __launch_bounds__ sets
  static constexpr int kProducerRegs = 24;
  // What is left after the producer, shared evenly, in setmaxnreg's steps of 8; 240 at most (the
  // instruction's limit is 256, and 240 is what two consumer warpgroups get).
  static constexpr int kConsumerRegsLeft =
      (kRegFile - kProducerRegs * kWgThreads) / kConsumerThreads / 8 * 8;
  static constexpr int kConsumerRegs = kConsumerRegsLeft < 240 ? kConsumerRegsLeft : 240;

  // ---- named barriers (0 is __syncthreads) ----
  static constexpr int kBarTurn0 = 1;                       // + consumer index: whose turn it is
  static constexpr int kTurnThreads = 2 * kWgThreads;       // its owner waits, the one before arrives
  static constexpr int kBarEpilogue0 = kBarTurn0 + kConsumerWgs;  // + consumer index

  static_assert(sizeof(Elem) == 2, "wgmma path: 16-bit elements");
  static_assert(kConsumerWgs >= 1 && kConsumerWgs <= 3, "a block of at most 4 warpgroups");
  static_assert(kStages >= 2, "a K/V ring of at least two stages (loads overlap the GEMMs)");
  static_assert(kHeadDim % kChunkElems == 0, "d is a whole number of 128-byte chunks");
  static_assert(kBc % kMmaK == 0 && kBc % kAtomRows == 0 && kBc <= 256,
                "K/V tile: whole k16 steps, whole swizzle atoms, one TMA box (<= 256 rows)");
  static_assert(kBr <= 256, "Q tile: one TMA box (<= 256 rows)");
  static_assert(kHeadDim <= 256, "O += P V is one wgmma: N = d <= 256");
  static_assert(kSRegs % (2 * kPRegsPerStep) == 0, "P splits into whole k16 fragments");
  static_assert(kOffK % kAtomBytes == 0 && kOffV % kAtomBytes == 0 && kOffO % kAtomBytes == 0 && kKVBytes % kAtomBytes == 0 &&
                    kWgQBytes % kAtomBytes == 0,
                "every tile and every warpgroup's Q rows start on a swizzle atom");
  static_assert(kSmemBytes <= std::size_t(kSmemOptIn), "one block's tiles fit in shared memory");
  static_assert(kQStages == 1 || kSeparateO, "O is staged in the Q tile only with one Q tile");
  static_assert(kTileWordBytes >= 4 * kQStages, "a tile word per Q tile");
  // setmaxnreg.inc draws only on what the block's own setmaxnreg.dec released: the budget is the
  // block's launch allocation (kLaunchRegs a thread), not the register file (a split 1024 registers
  // over it hung the fp32 backward's consumers in session 5).
  static_assert(kProducerRegs * kWgThreads + kConsumerRegs * kConsumerThreads <= kLaunchRegs * kThreads,
                "the launch allocation holds the producer and the consumers after setmaxnreg");
  static_assert(kProducerRegs <= kLaunchRegs && kConsumerRegs >= kLaunchRegs,
                "setmaxnreg lowers the producer and raises the consumers");
  static_assert(kBarEpilogue0 + kConsumerWgs <= 16, "16 hardware named barriers");
  static_assert(!kOnesSum || (kHeadDim == kChunkElems && kIntraOverlap),
                "kOnesSum: d = one 64-column chunk (the ones are B's second), the overlapped loop");
  static_assert(!kOnesSum || (onesLbo(kStages - 1) > 0 && onesLbo(0) < (1 << 18)),
                "kOnesSum: the ones tile above every V stage, within the descriptor's 14-bit LBO (16-byte units)");
  static_assert(!kOnesSum || onesDescOk(),
                "kOnesSum: V's descriptors reach each stage's rows and, LBO above them, the ones tile's (onesVDescLo)");
};

}  // namespace fb::cuda::flash_sm90
