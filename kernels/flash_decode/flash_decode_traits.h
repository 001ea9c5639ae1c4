// Tile configurations of the split-KV decode kernel: every size it uses is derived here and checked.
#pragma once

#include <cstddef>

namespace fb::cuda::decode {

// One CTA = one (batch, K/V head, KV split, chunk of kRows query rows). The query rows of a GQA group
// (group x seq_q of them, contiguous in BHSD) share every K/V tile the CTA loads: K/V are read once.
//   Elem        : __half or __nv_bfloat16
//   kHeadDim    : d
//   kRowTiles   : m16 row blocks per warp
//   kKeyGroups  : warps that split each K/V tile's keys between them (their partial softmax states
//                 are merged through shared memory at the end); the other warps split the rows
//   kBc         : keys per K/V tile (one pipeline stage)
//   kStages     : K/V tiles in shared memory at once (kStages - 1 in flight while one is consumed)
//   kCtas       : CTAs per SM the configuration is sized for (2: <= 113 KiB of shared memory; 1: a deep
//                 ring that fills an sm_90 SM's 227 KiB, launched only when one wave of one CTA per SM
//                 covers the grid; 3: a two-stage ring of <= 75 KiB, sm_90's 228 KiB less 1 KiB a CTA)
template <typename Elem_, int kHeadDim_, int kRowTiles_, int kKeyGroups_, int kBc_, int kStages_, int kCtas_ = 2>
struct DecodeTraits {
  using Elem = Elem_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kRowTiles = kRowTiles_;
  static constexpr int kKeyGroups = kKeyGroups_;
  static constexpr int kBc = kBc_;
  static constexpr int kStages = kStages_;
  static constexpr int kCtas = kCtas_;

  static constexpr int kWarps = 4;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kRowWarps = kWarps / kKeyGroups;
  static constexpr int kMmaM = 16, kMmaN = 8, kMmaK = 16;  // mma.sync m16n8k16
  static constexpr int kWarpRows = kRowTiles * kMmaM;
  static constexpr int kRows = kWarpRows * kRowWarps;      // query rows per CTA
  static constexpr int kWarpKeys = kBc / kKeyGroups;       // keys of a tile one warp handles
  static constexpr int kSNTiles = kWarpKeys / kMmaN;       // n8 blocks of S per warp
  static constexpr int kQKSteps = kHeadDim / kMmaK;
  static constexpr int kPVSteps = kWarpKeys / kMmaK;
  static constexpr int kONTiles = kHeadDim / kMmaN;

  static constexpr int kChunkBytes = 16;  // one cp.async
  static constexpr int kChunkElems = kChunkBytes / int(sizeof(Elem));
  static constexpr int kRowChunks = kHeadDim / kChunkElems;
  // One 16-byte chunk of padding per row: ldmatrix's 8 row addresses land in 8 different bank groups.
  static constexpr int kRowStride = kHeadDim + kChunkElems;
  static constexpr int kQElems = kRows * kRowStride;
  static constexpr int kKVTileElems = kBc * kRowStride;
  static constexpr std::size_t kQBytes = std::size_t(kQElems) * sizeof(Elem);
  static constexpr std::size_t kPipeBytes = std::size_t(kStages) * 2 * kKVTileElems * sizeof(Elem);
  // The end-of-loop merge of the key groups, in the pipeline's space: O (fp32, rows padded by 4 floats
  // against bank conflicts), row max and row sum per key group.
  static constexpr int kMergeStride = kHeadDim + 4;
  static constexpr std::size_t kMergeBytes =
      std::size_t(kKeyGroups) * kRows * (kMergeStride + 2) * sizeof(float);
  static constexpr std::size_t kSmemBytes = kQBytes + (kPipeBytes > kMergeBytes ? kPipeBytes : kMergeBytes);
  // The TMA ring (sm_90a): K and V tiles as the tensor maps' boxes of 64 columns (128 bytes, 128-byte
  // swizzle, no padding), each box kBc rows; the ring starts on a 1024-byte boundary (the swizzle's
  // period; up to 1024 bytes lost aligning it); one mbarrier per stage after it.
  static constexpr int kBoxCols = 64;
  static constexpr int kBoxes = kHeadDim / kBoxCols;
  static constexpr std::size_t kBoxBytes = std::size_t(kBc) * kBoxCols * sizeof(Elem);
  static constexpr std::size_t kTmaTileBytes = kBoxes * kBoxBytes;
  static constexpr std::size_t kTmaRingBytes = std::size_t(kStages) * 2 * kTmaTileBytes;
  static constexpr std::size_t kTmaBarOffset = kTmaRingBytes > kMergeBytes ? kTmaRingBytes : kMergeBytes;
  static constexpr std::size_t kTmaSmemBytes = kQBytes + 1024 + kTmaBarOffset + std::size_t(kStages) * 8;

  static_assert(sizeof(Elem) == 2, "tensor-core path: 16-bit elements");
  static_assert(kWarps % kKeyGroups == 0, "warps split into whole key groups");
  static_assert(kWarpKeys % kMmaK == 0 && kSNTiles % 2 == 0, "one ldmatrix.x4 feeds two n8 blocks");
  static_assert(kHeadDim % kMmaK == 0 && kONTiles % 2 == 0, "k16 steps tile d");
  static_assert((kRowStride * sizeof(Elem) / kChunkBytes) % 2 == 1, "odd row stride in chunks");
  static_assert(kStages >= 2, "at least one tile in flight");
  static_assert(kMergeStride % 4 == 0, "float4 reads of the merge rows");
  // Two CTAs per SM (227 KiB usable per SM on sm_90, 163 KiB on sm_80 keeps one): the auto split
  // count counts on two. A one-CTA configuration fits sm_90's 227 KiB opt-in.
  static_assert(kCtas >= 1 && kCtas <= 3, "one to three CTAs per SM");
  static_assert(kHeadDim % kBoxCols == 0 && kBoxBytes % 1024 == 0, "TMA boxes keep the swizzle's period");
  static_assert(kTmaSmemBytes <= kSmemBytes + 1024, "the TMA ring fits where the padded one does");
  static_assert(kSmemBytes <= (kCtas == 3 ? 75 : kCtas == 2 ? 113 : 227) * 1024, "kCtas CTAs per SM on sm_90");
};

// CTAs per SM the configurations above are sized for (two fit in shared memory).
inline constexpr int kCtasPerSm = 2;
// CTAs the auto split count launches per SM (plan_splits never launches more than that many a wave):
// one for the configurations of one m16 row block per warp (kRows <= 16: one query row of a GQA
// group of up to 16 — pure streaming), two for the others. Measured on the H200, one query row, 8 K/V
// heads (results/h200/s5/decode-splits-h200.json): at batch 1 and 4 the split count that gives 128
// CTAs (16 and 4 splits) was the fastest of 2..64 at 32k and 128k keys, and one CTA per SM came within
// 2.2% of the best forced count everywhere; the first rule (four waves of two) ran 1.3-1.7x slower at
// batch 1. Each CTA pays its pipeline fill, the Q load and the partial write. Sixteen query rows
// (64-128 rows a CTA, mma work on every key tile) ran 3-22% slower at one CTA per SM than at two
// (results/h200/s5/decode-core.json against results/h200/s5/one-wave/decode-core.json).
constexpr int auto_ctas_per_sm(int rows_per_cta) { return rows_per_cta <= 16 ? 1 : kCtasPerSm; }
// Keys per tile of the configurations for up to sixteen query rows (Cfg16, CfgDeep): 64 at d = 128,
// 128 at d = 64 (the same bytes a tile).
template <int D> inline constexpr int kTileKeys16 = D == 64 ? 128 : 64;
// Stages of the deep ring (one CTA per SM, sm_90): as many tiles as fit in `budget` bytes of shared
// memory besides Q (sixteen rows).
template <typename Elem, int D> constexpr int deep_stages(std::size_t budget = 224 * 1024) {
  constexpr std::size_t row = (D + 16 / sizeof(Elem)) * sizeof(Elem);
  return int((budget - 16 * row) / (2 * std::size_t(kTileKeys16<D>) * row));
}
// The deep-ring configuration for up to sixteen query rows: Cfg16's tiles and warps with every stage
// that fits an sm_90 SM's shared memory (flash_decode.h: Ring).
template <typename Elem, int D>
using CfgDeep = DecodeTraits<Elem, D, 1, 4, kTileKeys16<D>, deep_stages<Elem, D>(), 1>;
// L2 hints on the K/V ring's cp.async (a probe, FB_DECODE_L2 in flash_decode.h): none, the 128- or
// 256-byte L2 prefetch-size hint (the L2 fetches that much around each 16-byte request), or 256 bytes
// under an evict-first cache policy (K/V are read once).
enum class L2Hint { none, p128, p256, evict256 };
// A probe (FB_DECODE_RING=small): Cfg16's tiles in a two-stage ring, three CTAs per SM on sm_90 (12
// warps issuing loads, against 8 for the standard ring).
template <typename Elem, int D>
using CfgSmall = DecodeTraits<Elem, D, 1, 4, kTileKeys16<D>, 2, 3>;
// Fewest keys an auto split gets: below that the per-CTA fixed cost outweighs the parallelism
// (4k keys at batch 1: 8 splits of 512 keys beat 32 of 128 by 1.24x).
inline constexpr int kMinKeysPerSplit = 512;
// Keys a split streams from which the default takes the cp.async ring with the .L2::128B hint over TMA
// where the grid is at most one CTA per SM (flash_decode.cu's default_ring says what was measured).
inline constexpr int kLongSplitKeys = 8192;

}  // namespace fb::cuda::decode
