// Host side of the decode kernels for one head dim: the runtime rows -> configuration switch and the
// launches. Included by one instantiation file per head dim.
#pragma once

#include "common/check.h"
#include "common/pdl.cuh"
#include "common/tile_order.h"
#include "flash_decode/flash_decode.h"
#include "flash_decode/flash_decode_kernel.cuh"
#include "flash_sm90/flash_sm90_tma.h"

namespace fb::cuda::decode {

// The configurations, by query rows per (batch, K/V head) = group * seq_q. Few rows: the warps split
// each tile's keys (one m16 block holds every row); more rows: the warps split the rows, and past 64
// each warp holds two m16 blocks with shorter tiles (registers). flash_decode.cu's shape_for() must
// agree with this table.
// At d = 64, Cfg16's tiles are 128 keys: the bytes of a d = 128 tile, so that the per-tile costs (wait,
// block barrier, softmax, merge) are spread over as many bytes (session 6: 64-key tiles read at 77-79%
// of the copy ceiling at batch 16, slower than naive). Cfg32 keeps 64 keys with twice the stages.
template <typename Elem, int D> using Cfg16 = DecodeTraits<Elem, D, 1, 4, kTileKeys16<D>, 3>;
template <typename Elem, int D> using Cfg32 = DecodeTraits<Elem, D, 1, 2, 64, D == 64 ? 6 : 3>;
template <typename Elem, int D> using Cfg64 = DecodeTraits<Elem, D, 1, 1, 32, 4>;
template <typename Elem, int D> using Cfg128 = DecodeTraits<Elem, D, 2, 1, 32, 4>;

template <typename Tr, bool kTma = false, bool kWarpRing = false, L2Hint kL2 = L2Hint::none, bool kStreamK = false>
void launch_split(const DecodeArgs<typename Tr::Elem>& args, const AttentionParams& p, cudaStream_t stream) {
  const auto kernel = decode_split_kernel<Tr, kTma, kWarpRing, kL2, kStreamK>;
  constexpr std::size_t smem = kTma ? Tr::kTmaSmemBytes : Tr::kSmemBytes;
  FB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  const dim3 grid = kStreamK ? dim3(unsigned((args.kv_planes * p.seq_k + args.stream_keys - 1) / args.stream_keys))
                             : dim3(unsigned(p.batch) * unsigned(p.kv_heads), unsigned(args.plan.splits),
                                    unsigned((args.rows + Tr::kRows - 1) / Tr::kRows));
  if constexpr (kTma) {
    DecodeArgs<typename Tr::Elem> a = args;
    const std::int64_t planes = std::int64_t(p.batch) * p.kv_heads;
    flash_sm90::encode_bhsd_map(&a.tm_k, p.dtype, p.k, Tr::kHeadDim, p.seq_k, planes, Tr::kBoxCols, Tr::kBc);
    flash_sm90::encode_bhsd_map(&a.tm_v, p.dtype, p.v, Tr::kHeadDim, p.seq_k, planes, Tr::kBoxCols, Tr::kBc);
    kernel<<<grid, Tr::kThreads, smem, stream>>>(a);
  } else {
    kernel<<<grid, Tr::kThreads, smem, stream>>>(args);
  }
  FB_CUDA_CHECK_LAUNCH();
}

// The combine, launched as a programmatic dependent of the split kernel where its code waits for it
// (compiled for sm_90+: griddepcontrol.wait): its launch then overlaps the split kernel's run instead
// of following its end. Elsewhere an ordinary launch.
template <typename Elem, int D> void launch_combine(const DecodeArgs<Elem>& a, cudaStream_t stream) {
  const auto kernel = decode_combine_kernel<Elem, D>;
  static const bool pdl = [&] {  // the code this device runs (checked once: one device type a process)
    cudaFuncAttributes fa{};
    int device = 0, major = 0;
    if (cudaFuncGetAttributes(&fa, kernel) != cudaSuccess || cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
      (void)cudaGetLastError();  // not this launch's error: an ordinary launch follows
      return false;
    }
    return programmatic_launch_ok(major, fa.ptxVersion);
  }();
  launch_kernel(kernel, dim3(unsigned((a.total_rows + 3) / 4)), 128, 0, stream, pdl, a);  // a warp per row
}

// The cp.async rings of up to sixteen rows under the probes of flash_decode.h (FB_DECODE_SYNC,
// FB_DECODE_L2); the deep and small rings take the warp ring only (no L2 hint instances: fewer kernels
// to build).
template <typename Tr, bool kWarpRing>
void launch_probed_l2(const DecodeArgs<typename Tr::Elem>& a, const AttentionParams& p, L2Hint l2,
                      cudaStream_t stream) {
  switch (l2) {
    case L2Hint::p128: return launch_split<Tr, false, kWarpRing, L2Hint::p128>(a, p, stream);
    case L2Hint::p256: return launch_split<Tr, false, kWarpRing, L2Hint::p256>(a, p, stream);
    case L2Hint::evict256: return launch_split<Tr, false, kWarpRing, L2Hint::evict256>(a, p, stream);
    case L2Hint::none: break;
  }
  launch_split<Tr, false, kWarpRing>(a, p, stream);
}
template <typename Tr>
void launch_stream_k(const DecodeArgs<typename Tr::Elem>& a, const AttentionParams& p, bool warp_ring,
                     cudaStream_t stream) {
  if (warp_ring) launch_split<Tr, false, true, L2Hint::none, true>(a, p, stream);
  else launch_split<Tr, false, false, L2Hint::none, true>(a, p, stream);
}
template <typename Elem, int D>
void launch_probed(const DecodeArgs<Elem>& a, const AttentionParams& p, Ring ring, cudaStream_t stream) {
  const Probes& pr = probes();
  if (a.stream_keys > 0) {  // stream-K: no L2 hint instances
    if (ring == Ring::deep) launch_stream_k<CfgDeep<Elem, D>>(a, p, pr.warp_ring, stream);
    else if (ring == Ring::small) launch_stream_k<CfgSmall<Elem, D>>(a, p, pr.warp_ring, stream);
    else launch_stream_k<Cfg16<Elem, D>>(a, p, pr.warp_ring, stream);
  } else if (ring == Ring::deep) {
    if (pr.warp_ring) launch_split<CfgDeep<Elem, D>, false, true>(a, p, stream);
    else launch_split<CfgDeep<Elem, D>>(a, p, stream);
  } else if (ring == Ring::small) {
    if (pr.warp_ring) launch_split<CfgSmall<Elem, D>, false, true>(a, p, stream);
    else launch_split<CfgSmall<Elem, D>>(a, p, stream);
  } else {
    const L2Hint l2 = ring == Ring::standard_l2 ? L2Hint::p128 : pr.l2;
    if (pr.warp_ring) launch_probed_l2<Cfg16<Elem, D>, true>(a, p, l2, stream);
    else launch_probed_l2<Cfg16<Elem, D>, false>(a, p, l2, stream);
  }
}

template <typename Elem, int D>
void launch_impl(const AttentionParams& p, const SplitPlan& plan, const StreamPlan& sk, Ring ring,
                 cudaStream_t stream) {
  DecodeArgs<Elem> a;
  a.q = static_cast<const Elem*>(p.q);
  a.k = static_cast<const Elem*>(p.k);
  a.v = static_cast<const Elem*>(p.v);
  a.o = static_cast<Elem*>(p.o);
  a.lse = static_cast<float*>(p.lse);
  a.total_rows = p.rows();
  a.rows = p.group() * p.seq_q;
  a.part_o = static_cast<float*>(p.workspace);
  const int slots = sk.keys_per_cta > 0 ? sk.max_pieces : plan.splits;
  a.part_lse = slots > 1 ? a.part_o + std::int64_t(slots) * a.total_rows * D : nullptr;
  a.kv_planes = static_cast<long long>(p.batch) * p.kv_heads;
  // Stream-K on the cp.async rings of up to sixteen rows only (stream_plan() checked the rows).
  a.stream_keys = sk.keys_per_cta;  // 0 on the TMA rings (stream_plan)
  a.rotate = probes().rotate ? 1 : 0;
  a.mask = p.mask();
  a.plan = plan;
  a.scale_log2 = float(p.scale * 1.4426950408889634);  // log2(e): the kernel works in base 2
  if (a.rows <= 16 && ring == Ring::tma) launch_split<Cfg16<Elem, D>, true>(a, p, stream);
  else if (a.rows <= 16 && ring == Ring::tma_deep) launch_split<CfgDeep<Elem, D>, true>(a, p, stream);
  else if (a.rows <= 16) launch_probed<Elem, D>(a, p, ring, stream);
  else if (a.rows <= 32) launch_split<Cfg32<Elem, D>>(a, p, stream);
  else if (a.rows <= 64) launch_split<Cfg64<Elem, D>>(a, p, stream);
  else launch_split<Cfg128<Elem, D>>(a, p, stream);
  if ((a.stream_keys > 0 ? sk.max_pieces : plan.splits) > 1) launch_combine<Elem, D>(a, stream);
}

}  // namespace fb::cuda::decode
