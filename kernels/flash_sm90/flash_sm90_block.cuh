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

// The producer's ring, run by one thread: for each of the block's work tiles (t = blockIdx.x,
// + gridDim.x, ...: tile_of(t) -> WorkTile) wait until the consumers are done with Q and load it
// (load_q(w, bar)), then each of its K/V tiles into the next ring stage, K and V each once its stage
// is free (load_k / load_v(w, kv_bh, k0, stage, bar), each moving k_bytes / v_bytes). The ring
// position runs on across tiles, so producer and consumers derive every stage and parity from the
// same sequence; the first wait on an empty barrier passes (the phase before the first counts as
// completed). kv_plane(bh): the K/V plane of query plane bh (GQA), read per tile as the kernels
// did before this was shared (same code).
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
    for (int j = 0; j < w.n_tiles; ++j, ++it) {
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
}

#endif  // FB_PTX_SM90A

}  // namespace fb::cuda::flash_sm90
