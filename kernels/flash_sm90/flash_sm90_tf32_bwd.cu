// The Hopper fp32 backward's host side (3xTF32 on wgmma, and the 1xTF32 diagnostic): checks,
// workspace, the pre-pass and the launch of flash_sm90_tf32_bwd_kernel.cuh. The pre-pass
// (D = rowsum(dO o O), the padded LSE, dQ zeroed) is the portable flash backward's
// (flash/flash_bwd.h); the kernel adds dQ into p.dq itself (TMA reduce-add of staged boxes), so no
// convert pass.
//
// dQ is summed by reductions in global memory, so its last bits may differ from run to run; dK and dV
// are summed in a fixed order and repeat exactly.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>

#include <cuda_runtime.h>

#include "common/check.h"
#include "common/softmax.cuh"
#include "flash/flash_bwd.h"
#include "flash_sm90/flash_sm90_fp16pair_bwd_kernel.cuh"
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

template <typename Tr> void launch(const AttentionParams& p, const float* lse_pad, const float* d_pad,
                                   cudaStream_t stream) {
  Tf32BwdParams prm{};
  const std::int64_t q_planes = std::int64_t(p.batch) * p.heads;
  const std::int64_t kv_planes = std::int64_t(p.batch) * p.kv_heads;
  encode_bhsd_map(&prm.tm_q, Dtype::fp32, p.q, p.head_dim, p.seq_q, q_planes, Tr::kChunkElems, Tr::kBlockM);
  encode_bhsd_map(&prm.tm_do, Dtype::fp32, p.dout, p.head_dim, p.seq_q, q_planes, Tr::kChunkElems,
                  Tr::kBlockM);
  encode_bhsd_map(&prm.tm_dq, Dtype::fp32, p.dq, p.head_dim, p.seq_q, q_planes, Tr::kChunkElems, Tr::kBlockM);
  encode_bhsd_map(&prm.tm_k, Dtype::fp32, p.k, p.head_dim, p.seq_k, kv_planes, Tr::kChunkElems, Tr::kBlockN);
  encode_bhsd_map(&prm.tm_v, Dtype::fp32, p.v, p.head_dim, p.seq_k, kv_planes, Tr::kChunkElems, Tr::kBlockN);
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

// Session 6's kernel (Tf32BwdConfig::Session6: cvt.rna splits, descriptors rebuilt per wgmma) and its
// cvt.rn-only form were timing probes (FB_SM90_FP32_BWD_PROBE=s6, s6,rn) until session 7 measured the
// shipping kernel ahead of both (docs/perf-notes.md, "flash-sm90 fp32 backward"); removed in session 8,
// with their instantiations.
// Session 9's probes (FB_SM90_FP32_BWD_PROBE: dvbar, regp, sleep; racecheck) ran in its call A: dvbar is
// the shipping d = 128 kernel, regp and sleep are removed (docs/perf-notes.md, "flash-sm90 fp32 backward").
// Session 10's probes (FB_SM90_FP32_BWD_PROBE, d = 64: pp1 / pp, the consumers taking turns on the tensor cores;
// eq, Q / dO released before the softmax; pp,eq) ran in its call A: eq is the shipping d = 64 kernel
// (Tf32BwdEarlyQd), the ping-pong forms are removed with the probe switch (docs/perf-notes.md).
// Session 11's probes (FB_SM90_FP32_BWD_PROBE, d = 64: dsreg, dK's A fragments from the dS registers; dqp, dQ^T
// by the producer warpgroup) ran in its call A: dsreg is the shipping d = 64 kernel (Tf32BwdDsRegs), dqp (0.78x
// the default) is removed with the probe switch (code in the history, commit f1514af; docs/perf-notes.md).
// Session 12's probes (FB_SM90_FP32_BWD_PROBE, d = 64 3xTF32: hilo, S^T / dP^T with B = [hi | lo] as one N = 64
// operand; hilo8, the same with hi*hi in one chain; dqperm, conflict-free dQ^T fragment loads) ran in its call A:
// hilo is the shipping d = 64 3xTF32 kernel (Tf32BwdHiLoB, +4.7-8.4%), hilo8 and hilo + dqperm were level with it and
// are removed (code in the history, commit ba09a4e; docs/perf-notes.md).
// Session 13's probes (FB_SM90_FP32_BWD_PROBE, d = 64 3xTF32: lofrag / lofragdq, lo*hi of S^T / dP^T's first four k8
// steps with A = K lo / V lo from registers; dslate, dS's stores and the barrier before them under dV's first wgmmas)
// ran in its call A: within -2.5..+2.8% of the default, N = 8192 below it under both lofragdq and dslate; removed
// (code in the history, commit ea0fa75; docs/perf-notes.md). Its round-2 probe (trunc: Q's and dO's hi as the raw
// tile, truncated by the wgmma) was 1-4% slower and failed the FP32 rule on one GPU test case (one bit less in the
// split); removed (commit 58dae74).
// Session 14's probe (dotfirst: dO^T before Q^T, a barrier each) was level in its call A (0.97-1.01x) and is removed
// (code in the history, commit 3598979); its round-2 probe dqahead (dQ^T's next K^T fragments loaded before the wait
// for the previous commit group) ran +0.7-2.0% in call B, under the +2% rule, and is removed (commit 84c5321).
// Session 15's probe roles (64 keys a block, 64-query tiles; consumer 0 S^T / P / dV, consumer 1 dP^T / dS / dK) ran
// 0.87x the default in its call A (the producer's per-score work doubled) and dqg2 (session 14: dQ^T with two k8 steps
// a commit group) +0.7-2.3%, under its +2% rule; both removed (code in the history, commit dcff780; docs/perf-notes.md).
// FB_SM90_FP32_BWD_PROBE (read once), 3xTF32 only; unset, empty or `default` is the shipping backward, any word but
// these is refused (an A/B under a removed word would time the default and read as "level"); at the head dim a word
// does not name, the shipping kernel runs:
//   racebar   d = 128: a second barrier over both consumers right after the one that orders consumer 1's dS stores
//             before consumer 0's dK loads (Tf32BwdRaceBar; racecheck only, not a speed variant: session 11's audit
//             of the reports at that pair; call A's racecheck reported none with or without it)
//   tf32pair  d = 64 and d = 128 non-causal: the 3xTF32 kernel (Tf32BwdConfig<64 / 128, true>), the default there
//             until session 20's call B (d = 64) and session 21's call A (d = 128); every other launch as the default
//   fp16pair  the default (accepted as a word for the session 20 jobs): at d = 64 non-causal 3x launches the fp16-pair
//             backward (flash_sm90_fp16pair_bwd_kernel.cuh; issue 15; call B: 1.25-1.47x the 3xTF32 kernel, 2.24-2.77x
//             naive, every row verified): a pre-pass splits Q, dO, K, V into scaled fp16 hi / lo in the workspace, the
//             kernel runs every GEMM as 3 f16 wgmma products (hi*hi and the cross terms in separate fp32 accumulators)
//   fp16pair128  d = 128 non-causal 3x: the one-warpgroup fp16-pair backward (flash_sm90_fp16pair128_bwd_kernel, 64
//             keys a block, dV / dK as four m64n64 jobs a tile with fp32 totals in shared memory; session 21's call A:
//             1.34-1.58x the 3xTF32 kernel, 1.59-1.93x naive: docs/perf-notes.md "Session 20, prepared for session 21:
//             fp16pair at d = 128"), the default there between session 21's calls A and C; every other launch as
//             the default
//   fp16pair128w2  d = 128 non-causal 3x: the two-warpgroup kernel without the look-ahead (kAhead false; session 21's
//             call C: level with w2a, 1.158x fp16pair128 against 1.159x), in session 21's form (key-block-major
//             order, seven pre-pass launches); every other launch as the default
//   fp16pair128w2a  d = 128 non-causal 3x: session 21's default (call C: 1.11-1.22x fp16pair128, 1.80-2.31x naive):
//             the two-warpgroup fp16-pair backward (flash_sm90_fp16pair128w2_bwd_kernel<kAhead>: the block's 64 keys
//             shared by role, 0 S^T / P / dV, 1 dP^T / dS / dK, dQ^T by d's panels, each warpgroup issuing the next
//             tile's S^T / dP^T before this tile's totals, dQ staging and reduction; K / V scaled per 64-key block;
//             docs/perf-notes.md "Session 21: fp16pair128w2") with its blocks in key-block-major order after the
//             seven-launch pre-pass, for A/B runs against the default; every other launch as the default
//   fp16pair128w2m  the default (accepted as a word for the session 22 jobs): at d = 128 non-causal 3x launches w2a's
//             kernel with its blocks in plane-major order (a plane's key blocks in one wave: its Q / dO tiles read
//             from DRAM once, the rest through L2; session 22's call A: 1.15x w2a at N = 1k, 1.01-1.17x over five
//             shapes, DRAM reads 6.7 -> 0.67 GB at N = 1k) after the fused pre-pass (fp16pair128_rows_prepass_kernel,
//             fp16pair128_prepass_split_kernel: a memset and two launches for seven, one read of dO fewer, every value
//             written with the seven launches' bits; call A: `fp16pair128w2f`, 1.00-1.03x); docs/perf-notes.md
//             "Session 22: fp16pair128w2m" and "Session 22: fp16pair128w2f". force_fp16pair128_prepass() picks the
//             pre-pass whatever the word (the bitwise test)
// Session 22's other probes ran in its call A and are removed (code in the history, commit d40d019): fp16pair128w2p (a
// persistent w2a in plane-major order: 1.03x w2a, 0.95x at N = 3000 GQA), fp16pair128w2r / fp16pair128w2pr (w2m / w2p
// with each block's query tiles rotated: 0.97x / 0.95x at N = 3000 GQA); w2f is the default's pre-pass.
enum class Tf32BwdProbe {
  none,
  racebar,
  fp16pair,
  tf32pair,
  fp16pair128,
  fp16pair128w2,
  fp16pair128w2a,
  fp16pair128w2m,
};

Tf32BwdProbe tf32_bwd_probe() {
  static const Tf32BwdProbe probe = [] {
    const char* env = std::getenv("FB_SM90_FP32_BWD_PROBE");
    const std::string s = env != nullptr ? env : "";
    if (s.empty() || s == "default") return Tf32BwdProbe::none;
    if (s == "racebar") return Tf32BwdProbe::racebar;
    if (s == "fp16pair") return Tf32BwdProbe::fp16pair;
    if (s == "tf32pair") return Tf32BwdProbe::tf32pair;
    if (s == "fp16pair128") return Tf32BwdProbe::fp16pair128;
    if (s == "fp16pair128w2") return Tf32BwdProbe::fp16pair128w2;
    if (s == "fp16pair128w2a") return Tf32BwdProbe::fp16pair128w2a;
    if (s == "fp16pair128w2m") return Tf32BwdProbe::fp16pair128w2m;
    throw std::invalid_argument("FB_SM90_FP32_BWD_PROBE: '" + s +
                                "' is not an fp32 backward probe (racebar, fp16pair, tf32pair, fp16pair128, "
                                "fp16pair128w2, fp16pair128w2a, fp16pair128w2m; unset or default for the "
                                "shipping kernel; lofrag, lofragdq, dslate and trunc were removed in session 13, "
                                "dotfirst and dqahead in session 14, roles and dqg2 in session 15, fp16pair128w2p, "
                                "w2r, w2pr and w2f in session 22: docs/perf-notes.md)");
  }();
  return probe;
}

// ---- fp16pair (d = 64 non-causal, 3x only; the default there since session 20's call B, `tf32pair` opts out) ----
using Fp16PairTr = Fp16PairBwdTraits;

bool fp16pair_applies(const AttentionParams& p, bool split) {
  return split && p.head_dim == 64 && !p.causal && tf32_bwd_probe() != Tf32BwdProbe::tf32pair;
}
// The fp16-pair kernels' tiles and workspace (Tr: Fp16PairBwdTraits at d = 64, Fp16Pair128BwdTraits at d = 128).
template <typename Tr> int fp16pair_q_tiles(const AttentionParams& p) {
  return (p.seq_q + Tr::kBlockM - 1) / Tr::kBlockM;
}
template <typename Tr> int fp16pair_k_blocks(const AttentionParams& p) {
  return (p.seq_k + Tr::kBlockN - 1) / Tr::kBlockN;
}
// The workspace after the padded LSE and D: the stats (one layout, Fp16PairBwdTraits'), the split Q / dO tiles, the
// split K / V blocks.
std::size_t fp16pair_stats_bytes(const AttentionParams& p) {
  return align_up(std::size_t(p.batch) * p.kv_heads * Fp16PairTr::kStats * sizeof(unsigned));
}
template <typename Tr> std::size_t fp16pair_qd_bytes(const AttentionParams& p) {
  return std::size_t(p.batch) * p.heads * fp16pair_q_tiles<Tr>(p) * Tr::kStageBytes;
}
template <typename Tr> std::size_t fp16pair_kv_bytes(const AttentionParams& p) {
  return std::size_t(p.batch) * p.kv_heads * fp16pair_k_blocks<Tr>(p) * Tr::kKVBytes;
}
template <typename Tr> std::size_t fp16pair_workspace_bytes(const AttentionParams& p) {
  return fp16pair_stats_bytes(p) + fp16pair_qd_bytes<Tr>(p) + fp16pair_kv_bytes<Tr>(p);
}

// The stats pre-pass of both kernels: zeroed, then max |x| per plane (and dO's, V's largest row norms) of Q, dO, K, V,
// read as rows of 64 (at d = 128 a [planes, seq, 128] tensor is [planes, 2 seq, 64]: max |x| is the same, the row
// norms are of 64-column halves, which the d = 128 kernel's dS bound takes into account). with_kv = false: Q and dO
// only (the two-warpgroup kernels take K's and V's per key block from their split).
void fp16pair_stats(const AttentionParams& p, unsigned* stats, cudaStream_t stream, bool with_kv = true) {
  using Sp = Fp16PairTr;  // the stats' layout
  const int halves = p.head_dim / 64;
  const int q_planes = p.batch * p.heads;
  const int kv_planes = p.batch * p.kv_heads;
  const int group = p.group();
  FB_CUDA_CHECK(cudaMemsetAsync(stats, 0, fp16pair_stats_bytes(p), stream));
  auto stats_grid = [](int rows, int planes) {
    return dim3(unsigned(std::min((rows + 15) / 16, 64)), unsigned(std::min(planes, 65535)));
  };
  const int q_rows = halves * p.seq_q, k_rows = halves * p.seq_k;
  fp16pair_stats_kernel<<<stats_grid(q_rows, q_planes), 256, 0, stream>>>(static_cast<const float*>(p.q), q_planes,
                                                                         q_rows, group, stats, Sp::kStatQ, -1);
  fp16pair_stats_kernel<<<stats_grid(q_rows, q_planes), 256, 0, stream>>>(
      static_cast<const float*>(p.dout), q_planes, q_rows, group, stats, Sp::kStatDo, Sp::kStatDoNorm);
  if (!with_kv) {
    FB_CUDA_CHECK_LAUNCH();
    return;
  }
  fp16pair_stats_kernel<<<stats_grid(k_rows, kv_planes), 256, 0, stream>>>(static_cast<const float*>(p.k), kv_planes,
                                                                          k_rows, 1, stats, Sp::kStatK, -1);
  fp16pair_stats_kernel<<<stats_grid(k_rows, kv_planes), 256, 0, stream>>>(
      static_cast<const float*>(p.v), kv_planes, k_rows, 1, stats, Sp::kStatV, Sp::kStatVNorm);
  FB_CUDA_CHECK_LAUNCH();
}

// The fp16-pair main kernel's launch (d = 64 and fp16pair128 alike): one block per (key block, K/V plane), its
// parameters from the pass and the pre-pass's workspace pieces.
Fp16PairBwdParams fp16pair_params(const AttentionParams& p, unsigned char* qd, unsigned char* kv, unsigned* stats,
                                  const float* lse_pad, const float* d_pad, int q_tiles, int k_blocks) {
  const int kv_planes = p.batch * p.kv_heads;
  Fp16PairBwdParams prm{};
  prm.qd = qd;
  prm.kv = kv;
  prm.stats = stats;
  prm.lse = lse_pad;
  prm.dsum = d_pad;
  prm.dq = static_cast<float*>(p.dq);
  prm.dk = static_cast<float*>(p.dk);
  prm.dv = static_cast<float*>(p.dv);
  prm.heads = p.heads;
  prm.kv_heads = p.kv_heads;
  prm.group = p.group();
  prm.seq_q = p.seq_q;
  prm.seq_k = p.seq_k;
  prm.seq_pad = flash::backward_padded_seq(p.seq_q);
  prm.kv_planes = kv_planes;
  prm.q_tiles = q_tiles;
  prm.k_blocks = k_blocks;
  prm.scale_log2 = float(p.scale * kLog2e);
  prm.scale = float(p.scale);
  return prm;
}
template <typename Tr, typename Params>
void launch_fp16pair_kernel(void (*kernel)(Params), const Params& prm, int blocks, cudaStream_t stream) {
  FB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(Tr::kSmemBytes)));
  kernel<<<unsigned(blocks), Tr::kThreads, Tr::kSmemBytes, stream>>>(prm);
  FB_CUDA_CHECK_LAUNCH();
}
template <typename Tr>
void launch_fp16pair_main(void (*kernel)(Fp16PairBwdParams), const AttentionParams& p, unsigned char* qd,
                          unsigned char* kv, unsigned* stats, const float* lse_pad, const float* d_pad, int q_tiles,
                          int k_blocks, cudaStream_t stream) {
  launch_fp16pair_kernel<Tr>(kernel, fp16pair_params(p, qd, kv, stats, lse_pad, d_pad, q_tiles, k_blocks),
                             k_blocks * p.batch * p.kv_heads, stream);
}

void run_fp16pair(const AttentionParams& p, const float* lse_pad, const float* d_pad, unsigned char* ws,
                  cudaStream_t stream) {
  using Tr = Fp16PairTr;
  auto* stats = reinterpret_cast<unsigned*>(ws);
  auto* qd = ws + fp16pair_stats_bytes(p);
  auto* kv = qd + fp16pair_qd_bytes<Tr>(p);
  const int q_planes = p.batch * p.heads;
  const int kv_planes = p.batch * p.kv_heads;
  const int q_tiles = fp16pair_q_tiles<Tr>(p);
  const int k_blocks = fp16pair_k_blocks<Tr>(p);
  const int group = p.group();
  const auto* q = static_cast<const float*>(p.q);
  const auto* dout = static_cast<const float*>(p.dout);
  const auto* k = static_cast<const float*>(p.k);
  const auto* v = static_cast<const float*>(p.v);
  fp16pair_stats(p, stats, stream);
  auto split_grid = [](std::int64_t units) { return unsigned(std::min<std::int64_t>((units + 255) / 256, 65536)); };
  const std::int64_t q_units = std::int64_t(q_planes) * q_tiles * Tr::kBlockM * 8;
  const std::int64_t kv_units = std::int64_t(kv_planes) * k_blocks * Tr::kBlockN * 8;
  fp16pair_split_kernel<<<split_grid(q_units), 256, 0, stream>>>(q, q_planes, p.seq_q, q_tiles, Tr::kBlockM, 4, 0,
                                                                 group, stats, Tr::kStatQ, qd);
  fp16pair_split_kernel<<<split_grid(q_units), 256, 0, stream>>>(dout, q_planes, p.seq_q, q_tiles, Tr::kBlockM, 4, 2,
                                                                 group, stats, Tr::kStatDo, qd);
  fp16pair_split_kernel<<<split_grid(kv_units), 256, 0, stream>>>(k, kv_planes, p.seq_k, k_blocks, Tr::kBlockN, 4, 0,
                                                                  1, stats, Tr::kStatK, kv);
  fp16pair_split_kernel<<<split_grid(kv_units), 256, 0, stream>>>(v, kv_planes, p.seq_k, k_blocks, Tr::kBlockN, 4, 2,
                                                                  1, stats, Tr::kStatV, kv);
  FB_CUDA_CHECK_LAUNCH();

  launch_fp16pair_main<Tr>(flash_sm90_fp16pair_bwd_kernel<Tr>, p, qd, kv, stats, lse_pad, d_pad, q_tiles, k_blocks,
                           stream);
}

// ---- d = 128 non-causal, 3x only: fp16pair128w2m after the fused pre-pass (the default since session 22's call A;
// `tf32pair` opts out), fp16pair128w2a, fp16pair128w2 and fp16pair128 (under their words): one workspace ----
using Fp16Pair128Tr = Fp16Pair128BwdTraits;
using Fp16Pair128W2Tr = Fp16Pair128W2BwdTraits<false>;
using Fp16Pair128W2ATr = Fp16Pair128W2BwdTraits<true>;
using Fp16Pair128W2MTr = Fp16Pair128W2BwdTraits<true, true>;

// The two-warpgroup kernels (the default since session 21's call C; `fp16pair128` runs the one-warpgroup kernel).
bool fp16pair128_two_warpgroups() { return tf32_bwd_probe() != Tf32BwdProbe::fp16pair128; }
// The w2 kernels' per-block K / V stats, after fp16pair128's workspace pieces.
std::size_t fp16pair128w2_kvstats_bytes(const AttentionParams& p) {
  return align_up(std::size_t(p.batch) * p.kv_heads * fp16pair_k_blocks<Fp16Pair128Tr>(p) * Fp16Pair128KvStats::kWords *
                  sizeof(unsigned));
}

bool fp16pair128_applies(const AttentionParams& p, bool split) {
  return split && p.head_dim == 128 && !p.causal && tf32_bwd_probe() != Tf32BwdProbe::tf32pair;
}

// The pre-pass before the two-warpgroup kernels: fused (the default since session 22's call A) or, under
// fp16pair128w2a / fp16pair128w2 (session 21's forms), seven launches; force_fp16pair128_prepass() overrides the word.
std::atomic<Fp16Pair128Prepass>& forced_prepass() {
  static std::atomic<Fp16Pair128Prepass> forced{Fp16Pair128Prepass::from_probe};
  return forced;
}
bool fp16pair128_prepass_fused(const AttentionParams& p, bool split) {
  if (!fp16pair128_applies(p, split) || !fp16pair128_two_warpgroups()) return false;
  const Fp16Pair128Prepass how = forced_prepass().load();
  if (how == Fp16Pair128Prepass::from_probe)
    return tf32_bwd_probe() != Tf32BwdProbe::fp16pair128w2a && tf32_bwd_probe() != Tf32BwdProbe::fp16pair128w2;
  return how == Fp16Pair128Prepass::fused;
}

// The fused pre-pass (session 22's fp16pair128w2f; flash_sm90_fp16pair_bwd_kernel.cuh): the stats zeroed, then the
// row pass (padded LSE, D, dQ zeroed, Q's / dO's stats) and the split (Q / dO blocks, then K / V blocks). Writes
// every byte that backward_prepass, fp16pair_stats(with_kv = false), the Q / dO splits and the K / V split write,
// with the same bits.
void run_fp16pair128_fused_prepass(const AttentionParams& p, float* lse_pad, float* d_pad, unsigned* stats,
                                   unsigned char* qd, unsigned char* kv, unsigned* kvstats, cudaStream_t stream) {
  using Tr = Fp16Pair128Tr;
  using Pp = Fp16Pair128PrepassParams;
  const std::int64_t q_planes = std::int64_t(p.batch) * p.heads;
  const std::int64_t kv_planes = std::int64_t(p.batch) * p.kv_heads;
  Pp pp{};
  pp.q = static_cast<const float*>(p.q);
  pp.dout = static_cast<const float*>(p.dout);
  pp.o = static_cast<const float*>(p.o);
  pp.lse = static_cast<const float*>(p.lse);
  pp.k = static_cast<const float*>(p.k);
  pp.v = static_cast<const float*>(p.v);
  pp.lse_pad = lse_pad;
  pp.d_pad = d_pad;
  pp.dq = static_cast<float*>(p.dq);
  pp.stats = stats;
  pp.kvstats = kvstats;
  pp.qd = qd;
  pp.kv = kv;
  pp.seq_q = p.seq_q;
  pp.seq_pad = flash::backward_padded_seq(p.seq_q);
  pp.seq_k = p.seq_k;
  pp.group = p.group();
  pp.q_tiles = fp16pair_q_tiles<Tr>(p);
  pp.tile_rows = Tr::kBlockM;
  pp.k_blocks = fp16pair_k_blocks<Tr>(p);
  pp.row_chunks = (pp.seq_pad + Pp::kRowsPerBlock - 1) / Pp::kRowsPerBlock;
  pp.qd_units = q_planes * pp.q_tiles * pp.tile_rows * 16;
  pp.qd_blocks = (pp.qd_units + Pp::kQdUnitsPerBlock - 1) / Pp::kQdUnitsPerBlock;
  pp.lse_mult = float(kLog2e);  // backward_prepass's lse_log2
  const std::int64_t row_blocks = q_planes * pp.row_chunks;
  const std::int64_t split_blocks = pp.qd_blocks + std::int64_t(pp.k_blocks) * kv_planes;
  if (row_blocks > kMaxGridX || split_blocks > kMaxGridX)
    throw std::invalid_argument("flash-sm90 fp32 backward (d = 128): the fused pre-pass's grid exceeds the limit");
  FB_CUDA_CHECK(cudaMemsetAsync(stats, 0, fp16pair_stats_bytes(p), stream));
  fp16pair128_rows_prepass_kernel<<<unsigned(row_blocks), Pp::kThreads, 0, stream>>>(pp);
  fp16pair128_prepass_split_kernel<<<unsigned(split_blocks), Pp::kThreads, 0, stream>>>(pp);
  FB_CUDA_CHECK_LAUNCH();
}

// fused: the fused pre-pass (the caller has not run backward_prepass), else session 21's seven launches.
void run_fp16pair128(const AttentionParams& p, float* lse_pad, float* d_pad, unsigned char* ws, bool fused,
                     cudaStream_t stream) {
  using Tr = Fp16Pair128Tr;
  using Sp = Fp16PairTr;  // the stats' layout
  auto* stats = reinterpret_cast<unsigned*>(ws);
  auto* qd = ws + fp16pair_stats_bytes(p);
  auto* kv = qd + fp16pair_qd_bytes<Tr>(p);
  const int q_planes = p.batch * p.heads;
  const int kv_planes = p.batch * p.kv_heads;
  const int q_tiles = fp16pair_q_tiles<Tr>(p);
  const int k_blocks = fp16pair_k_blocks<Tr>(p);
  if (std::int64_t(k_blocks) * kv_planes > kMaxGridX)
    throw std::invalid_argument(
        "flash-sm90 fp32 backward (fp16pair128): batch * kv_heads * seq_k exceeds the grid limit");
  const int group = p.group();
  const auto* q = static_cast<const float*>(p.q);
  const auto* dout = static_cast<const float*>(p.dout);
  const auto* k = static_cast<const float*>(p.k);
  const auto* v = static_cast<const float*>(p.v);
  const bool w2 = fp16pair128_two_warpgroups();
  auto* kvstats = reinterpret_cast<unsigned*>(kv + fp16pair_kv_bytes<Tr>(p));  // the w2 kernels' per-block K / V stats
  const auto launch_w2 = [&] {
    const Fp16Pair128W2Params prm{fp16pair_params(p, qd, kv, stats, lse_pad, d_pad, q_tiles, k_blocks), kvstats};
    if (tf32_bwd_probe() == Tf32BwdProbe::fp16pair128w2)
      return launch_fp16pair_kernel<Fp16Pair128W2Tr>(flash_sm90_fp16pair128w2_bwd_kernel<Fp16Pair128W2Tr>, prm,
                                                     k_blocks * kv_planes, stream);
    if (tf32_bwd_probe() == Tf32BwdProbe::fp16pair128w2a)
      return launch_fp16pair_kernel<Fp16Pair128W2ATr>(flash_sm90_fp16pair128w2_bwd_kernel<Fp16Pair128W2ATr>, prm,
                                                      k_blocks * kv_planes, stream);
    return launch_fp16pair_kernel<Fp16Pair128W2MTr>(flash_sm90_fp16pair128w2_bwd_kernel<Fp16Pair128W2MTr>, prm,
                                                    k_blocks * kv_planes, stream);
  };
  if (fused) {
    run_fp16pair128_fused_prepass(p, lse_pad, d_pad, stats, qd, kv, kvstats, stream);
    return launch_w2();
  }
  fp16pair_stats(p, stats, stream, /*with_kv=*/!w2);
  auto split_grid = [](std::int64_t units) { return unsigned(std::min<std::int64_t>((units + 255) / 256, 65536)); };
  const std::int64_t q_units = std::int64_t(q_planes) * q_tiles * Tr::kBlockM * 16;
  const std::int64_t kv_units = std::int64_t(kv_planes) * k_blocks * Tr::kBlockN * 16;
  fp16pair128_split_kernel<<<split_grid(q_units), 256, 0, stream>>>(q, q_planes, p.seq_q, q_tiles, Tr::kBlockM, 0,
                                                                    group, stats, Sp::kStatQ, qd);
  fp16pair128_split_kernel<<<split_grid(q_units), 256, 0, stream>>>(dout, q_planes, p.seq_q, q_tiles, Tr::kBlockM, 2,
                                                                    group, stats, Sp::kStatDo, qd);
  if (w2) {
    // K and V with scales per 64-key block (their stats from the same read), then the two-warpgroup kernel.
    if (kv_planes > 65535)
      throw std::invalid_argument("flash-sm90 fp32 backward (fp16pair128w2): batch * kv_heads exceeds 65535");
    fp16pair128_kvsplit_kernel<<<dim3(unsigned(k_blocks), unsigned(kv_planes)), 256, 0, stream>>>(k, v, p.seq_k,
                                                                                                 k_blocks, kvstats, kv);
    FB_CUDA_CHECK_LAUNCH();
    return launch_w2();
  }
  fp16pair128_split_kernel<<<split_grid(kv_units), 256, 0, stream>>>(k, kv_planes, p.seq_k, k_blocks, Tr::kBlockN, 0,
                                                                     1, stats, Sp::kStatK, kv);
  fp16pair128_split_kernel<<<split_grid(kv_units), 256, 0, stream>>>(v, kv_planes, p.seq_k, k_blocks, Tr::kBlockN, 2,
                                                                     1, stats, Sp::kStatV, kv);
  FB_CUDA_CHECK_LAUNCH();

  launch_fp16pair_main<Tr>(flash_sm90_fp16pair128_bwd_kernel<Tr>, p, qd, kv, stats, lse_pad, d_pad, q_tiles,
                           k_blocks, stream);
}

template <int D, bool kSplit>
void run_d(const AttentionParams& p, const float* lse_pad, const float* d_pad, cudaStream_t stream) {
  using Traits = typename Tf32BwdConfig<D, kSplit>::Traits;
  [[maybe_unused]] const Tf32BwdProbe probe = tf32_bwd_probe();  // read at every head dim: wrong words refused
  if constexpr (D == 128 && kSplit) {
    if (probe == Tf32BwdProbe::racebar) return launch<Tf32BwdRaceBar<Traits>>(p, lse_pad, d_pad, stream);
  }
  launch<Traits>(p, lse_pad, d_pad, stream);
}

template <bool kSplit>
void run(const AttentionParams& p, const float* lse_pad, const float* d_pad, cudaStream_t stream) {
  if (p.head_dim == 64) run_d<64, kSplit>(p, lse_pad, d_pad, stream);
  else run_d<128, kSplit>(p, lse_pad, d_pad, stream);
}

}  // namespace

Fp16Pair128Prepass force_fp16pair128_prepass(Fp16Pair128Prepass how) { return forced_prepass().exchange(how); }

bool tf32_backward_prepass_fused(const AttentionParams& p) { return fp16pair128_prepass_fused(p, true); }

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
  const std::size_t lse_d = 2 * align_up(padded_rows(p) * sizeof(float));  // padded LSE, D
  // fp16pair (d = 64) and fp16pair128w2a / w2 / fp16pair128 (d = 128): + their stats and split Q, dO, K, V (as many
  // bytes as the four fp32 tensors, padded to tiles); the two-warpgroup kernels + their per-block K / V stats.
  if (fp16pair128_applies(p, true))
    return lse_d + fp16pair_workspace_bytes<Fp16Pair128Tr>(p) +
           (fp16pair128_two_warpgroups() ? fp16pair128w2_kvstats_bytes(p) : 0);
  return fp16pair_applies(p, true) ? lse_d + fp16pair_workspace_bytes<Fp16PairTr>(p) : lse_d;
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
  // The pre-pass also zeroes p.dq ([batch, heads, seq_q, d]): the kernel adds into it. The d = 128 non-causal
  // default's fused pre-pass does all that itself.
  const bool fused = fp16pair128_prepass_fused(p, split);
  if (!fused) flash::backward_prepass(p, lse_pad, d_pad, p.dq, /*dq_padded=*/false, /*lse_log2=*/true, ctx);
  if (fp16pair128_applies(p, split))
    return run_fp16pair128(p, lse_pad, d_pad, base + 2 * align_up(padded_rows(p) * sizeof(float)), fused, stream);
  if (fp16pair_applies(p, split))
    return run_fp16pair(p, lse_pad, d_pad, base + 2 * align_up(padded_rows(p) * sizeof(float)), stream);
  if (split) run<true>(p, lse_pad, d_pad, stream);
  else run<false>(p, lse_pad, d_pad, stream);
}

}  // namespace fb::cuda::flash_sm90
