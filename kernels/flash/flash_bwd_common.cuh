// What the flash backward's launcher (flash_bwd.cu) and its kernel files share: the main kernel's
// arguments and the per-(dtype, head_dim) entry points, instantiated one dtype family per file.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "common/mask.h"
#include "flash/fp32_math.h"

namespace fb::cuda::flash::bwd {

// The pre-pass writes D and LSE per (batch*head) row of queries padded to a multiple of this, so that
// tile loads of them never run off a row and need no bounds checks. Padded entries hold D = 0 and
// LSE = +inf, which makes P = exp(s - LSE) exactly 0 for padded query rows. Every kernel's query tile
// divides it (static_assert in the traits).
constexpr int kSeqPadMultiple = 128;

constexpr int padded_seq(int seq) {
  return (seq + kSeqPadMultiple - 1) / kSeqPadMultiple * kSeqPadMultiple;
}

// Arguments of the main kernel. Acc below is float for fp16/bf16/fp32 and double for fp64.
struct MainArgs {
  const void* q;     // [batch, heads,    seq_q, head_dim] element type
  const void* k;     // [batch, kv_heads, seq_k, head_dim]
  const void* v;     // [batch, kv_heads, seq_k, head_dim]
  const void* dout;  // [batch, heads,    seq_q, head_dim]
  void* dk;          // [batch, kv_heads, seq_k, head_dim]
  void* dv;          // [batch, kv_heads, seq_k, head_dim]
  const void* lse;   // Acc [batch*heads, seq_pad]: LSE (tensor-core kernels: LSE * log2(e))
  const void* d;     // Acc [batch*heads, seq_pad]: rowsum(dO * O)
  void* dq_acc;      // Acc [batch, heads, seq_q, head_dim], zeroed; scale * dS * K is added here
  int batch;
  int heads;
  int kv_heads;
  CausalMask mask;   // seq_q, seq_k and the causal rule (kernels/common/mask.h)
  int seq_pad;       // padded_seq(seq_q)
  double scale;
  // GQA/MQA head split (the warp-grid kernel's kHeadSplit instantiations only): a K/V plane's query
  // heads go to head_split blocks per key tile, block s taking heads [s * group / head_split,
  // (s + 1) * group / head_split) of the group; each adds its partial dK and dV (fp32, dK times the
  // softmax scale) into dkv_acc, zeroed: [2][batch, kv_heads, seq_k, head_dim] (dK, then dV).
  // The tail split's kernels (kTailSplit) read head_split as the tail's split S instead (below).
  int head_split = 1;
  float* dkv_acc = nullptr;
  // Causal grids of the head-major kernels (kHeadMajorCausal, no head split): K/V planes taken plane_group at a time,
  // key tiles outermost within a group (the longest first over the group's planes); 1: head-major, plane after plane
  // (flash_bwd.cu causal_plane_group_of()).
  int plane_group = 1;
};

// How the launcher runs the fp16/bf16 main kernel, beyond MainArgs (host side only: which kernel it launches; the
// kernels read MainArgs).
struct TcLaunch {
  // The tail split (kTailSplit kernels): MainArgs::head_split holds its S, dkv_acc the tail's rows.
  bool tail = false;
  // The tiled dQ accumulator (kDqTiled kernels; the default since session 11, not under the probes
  // `dqrows`, `lean`, `tail` or a GQA head split): dq_acc holds [batch * heads, seq_pad, head_dim] floats, each query tile's (kBlockM x head_dim) block in the order the dQ warps hold
  // their fragments (DqTiledLayout in flash_bwd_tc.cuh), converted by run_convert_dq_tiled.
  bool dq_tiled = false;
  // kDescend's walk (with dq_tiled, no tail and no head split): every block of a plane from its last query tile down,
  // no rotation (flash_bwd.cu descend_walk(): the default at d = 128 on non-causal MHA passes since session 18).
  bool descend = false;
};

// The tail split (probe `tail`): of a grid of n_blocks equal blocks, one a SM, the last partial wave's
// blocks (n_blocks % sms; all of them when there are fewer than SMs) are each split into S units; the
// grid is then n_blocks + tail_blocks * (S - 1) units, the whole blocks first.
inline int tail_blocks(long long n_blocks, int sms) { return sms > 0 ? int(n_blocks % sms) : 0; }

// Main kernels, one per (element type, head_dim). Each raises its dynamic shared-memory limit and
// checks its launch.
// Tensor cores: Elem is __half or __nv_bfloat16; LSE in the log2 domain.
template <typename Elem, int kHeadDim>
void run_main_tc(const MainArgs& a, TcLaunch how, cudaStream_t stream);
// CUDA cores: Elem is float or double (Acc = Elem); LSE natural log.
template <typename Elem, int kHeadDim> void run_main_simt(const MainArgs& a, cudaStream_t stream);

// fp32 on TF32 tensor cores (kMath tf32x3 or tf32x1; flash_bwd_tf32.cuh); LSE in the log2 domain.
template <int kHeadDim, Fp32Math kMath> void run_main_tf32(const MainArgs& a, cudaStream_t stream);

// Dynamic shared memory per block of those kernels (for the capability check before a launch).
template <typename Elem, int kHeadDim> int main_tc_smem_bytes();
template <typename Elem, int kHeadDim> int main_simt_smem_bytes();
template <int kHeadDim> int main_tf32_smem_bytes();

// The head-split kernel (kHeadSplit) of the (dtype, head_dim) backward: its key tile, query tile and
// shared memory per block; all 0 where there is none (d = 32).
struct SplitTiles {
  int block_n = 0;
  int block_m = 0;
  int smem_bytes = 0;
};
template <typename Elem, int kHeadDim> SplitTiles main_tc_split_tiles();

// The tiled dQ accumulator (TcLaunch::dq_tiled) -> dq ([batch * heads, seq_q, head_dim], element
// type): one block per (batch * head, query tile). fp16/bf16 at d = 64 and 128 (the warp-grid kernel).
template <typename Elem, int kHeadDim>
void run_convert_dq_tiled(const float* dq_acc, void* dq, std::int64_t batch_heads, int seq_q, int seq_pad,
                          cudaStream_t stream);

// Keys per block of each main kernel.
template <typename Elem, int kHeadDim> int main_tc_key_tile();
template <typename Elem, int kHeadDim> int main_simt_key_tile();
template <int kHeadDim> int main_tf32_key_tile();

// The warp-grid kernel's variant (flash_bwd_tc.cuh, TcConfig), from FB_FLASH_BWD read once per
// process, for A/B runs in one binary: `lean` (session 7's call-A kernel: kLean + kDqRed2, tile-major
// causal grid); `tail` (session 10's probe: non-causal grids split their last partial wave, kTailSplit,
// at d = 64 and 128 and on grids of less than a wave too, dQ reduced by rows); `notail` (the default
// without the d = 128 non-causal tail split); `dqrows` (the default with dQ reduced by rows into a
// row-major accumulator, kDqRed2: session 10's dQ); unset or `standard`: the default. Anything else is
// refused (std::invalid_argument; `s6` and `desc`, measured in session 7, were removed in session 8;
// `stagger`, measured in session 9, became d = 64 causal's default and is no longer a probe; `dqtile`,
// measured in session 11's call A, became the default). Under a GQA head split (flash_bwd.cu
// split_dq_tiled()): `splitrows` the split kernels with session 8's row-major dQ at every head_dim (the
// default reduces dQ tiled under the split too: at d = 128 since session 12, at d = 64 since session 13,
// both measured as the probe `splittile`, removed since);
// `cap8`: the default with the head split's subset count capped at 8 at d = 128 too (flash_bwd.cu max_head_split():
// by default 16 under the causal mask since session 13, the whole group without it since session 27).
// `desc2` (session 18, d = 64 and 128, both masks): the default's tiled-dQ kernels with kDescend, every block of a plane
// walking its query tiles from the last down with no rotation, so that the blocks of a plane (consecutive in the grid)
// read the same Q / dO / LSE / D tile at about the same time; without the tail split and the GQA head split. Measured
// in session 18's call B: 1.022x over the default at d = 128 non-causal (MHA, bf16, N = 1k / 4k / 1536: 1.003 / 1.018 /
// 1.044x; 1.016x over `notail`), 0.997x causal; hence the default on d = 128 non-causal MHA passes (flash_bwd.cu
// descend_walk()). `nodesc2`: the default before it (the rotated walk, with the tail split where it splits).
// `headmajor` (session 37): the default with every unsplit causal GQA grid head-major (plane after plane), the order
// before the plane groups (flash_bwd.cu causal_plane_group_of()). `nosubwave` (session 38): the default without the tail
// split on grids of less than one wave (d = 128 since session 38, d = 64 since session 39; flash_bwd.cu tail_split()).
enum class GridVariant { standard, lean, tail, notail, dqrows, splitrows, cap8, desc2, nodesc2, headmajor, nosubwave };
GridVariant grid_variant();

// Raises `kernel`'s dynamic shared-memory limit to `bytes` after checking the device offers that much.
void set_smem_limit(const void* kernel, int bytes);

}  // namespace fb::cuda::flash::bwd
