// FlashAttention forward for Hopper (sm_90a), FlashAttention-3 style: TMA loads, wgmma, a producer
// warpgroup and two or three consumer warpgroups (flash_sm90_traits.h has the roles and sizes).
//
// Persistent: one block per SM runs work tiles (batch * head, kBr-row query tile), longest first,
// each block taking the next tile from a tile counter when it is done with one (dynamic schedule,
// flash_sm90_block.cuh); the producer loads the next tile's Q and K/V while the consumers finish the
// last one. Per K/V tile j (kBc keys), per consumer warpgroup (64 query rows):
//   S_j = Q K_j^T          wgmma, Q and K from 128-byte-swizzled shared memory (both K-major)
//   online softmax         in registers, base 2: p = exp2(s * scale*log2(e) - m)
//   O += P_j V_j           P re-packed to 16 bits in registers as the A operand (the wgmma
//                          accumulator layout of two n8 blocks is the A-fragment layout of one k16
//                          step), V from shared memory read MN-major (transpose-B)
// O is divided by the row sum once at the end, staged in shared memory and written with a TMA store
// (rows past the sequence end are clipped by the tensor map).
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda.h>  // CUtensorMap (a type only: nothing here links libcuda)
#include <cuda_runtime.h>

#include "common/ptx.cuh"
#include "common/ptx_sm90.cuh"
#include "common/mask.h"
#include "common/tile_order.h"
#include "common/softmax.cuh"
#include "flash_sm90/flash_sm90_block.cuh"
#include "flash_sm90/flash_sm90_split.h"
#include "flash_sm90/flash_sm90_traits.h"


namespace fb::cuda::flash_sm90 {

// Everything the kernel reads, passed by value as a __grid_constant__ parameter (the TMA unit reads
// the tensor maps from parameter space).
struct FwdParams {
  CUtensorMap tm_q;  // (d, seq_q, batch * heads), box (64, kBr, 1)
  CUtensorMap tm_k;  // (d, seq_k, batch * kv_heads), box (64, kBc, 1)
  CUtensorMap tm_v;  // (d, seq_k, batch * kv_heads), box (64, kBc, 1)
  CUtensorMap tm_o;  // (d, seq_q, batch * heads), box (64, kWgRows, 1)
  float* lse;        // [batch, heads, seq_q], natural log (-inf for a row with no visible key)
                     // nullptr: not written (an inference forward: AttentionParams::lse)
  int heads;
  int kv_heads;
  int group;         // query heads per K/V head
  int planes;        // batch * heads
  int q_tiles;       // query tiles per plane: work tiles = planes * q_tiles
  int plane_group;   // query planes scheduled together (work_tile), their K/V sized to stay in L2
  float scale_log2;  // softmax scale * log2(e): scores go straight into exp2
  CausalMask mask;   // seq_q, seq_k and the causal rule (kernels/common/mask.h)
  int tile_counter;  // this launch's slot of g_tile_counters (the launcher keeps concurrent ones
                     // apart); -1: the static round-robin instead (a timing probe)
  int skip_unseen;   // 1: warpgroups skip K/V tiles none of their rows sees (Tr::kSkipUnseen); 0: a
                     // timing probe
  int eager_store_wait;  // 1: O's TMA store is waited for right after it is issued (a timing probe)
  int q_slots_log2;      // 1: two Q tiles in turn (Tr::kQStages == 2); 0: one (a timing probe)
  int q_shift;           // query tile q covers rows [q kBr - q_shift, ...): a multiple of kWgRows, so
                         // that a partial tile's missing rows are its first warpgroups', before row 0,
                         // not its last ones past the end (the launcher's `qalign`; 0: from row 0)
  // kOptTailSplit: the split parts' O and base-2 LSE in the launch's workspace (tail_split_workspace_bytes,
  // flash_sm90_split.h); null in every other kernel (last, so that the fields above keep their offsets).
  float* split_o;
  float* split_lse;
};

// Code variants of the consumers, one kernel instantiation each (the bits of kernel's kOpt), which
// the launcher picks per launch from its timing probes (flash_sm90_launch.cuh):
//   kOptDescLo32      descriptors advanced by 32-bit adds (Gemms' kLo32)
//   kOptEarlyRescale  with kIntraOverlap: O is rescaled by the last softmax's alpha right after
//                     S_{j+1}'s wgmmas are issued and before P_j V_j's (FlashAttention-3's order),
//                     so the multiplies run while the tensor cores do S_{j+1}, not between P_{j-1}
//                     V_{j-1}'s completion and the warpgroup's next turn
inline constexpr unsigned kOptDescLo32 = 1u;
inline constexpr unsigned kOptEarlyRescale = 2u;
//   kOptXTile         with kIntraOverlap, O in a tile of its own and two consumer warpgroups (d = 128): a
//                     work tile's last P V is issued in the same turn as the next tile's S_0, as P_{j-1}
//                     V_{j-1} with S_j inside a tile, and its epilogue runs after both are done; so the
//                     tile boundary costs no extra turns (two turns of one GEMM each before, which left
//                     the other warpgroup's softmax half covered). Every K/V tile of the block is run by
//                     both warpgroups (no kSkipUnseen, which at d = 128 skips only at odd lengths).
inline constexpr unsigned kOptXTile = 4u;
//   kOptTileRec       the producer writes each work tile's plane, first row and K/V tile count beside its
//                     index (Tr::kOffTileRec) and the consumers read them (one 16-byte load) instead of
//                     deriving them from the index (work_tile: two integer divisions by launch values, ~150
//                     SASS instructions between a tile's Q wait and its first turn at d = 128, and one
//                     division more for the deferred tile's epilogue under xtile)
inline constexpr unsigned kOptTileRec = 16u;
//   kOptL2Hint        the producer's TMA loads carry an L2 cache policy: Q evict-first (read by one work tile),
//                     K and V evict-last (read again by every query tile of the plane, and by the group()
//                     query heads of a K/V head), so that Q's lines, not K/V's, make way when L2 fills
inline constexpr unsigned kOptL2Hint = 128u;
//   kOptUniformStage  with kIntraOverlap and a 2-stage ring: the main loop is instantiated once per ring stage
//                     of the work tile's first K/V tile (a branch on its parity per work tile), so that each
//                     iteration's stages are a compile-time function of the loop counter, which ptxas keeps
//                     in a uniform register. Otherwise they derive from the ring position (it + j, it read
//                     from shared memory and so per-thread for ptxas), and every wgmma descriptor and
//                     barrier address of the iteration is rebuilt in ordinary registers and moved over with
//                     R2UR (~90 of the d = 64 loop's 487 SASS instructions precede its first wgmma). With it the
//                     stages are literals and ptxas builds those on the uniform datapath: 425-443 instructions a
//                     K/V tile at d = 64 (bf16, unmasked), 480-507 against 531 at d = 128 (session 12; the
//                     default at d = 64 since its call A, FwdDefaults::kUniformStageHeadDim)
inline constexpr unsigned kOptUniformStage = 8u;
//   kOptTailSplit     (non-causal launches; the default at d = 64 since session 15's call A) the launch's last,
//                     partial round of work tiles split along K/V (TailSplit, flash_sm90_split.h: with n_work tiles of
//                     equal length on B persistent blocks the last R = n_work mod B tiles run on R of the B SMs for a
//                     whole tile's time while the others idle; each becomes S work items of ~n_kv / S K/V tiles),
//                     whose O (divided by its own row sums, f32) and base-2 LSE go to the workspace
//                     (FwdParams::split_o, split_lse), and a second kernel (flash_sm90_split_combine_kernel) merges
//                     each tile's S parts into O and LSE. At d = 64 (192-row tiles) with 8 query heads the last round
//                     is 28 of 132 tiles at 16k tokens (N = 4k: 44; n_work = 688 / 704 = 5.2 / 5.3 rounds run as 6).
inline constexpr unsigned kOptTailSplit = 64u;
//   kOptLazyRescale   (d = 64's loop, O rescaled after the P V wait; the default at d = 64 since session 16's call A) a
//                     warp moves its rows' running max only when some row of its 16 sees a tile max more than
//                     kLazyRescaleLog2 above it (FlashAttention-4's conditional rescale); otherwise P is exp2
//                     against the kept max (so at most 2^kLazyRescaleLog2) and O and the row sums keep their
//                     scale: the tile's O multiplies (32 FMUL at d = 64) drop out of the stretch between P_{j-1}
//                     V_{j-1}'s wait and the warpgroup's next turn. softmax_step_lazy; same O = sum P V / sum P and
//                     LSE = m + log2 l as ever, with m the kept max. (At d = 128 on top of early and xtile, where the
//                     64 FMUL sit inside the turn, session 16's `lazyres128` measured 0.993x / 0.985x: removed.)
inline constexpr unsigned kOptLazyRescale = 4096u;
//   kOptFastLse       (with kOptTileRec on d = 64's shipped variant: the default since session 20's call B; on
//                     d = 128's shipped variant since session 29's call A) the epilogue's row-sum inverses and LSE
//                     logarithms by the approximate instructions (rcp.approx.ftz, lg2.approx.ftz: one MUFU each)
//                     instead of IEEE division and log2f (a ~35-instruction polynomial a row in 387d31b's SASS,
//                     inside the branch of the lanes that store the LSE, so the two rows' chains run one after the
//                     other); they sit between the last P V's wait and the O store, on the work tile's boundary.
//                     Errors: the LSE's ~2^-22 in log2 (its bound at bf16 1.1e-4), the inverse's 1 ulp of f32 before
//                     O is rounded to 16 bits; a row that sees a key has a sum >= 1 (nothing denormal to flush).
inline constexpr unsigned kOptFastLse = 8192u;
//   kOptK0Rec         (`k0rec`: d = 128's work tiles of up to 16 K/V tiles since session 57) the producer issues the
//                     next work tile's Q and K_0 inside this tile's last K/V step, after its K and before its V
//                     (produce_ring_k0_rec, flash_sm90_block.cuh), keeping one tile in registers: the begun tile's
//                     K/V plane rides in its record's fourth word and the loop reads its tile back from the record.
//                     With kOptTileRec, not with kOptTailSplit
inline constexpr unsigned kOptK0Rec = 32768u;

// Shared-memory address of Q slot `slot`'s work-tile record (kOptTileRec).
template <typename Tr> __device__ __forceinline__ std::uint32_t tile_rec_addr(std::uint32_t tile_word, int slot) {
  // tile_word: the block's base + Tr::kOffTileWord (QRing::word).
  return tile_word + std::uint32_t(Tr::kOffTileRec - Tr::kOffTileWord) + std::uint32_t(slot * Tr::kTileRecBytes);
}

// The tile counters of the dynamic schedule (produce_ring_dynamic, flash_sm90_block.cuh). Each
// instantiation file has its own (zero when the module loads; every launch leaves its slot at zero);
// the launcher gives consecutive launches consecutive slots, so that launches on other streams that
// run at the same time (fewer than kTileCounters of them) never share one.
inline constexpr int kTileCounters = 64;
namespace {
__device__ unsigned g_tile_counters[kTileCounters];
}  // namespace

// Work tile t (WorkTile, flash_sm90_block.cuh): tiles are numbered by groups of planes, within a
// group so that the longest come first (causal: the last query tiles see the most keys); block b
// runs tile b first, then whichever the tile counter hands it. The ring counters run on across a
// block's tiles, so producer and consumers derive every stage and parity from the same sequence.
template <typename Tr>
__device__ __forceinline__ WorkTile work_tile(const FwdParams& prm, const CausalMask& mask, int t) {
  const PlaneTile pt = grouped_tile(t, prm.planes, prm.q_tiles, prm.plane_group);  // common/tile_order.h
  WorkTile w;
  w.bh = pt.bh;
  w.q0 = pt.q_tile * Tr::kBr - prm.q_shift;  // < 0 for the first tile with q_shift: its first rows
                                             // do not exist (never stored; causal: they see no key)
  // At least one tile: a query tile whose rows all see no key (causal, seq_q > seq_k) runs tile 0
  // fully masked (sums stay 0: O = 0, LSE = -inf), so producer and consumers keep one schedule.
  w.n_tiles = max(mask.kv_tiles(w.q0, Tr::kBr, Tr::kBc), 1);
  return w;
}

// kOptTailSplit: item t of plan ts (TailSplit): its work tile with n_tiles = the part's K/V tiles, the part's first
// K/V tile and its workspace unit (-1: a whole work tile, stored as an unsplit one).
struct SplitItem {
  WorkTile w;
  int kv_first;
  int unit;
};
template <typename Tr>
__device__ __forceinline__ SplitItem split_item(const FwdParams& prm, const CausalMask& mask, const TailSplit& ts,
                                                int t) {
  SplitItem si;
  si.kv_first = 0;
  si.unit = -1;
  if (t < ts.from) {
    si.w = work_tile<Tr>(prm, mask, t);
    return si;
  }
  const int u = t - ts.from;
  const int part = u % ts.splits;
  si.w = work_tile<Tr>(prm, mask, ts.from + u / ts.splits);
  const TailPart tp = tail_split_part(si.w.n_tiles, ts.splits, part);  // n_tiles >= kMinKvTiles x splits
  si.kv_first = tp.kv_first;
  si.w.n_tiles = tp.kv_tiles;
  si.unit = u;
  return si;
}

#if FB_PTX_SM90A

// kOptL2Hint: an L2 policy for every line a copy touches (createpolicy.fractional with fraction 1), and a
// 3-D tensor load under it (as ptx::tma_load_3d, plus .L2::cache_hint).
__device__ __forceinline__ std::uint64_t l2_policy_evict_first() {
  std::uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}
__device__ __forceinline__ std::uint64_t l2_policy_evict_last() {
  std::uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}
__device__ __forceinline__ void tma_load_3d_hint(std::uint32_t dst, const void* tmap, std::uint32_t bar, int c0,
                                                 int c1, int c2, std::uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%3, %4, %5}], [%2], %6;\n" ::"r"(dst),
      "l"(tmap), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "l"(policy)
      : "memory");
}

// ---- producer: one thread issues every TMA copy ----
template <typename Tr, unsigned kOpt>
__device__ __forceinline__ void produce(const FwdParams& prm, const SmemTiles<Tr>& sm,
                                        const QRing<Tr>& qr, const CausalMask& mask, int n_work) {
  // kOptTileRec: the record {plane, first row, K/V tiles} the consumers read instead of work_tile(); its fourth word
  // is the producer's own (kOptK0Rec: the tile's K/V plane).
  auto publish = [&](int slot, const WorkTile& w, int own = 0) {
    if constexpr ((kOpt & kOptTileRec) != 0)
      asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(tile_rec_addr<Tr>(qr.word, slot)),
                   "r"(w.bh), "r"(w.q0), "r"(w.n_tiles), "r"(own)
                   : "memory");
  };

  ptx::prefetch_tensormap(&prm.tm_q);
  ptx::prefetch_tensormap(&prm.tm_k);
  ptx::prefetch_tensormap(&prm.tm_v);
  constexpr bool kL2Hint = (kOpt & kOptL2Hint) != 0;
  const std::uint64_t pol_q = kL2Hint ? l2_policy_evict_first() : 0, pol_kv = kL2Hint ? l2_policy_evict_last() : 0;
  auto load = [&](std::uint32_t dst, const CUtensorMap* tmap, std::uint32_t bar, int c0, int c1, int c2,
                  std::uint64_t policy) {
    if constexpr (kL2Hint) tma_load_3d_hint(dst, tmap, bar, c0, c1, c2, policy);
    else ptx::tma_load_3d(dst, tmap, bar, c0, c1, c2);
  };

  // kOptTailSplit: the plan's items instead of the work tiles (non-causal launches only: the launcher runs the
  // unsplit kernel under the mask); tile_of runs just before each item's K/V loads (produce_ring_dynamic) and leaves
  // the item's first key for them (0 without the split: every work tile reads its plane's keys from the first).
  constexpr bool kTailSplit = (kOpt & kOptTailSplit) != 0;
  const TailSplit ts = kTailSplit ? tail_split_plan(n_work, int(gridDim.x), mask.kv_tiles(0, Tr::kBr, Tr::kBc))
                                  : TailSplit{n_work, 1, n_work};
  int kv_row0 = 0;
  unsigned* const counter = prm.tile_counter < 0 ? nullptr : &g_tile_counters[prm.tile_counter];
  auto kv_plane = [&](int bh) {
    const int b = bh / prm.heads;
    return b * prm.kv_heads + (bh - b * prm.heads) / prm.group;
  };
  auto load_k = [&](int kv_bh, int k0, int s, std::uint32_t bar) {
#pragma unroll
    for (int c = 0; c < Tr::kChunks; ++c)
      load(sm.k + s * Tr::kKVBytes + c * Tr::kKVChunkBytes, &prm.tm_k, bar, c * Tr::kChunkElems, kv_row0 + k0, kv_bh,
           pol_kv);
  };
  auto load_v = [&](int kv_bh, int k0, int s, std::uint32_t bar) {
#pragma unroll
    for (int c = 0; c < Tr::kChunks; ++c)
      load(sm.v + s * Tr::kKVBytes + c * Tr::kKVChunkBytes, &prm.tm_v, bar, c * Tr::kChunkElems, kv_row0 + k0, kv_bh,
           pol_kv);
  };
  auto load_q = [&](const WorkTile& w, std::uint32_t q_tile, std::uint32_t bar) {
#pragma unroll
    for (int c = 0; c < Tr::kChunks; ++c)
      load(q_tile + c * Tr::kQChunkBytes, &prm.tm_q, bar, c * Tr::kChunkElems, w.q0, w.bh, pol_q);
  };
  // kOptK0Rec (two Q slots): the next tile's Q and K_0 inside this tile's last K/V step; the record's fourth word
  // carries the tile's K/V plane (the consumers read the first three).
  constexpr bool kK0Rec = (kOpt & kOptK0Rec) != 0;
  static_assert(!kK0Rec || ((kOpt & kOptTileRec) != 0 && !kTailSplit),
                "kOptK0Rec: the tile record, and tile_of leaving the K/V loaders' rows as they are");
  if constexpr (kK0Rec) {
    if (qr.log2_slots == 1) {
      produce_ring_k0_rec<Tr>(
          qr, counter, n_work, Tr::kKVBytes, Tr::kKVBytes, [&](int t) { return work_tile<Tr>(prm, mask, t); },
          kv_plane, load_q, load_k, load_v, publish,
          [&](int slot) {
            int2 r;
            asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];\n"
                         : "=r"(r.y), "=r"(r.x)
                         : "r"(tile_rec_addr<Tr>(qr.word, slot) + 8u)
                         : "memory");
            return r;
          });
      return;
    }
  }
  produce_ring_dynamic<Tr>(
      qr, counter, ts.items, Tr::kKVBytes, Tr::kKVBytes,
      [&](int t) {
        if constexpr (kTailSplit) {
          const SplitItem si = split_item<Tr>(prm, mask, ts, t);
          kv_row0 = si.kv_first * Tr::kBc;
          return si.w;
        } else {
          return work_tile<Tr>(prm, mask, t);
        }
      },
      kv_plane, load_q, load_k, load_v, publish);
}

// ---- consumer pieces ----
// The two GEMMs of one consumer warpgroup, as batches of k16 wgmmas (issued, not waited for).
// Descriptors: Q = this warpgroup's 64 rows, K-major; K K-major; V MN-major with the 64-column
// chunks of d = 128 kKVChunkBytes apart (LBO). A k16 step moves the start address by a
// compile-time offset (in 16-byte units): 32 B along a 128-byte row for Q and K (a new chunk every
// 4 steps), 16 rows for V.
//
// kLo32: each wgmma's descriptor is the base's high word and its low word plus the offset, a 32-bit
// add (the start address, bits 0-13, is a shared-window address / 16 < 2^14, so the sum never
// carries into bit 14 and beyond). Without it the offsets were added as 64-bit numbers, which ptxas
// emitted as IADD3 + IMAD.X + moves per wgmma: ~130 integer instructions of the 630 in the d = 128
// main loop (SASS of 43640ef), all between a warpgroup's turn and its last wgmma.
template <typename Tr, bool kLo32 = false> struct Gemms {
  using Elem = typename Tr::Elem;
  static constexpr int kStepsPerChunk = Tr::kChunkElems / Tr::kMmaK;
  std::uint64_t desc_q, desc_k, desc_v;

  __device__ __forceinline__ Gemms(const SmemTiles<Tr>& sm, int cw)
      : desc_q(ptx::make_desc_sw128(sm.q + cw * Tr::kWgQBytes, Tr::kUnitBytes, Tr::kAtomBytes)),
        desc_k(ptx::make_desc_sw128(sm.k, Tr::kUnitBytes, Tr::kAtomBytes)),
        desc_v(ptx::make_desc_sw128(sm.v, Tr::kOnesSum ? Tr::onesLbo(0) : Tr::kKVChunkBytes, Tr::kAtomBytes)) {}

  static constexpr std::uint64_t units(int bytes) { return std::uint64_t(bytes / Tr::kUnitBytes); }
  // desc advanced by `bytes` (>= 0, a multiple of 16; see kLo32).
  static __device__ __forceinline__ std::uint64_t at(std::uint64_t desc, int bytes) {
    if constexpr (kLo32) {
      const std::uint32_t lo = std::uint32_t(desc) + (std::uint32_t(bytes) >> 4);
      return (desc & 0xFFFFFFFF00000000ull) | lo;
    } else {
      return desc + units(bytes);
    }
  }

  // s = Q K^T for the Q tile in slot q_slot and the K tile in ring stage `stage` (s's old contents
  // are ignored).
  __device__ __forceinline__ void qk(float (&s)[Tr::kSRegs], int q_slot, int stage) const {
#pragma unroll
    for (int kk = 0; kk < Tr::kQKSteps; ++kk) {
      const int in_row = (kk % kStepsPerChunk) * Tr::kMmaKBytes;
      const int chunk = kk / kStepsPerChunk;
      ptx::wgmma_ss<Elem, Tr::kBc>(
          s, at(desc_q, q_slot * Tr::kQBytes + chunk * Tr::kQChunkBytes + in_row),
          at(desc_k, stage * Tr::kKVBytes + chunk * Tr::kKVChunkBytes + in_row), kk > 0);
    }
  }
  // V's descriptor for k16 step kk of ring stage `stage`. Tr::kOnesSum: B's second 64-column chunk is the tile of
  // ones (Tr::kOffOnes), LBO bytes above the start address; the stage moves the start up and the LBO down by as much
  // (Tr::onesVDescLo, one 32-bit add; Tr::onesDescOk proves at compile time that no field carries, see kLo32).
  __device__ __forceinline__ std::uint64_t v_desc(int stage, int kk) const {
    if constexpr (Tr::kOnesSum) {
      static_assert(kLo32, "kOnesSum: V's descriptors by 32-bit adds");
      return (desc_v & 0xFFFFFFFF00000000ull) | Tr::onesVDescLo(std::uint32_t(desc_v), stage, kk);
    } else {
      return at(desc_v, stage * Tr::kKVBytes + kk * Tr::kMmaK * Tr::kSwizzleBytes);
    }
  }
  // o += P V for the V tile in ring stage `stage`; p[4k .. 4k+3] is the A fragment of k16 step k (Tr::kOnesSum: and
  // o's last 8 columns += P's row sums).
  __device__ __forceinline__ void pv(float (&o)[Tr::kORegs], const std::uint32_t (&p)[Tr::kPRegs],
                                     int stage) const {
#pragma unroll
    for (int kk = 0; kk < Tr::kPVSteps; ++kk) {
      const std::uint32_t a[Tr::kPRegsPerStep] = {p[4 * kk], p[4 * kk + 1], p[4 * kk + 2],
                                                  p[4 * kk + 3]};
      ptx::wgmma_rs<Elem, Tr::kPVN>(o, a, v_desc(stage, kk), 1);
    }
  }
};

// The start of every softmax step: scores of keys from the row's key end on are hidden from row hf (-inf), then this
// lane's partial row maxima mx[hf][c] in two independent chains per row, which keep the FMNMX latency off the critical
// path. Index hf = the thread's two rows (r and r + 8 of its warp's 16). key_lim[hf] = CausalMask::key_end(row) - the
// lane's first column (the causal limit and seq_k in one bound, computed once per work tile), key0 = the tile's first
// key: one compare per score, its column offset (a literal) against key_lim[hf] - key0, so that the compare takes an
// immediate and no column index is computed (session 71: 159-161 -> 128-130 SASS instructions a masked step at d = 64).
template <typename Tr>
__device__ __forceinline__ void mask_and_lane_max(float (&s)[Tr::kSRegs], float (&mx)[2][2], const int (&key_lim)[2],
                                                  bool need_mask, int key0) {
  constexpr float kNegInf = -INFINITY;
  if (need_mask) {
    const int lim[2] = {key_lim[0] - key0, key_lim[1] - key0};
#pragma unroll
    for (int i = 0; i < Tr::kSRegs; ++i) {
      if ((i / 4) * Tr::kMmaN + i % 2 >= lim[(i / 2) % 2]) s[i] = kNegInf;
    }
  }
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) mx[hf][0] = mx[hf][1] = kNegInf;
#pragma unroll
  for (int i = 0; i < Tr::kSRegs; ++i) {
    float& x = mx[(i / 2) % 2][(i / 4) % 2];
    x = fmaxf(x, s[i]);
  }
}

// The end of every softmax step: s becomes P = exp2(s scale_log2 - m_sub) in place and this lane's partial row sums
// are added to l, scaled by alpha first (kScaled; without it the rows' max stayed and l keeps its scale). Tr::kOnesSum:
// no sums (P V adds them to O's last columns), l untouched.
template <typename Tr, bool kScaled = true>
__device__ __forceinline__ void exp_and_sum(float (&s)[Tr::kSRegs], float (&l)[2], const float (&alpha)[2],
                                            const float (&m_sub)[2], float scale_log2) {
  float sum[2][2] = {{0.f, 0.f}, {0.f, 0.f}};
#pragma unroll
  for (int i = 0; i < Tr::kSRegs; ++i) {
    const int hf = (i / 2) % 2;
    s[i] = ptx::exp2_approx(fmaf(s[i], scale_log2, -m_sub[hf]));
    if constexpr (!Tr::kOnesSum) sum[hf][(i / 4) % 2] += s[i];
  }
  if constexpr (!Tr::kOnesSum) {
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) l[hf] = (kScaled ? l[hf] * alpha[hf] : l[hf]) + (sum[hf][0] + sum[hf][1]);
  }
}

// Online-softmax step on one S tile held as the wgmma accumulator: masks it when asked (mask_and_lane_max: key_lim,
// key0), updates
// the running max m (exp2 domain) and this lane's partial row sums l, turns s into P in place, and
// returns in alpha the factor the O rows must be rescaled by. Index 0/1 = the thread's two rows
// (r and r + 8 of its warp's 16).
template <typename Tr>
__device__ __forceinline__ void softmax_step(float (&s)[Tr::kSRegs], float (&m)[2], float (&l)[2],
                                             float (&alpha)[2], const int (&key_lim)[2],
                                             bool need_mask, int key0, float scale_log2) {
  float mx[2][2];
  mask_and_lane_max<Tr>(s, mx, key_lim, need_mask, key0);
  float m_sub[2];
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const float tile_max = quad_max(fmaxf(mx[hf][0], mx[hf][1]));
    const float m_new = fmaxf(m[hf], tile_max * scale_log2);  // scale_log2 > 0
    m_sub[hf] = safe_max(m_new);  // 0 while the row has seen only masked keys
    alpha[hf] = ptx::exp2_approx(m[hf] - m_sub[hf]);  // -inf - x -> 0: nothing to rescale yet
    m[hf] = m_new;
  }
  exp_and_sum<Tr>(s, l, alpha, m_sub, scale_log2);
}

// kOptLazyRescale: how far (exp2 domain) a row's tile max may rise above its kept running max before the warp rescales.
// P then stays at most 2^8 = 256 (bf16 and fp16 hold it at their usual relative precision; O and the row sums are
// f32); FlashAttention-4 uses the same bound.
inline constexpr float kLazyRescaleLog2 = 8.f;

// softmax_step under kOptLazyRescale: the same masking, maxima, exponentials and sums, but the running max m moves
// only when one of the warp's rows has a tile max above m + kLazyRescaleLog2 (then every row of the warp takes its
// new max, as softmax_step does); otherwise alpha = exp2(m - m) = 1 exactly. Returns whether m moved (the same in
// every lane of the warp): O must then be rescaled by alpha, else it keeps its scale.
template <typename Tr>
__device__ __forceinline__ bool softmax_step_lazy(float (&s)[Tr::kSRegs], float (&m)[2], float (&l)[2],
                                                  float (&alpha)[2], const int (&key_lim)[2], bool need_mask,
                                                  int key0, float scale_log2) {
  float mx[2][2];
  mask_and_lane_max<Tr>(s, mx, key_lim, need_mask, key0);
  float m_new[2];
  bool grows = false;
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    m_new[hf] = fmaxf(m[hf], quad_max(fmaxf(mx[hf][0], mx[hf][1])) * scale_log2);  // scale_log2 > 0
    grows |= m_new[hf] > m[hf] + kLazyRescaleLog2;  // m = -inf: any visible key
  }
  const bool rescale = __any_sync(0xffffffffu, grows);
  float m_sub[2];
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const float m_old = m[hf];
    if (rescale) m[hf] = m_new[hf];
    m_sub[hf] = safe_max(m[hf]);  // 0 while the row has seen only masked keys
    alpha[hf] = ptx::exp2_approx(m_old - m_sub[hf]);  // 1 where m stays (0 for a row with no visible key yet)
  }
  exp_and_sum<Tr>(s, l, alpha, m_sub, scale_log2);
  return rescale;
}

template <typename Tr>
__device__ __forceinline__ void rescale_o(float (&o)[Tr::kORegs], const float (&alpha)[2]) {
#pragma unroll
  for (int i = 0; i < Tr::kORegs; ++i) o[i] *= alpha[(i / 2) % 2];
}

// P (f32 accumulator layout) -> 16-bit pairs: register i packs columns 2i and 2i+1 of the
// accumulator order, which makes p[4k .. 4k+3] the A fragment of k16 step k.
template <typename Tr>
__device__ __forceinline__ void pack_p(std::uint32_t (&p)[Tr::kPRegs],
                                       const float (&s)[Tr::kSRegs]) {
#pragma unroll
  for (int i = 0; i < Tr::kPRegs; ++i) p[i] = ptx::pack2<typename Tr::Elem>(s[2 * i], s[2 * i + 1]);
}

// ---- consumer warpgroup `cw`: query rows [q0 + 64 cw, q0 + 64 cw + 64) of each of its tiles ----
template <typename Tr, unsigned kOpt>
__device__ __forceinline__ void consume(const FwdParams& prm, const SmemTiles<Tr>& sm,
                                        const Barriers<Tr>& bars, const QRing<Tr>& qr, const CausalMask& mask,
                                        int cw) {
  using Elem = typename Tr::Elem;
  const int ctid = threadIdx.x % Tr::kWgThreads;
  const int warp = ctid / Tr::kWarpSize;
  const int lane = ctid % Tr::kWarpSize;
  const int wg_row0 = cw * Tr::kWgRows;                           // first row in the block's tile
  const int tile_row = wg_row0 + warp * Tr::kWarpRows + lane / 4;  // this thread's first row
  const int col_lane = 2 * (lane % 4);                            // first accumulator column
  const int seq_q = mask.seq_q;
  const float scale_log2 = prm.scale_log2;
  const bool eager_store_wait = prm.eager_store_wait != 0;

  constexpr bool kEarlyRescale = Tr::kIntraOverlap && (kOpt & kOptEarlyRescale) != 0;
  // With kEarlyRescale the deferred P V needs O rescaled by the tile's last alpha first: that is done
  // right after the tile's last wait (below), where no wgmma is in flight; rescaled at the next tile's
  // start instead (session 8) ptxas (CUDA 13.0) injected wgmma waits and arrives (C7517/C7519).
  constexpr bool kXTile = Tr::kIntraOverlap && Tr::kSeparateO && Tr::kConsumerWgs == 2 &&
                          (kOpt & kOptXTile) != 0;
  const bool skip_unseen = Tr::kSkipUnseen && !kXTile && prm.skip_unseen != 0;
  constexpr bool kUStage = Tr::kIntraOverlap && (kOpt & kOptUniformStage) != 0;
  static_assert(!kUStage || Tr::kStages == 2, "kOptUniformStage: one main loop per stage of a 2-stage ring");
  constexpr bool kTailSplit = (kOpt & kOptTailSplit) != 0;
  static_assert(!kTailSplit || (Tr::kIntraOverlap && Tr::kSeparateO && !kXTile),
                "kOptTailSplit: the overlapped loop, O staged apart from Q, no deferred epilogue");
  static_assert(!Tr::kOnesSum || (!kTailSplit && !kXTile && (kOpt & kOptDescLo32) != 0),
                "kOnesSum: unsplit launches (a part's sums go to the merge as fp32), no deferred epilogue");
  constexpr bool kLazyRescale = (kOpt & kOptLazyRescale) != 0;
  static_assert(!kLazyRescale || (Tr::kIntraOverlap && !kEarlyRescale && !kXTile),
                "kOptLazyRescale: the overlapped loop with O rescaled after the P V wait");
  const Gemms<Tr, (kOpt & kOptDescLo32) != 0> gemm(sm, cw);
  // Ping-pong: warpgroup cw issues its GEMMs after the previous one in the round has issued its
  // own, then passes the turn on. The last warpgroup's final pass-on has no turn to start; the
  // first warpgroup takes it when the block is done, so that every arrival meets a wait (a block
  // does not know its last tile in advance: the tile counter decides).
  auto turn_begin = [&] {
    if constexpr (Tr::kPingPong) ptx::named_bar_sync(Tr::kBarTurn0 + cw, Tr::kTurnThreads);
  };
  auto turn_end = [&] {
    if constexpr (Tr::kPingPong)
      ptx::named_bar_arrive(Tr::kBarTurn0 + (cw + 1) % Tr::kConsumerWgs, Tr::kTurnThreads);
  };
  // One arrival per consumer warp once its wgmma reads of the buffer are complete.
  auto release = [&](std::uint32_t bar) {
    if (lane == 0) ptx::mbar_arrive(bar);
  };
  auto stage_of = [](int i) { return i % Tr::kStages; };
  auto parity_of = [](int i) { return std::uint32_t((i / Tr::kStages) & 1); };

  float o[Tr::kORegs];
  float m[2], l[2] = {0.f, 0.f}, alpha[2];  // l: set per work tile (initialised: row_sum captures it)
  float s[Tr::kSRegs];
  std::uint32_t p[Tr::kPRegs];
  // kEarlyRescale: O *= alpha of the last softmax step, then the fence a wgmma needs after its
  // accumulators were written (fence_operands first, so the multiplies cannot sink below it).
  auto rescale_then_fence = [&] {
    rescale_o<Tr>(o, alpha);
    ptx::fence_operands(o);
    ptx::wgmma_fence();
  };

  // ---- epilogue pieces: O /= row sum, LSE = (m + log2 sum) ln 2 ----
  // Row hf's sum: the quad's partial sums, or (Tr::kOnesSum) O's column of the ones, the same in each lane of a quad.
  auto row_sum = [&](int hf) {
    if constexpr (Tr::kOnesSum) return o[Tr::kOSumReg + 2 * hf];
    else return quad_sum(l[hf]);
  };
  // The row sums' inverses of this thread's two rows; writes their LSE (rows from `row`, plane bh).
  auto finish_rows = [&](int bh, int row, float (&inv)[2]) {
    if constexpr ((kOpt & kOptFastLse) != 0) {
      // Both rows' sums and inverses first, then the LSE stores: no long chain inside the storing lanes' branch.
      float sum[2];
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        sum[hf] = row_sum(hf);
        inv[hf] = sum[hf] > 0.f ? ptx::rcp_approx(sum[hf]) : 0.f;
      }
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const float lse = sum[hf] > 0.f ? (m[hf] + ptx::lg2_approx(sum[hf])) * float(kLn2) : -INFINITY;
        const int r = row + hf * 8;
        if (prm.lse && lane % 4 == 0 && unsigned(r) < unsigned(seq_q)) prm.lse[std::int64_t(bh) * seq_q + r] = lse;
      }
    } else {
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const float sum = row_sum(hf);
        // A row that sees a key has sum >= 1; one that sees none (causal, seq_q > seq_k) has sum 0
        // and gets O = 0, LSE = -inf (attention.h). Rows past the end are never stored.
        inv[hf] = sum > 0.f ? 1.f / sum : 0.f;
        const int r = row + hf * 8;
        if (prm.lse && lane % 4 == 0 && unsigned(r) < unsigned(seq_q))  // 0 <= r < seq_q (q_shift)
          prm.lse[std::int64_t(bh) * seq_q + r] = sum > 0.f ? (m[hf] + log2f(sum)) * float(kLn2) : -INFINITY;
      }
    }
  };
  // O * inv packed to 16-bit pairs, in the order store_o writes them: ob[2 nb + hf] = row hf, n8
  // block nb.
  auto pack_o = [&](std::uint32_t (&ob)[Tr::kOSumReg / 2], const float (&inv)[2]) {
#pragma unroll
    for (int nb = 0; nb < Tr::kHeadDim / Tr::kMmaN; ++nb) {
#pragma unroll
      for (int hf = 0; hf < 2; ++hf)
        ob[2 * nb + hf] = ptx::pack2<Elem>(o[4 * nb + 2 * hf] * inv[hf], o[4 * nb + 2 * hf + 1] * inv[hf]);
    }
  };
  // Packed O (pack_o) into this warpgroup's rows of the staging tile and its TMA store (rows from
  // first_row of plane bh).
  auto store_o = [&](int bh, int first_row, const std::uint32_t (&ob)[Tr::kOSumReg / 2]) {
    // The previous tile's TMA store must have read the staging rows before they are overwritten. Its
    // issuing thread waits for that here rather than right after issuing it, so that the store's
    // read of the rows overlaps this tile's main loop instead of holding up the warpgroup's first
    // GEMM of it (with O staged in Q's rows it has waited already, below).
    if (Tr::kSeparateO && !eager_store_wait && ctid == 0) ptx::bulk_wait_group_read_all();
    ptx::named_bar_sync(Tr::kBarEpilogue0 + cw, Tr::kWgThreads);
    // O into this warpgroup's rows of the staging tile, in the 128-byte-swizzled layout the O
    // tensor map expects.
#pragma unroll
    for (int nb = 0; nb < Tr::kHeadDim / Tr::kMmaN; ++nb) {
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const int r = tile_row + hf * 8;
        const int col = nb * Tr::kMmaN + col_lane;
        const int chunk = col / Tr::kChunkElems;
        const int unit = (col % Tr::kChunkElems) * int(sizeof(Elem)) / Tr::kUnitBytes;
        const int within = (col * int(sizeof(Elem))) % Tr::kUnitBytes;
        const std::uint32_t addr = sm.o + chunk * Tr::kQChunkBytes + r * Tr::kSwizzleBytes +
                                   ((unit ^ (r % Tr::kAtomRows)) * Tr::kUnitBytes) + within;
        ptx::st_shared_u32(addr, ob[2 * nb + hf]);
      }
    }
    ptx::fence_proxy_async_smem();  // the TMA store reads what these ordinary stores wrote
    ptx::named_bar_sync(Tr::kBarEpilogue0 + cw, Tr::kWgThreads);
    if (ctid == 0 && unsigned(first_row) < unsigned(seq_q)) {  // 0 <= first_row < seq_q (q_shift)
#pragma unroll
      for (int c = 0; c < Tr::kChunks; ++c)
        ptx::tma_store_3d(&prm.tm_o, sm.o + c * Tr::kQChunkBytes + cw * Tr::kWgQBytes,
                          c * Tr::kChunkElems, first_row, bh);
      ptx::bulk_commit_group();
      if (!Tr::kSeparateO || eager_store_wait) ptx::bulk_wait_group_read_all();  // Q lands there next
    }
  };
  // kOptTailSplit: a split part's O (divided by its row sums, f32) and base-2 LSE into its unit of the workspace, rows
  // and columns as in the block's tile (rows past the end too: their sums are 0, the merge skips them).
  auto store_part = [&](int unit) {
    if constexpr (kTailSplit) {
    constexpr int kUnitFloats = Tr::kBr * Tr::kHeadDim;
    float* const part_o = prm.split_o + std::int64_t(unit) * kUnitFloats;
    float* const part_lse = prm.split_lse + unit * Tr::kBr;
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      const float sum = quad_sum(l[hf]);
      const float inv = sum > 0.f ? 1.f / sum : 0.f;
      const int r = tile_row + hf * 8;
      if (lane % 4 == 0) part_lse[r] = sum > 0.f ? m[hf] + log2f(sum) : -INFINITY;
#pragma unroll
      for (int nb = 0; nb < Tr::kHeadDim / Tr::kMmaN; ++nb)
        *reinterpret_cast<float2*>(part_o + r * Tr::kHeadDim + nb * Tr::kMmaN + col_lane) =
            make_float2(o[4 * nb + 2 * hf] * inv, o[4 * nb + 2 * hf + 1] * inv);
    }
    }
  };
  // kXTile: the finished work tile whose O waits in registers for its last P V and epilogue (the
  // tile's index: its plane and rows are recomputed, one register rather than two), or kNoMoreWork.
  int pending_t = kNoMoreWork;
  // kXTile: the V stage of the last tile's deferred P V (its P is in p, its O in o) and the inverses
  // of its row sums (pending_t names the tile, as above).
  int pending_v = 0;
  float pending_inv[2] = {0.f, 0.f};
  // kTRec: the deferred tile's plane and first row (without it, derived again from pending_t).
  constexpr bool kTRec = (kOpt & kOptTileRec) != 0;
  int pending_bh = 0, pending_q0 = 0;
  // kXTile: once the deferred P V is done (its wait), the last tile's O out, then O zeroed.
  auto xtile_finish = [&] {
    if constexpr (kXTile) {
      if (pending_t != kNoMoreWork) {
        ptx::fence_operands(o);
        ptx::fence_operands(p);
        release(bars.v_empty(pending_v));
        std::uint32_t ob[Tr::kOSumReg / 2];
        pack_o(ob, pending_inv);
        if constexpr (kTRec) {
          store_o(pending_bh, pending_q0 + wg_row0, ob);
        } else {
          const WorkTile pw = work_tile<Tr>(prm, mask, pending_t);
          store_o(pw.bh, pw.q0 + wg_row0, ob);
        }
      }
      pending_t = kNoMoreWork;
    }
  };
  auto zero_o = [&] {
#pragma unroll
    for (int i = 0; i < Tr::kORegs; ++i) o[i] = 0.f;
  };

  // The first warpgroup takes the first turn.
  if constexpr (Tr::kPingPong) {
    if (cw == Tr::kConsumerWgs - 1) ptx::named_bar_arrive(Tr::kBarTurn0, Tr::kTurnThreads);
  }

  int it = 0;  // K/V tiles consumed so far (ring position, as the producer counts them)
  for (int tn = 0;; ++tn) {
    // Q of the tile (and the word naming it) has landed; kNoMoreWork: the block is done.
    const int q_slot = qr.slot(tn);
    ptx::mbar_wait(qr.full(q_slot), qr.parity(tn));
    const int t = read_tile_word(qr.tile_word(q_slot));
    if (t == kNoMoreWork) {
      if constexpr (kXTile) {
        // The last tile's P V alone (every block runs at least one tile: block b's first is tile b).
        turn_begin();
        ptx::wgmma_fence();
        gemm.pv(o, p, pending_v);
        ptx::wgmma_commit();
        turn_end();
        ptx::wgmma_wait<0>();
        xtile_finish();
      }
      break;
    }
    WorkTile w;
    int kv_first = 0;  // kOptTailSplit: the item's first K/V tile
    if constexpr (kTailSplit) {
      // The launch's plan, as the producer derives it (non-causal: every work tile has the same K/V tiles), per
      // tile rather than kept in registers across the main loop.
      const TailSplit ts =
          tail_split_plan(prm.planes * prm.q_tiles, int(gridDim.x), mask.kv_tiles(0, Tr::kBr, Tr::kBc));
      const SplitItem si = split_item<Tr>(prm, mask, ts, t);
      w = si.w;
      kv_first = si.kv_first;
      // A part's O goes to the workspace, not to its plane: the plane's register carries the part's unit (-1 - unit)
      // to the epilogue instead (one register more across the main loop cost a spill at the 160 of three consumers).
      if (si.unit >= 0) w.bh = -1 - si.unit;
    } else if constexpr (kTRec) {
      // The producer's record of the tile (published before the Q full barrier this thread waited on).
      int unused;
      asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(w.bh), "=r"(w.q0), "=r"(w.n_tiles), "=r"(unused)
                   : "r"(tile_rec_addr<Tr>(qr.word, q_slot))
                   : "memory");
    } else {
      w = work_tile<Tr>(prm, mask, t);
    }
    const int row = w.q0 + tile_row;  // this thread's first row in the sequence
    const int wg_first_row = w.q0 + wg_row0;
    const int n_tiles = w.n_tiles;
    // kOptTailSplit (non-causal): a part sees keys [kv_first kBc, seq_k); counted from its first key that is the
    // launch's mask with kv_first kBc keys fewer, so the tile runs as a whole one does (keys from the part's start).
    const CausalMask tmask = kTailSplit ? CausalMask{mask.seq_q, mask.seq_k - kv_first * Tr::kBc, false} : mask;
    // Keys from key_end(row + 8 hf) on are hidden from the thread's row hf (causal limit and seq_k in one), counted
    // from the lane's first column (mask_and_lane_max).
    const int key_lim[2] = {tmask.key_end(row) - col_lane, tmask.key_end(row + 8) - col_lane};
    auto need_mask = [&](int j) { return tmask.tile_needs_mask(wg_first_row, j * Tr::kBc, Tr::kBc); };

    // kXTile: O holds the last tile's rows until its deferred P V is done (zeroed below).
    if constexpr (!kXTile) zero_o();
    m[0] = m[1] = -INFINITY;  // running row max, exp2 domain
    l[0] = l[1] = 0.f;        // this lane's partial row sums

    if constexpr (Tr::kIntraOverlap) {
      // The K/V tiles this warpgroup's rows see: the block's first wg_tiles (none for rows past the
      // sequence end; fewer than n_tiles near a causal diagonal that cuts the block's rows, e.g. the
      // first warpgroups of a 192-row tile). The rest are skipped below: at d = 64 (192-row tiles)
      // that is a quarter of the GEMM and softmax work at causal N <= 1024, a ninth non-causal.
      int wg_tiles = n_tiles;
      if (skip_unseen) {
        wg_tiles = unsigned(wg_first_row) >= unsigned(seq_q)  // past the end, or before row 0 (q_shift)
                       ? 0
                       : tmask.kv_tiles(wg_first_row, Tr::kWgRows, Tr::kBc);
        // kOptTailSplit: a part's rows see its n_tiles (tmask: the rest of the keys, at least n_tiles tiles).
        if constexpr (kTailSplit) wg_tiles = wg_tiles < n_tiles ? wg_tiles : n_tiles;
      }
      if (wg_tiles > 0) {
        // Tile 0: S_0 alone (kXTile: with the last tile's P V).
        ptx::mbar_wait(bars.k_full(stage_of(it)), parity_of(it));
        // kXTile, the block's first tile: the P V is issued all the same (a conditional wgmma would
        // make ptxas serialise them all), on this tile's V_0 once it has landed, and its product
        // discarded (O is zeroed below); p's contents do not matter then.
        if (kXTile && pending_t == kNoMoreWork) {
          ptx::mbar_wait(bars.v_full(stage_of(it)), parity_of(it));
          pending_v = stage_of(it);
        }
        turn_begin();
        ptx::wgmma_fence();
        gemm.qk(s, q_slot, stage_of(it));
        ptx::wgmma_commit();
        if constexpr (kXTile) {
          gemm.pv(o, p, pending_v);
          ptx::wgmma_commit();
        }
        turn_end();
        ptx::wgmma_wait<0>();
        ptx::fence_operands(s);
        release(bars.k_empty(stage_of(it)));
        if constexpr (kXTile) {
          xtile_finish();
          zero_o();
        }
        softmax_step<Tr>(s, m, l, alpha, key_lim, need_mask(0), 0, scale_log2);
        pack_p<Tr>(p, s);  // O is still zero: nothing to rescale
        // Tile j: S_j and P_{j-1} V_{j-1} in flight together; the softmax of S_j overlaps the latter.
        // One step of the loop, tile j: its K stage st and the V stage prev of tile j - 1 (ints, or
        // std::integral_constant under kUStage).
        auto step = [&](int j, auto st_, auto prev_) {
          const int st = int(st_), prev = int(prev_);
          ptx::mbar_wait(bars.k_full(st), parity_of(it + j));
          ptx::mbar_wait(bars.v_full(prev), parity_of(it + j - 1));
          turn_begin();
          ptx::wgmma_fence();
          gemm.qk(s, q_slot, st);
          ptx::wgmma_commit();
          if constexpr (kEarlyRescale) rescale_then_fence();  // under S_j's wgmmas
          gemm.pv(o, p, prev);
          ptx::wgmma_commit();
          turn_end();
          ptx::wgmma_wait<1>();  // S_j done, P V may still run
          ptx::fence_operands(s);
          release(bars.k_empty(st));
          [[maybe_unused]] bool o_rescale = true;  // kLazyRescale: whether this warp's rows moved their max
          if constexpr (kLazyRescale)
            o_rescale = softmax_step_lazy<Tr>(s, m, l, alpha, key_lim, need_mask(j), j * Tr::kBc, scale_log2);
          else
            softmax_step<Tr>(s, m, l, alpha, key_lim, need_mask(j), j * Tr::kBc, scale_log2);
          // ptxas (CUDA 13.0) schedules this wait above the softmax (the SASS waits for P_{j-1}
          // V_{j-1} before the first FMNMX), so the softmax runs under the other warpgroup's GEMMs
          // only; pinning it here (a branch on l, session 7's `order`) measured 2-6% slower, and again
          // 3-7% slower on top of xtile (session 9's `pin`; docs/perf-notes.md).
          ptx::wgmma_wait<0>();
          ptx::fence_operands(o);
          ptx::fence_operands(p);
          release(bars.v_empty(prev));
          if constexpr (!kEarlyRescale) {
            if (!kLazyRescale || o_rescale) rescale_o<Tr>(o, alpha);
          }
          pack_p<Tr>(p, s);
        };
        if constexpr (kUStage) {
          // Two steps per pass with literal stages (tile 0 in stage k0: odd tiles in k1, even in k0), in
          // one copy of the loop per k0.
          auto loop = [&](auto k0, auto k1) {
            for (int j = 1; j < wg_tiles; j += 2) {
              step(j, k1, k0);
              if (j + 1 == wg_tiles) break;
              step(j + 1, k0, k1);
            }
          };
          using S0 = std::integral_constant<int, 0>;
          using S1 = std::integral_constant<int, 1>;
          if (stage_of(it) == 0) loop(S0{}, S1{});
          else loop(S1{}, S0{});
        } else {
          for (int j = 1; j < wg_tiles; ++j) step(j, stage_of(it + j), stage_of(it + j - 1));
        }
        // Every S of this tile is done: its Q slot may take a later tile's Q (unless O is staged there).
        if constexpr (Tr::kSeparateO) release(qr.empty(q_slot));
        const int last = stage_of(it + wg_tiles - 1);
        ptx::mbar_wait(bars.v_full(last), parity_of(it + wg_tiles - 1));
        if constexpr (kXTile) {
          // kEarlyRescale: the loop left O * alpha of the last softmax step for the next P V's issue;
          // that P V is the deferred one, so O is rescaled here (all of this tile's wgmmas are done).
          if constexpr (kEarlyRescale) rescale_o<Tr>(o, alpha);
          pending_v = last;  // issued with the next tile's S_0 (or alone at exit)
        } else {
          turn_begin();
          if constexpr (kEarlyRescale) rescale_then_fence();
          else ptx::wgmma_fence();
          gemm.pv(o, p, last);
          ptx::wgmma_commit();
          turn_end();
          ptx::wgmma_wait<0>();
          ptx::fence_operands(o);
          ptx::fence_operands(p);
          release(bars.v_empty(last));
        }
      } else {
        // No tile (never with kXTile): O = 0 and the row sums stay 0 (rows past the end are not
        // stored; a row with no key gets O = 0, LSE = -inf). The one turn stands for the final P V's.
        if constexpr (Tr::kSeparateO) release(qr.empty(q_slot));
        turn_begin();
        turn_end();
      }
      // Tiles the rows do not see: each stage is released once it has landed (an arrival before then
      // would count towards the stage's previous use), and each takes its turn, so that every
      // warpgroup takes n_tiles + 1 turns per work tile and the rotation stays in step.
      for (int j = wg_tiles; j < n_tiles; ++j) {
        const int st = stage_of(it + j);
        ptx::mbar_wait(bars.k_full(st), parity_of(it + j));
        release(bars.k_empty(st));
        ptx::mbar_wait(bars.v_full(st), parity_of(it + j));
        release(bars.v_empty(st));
        turn_begin();
        turn_end();
      }
    } else {
      for (int j = 0; j < n_tiles; ++j) {
        const int st = stage_of(it + j);
        ptx::mbar_wait(bars.k_full(st), parity_of(it + j));
        turn_begin();
        ptx::wgmma_fence();
        gemm.qk(s, q_slot, st);
        ptx::wgmma_commit();
        turn_end();
        ptx::wgmma_wait<0>();
        ptx::fence_operands(s);
        release(bars.k_empty(st));
        if (Tr::kSeparateO && j == n_tiles - 1) release(qr.empty(q_slot));
        softmax_step<Tr>(s, m, l, alpha, key_lim, need_mask(j), j * Tr::kBc,
                         scale_log2);
        rescale_o<Tr>(o, alpha);
        pack_p<Tr>(p, s);
        ptx::mbar_wait(bars.v_full(st), parity_of(it + j));
        turn_begin();
        ptx::wgmma_fence();
        gemm.pv(o, p, st);
        ptx::wgmma_commit();
        turn_end();
        ptx::wgmma_wait<0>();
        ptx::fence_operands(o);
        ptx::fence_operands(p);
        release(bars.v_empty(st));
      }
    }
    it += n_tiles;

    // ---- epilogue ----
    if constexpr (kTailSplit) {
      if (w.bh < 0) {  // a part of a split work tile: into the workspace (flash_sm90_split_combine_kernel merges)
        store_part(-1 - w.bh);
        continue;
      }
    }
    float inv[2];
    finish_rows(w.bh, row, inv);
    if constexpr (kXTile) {
      pending_inv[0] = inv[0];
      pending_inv[1] = inv[1];
      pending_t = t;
      if constexpr (kTRec) {
        pending_bh = w.bh;
        pending_q0 = w.q0;
      }
    } else {
      std::uint32_t ob[Tr::kOSumReg / 2];
      pack_o(ob, inv);
      store_o(w.bh, wg_first_row, ob);
    }
    if constexpr (!Tr::kSeparateO) {
      // O was staged in Q's rows: the next Q may land once every warpgroup's store has read them.
      ptx::named_bar_sync(Tr::kBarEpilogue0 + cw, Tr::kWgThreads);
      release(qr.empty(q_slot));
    }
  }
  // The block's shared memory must outlive the last TMA store's read of it.
  if (ctid == 0) ptx::bulk_wait_group_read_all();
  // The last warpgroup's final pass-on (see turn_end).
  if constexpr (Tr::kPingPong) {
    if (cw == 0) ptx::named_bar_sync(Tr::kBarTurn0, Tr::kTurnThreads);
  }
}

#endif  // FB_PTX_SM90A

template <typename Tr, unsigned kOpt = 0>
__global__ void __launch_bounds__(Tr::kThreads, 1)
    flash_sm90_fwd_kernel(const __grid_constant__ FwdParams prm) {
#if FB_PTX_SM90A
  extern __shared__ __align__(16) unsigned char fb_sm90_smem[];
  const std::uint32_t base =
      (ptx::smem_addr(fb_sm90_smem) + Tr::kAtomBytes - 1) & ~std::uint32_t(Tr::kAtomBytes - 1);
  const SmemTiles<Tr> sm{base + Tr::kOffQ, base + Tr::kOffK, base + Tr::kOffV, base + Tr::kOffO};
  const Barriers<Tr> bars{base + Tr::kOffBar};
  // The mask in registers, read from parameter space once: the wgmma asm statements clobber memory,
  // which would otherwise reload its fields at every use.
  // kOptTailSplit runs non-causal launches only (the launcher): the mask's causal branches folded away.
  const CausalMask mask =
      (kOpt & kOptTailSplit) != 0 ? CausalMask{prm.mask.seq_q, prm.mask.seq_k, false} : prm.mask;
  const int n_work = prm.planes * prm.q_tiles;  // the launcher keeps it below 2^31

  const QRing<Tr> qr{bars, base + Tr::kOffQ, base + Tr::kOffTileWord, Tr::kQStages > 1 ? prm.q_slots_log2 : 0};

  if constexpr (Tr::kOnesSum) {
    // The tile of ones P V reads as B's last columns (every element 1: the swizzle moves nothing that matters), from
    // the generic proxy, fenced for wgmma's async proxy; init_barriers' __syncthreads orders it before any read.
    const std::uint32_t one2 = ptx::pack2<typename Tr::Elem>(1.f, 1.f);
    for (int i = int(threadIdx.x); i < Tr::kOnesBytes / 4; i += Tr::kThreads)
      ptx::st_shared_u32(base + Tr::kOffOnes + 4 * std::uint32_t(i), one2);
    ptx::fence_proxy_async_smem();
  }
  init_q_ring<Tr>(qr);
  init_barriers<Tr>(bars);
  run_roles<Tr>([&] { produce<Tr, kOpt>(prm, sm, qr, mask, n_work); },
                [&](int cw) { consume<Tr, kOpt>(prm, sm, bars, qr, mask, cw); });
#else
  // Built for a target without wgmma/TMA: unsupported() reports it before any launch.
  __trap();
#endif
}

// kOptTailSplit's merge: one warp per row of the launch's split work tiles (ts.from ..), over the row's ts.splits
// parts in the workspace: LSE = log2 sum_s 2^lse_s (base 2, then natural as the forward writes it), O = sum_s
// 2^(lse_s - LSE) O_s, stored in the element type (o: the [batch, heads, seq_q, d] output). Launched after the forward
// on its stream (flash_sm90_launch.cuh), so the parts are complete.
inline constexpr int kCombineThreads = 256;
template <typename Tr>
__global__ void __launch_bounds__(kCombineThreads)
    flash_sm90_split_combine_kernel(const __grid_constant__ FwdParams prm, typename Tr::Elem* o, TailSplit ts) {
#if FB_PTX_SM90A
  constexpr int kUnitFloats = Tr::kBr * Tr::kHeadDim;
  const int lane = threadIdx.x % 32;
  const int warp = int(blockIdx.x) * (kCombineThreads / 32) + int(threadIdx.x) / 32;
  const int tile = warp / Tr::kBr, row_in = warp % Tr::kBr;
  if (ts.from + tile >= prm.planes * prm.q_tiles) return;
  const CausalMask mask = prm.mask;
  const WorkTile w = work_tile<Tr>(prm, mask, ts.from + tile);
  const int row = w.q0 + row_in;
  if (unsigned(row) >= unsigned(mask.seq_q)) return;
  const int unit0 = tile * ts.splits;
  float mx = -INFINITY;
  for (int sp = 0; sp < ts.splits; ++sp) mx = fmaxf(mx, prm.split_lse[(unit0 + sp) * Tr::kBr + row_in]);
  const float m_sub = mx == -INFINITY ? 0.f : mx;
  constexpr int kPairs = Tr::kHeadDim / 64;  // column pairs per lane (2 lane + 64 c)
  float acc[2 * kPairs] = {};
  float wsum = 0.f;
  for (int sp = 0; sp < ts.splits; ++sp) {
    const float wt = exp2f(prm.split_lse[(unit0 + sp) * Tr::kBr + row_in] - m_sub);
    wsum += wt;
    const float* part = prm.split_o + std::int64_t(unit0 + sp) * kUnitFloats + row_in * Tr::kHeadDim;
#pragma unroll
    for (int c = 0; c < kPairs; ++c) {
      const float2 x = *reinterpret_cast<const float2*>(part + 64 * c + 2 * lane);
      acc[2 * c] += wt * x.x;
      acc[2 * c + 1] += wt * x.y;
    }
  }
  const float inv = wsum > 0.f ? 1.f / wsum : 0.f;
  const std::int64_t out_row = std::int64_t(w.bh) * mask.seq_q + row;
#pragma unroll
  for (int c = 0; c < kPairs; ++c)
    *reinterpret_cast<std::uint32_t*>(o + out_row * Tr::kHeadDim + 64 * c + 2 * lane) =
        ptx::pack2<typename Tr::Elem>(acc[2 * c] * inv, acc[2 * c + 1] * inv);
  if (prm.lse && lane == 0) prm.lse[out_row] = wsum > 0.f ? (m_sub + log2f(wsum)) * float(kLn2) : -INFINITY;
#else
  __trap();
#endif
}

}  // namespace fb::cuda::flash_sm90
