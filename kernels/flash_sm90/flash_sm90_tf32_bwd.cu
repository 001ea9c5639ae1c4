// The Hopper fp32 backward's host side (3xTF32 on wgmma, and the 1xTF32 diagnostic): checks,
// workspace, the pre-pass and the launch of flash_sm90_tf32_bwd_kernel.cuh. The pre-pass
// (D = rowsum(dO o O), the padded LSE, dQ zeroed) is the portable flash backward's
// (flash/flash_bwd.h); the kernel adds dQ into p.dq itself (TMA reduce-add of staged boxes), so no
// convert pass.
//
// dQ is summed by reductions in global memory, so its last bits may differ from run to run; dK and dV
// are summed in a fixed order and repeat exactly.
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>

#include <cuda_runtime.h>

#include "common/check.h"
#include "common/softmax.cuh"
#include "flash/flash_bwd.h"
#include "flash_sm90/flash_sm90_tf32.h"
#include "flash_sm90/flash_sm90_tf32_bwd_kernel.cuh"
#include "flash_sm90/flash_sm90_tma.h"

namespace fb::cuda::flash_sm90 {
namespace {

constexpr std::size_t kWsAlign = 256;
constexpr std::int64_t kMaxGridX = std::numeric_limits<int>::max();

constexpr std::size_t align_up(std::size_t x) { return (x + kWsAlign - 1) / kWsAlign * kWsAlign; }
std::size_t padded_rows(const AttentionParams& p) {
  return std::size_t(p.batch) * p.heads * flash::backward_padded_seq(p.seq_q);
}

// Timing probes, so that one binary times variants apart in one device call. FB_SM90_FP32_BWD_PROBE
// is a comma-separated list of:
//   prepass   Q and dO split into hi / lo and transposed once per launch by tf32_bwd_split_prepass
//             (Tf32BwdPrepass<., 2>; 3xTF32 only, the 1xTF32 diagnostic is unchanged)
//   presplit  the same pre-pass without the transposed copies: the producer still transposes every
//             tile (Tf32BwdPrepass<., 1>); separates the transposes' share from the splits'
//   (prepass wins over presplit when both are given)
// Read once; unset (or no known word) is the shipping backward. (Session 6's kernel and its
// cvt.rn-only form were the probes s6, s6,rn until session 7 measured the shipping kernel ahead of
// both (docs/perf-notes.md, "flash-sm90 fp32 backward"); removed in session 8 with their instantiations.)
struct Tf32BwdProbe {
  int prepass = 0;  // Tf32BwdTraits::kPrepass
};
Tf32BwdProbe tf32_bwd_probe() {
  static const Tf32BwdProbe probe = [] {
    Tf32BwdProbe f;
    const char* env = std::getenv("FB_SM90_FP32_BWD_PROBE");
    const std::string v = "," + std::string(env ? env : "") + ",";
    const auto has = [&](const char* word) { return v.find("," + std::string(word) + ",") != std::string::npos; };
    f.prepass = has("prepass") ? 2 : has("presplit") ? 1 : 0;
    return f;
  }();
  return probe;
}

// The pre-pass of the `prepass` probe's arrays: per query head, 4 parts (Q hi, Q lo, dO hi, dO lo)
// of [seq_pad, d] (split) and of [d, seq_pad] (transposed, each group of 8 queries in the order
// tf32::pv_key_of_position gives, as transpose_parts_tile writes Q^T into the stage).
std::size_t prepass_part_elems(const AttentionParams& p) {
  return std::size_t(flash::backward_padded_seq(p.seq_q)) * std::size_t(p.head_dim);
}
std::size_t prepass_bytes(const AttentionParams& p) {
  return align_up(std::size_t(p.batch) * p.heads * 4 * prepass_part_elems(p) * sizeof(float));
}

// One thread per (query head, group of 8 queries, column n of d): reads the 8 values of Q and of dO
// (rows past seq_q as zeros), writes hi / lo rows of the split arrays and (trans not null) 32
// contiguous bytes per part of the transposed ones.
__global__ void tf32_bwd_split_prepass(const float* __restrict__ q, const float* __restrict__ dout,
                                       float* __restrict__ split, float* __restrict__ trans, int seq_q,
                                       int seq_pad, int d, std::int64_t items) {
#if FB_PTX_SM90A
  const std::int64_t item = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (item >= items) return;
  const int n = int(item % d);
  const std::int64_t rest = item / d;
  const int groups = seq_pad / 8;
  const int grp = int(rest % groups);
  const std::int64_t bh = rest / groups;
  const std::int64_t part_elems = std::int64_t(seq_pad) * d;
#pragma unroll
  for (int t = 0; t < 2; ++t) {
    const float* src = (t == 0 ? q : dout) + bh * seq_q * d;
    std::uint32_t hi[8], lo[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const int m = grp * 8 + e;
      const float x = m < seq_q ? src[std::int64_t(m) * d + n] : 0.f;
      ptx::split_tf32_as<true>(x, hi[e], lo[e]);
      float* row = split + (bh * 4 + 2 * t) * part_elems + std::int64_t(m) * d + n;
      row[0] = __uint_as_float(hi[e]);
      row[part_elems] = __uint_as_float(lo[e]);
    }
    if (trans == nullptr) continue;
#pragma unroll
    for (int part = 0; part < 2; ++part) {
      const std::uint32_t* v = part == 0 ? hi : lo;
      auto* dst = reinterpret_cast<uint4*>(trans + (bh * 4 + 2 * t + part) * part_elems +
                                           std::int64_t(n) * seq_pad + grp * 8);
      dst[0] = make_uint4(v[tf32::pv_key_of_position(0)], v[tf32::pv_key_of_position(1)],
                          v[tf32::pv_key_of_position(2)], v[tf32::pv_key_of_position(3)]);
      dst[1] = make_uint4(v[tf32::pv_key_of_position(4)], v[tf32::pv_key_of_position(5)],
                          v[tf32::pv_key_of_position(6)], v[tf32::pv_key_of_position(7)]);
    }
  }
#else
  __trap();
#endif
}

template <typename Tr> void launch(const AttentionParams& p, const float* lse_pad, const float* d_pad,
                                   float* prepass, cudaStream_t stream) {
  Tf32BwdParams prm{};
  const std::int64_t q_planes = std::int64_t(p.batch) * p.heads;
  const std::int64_t kv_planes = std::int64_t(p.batch) * p.kv_heads;
  encode_bhsd_map(&prm.tm_q, Dtype::fp32, p.q, p.head_dim, p.seq_q, q_planes, Tr::kChunkElems, Tr::kBlockM);
  encode_bhsd_map(&prm.tm_do, Dtype::fp32, p.dout, p.head_dim, p.seq_q, q_planes, Tr::kChunkElems,
                  Tr::kBlockM);
  encode_bhsd_map(&prm.tm_dq, Dtype::fp32, p.dq, p.head_dim, p.seq_q, q_planes, Tr::kChunkElems, Tr::kBlockM);
  encode_bhsd_map(&prm.tm_k, Dtype::fp32, p.k, p.head_dim, p.seq_k, kv_planes, Tr::kChunkElems, Tr::kBlockN);
  encode_bhsd_map(&prm.tm_v, Dtype::fp32, p.v, p.head_dim, p.seq_k, kv_planes, Tr::kChunkElems, Tr::kBlockN);
  if constexpr (Tr::kPrepass > 0) {
    const int seq_pad = flash::backward_padded_seq(p.seq_q);
    float* split = prepass;
    float* trans = Tr::kPrepass == 2 ? prepass + std::size_t(q_planes) * 4 * prepass_part_elems(p) : nullptr;
    const std::int64_t items = q_planes * (seq_pad / 8) * p.head_dim;
    constexpr int kPrepassThreads = 256;
    tf32_bwd_split_prepass<<<unsigned((items + kPrepassThreads - 1) / kPrepassThreads), kPrepassThreads, 0,
                             stream>>>(static_cast<const float*>(p.q), static_cast<const float*>(p.dout), split,
                                       trans, p.seq_q, seq_pad, p.head_dim, items);
    FB_CUDA_CHECK_LAUNCH();
    encode_bhsd_map(&prm.tm_qs, Dtype::fp32, split, p.head_dim, seq_pad, 4 * q_planes, Tr::kChunkElems,
                    Tr::kBlockM);
    if (trans != nullptr)
      encode_bhsd_map(&prm.tm_qt, Dtype::fp32, trans, seq_pad, p.head_dim, 4 * q_planes, Tr::kChunkElems,
                      p.head_dim);
  }
  prm.lse = lse_pad;
  prm.dsum = d_pad;
  prm.dq = static_cast<float*>(p.dq);
  prm.dk = static_cast<float*>(p.dk);
  prm.dv = static_cast<float*>(p.dv);
  prm.heads = p.heads;
  prm.kv_heads = p.kv_heads;
  prm.group = p.group();
  prm.seq_pad = flash::backward_padded_seq(p.seq_q);
  prm.kv_planes = int(kv_planes);
  prm.scale_log2 = float(p.scale * kLog2e);
  prm.scale = float(p.scale);
  prm.mask = p.mask();

  const std::int64_t key_tiles = (p.seq_k + Tr::kBlockN - 1) / Tr::kBlockN;
  const auto kernel = flash_sm90_tf32_bwd_kernel<Tr>;
  FB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     int(Tr::kSmemBytes)));
  kernel<<<unsigned(key_tiles * kv_planes), Tr::kThreads, Tr::kSmemBytes, stream>>>(prm);
  FB_CUDA_CHECK_LAUNCH();
}

template <int D, bool kSplit>
void run_d(const AttentionParams& p, const float* lse_pad, const float* d_pad, float* prepass,
           cudaStream_t stream) {
  using Traits = typename Tf32BwdConfig<D, kSplit>::Traits;
  if constexpr (kSplit) {
    const int level = tf32_bwd_probe().prepass;
    if (level == 2) return launch<Tf32BwdPrepass<Traits, 2>>(p, lse_pad, d_pad, prepass, stream);
    if (level == 1) return launch<Tf32BwdPrepass<Traits, 1>>(p, lse_pad, d_pad, prepass, stream);
  }
  launch<Traits>(p, lse_pad, d_pad, prepass, stream);
}

template <bool kSplit>
void run(const AttentionParams& p, const float* lse_pad, const float* d_pad, float* prepass,
         cudaStream_t stream) {
  if (p.head_dim == 64) run_d<64, kSplit>(p, lse_pad, d_pad, prepass, stream);
  else run_d<128, kSplit>(p, lse_pad, d_pad, prepass, stream);
}

}  // namespace

int tf32_backward_key_tile(int head_dim) {
  return head_dim == 64 ? Tf32BwdConfig<64, true>::Traits::kBlockN : Tf32BwdConfig<128, true>::Traits::kBlockN;
}

std::size_t tf32_backward_smem_bytes(int head_dim) {
  return head_dim == 64 ? Tf32BwdConfig<64, true>::Traits::kSmemBytes
                        : Tf32BwdConfig<128, true>::Traits::kSmemBytes;
}

const char* tf32_backward_unsupported(const AttentionParams& p) {
  if (p.head_dim != 64 && p.head_dim != 128) return "flash-sm90 fp32 backward: head_dim must be 64 or 128";
  const std::int64_t key_tiles = (std::int64_t(p.seq_k) + tf32_backward_key_tile(p.head_dim) - 1) /
                                 tf32_backward_key_tile(p.head_dim);
  if (key_tiles * p.batch * p.kv_heads > kMaxGridX)
    return "flash-sm90 fp32 backward: batch * kv_heads * seq_k exceeds the grid limit";
  return nullptr;
}

std::size_t tf32_backward_workspace_bytes(const AttentionParams& p) {
  // padded LSE, D; with the prepass probe its split and transposed Q, dO
  return 2 * align_up(padded_rows(p) * sizeof(float)) +
         (tf32_bwd_probe().prepass > 0 ? 2 * prepass_bytes(p) : 0);
}

void run_tf32_backward(const AttentionParams& p, const Context& ctx, bool split) {
  if (const char* why = tf32_backward_unsupported(p)) throw std::invalid_argument(why);
  if (!p.q || !p.k || !p.v || !p.o || !p.lse || !p.dout || !p.dq || !p.dk || !p.dv)
    throw std::invalid_argument(
        "flash-sm90 fp32 backward: q, k, v, o, lse, dout, dq, dk and dv must be device pointers");
  if (p.workspace == nullptr)
    throw std::invalid_argument("flash-sm90 fp32 backward: params.workspace is null (needs " +
                                std::to_string(tf32_backward_workspace_bytes(p)) + " bytes)");
  const auto stream = static_cast<cudaStream_t>(ctx.stream);
  auto* base = static_cast<unsigned char*>(p.workspace);
  auto* lse_pad = reinterpret_cast<float*>(base);
  auto* d_pad = reinterpret_cast<float*>(base + align_up(padded_rows(p) * sizeof(float)));
  // The pre-pass also zeroes p.dq ([batch, heads, seq_q, d]): the kernel adds into it.
  flash::backward_prepass(p, lse_pad, d_pad, p.dq, /*dq_padded=*/false, /*lse_log2=*/true, ctx);
  auto* prepass = reinterpret_cast<float*>(base + 2 * align_up(padded_rows(p) * sizeof(float)));
  if (split) run<true>(p, lse_pad, d_pad, prepass, stream);
  else run<false>(p, lse_pad, d_pad, prepass, stream);
}

}  // namespace fb::cuda::flash_sm90
