// The parts of a Hopper forward block that do not depend on its element type, shared by the 16-bit
// forward (flash_sm90_kernel.cuh) and the fp8 one (flash_sm90_fp8_kernel.cuh): the mbarriers of the
// TMA ring and their initialisation, the shared-memory tile addresses, the work-tile record, and the
// split of the block into the producer warpgroup and the consumers. Each traits class Tr provides
// kStages, kBarBytes, kConsumerWarps, kWgThreads, kProducerRegs and kConsumerRegs.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "common/ptx_sm90.cuh"

namespace fb::cuda::flash_sm90 {

// The mbarriers of one block: Q full; per ring stage K full, V full, K empty, V empty; Q empty.
template <typename Tr> struct Barriers {
  std::uint32_t base;  // shared-window address of the first barrier
  __device__ __forceinline__ std::uint32_t at(int i) const { return base + i * Tr::kBarBytes; }
  __device__ __forceinline__ std::uint32_t q_full() const { return at(0); }
  __device__ __forceinline__ std::uint32_t k_full(int s) const { return at(1 + s); }
  __device__ __forceinline__ std::uint32_t v_full(int s) const { return at(1 + Tr::kStages + s); }
  __device__ __forceinline__ std::uint32_t k_empty(int s) const {
    return at(1 + 2 * Tr::kStages + s);
  }
  __device__ __forceinline__ std::uint32_t v_empty(int s) const {
    return at(1 + 3 * Tr::kStages + s);
  }
  __device__ __forceinline__ std::uint32_t q_empty() const { return at(1 + 4 * Tr::kStages); }
};

// Shared-memory addresses of one block's tiles (aligned as the traits ask).
template <typename Tr> struct SmemTiles {
  std::uint32_t q;  // the Q tile
  std::uint32_t k;  // kStages K tiles
  std::uint32_t v;  // kStages V tiles
  std::uint32_t o;  // O staged for its TMA store (apart from Q, or in Q's space: the traits say)
};

// One work tile: query rows [q0, q0 + kBr) of plane bh (= batch * heads + head), n_tiles K/V tiles.
struct WorkTile {
  int q0, bh, n_tiles;
};

#if FB_PTX_SM90A

// Thread 0 initialises the barriers (the producer's one arrive.expect_tx fills a stage; every
// consumer warp's arrive empties it); the block waits until they are visible.
template <typename Tr> __device__ __forceinline__ void init_barriers(const Barriers<Tr>& bars) {
  if (threadIdx.x == 0) {
    ptx::mbar_init(bars.q_full(), 1);
    ptx::mbar_init(bars.q_empty(), Tr::kConsumerWarps);
#pragma unroll
    for (int s = 0; s < Tr::kStages; ++s) {
      ptx::mbar_init(bars.k_full(s), 1);  // the producer's arrive.expect_tx
      ptx::mbar_init(bars.v_full(s), 1);
      ptx::mbar_init(bars.k_empty(s), Tr::kConsumerWarps);
      ptx::mbar_init(bars.v_empty(s), Tr::kConsumerWarps);
    }
    ptx::fence_mbar_init();
  }
  __syncthreads();
}

// Warpgroup 0 gives up registers and one of its threads runs produce(); the others take them and
// run consume(consumer index).
template <typename Tr, typename Produce, typename Consume>
__device__ __forceinline__ void run_roles(Produce&& produce, Consume&& consume) {
  const int wg = threadIdx.x / Tr::kWgThreads;
  if (wg == 0) {
    ptx::setmaxnreg_dec<Tr::kProducerRegs>();
    if (threadIdx.x == 0) produce();
  } else {
    ptx::setmaxnreg_inc<Tr::kConsumerRegs>();
    consume(wg - 1);
  }
}

// The K/V tiles of one work tile w into the producer's ring: each into the next ring stage, K and V
// each once its stage is free (load_k / load_v(kv_bh, k0, stage, bar), each moving k_bytes / v_bytes).
// `it` is the ring position (K/V tiles issued so far); it runs on across work tiles, so producer and
// consumers derive every stage and parity from the same sequence; the first wait on an empty barrier
// passes (the phase before the first counts as completed). at_last() runs just before the last K/V
// tile's loads (nothing for the static schedule; the dynamic one takes its next ticket there).
template <typename Tr, typename LoadK, typename LoadV, typename AtLast>
__device__ __forceinline__ void produce_kv_tiles(const Barriers<Tr>& bars, const WorkTile& w, int kv_bh,
                                                 int& it, std::uint32_t k_bytes, std::uint32_t v_bytes,
                                                 LoadK&& load_k, LoadV&& load_v, AtLast&& at_last) {
  for (int j = 0; j < w.n_tiles; ++j, ++it) {
    if (j == w.n_tiles - 1) at_last();
    const int s = it % Tr::kStages;
    const std::uint32_t free_parity = ((it / Tr::kStages) & 1) ^ 1;
    const int k0 = j * Tr::kBc;
    ptx::mbar_wait(bars.k_empty(s), free_parity);
    ptx::mbar_arrive_expect_tx(bars.k_full(s), k_bytes);
    load_k(kv_bh, k0, s, bars.k_full(s));
    ptx::mbar_wait(bars.v_empty(s), free_parity);
    ptx::mbar_arrive_expect_tx(bars.v_full(s), v_bytes);
    load_v(kv_bh, k0, s, bars.v_full(s));
  }
}

// The producer's ring, run by one thread, with a static schedule: the block's work tiles are
// t = blockIdx.x, + gridDim.x, ... (tile_of(t) -> WorkTile). For each, wait until the consumers are
// done with Q and load it (load_q(w, bar)), then its K/V tiles (produce_kv_tiles). kv_plane(bh): the
// K/V plane of query plane bh (GQA), read per tile as the kernels did before this was shared (same
// code).
template <typename Tr, typename TileOf, typename KvPlane, typename LoadQ, typename LoadK, typename LoadV>
__device__ __forceinline__ void produce_ring(const Barriers<Tr>& bars, int n_work, std::uint32_t k_bytes,
                                             std::uint32_t v_bytes, TileOf&& tile_of, KvPlane&& kv_plane,
                                             LoadQ&& load_q, LoadK&& load_k, LoadV&& load_v) {
  int it = 0;  // K/V tiles issued so far (ring position)
  for (int t = blockIdx.x, tn = 0; t < n_work; t += gridDim.x, ++tn) {
    const WorkTile w = tile_of(t);
    const int kv_bh = kv_plane(w.bh);
    ptx::mbar_wait(bars.q_empty(), (tn & 1) ^ 1);
    ptx::mbar_arrive_expect_tx(bars.q_full(), Tr::kQBytes);
    load_q(w, bars.q_full());
    produce_kv_tiles<Tr>(bars, w, kv_bh, it, k_bytes, v_bytes, load_k, load_v, [] {});
  }
}

// ---- dynamic schedule: work tiles handed out by a tile counter in global memory ----
// A static round-robin gives every block the same number of tiles; with a causal mask their lengths
// differ (the last query tiles see the most keys), and the blocks that drew long ones finish last
// (docs/perf-notes.md, session 4: +2-5% kernel time at causal N >= 8192 against one block per tile).
// Here each block takes its first tile statically (t = blockIdx.x) and every further one from a
// counter: ticket = atomicAdd(counter, 1), tile = gridDim.x + ticket, so a block that finished early
// takes the next tile in order (tiles are numbered longest first within each L2 group).
//
// The counter needs no reset between launches: a launch issues exactly n_work tickets (one per tile
// a block ran, the block's last one past the end), numbered 0 .. n_work - 1, so the block that draws
// ticket n_work - 1 knows every other ticket is out and sets the counter back to 0 for the next
// launch. The launcher gives concurrent launches different counters (kTileCounters slots).
//
// The producer passes each tile index to the consumers through a shared-memory word (one per Q slot,
// QRing) written before its arrive on the slot's Q full barrier (mbarrier.arrive releases, the
// consumers' wait acquires); -1 (with a plain arrive, no bytes) tells them the block is done. A word
// is rewritten only after its slot's Q empty barrier, i.e. after every consumer warp has read it.
__device__ __forceinline__ int ld_shared_s32(std::uint32_t addr) {
  int v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ void st_shared_s32(std::uint32_t addr, int v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
inline constexpr int kNoMoreWork = -1;

// The Q tiles of a block with the dynamic schedule: 2^log2_slots of them in turn (work tile tn of the
// block in slot tn % slots), so that with two the producer loads the next tile's Q while the
// consumers still work on this one. Slot 0 uses the Barriers' Q full/empty barriers; slot 1 the two
// after them (Tr::kNumBars counts them), initialised by init_q_ring. Each slot has its tile word.
template <typename Tr> struct QRing {
  Barriers<Tr> bars;
  std::uint32_t q;     // slot 0's Q tile; slot i at q + i * Tr::kQBytes
  std::uint32_t word;  // slot 0's tile word; slot i at word + 4 i
  int log2_slots;      // 0 or 1

  __device__ __forceinline__ int slot(int tn) const { return tn & ((1 << log2_slots) - 1); }
  // Parity of tile tn's phase on its slot's barriers (each slot's uses count 0, 1, 2, ...).
  __device__ __forceinline__ std::uint32_t parity(int tn) const { return std::uint32_t(tn >> log2_slots) & 1u; }
  __device__ __forceinline__ std::uint32_t full(int slot) const {
    return slot == 0 ? bars.q_full() : bars.at(2 + 4 * Tr::kStages);
  }
  __device__ __forceinline__ std::uint32_t empty(int slot) const {
    return slot == 0 ? bars.q_empty() : bars.at(3 + 4 * Tr::kStages);
  }
  __device__ __forceinline__ std::uint32_t q_tile(int slot) const { return q + std::uint32_t(slot) * Tr::kQBytes; }
  __device__ __forceinline__ std::uint32_t tile_word(int slot) const { return word + 4u * std::uint32_t(slot); }
};

// Thread 0 initialises the second Q slot's barriers; call before init_barriers (its fence and block
// barrier publish them too).
template <typename Tr> __device__ __forceinline__ void init_q_ring(const QRing<Tr>& qr) {
  if (Tr::kQStages > 1 && threadIdx.x == 0) {
    ptx::mbar_init(qr.full(1), 1);
    ptx::mbar_init(qr.empty(1), Tr::kConsumerWarps);
  }
}

// What the producer tells the consumers about a work tile beyond its index: nothing by default.
struct NoPublish {
  __device__ __forceinline__ void operator()(int, const WorkTile&) const {}
};

// produce_ring_dynamic's order with the next work tile's Q and K_0 issued inside this tile's last K/V step, after
// that step's K and before its V (`k0rec`, kOptK0Rec). The consumers release a K stage in the middle of a
// step (once S_j is done) and a V stage at its end (once P_{j-1} V_{j-1} is), so with two stages the next K_0's stage
// (K_{n-2}'s) frees half a step before the last V's (V_{n-3}'s) and the next Q's slot (the tile before this one's) is
// long free: Q goes out a step earlier and K_0 half a step, the last V no later. Two Q slots (qr.log2_slots == 1).
// The producer keeps one tile in registers, never two: record(slot, w, kv_bh) writes a begun tile's record to
// shared memory (with the Q slot's word and Q load, before its Q full arrive), and the loop reads the tile it runs
// back with recall(slot) -> int2{kv_bh, n_tiles} (session 56's two-tile versions took a stack frame or spilled past
// the producer warpgroup's 24 registers). tile_of's results must leave the K/V loaders' rows as they are (not
// kOptTailSplit's).
template <typename Tr, typename TileOf, typename KvPlane, typename LoadQ, typename LoadK, typename LoadV,
          typename Record, typename Recall>
__device__ __forceinline__ void produce_ring_k0_rec(const QRing<Tr>& qr, unsigned* counter, int n_work,
                                                    std::uint32_t k_bytes, std::uint32_t v_bytes, TileOf&& tile_of,
                                                    KvPlane&& kv_plane, LoadQ&& load_q, LoadK&& load_k,
                                                    LoadV&& load_v, Record&& record, Recall&& recall) {
  const Barriers<Tr>& bars = qr.bars;
  // K (V) tile j of plane kv_bh into ring position pos, once its stage is free.
  auto issue_k = [&](int kv_bh, int j, int pos) {
    const int s = pos % Tr::kStages;
    ptx::mbar_wait(bars.k_empty(s), ((pos / Tr::kStages) & 1) ^ 1);
    ptx::mbar_arrive_expect_tx(bars.k_full(s), k_bytes);
    load_k(kv_bh, j * Tr::kBc, s, bars.k_full(s));
  };
  auto issue_v = [&](int kv_bh, int j, int pos) {
    const int s = pos % Tr::kStages;
    ptx::mbar_wait(bars.v_empty(s), ((pos / Tr::kStages) & 1) ^ 1);
    ptx::mbar_arrive_expect_tx(bars.v_full(s), v_bytes);
    load_v(kv_bh, j * Tr::kBc, s, bars.v_full(s));
  };
  // Work tile t (< n_work) as the block's tile tn: its word, record and Q into its slot (free: the caller waited),
  // then its K_0 into ring position pos.
  auto begin = [&](int tn, unsigned t, int pos) {
    const int slot = qr.slot(tn);
    st_shared_s32(qr.tile_word(slot), int(t));
    const WorkTile w = tile_of(int(t));
    const int kv_bh = kv_plane(w.bh);
    record(slot, w, kv_bh);
    ptx::mbar_arrive_expect_tx(qr.full(slot), Tr::kQBytes);
    load_q(w, qr.q_tile(slot), qr.full(slot));
    issue_k(kv_bh, 0, pos);
  };
  int it = 0;  // K/V tiles issued so far (ring position)
  // Unsigned: gridDim.x + ticket reaches 2 n_work - 1, past INT_MAX for n_work > 2^30.
  unsigned t = blockIdx.x;
  bool ahead = false;  // this tile's Q and K_0 went out in the last tile's last step
  for (int tn = 0;; ++tn) {
    if (!ahead) {
      const int slot = qr.slot(tn);
      ptx::mbar_wait(qr.empty(slot), qr.parity(tn) ^ 1u);
      if (t >= unsigned(n_work)) {  // the word that tells the consumers the block is done
        st_shared_s32(qr.tile_word(slot), kNoMoreWork);
        ptx::mbar_arrive(qr.full(slot));
        break;
      }
      begin(tn, t, it);
    }
    const int2 cur = recall(qr.slot(tn));  // x: the K/V plane, y: the K/V tiles
    ahead = false;
    for (int j = 0; j < cur.y - 1; ++j) {
      if (j > 0) issue_k(cur.x, j, it + j);
      issue_v(cur.x, j, it + j);
    }
    // The last step. The ticket as in the plain order: taken just before the last K/V tile's loads.
    const int last = cur.y - 1;
    unsigned ticket = 0;
    if (counter) ticket = atomicAdd(counter, 1u);
    if (last > 0) issue_k(cur.x, last, it + last);
    if (counter) {
      if (ticket == unsigned(n_work) - 1u) atomicExch(counter, 0u);  // the launch's last ticket
      t = gridDim.x + ticket;
    } else {
      t += gridDim.x;
    }
    if (t < unsigned(n_work)) {
      ptx::mbar_wait(qr.empty(qr.slot(tn + 1)), qr.parity(tn + 1) ^ 1u);
      begin(tn + 1, t, it + cur.y);
      ahead = true;
    }
    issue_v(cur.x, last, it + last);
    it += cur.y;
  }
}

// The producer's ring with the dynamic schedule (as produce_ring otherwise): Q tiles through qr
// (load_q(w, q_tile, bar)); counter: this launch's tile counter, or nullptr for the static
// round-robin (t = blockIdx.x, + gridDim.x, ...; a timing probe, see the launcher). publish(slot, w)
// runs before the slot's Q full arrive, so what it writes to shared memory is visible to the consumers
// that wait on that barrier, as the tile word is.
template <typename Tr, typename TileOf, typename KvPlane, typename LoadQ, typename LoadK, typename LoadV,
          typename Publish = NoPublish>
__device__ __forceinline__ void produce_ring_dynamic(const QRing<Tr>& qr, unsigned* counter, int n_work,
                                                     std::uint32_t k_bytes, std::uint32_t v_bytes,
                                                     TileOf&& tile_of, KvPlane&& kv_plane, LoadQ&& load_q,
                                                     LoadK&& load_k, LoadV&& load_v,
                                                     Publish&& publish = Publish{}) {
  int it = 0;  // K/V tiles issued so far (ring position)
  // Unsigned: gridDim.x + ticket reaches 2 n_work - 1, past INT_MAX for n_work > 2^30.
  unsigned t = blockIdx.x;
  for (int tn = 0;; ++tn) {
    const int slot = qr.slot(tn);
    // The slot's previous tile (tn - slots) is done with its Q and has read its tile word.
    ptx::mbar_wait(qr.empty(slot), qr.parity(tn) ^ 1u);
    if (t >= unsigned(n_work)) {
      st_shared_s32(qr.tile_word(slot), kNoMoreWork);
      ptx::mbar_arrive(qr.full(slot));
      break;
    }
    st_shared_s32(qr.tile_word(slot), int(t));
    const WorkTile w = tile_of(int(t));
    const int kv_bh = kv_plane(w.bh);
    publish(slot, w);
    ptx::mbar_arrive_expect_tx(qr.full(slot), Tr::kQBytes);
    load_q(w, qr.q_tile(slot), qr.full(slot));
    // The next tile's ticket is taken before the last K/V tile's loads: late enough that the block
    // claims its next tile about when it finishes this one (a ticket taken as the tile starts made
    // every block reserve a tile one whole tile ahead, which balances long causal tiles worse), early
    // enough that the atomic's round trip overlaps the waits for the last stages.
    unsigned ticket = 0;
    produce_kv_tiles<Tr>(qr.bars, w, kv_bh, it, k_bytes, v_bytes, load_k, load_v, [&] {
      if (counter) ticket = atomicAdd(counter, 1u);
    });
    if (!counter) {
      t += gridDim.x;
      continue;
    }
    if (ticket == unsigned(n_work) - 1u) atomicExch(counter, 0u);  // the launch's last ticket
    t = gridDim.x + ticket;
  }
}

// The consumers' side: the index of the block's work tile in Q slot `slot` (kNoMoreWork when done),
// once that slot's full barrier has completed (the caller waits).
__device__ __forceinline__ int read_tile_word(std::uint32_t tile_word) { return ld_shared_s32(tile_word); }

#endif  // FB_PTX_SM90A

}  // namespace fb::cuda::flash_sm90
