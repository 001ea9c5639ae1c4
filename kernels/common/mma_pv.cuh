// O += P V on mma.sync (m16n8k16) for the kMT 16-row blocks of one warp, shared by the tiled forwards
// that keep P in registers (flash, flash-decode). P comes straight from the S accumulators: the m16n8
// C layout of n8 blocks 2k and 2k + 1 side by side is the A fragment of k16 step k, repacked to 16 bits.
// V comes from shared memory through ldmatrix.trans: `v_stage` is this lane's address of the stage's
// V row 0 (ldmatrix x4 lane layout), rows kRowBytes apart.
#pragma once

#include <cstdint>

#include "common/ptx.cuh"

namespace fb::cuda {

template <typename Elem, int kMT, int kPVSteps, int kONTiles, int kRowBytes>
__device__ __forceinline__ void mma_pv(float (&acc_o)[kMT][kONTiles][4],
                                       const float (&s)[kMT][2 * kPVSteps][4], std::uint32_t v_stage) {
  constexpr int kMmaK = 16, kMmaN = 8, kEB = int(sizeof(Elem));
#pragma unroll
  for (int kk = 0; kk < kPVSteps; ++kk) {
    // Keys [16kk, 16kk + 16) of P as the A operand: n8 blocks 2kk and 2kk + 1 side by side.
    std::uint32_t pa[kMT][4];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      pa[mt][0] = ptx::pack2<Elem>(s[mt][2 * kk][0], s[mt][2 * kk][1]);
      pa[mt][1] = ptx::pack2<Elem>(s[mt][2 * kk][2], s[mt][2 * kk][3]);
      pa[mt][2] = ptx::pack2<Elem>(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
      pa[mt][3] = ptx::pack2<Elem>(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
    }
#pragma unroll
    for (int nt = 0; nt < kONTiles; nt += 2) {
      std::uint32_t vb[4];
      ptx::ldmatrix_x4_trans(vb, v_stage + (kk * kMmaK * kRowBytes + nt * kMmaN * kEB));
      const std::uint32_t b0[2] = {vb[0], vb[1]};
      const std::uint32_t b1[2] = {vb[2], vb[3]};
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        ptx::mma_m16n8k16<Elem>(acc_o[mt][nt], pa[mt], b0);
        ptx::mma_m16n8k16<Elem>(acc_o[mt][nt + 1], pa[mt], b1);
      }
    }
  }
}

}  // namespace fb::cuda
