// Tile configurations of the forward kernels: every size the kernels use is derived here, once,
// and checked at compile time.
#pragma once

#include <cstddef>

namespace fb::cuda::flash {

// Tensor-core forward (fp16/bf16, mma.sync m16n8k16, sm_80+).
//   Elem      : __half or __nv_bfloat16
//   kHeadDim  : d
//   kBr, kBc  : query rows per block, keys per KV tile
//   kWarps    : warps per block; warp w owns query rows [w * kWarpRows, (w + 1) * kWarpRows)
//   kQInRegs  : keep the warp's Q fragments in registers for the whole KV loop (else re-read them
//               from shared memory for every tile: fewer registers, more shared-memory traffic)
//   kMinBlocksPerSm : __launch_bounds__ occupancy hint (caps registers at 64K / (threads * it))
//   kStages   : K/V tiles in shared memory (the kernel runs 2, double buffering; session 8's three- and
//               four-stage loops lost and were removed)
template <typename Elem_, int kHeadDim_, int kBr_, int kBc_, int kWarps_, bool kQInRegs_,
          int kMinBlocksPerSm_ = 1, int kStages_ = 2>
struct FwdTraits {
  using Elem = Elem_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBr = kBr_;
  static constexpr int kBc = kBc_;
  static constexpr int kWarps = kWarps_;
  static constexpr bool kQInRegs = kQInRegs_;
  static constexpr int kMinBlocksPerSm = kMinBlocksPerSm_;

  static constexpr int kThreads = kWarps * 32;
  static constexpr int kWarpRows = kBr / kWarps;

  // mma.sync.m16n8k16 shape.
  static constexpr int kMmaM = 16;
  static constexpr int kMmaN = 8;
  static constexpr int kMmaK = 16;

  static constexpr int kMTiles = kWarpRows / kMmaM;   // m16 row blocks per warp
  static constexpr int kSNTiles = kBc / kMmaN;        // n8 column blocks of S = Q K^T
  static constexpr int kQKSteps = kHeadDim / kMmaK;   // k16 steps of Q K^T
  static constexpr int kPVSteps = kBc / kMmaK;        // k16 steps of P V
  static constexpr int kONTiles = kHeadDim / kMmaN;   // n8 column blocks of O

  // Global -> shared copies move 16 bytes (one cp.async) per thread and step.
  static constexpr int kChunkBytes = 16;
  static constexpr int kChunkElems = kChunkBytes / int(sizeof(Elem));
  static constexpr int kRowChunks = kHeadDim / kChunkElems;

  // Shared tiles are row-major with one 16-byte chunk of padding per row: a row then starts an odd
  // number of chunks after the previous one, so the 8 row addresses of one ldmatrix 8x8 tile fall
  // into 8 different 4-bank groups (no bank conflicts), and every row stays 16-byte aligned.
  static constexpr int kRowStride = kHeadDim + kChunkElems;  // elements
  static constexpr int kQTileElems = kBr * kRowStride;       // (kBr, kHeadDim) + padding
  static constexpr int kKVTileElems = kBc * kRowStride;      // (kBc, kHeadDim) + padding
  static constexpr int kStages = kStages_;                   // K/V tiles in flight
  static constexpr std::size_t kSmemBytes =
      std::size_t(kQTileElems + 2 * kStages * kKVTileElems) * sizeof(Elem);

  static_assert(sizeof(Elem) == 2, "tensor-core path: 16-bit elements");
  static_assert(kStages >= 2, "at least double buffering");
  static_assert(kBr % kWarps == 0 && kWarpRows % kMmaM == 0, "warps own whole m16 row blocks");
  static_assert(kHeadDim % kMmaK == 0 && kBc % kMmaK == 0, "k16 steps tile d and Bc");
  static_assert(kSNTiles % 2 == 0 && kONTiles % 2 == 0,
                "one ldmatrix.x4 feeds two n8 column blocks");
  static_assert((kRowStride * sizeof(Elem) / kChunkBytes) % 2 == 1,
                "odd row stride in 16-byte chunks keeps ldmatrix conflict-free");
  static_assert((kBr * kRowChunks) % kThreads == 0 && (kBc * kRowChunks) % kThreads == 0,
                "every thread copies the same number of chunks per tile");
  static_assert((kWarpRows * kRowChunks) % 32 == 0, "each warp stores its O rows in whole steps");
};

// Variant bits kOpt of the tensor-core forward kernel (flash_fwd_kernel.cuh); the shipped choice per head dim is
// TcTiles<D>::kOpt (flash_fwd_config.h), probes pick others at launch (fwd_probe()). Bits 1 (one barrier per
// KV tile, three or four stages) and 16 (a software-pipelined loop) were session 8's losers, removed in
// session 9 (docs/perf-notes.md has their numbers); the remaining bits keep their values, so the shipped
// kernels keep their names.
//   kFwdWarpSkip   : a warp skips the KV tiles none of its rows sees (causal: on the diagonal tiles up to
//                    Br / Bc - 1 of them per warp) and masks only the tiles its own rows need masked (one
//                    compare per score against the row's key_end); the block barriers stay outside, every
//                    warp still loads its share of each tile.
inline constexpr unsigned kFwdWarpSkip = 2u;
//   kFwdLeanCopy   : K/V tiles copied by load_tile_async_lean (addresses as compile-time offsets).
inline constexpr unsigned kFwdLeanCopy = 8u;
//   kFwdLazyRescale : a row's exponent offset moves only when the warp sees a score 2^8
//                    above it; O's rescale runs only on those tiles (FlashAttention-4's trick).
inline constexpr unsigned kFwdLazyRescale = 64u;
//   kFwdQBand      : causal launches only: the work tiles go in bands of a.plane_group adjacent query tiles
//                    (banded_tile, flash_fwd_args.cuh) instead of grouped_tile's order, so that the blocks that
//                    run together share their planes' K/V in L2 and the longest tiles still come first.
inline constexpr unsigned kFwdQBand = 128u;
//   kFwdPersist    : non-causal launches, Q from shared memory: one wave of blocks, each runs every gridDim.x-th
//                    work tile and puts the next tile's Q, K_0 and V_0 in flight before the current one's epilogue.
inline constexpr unsigned kFwdPersist = 256u;
//   kFwdPersistEarly : with kFwdPersist: the next tile's K_0 at the start of the current tile's last KV step, its
//                    Q and V_0 once that step's S is done.
inline constexpr unsigned kFwdPersistEarly = 512u;
//   kFwdL2Prefetch : during its last KV step a block asks L2 for the Q tile, K_0 and V_0 of the work tile
//                    a.prefetch_ahead tiles after its own (the one that takes its place on the SM when the blocks
//                    finish in launch order), so that tile's prologue reads them from L2, not from HBM.
inline constexpr unsigned kFwdL2Prefetch = 1024u;
//   (2048 and 4096 were session 11's kFwdL2PrefetchStart and kFwdLateV0, the pfstart and latev probes: level in
//   call A, removed; docs/perf-notes.md.)
//   kFwdQBandTail  : with kFwdQBand: query tiles [0, a.band_tail) of every plane (the shortest) go last, in
//                    grouped_tile's order (one tile of every plane at a time, longest first), the rest in bands
//                    (banded_tail_tile, flash_fwd_args.cuh). Bands let tiles of up to `band` lengths run in the
//                    grid's last wave; with few work tiles a block slot (8 query heads: 3.9 waves) that tail
//                    costs more than the bands' L2 reuse gives.
inline constexpr unsigned kFwdQBandTail = 8192u;
//   (16384 and 32768 were session 13's kFwdExpPV and kFwdExpFirst, the expv and expv2 probes: 0.94-0.99x in call A,
//   removed; docs/perf-notes.md.)
//   kFwdLeanEpi    : the epilogue without per-row serial chains: every row's quad sum first (8 independent shuffles),
//                    then 1 / sum on MUFU.RCP (rcp.approx: no IEEE slow-path call) and each lane of a quad one row's LSE
//                    with log2 on MUFU.LG2 (lg2.approx), selects for the rows that saw no key, one LSE store per thread
//                    and O's 16-byte stores at compile-time offsets from one address (no per-chunk division).
inline constexpr unsigned kFwdLeanEpi = 65536u;
//   kFwdLeanPrologue : the Q tile copied as the K/V tiles are (load_tile_async_lean: one address, compile-time
//                    offsets, instead of a division, a select and a 64-bit address per chunk), and kFwdL2Prefetch's
//                    target (tile_of and head_offsets again, thread 0) worked out after Q, K_0 and V_0 are in flight.
inline constexpr unsigned kFwdLeanPrologue = 131072u;
//   (262144 was session 14's kFwdStagger, the stag probe: the first wave's second half of blocks started ~half a KV
//   step late, so an SM's two blocks ran out of phase: level in call B, 0.988-1.020; removed, docs/perf-notes.md.)
//   kFwdFragPipe   : Q from shared memory only (d = 128): S = Q K^T with the k16 steps' A and B fragments double-
//                    buffered in registers, step ks + 1's Q and K fragments loaded before step ks's MMAs
//                    (FlashAttention-2's gemm order) instead of one K fragment pair at a time.
inline constexpr unsigned kFwdFragPipe = 524288u;
//   (2097152 was session 28's kFwdCopyAfterS, the copylate probe: the next K/V tile's copies, K's and V's, after S;
//   call B 1.016 / 1.019x over the shipped kernel (non-causal / causal), 0.976x at batch 12 N = 1280, below
//   kFwdVAfterS on 27 of 28 rows; removed, docs/perf-notes.md.)
//   kFwdVAfterS    : the next K/V tile's V copies issued once S_j = Q K_j^T is done, before its softmax, not at the
//                    KV step's start beside K_{j+1}'s: there the 16 cp.async a thread (d = 128) queued ahead of S's
//                    ldmatrix (mio stalls) and held registers S's ldmatrix wanted (long-scoreboard stalls).
inline constexpr unsigned kFwdVAfterS = 4194304u;
//   (8388608 was session 28's kmid: K_{j+1}'s copies after S's first k16 step; never on main.)
//   (16777216 was sessions 29-30's kFwdSoloTail, the solotail probe: a grid's partial last wave as a launch of its
//   own at one block an SM; three calls, each rule failed (a small tail, d = 64, short blocks lost); removed,
//   docs/perf-notes.md.)
//   kFwdPdlTail    : non-causal launches without kFwdPersist: the block's work tile is blockIdx.x + a.tile_base, and
//                    on sm_90+ every block lets a programmatically dependent launch start (griddepcontrol) at its
//                    start and waits for the grids it depends on at its end, so that the launcher can run the
//                    grid's partial last wave as a second launch at one block an SM whose blocks start as the first
//                    launch's SMs free, not after its last block (pdl_tail_plan, common/tile_order.h; d = 128's
//                    non-causal default since session 30's call E, `nopdltail` without it).
inline constexpr unsigned kFwdPdlTail = 33554432u;
//   kFwdKvTail     : with kFwdPdlTail: the tail launch runs each of its work tiles as a.kv_splits blocks, each over
//                    a run of the tile's K/V tiles (kv_tail_splits, common/tile_order.h), at the kernel's own shared
//                    memory (two blocks an SM); each block writes its unnormalised O and its rows' offsets and sums
//                    in fp32 to params.workspace (FwdArgs::tail_part), and the last of a tile's blocks to finish (a
//                    counter per tile, zeroed by the first launch) merges the others' into its own and stores O and
//                    LSE. kFwdPdlTail's solo tail block takes 1.3x a paired block's share (session 31's call A, ncu);
//                    the pieces run paired and spread a small tail over more SMs. The kvtail probe.
inline constexpr unsigned kFwdKvTail = 67108864u;
//   kKvTailMinTiles: the fewest K/V tiles a piece of kFwdKvTail runs (its prologue, its partial's store and the
//                    merge's read cost about a K/V tile's step).
inline constexpr int kKvTailMinTiles = 2;
//   fwd_subwave_min_pieces(): kFwdKvTail's pieces on grids of less than one wave (kv_tail_plan), where each tile gets
//                    this many pieces or more (0: none). By default kKvSubwaveMinPieces, of at least kKvSubwaveMinTiles
//                    K/V tiles (subwave_pieces, common/tile_order.h; session 46's call K read three pieces of 6-7 tiles
//                    at 1.22-1.27x, two pieces 0.93-1.06x, pieces of 2-3 tiles 0.985-1.008x; call N (session 47's rule)
//                    made it the default); FB_FLASH_FWD_PROBE=kvsubwave 2 (of kKvTailMinTiles: session 45's probe),
//                    nokvsubwave 0 (the kernels before call N). Read once (flash_fwd.cu).
int fwd_subwave_min_pieces();
inline constexpr int kKvSubwaveMinPieces = 3;
inline constexpr int kKvSubwaveMinTiles = 5;
//   (1048576 was session 15's kFwdLeanLse, the lse probe: kFwdLeanEpi's row statistics alone with the default's O copy;
//   level in call A, geomean 1.003, causal 0.961-0.988; removed, docs/perf-notes.md.)

// TF32 tensor-core forward (fp32 inputs, mma.sync m16n8k8, sm_80+; flash_fwd_tf32.cuh). Same
// parameters as FwdTraits; Q is always re-read from shared memory (split fragments are 2x the registers).
//   kSChunkSteps : k8 steps of S = Q K^T summed inside the tensor core (from zeros) before the chunk
//                  is added to S in fp32: the tensor core truncates, so its sums are kept short
template <int kHeadDim_, int kBr_, int kBc_, int kWarps_, int kSChunkSteps_, int kMinBlocksPerSm_ = 1>
struct Tf32FwdTraits {
  using Elem = float;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBr = kBr_;
  static constexpr int kBc = kBc_;
  static constexpr int kWarps = kWarps_;
  static constexpr int kSChunkSteps = kSChunkSteps_;
  static constexpr int kMinBlocksPerSm = kMinBlocksPerSm_;

  static constexpr int kThreads = kWarps * 32;
  static constexpr int kWarpRows = kBr / kWarps;

  // mma.sync.m16n8k8 (TF32) shape.
  static constexpr int kMmaM = 16;
  static constexpr int kMmaN = 8;
  static constexpr int kMmaK = 8;

  static constexpr int kMTiles = kWarpRows / kMmaM;  // m16 row blocks per warp
  static constexpr int kSNTiles = kBc / kMmaN;       // n8 column blocks of S = Q K^T
  static constexpr int kQKSteps = kHeadDim / kMmaK;  // k8 steps of Q K^T
  static constexpr int kPVSteps = kBc / kMmaK;       // k8 steps of P V
  static constexpr int kONTiles = kHeadDim / kMmaN;  // n8 column blocks of O

  // Global -> shared copies move 16 bytes (one cp.async) per thread and step.
  static constexpr int kChunkBytes = 16;
  static constexpr int kChunkElems = kChunkBytes / int(sizeof(Elem));
  static constexpr int kRowChunks = kHeadDim / kChunkElems;

  static constexpr int kRowStride = kHeadDim + kChunkElems;  // floats
  static constexpr int kQTileElems = kBr * kRowStride;       // (kBr, kHeadDim) + padding
  static constexpr int kKVTileElems = kBc * kRowStride;      // (kBc, kHeadDim) + padding
  static constexpr int kStages = 2;                          // K/V double buffering
  static constexpr std::size_t kSmemBytes =
      std::size_t(kQTileElems + 2 * kStages * kKVTileElems) * sizeof(Elem);

  static_assert(kBr % kWarps == 0 && kWarpRows % kMmaM == 0, "warps own whole m16 row blocks");
  static_assert(kHeadDim % kMmaK == 0 && kBc % kMmaK == 0, "k8 steps tile d and Bc");
  static_assert(kSNTiles % 2 == 0, "one ldmatrix.x4 of K feeds two n8 column blocks");
  static_assert(kQKSteps % kSChunkSteps == 0, "S chunks of whole k8 steps");
  static_assert((kRowStride * sizeof(Elem) / kChunkBytes) % 2 == 1,
                "odd row stride in 16-byte chunks keeps ldmatrix conflict-free");
  static_assert(kRowStride % 32 == 4,
                "rows 2t of the V reads start 8 banks apart: 4 rows x 8 columns, 32 banks");
  static_assert((kBr * kRowChunks) % kThreads == 0 && (kBc * kRowChunks) % kThreads == 0,
                "every thread copies the same number of chunks per tile");
  static_assert((kWarpRows * kRowChunks) % 32 == 0, "each warp stores its O rows in whole steps");
};

// CUDA-core forward (fp32/fp64, exact arithmetic).
// Four consecutive lanes (a quad) share one query row: each computes kKeysPerThread scores of a
// KV tile and owns kHeadDim / 4 columns of the row's O accumulator.
template <typename Elem_, int kHeadDim_, int kBr_, int kBc_>
struct SimtFwdTraits {
  using Elem = Elem_;  // float or double; also the accumulator type
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kBr = kBr_;
  static constexpr int kBc = kBc_;

  static constexpr int kLanesPerRow = 4;
  static constexpr int kThreads = kBr * kLanesPerRow;

  // Shared-memory reads are 16-byte vectors: kVec elements.
  static constexpr int kVecBytes = 16;
  static constexpr int kVec = kVecBytes / int(sizeof(Elem));
  // Chunks of kVec keys / columns are dealt round-robin to the quad (chunk c -> lane c % 4): the
  // quad reads 4 adjacent vectors per step, never two in one bank.
  static constexpr int kKeyChunks = kBc / kVec / kLanesPerRow;       // per thread
  static constexpr int kKeysPerThread = kKeyChunks * kVec;
  static constexpr int kColChunks = kHeadDim / kVec / kLanesPerRow;  // per thread
  static constexpr int kColsPerThread = kColChunks * kVec;

  // sQ (kBr, kHeadDim + 1): scalar reads of 8 different rows per warp land in different banks.
  static constexpr int kQStride = kHeadDim + 1;
  // sKt (kHeadDim, kBc + kVec): K transposed, so a thread's keys for one d are adjacent vectors;
  // one vector of padding spreads the transposing stores over more banks.
  static constexpr int kKtStride = kBc + kVec;
  // sV (kBc, kHeadDim): read as vectors along d, 4 adjacent per quad: no padding needed.
  static constexpr int kVStride = kHeadDim;
  static constexpr std::size_t kSmemBytes =
      std::size_t(kBr * kQStride + kHeadDim * kKtStride + kBc * kVStride) * sizeof(Elem);

  static_assert(kBc % (kVec * kLanesPerRow) == 0, "the quad splits a KV tile into whole vectors");
  static_assert(kHeadDim % (kVec * kLanesPerRow) == 0, "the quad splits d into whole vectors");
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps, one block");
  static_assert((kKtStride * sizeof(Elem)) % kVecBytes == 0, "sKt rows stay vector aligned");
};

}  // namespace fb::cuda::flash
