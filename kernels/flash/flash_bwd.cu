// The flash backward's host side: checks, workspace layout, the pre-pass and dQ-convert kernels, and
// the one runtime -> template dispatch on (dtype, head_dim, fp32 math). The main kernels live in
// flash_bwd_tc.cuh (fp16/bf16, instantiated in flash_bwd_fp16.cu / flash_bwd_bf16.cu),
// flash_bwd_tf32.cuh (fp32 on TF32 tensor cores, flash_bwd_tf32x3.cu / flash_bwd_tf32x1.cu) and
// flash_bwd_simt.cu (fp32 exact, fp64).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <queue>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <cuda_runtime.h>

#include "common/check.h"
#include "common/device_caps.h"
#include "common/settings.h"
#include "common/head_split.h"
#include "common/types.cuh"
#include "flash/flash_bwd.h"
#include "flash/flash_bwd_common.cuh"
#include "common/softmax.cuh"

namespace fb::cuda::flash {
namespace bwd {
namespace {

constexpr int kWarpsPerBlock = 8;        // pre-pass: one warp per query row
constexpr int kConvertThreads = 256;
constexpr std::size_t kWsAlign = 256;    // workspace sections start on 256-byte boundaries
constexpr std::int64_t kMaxGridX = std::numeric_limits<int>::max();
// Keys per block of the main kernels (the tensor-core and CUDA-core configurations); the grid counts
// ceil(seq_k / it) * batch * kv_heads blocks.
constexpr int kMinBlockN = 32;
// mma.sync with bf16 operands, ldmatrix and cp.async need sm_80.
constexpr int kTensorCoreMinMajor = 8;

// D = rowsum(dO o O) and LSE (times lse_mult) per query row, padded to seq_pad rows per (batch,
// head) with D = 0, LSE = +inf; the dQ accumulator zeroed when given: its real rows
// ([batch * heads, seq_q, head_dim]) or, with dq_padded, all padded rows ([.., seq_pad, ..]). One
// warp per padded row. A row with no visible key (LSE = -inf, O = 0) is written like a padding row:
// LSE +inf makes every P = exp(s - LSE) of it 0 whatever the mask, so it adds nothing to dK, dV and
// its dQ stays 0.
template <typename Elem, typename Acc>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    bwd_prepass_kernel(const Elem* o, const Elem* dout, const Acc* lse, Acc* lse_pad, Acc* d_pad,
                       Acc* dq_acc, bool dq_padded, std::int64_t padded_rows, int seq_q, int seq_pad,
                       int head_dim, Acc lse_mult) {
  const std::int64_t row = std::int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= padded_rows) return;
  const std::int64_t bh = row / seq_pad;
  const int i = int(row % seq_pad);
  if (i >= seq_q) {
    if (lane == 0) {
      d_pad[row] = Acc(0);
      lse_pad[row] = Acc(INFINITY);
    }
    if (dq_acc != nullptr && dq_padded)
      for (int c = lane; c < head_dim; c += 32) dq_acc[row * head_dim + c] = Acc(0);
    return;
  }
  const std::int64_t off = (bh * seq_q + i) * head_dim;
  const std::int64_t dq_off = dq_padded ? row * head_dim : off;
  Acc sum = 0;
  for (int c = lane; c < head_dim; c += 32) {
    sum += Acc(to_double(o[off + c])) * Acc(to_double(dout[off + c]));
    if (dq_acc != nullptr) dq_acc[dq_off + c] = Acc(0);
  }
  for (int s = 16; s > 0; s /= 2) sum += __shfl_xor_sync(kFullWarp, sum, s);
  if (lane == 0) {
    d_pad[row] = sum;
    const Acc row_lse = lse[bh * seq_q + i];
    lse_pad[row] = row_lse == Acc(-INFINITY) ? Acc(INFINITY) : row_lse * lse_mult;
  }
}

template <typename Elem, typename Acc>
__global__ void bwd_convert_dq_kernel(const Acc* dq_acc, Elem* dq, std::int64_t n) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    if constexpr (std::is_same_v<Elem, Acc>) {
      dq[i] = dq_acc[i];
    } else {
      dq[i] = from_float<Elem>(dq_acc[i]);
    }
  }
}

// FB_FLASH_BWD_SPLIT=N (read once per process) or force_backward_head_split(N): N query-head
// subsets per K/V plane wherever the split kernel can run (1: never split), 0: the model's choice.
std::atomic<int>& forced_split() {
  static std::atomic<int> forced{[] {
    const char* e = std::getenv("FB_FLASH_BWD_SPLIT");
    if (e == nullptr || *e == '\0') return 0;
    char* end = nullptr;
    const long v = std::strtol(e, &end, 10);
    if (*end != '\0' || v < 0 || v > 1024)
      throw std::invalid_argument(std::string("FB_FLASH_BWD_SPLIT: '") + e +
                                  "' is not a number of query-head subsets (0 = automatic, 1 = off)");
    return int(v);
  }()};
  return forced;
}

// Whether the variant runs the default's grid (head split, tail split and tiled dQ as the default
// picks them): the default itself and the probes `splitrows`, which differs from it only inside a GQA
// head split (split_dq_tiled()), and `cap8`, only in the head split's subset count (max_head_split()).
bool default_grid(GridVariant v) {
  return v == GridVariant::standard || v == GridVariant::splitrows || v == GridVariant::cap8 ||
         v == GridVariant::nodesc2 || v == GridVariant::headmajor || v == GridVariant::nosubwave;
}

// Whether the main kernel walks each plane's query tiles with kDescend (TcLaunch::descend: every block from the last
// query tile down, no rotation, no tail split), the one place that decides it: by default on non-causal MHA passes
// (fp16/bf16 where the tiled dQ runs) at d = 128 up to kDescendMaxKeys keys.
// d = 128: session 18's call B, probe `desc2`: 1.022x over the default with its tail split, bf16 N = 1k / 4k / 1536
// 1.003 / 1.018 / 1.044x; results/h200/s18/callB/sm90fwd/. Causal passes (0.997x in that call), d = 64 and GQA/MQA
// passes (those with a head split keep it, and those without keep the tail split) walk as before; `nodesc2` nowhere,
// the probe `desc2` everywhere the tiled dQ runs without a head split (d = 64 and 128, both masks). Up to
// kDescendMaxKeys keys at d = 128: session 19 timed the walk against the order before at longer N
// (results/h200/s19/callA/ and callB/, bf16, twice each, interleaved): 0.990-0.996x at N = 8k / 16k in call A; in call
// B, under the rule call A's note pre-registered (docs/perf-notes.md, flash backward, session 18's subsection), the
// order before read 1.002x / 1.003x / 1.011x the walk at N = 6k / 8k / 16k (geomean 1.005x, no reading under 0.995x),
// so longer passes keep it (the tail split too).
// d = 64 (session 66, call C's rule in docs/perf-notes.md; results/h100/s66/C/; its non-causal desc kernel spills 12
// bytes, in the ptxas baseline since session 41): call B read `desc2` 1.025x over the rotated walk at N = 8192 / 16384
// (16k tokens x 32 heads); call C 1.022-1.025x at every N of the issue's grid from 512, bf16 and fp16, but 0.973x at a
// shape no config names (b1-h24, seq_q 6000 / seq_k 7000) and 1.004-1.008x at two more (N = 3000, 5500), so by the rule
// written before it the walk took the passes of 8192 keys and more (flash against FlashAttention-2 at N = 16384: 0.994x
// as shipped, 1.018x walking, in the same call). Call D (results/h100/s66/D/) found two shapes no config names slower
// walking: b1-h2 N = 8300 (130 blocks on 132 SMs, a grid the rotated walk's sub-wave tail split shares out: 0.883x) and
// b1-h3 seq_q 1000 / seq_k 9000 (0.990x; seq_q < seq_k, as call C's 0.973x), while four of seq_q >= seq_k and whole
// waves read 1.020-1.026x. So the d = 64 walk was kept to grids of at least a whole wave (where the rotated walk splits
// nothing at d = 64) with seq_q >= seq_k, written after those data. Call E (results/h100/s67/E/, its rule written
// before it: every shape >= 0.995x) read b1-h2 N = 9000 (142 blocks, a wave and a bit) 0.985x [0.982, 0.990] beside
// 1.009-1.025x at three more, so by that rule the d = 64 walk is withdrawn: d = 64 walks only under `desc2`.
constexpr std::int64_t kDescendMaxKeys = 4096;
bool descend_walk(const AttentionParams& p) {
  const GridVariant v = grid_variant();
  if (v == GridVariant::desc2) return true;
  return default_grid(v) && v != GridVariant::nodesc2 && !p.causal && p.head_dim == 128 &&
         p.heads == p.kv_heads && p.seq_k <= kDescendMaxKeys;
}

// The most query-head subsets the model may give a K/V plane (HeadSplitModel::max_split), the one place
// that decides it: at d = 128 16 under the causal mask (session 13); the whole group without it (session 27 at d = 128,
// session 35 at d = 64); the shared model's 8 under a causal mask at d = 64 and everywhere under the probe `cap8`.
// Causal: key tile j's units do the work of N - j * kBlockN queries, and at long N the finer split measured faster
// than the model's unit cost says (32 q / 1 kv heads, d = 128, 16 subsets forced against the model's 8: +2.3% and
// +4.4% at N = 16k in session 12). The model keeps its unit overhead, so it takes 16 only where units stay long: at 16k tokens
// 32/1 goes 8 -> 16 at N >= 8k and keeps 8 / 4 at N = 4k / 1k. Session 13's call A (`cap8` against this,
// results/h200/s13/callA/flashbwd/): d = 128 48/1 N = 16k +3.6% (0.995 -> 1.031x FlashAttention-2), 32/1
// N = 16k +0.8% (1.042x), 48/1 N = 4k level; d = 64 32/1 N = 16k level to 0.02% (S = 16 bought nothing
// there), so d = 64 keeps 8 (session 14's call A measured 16 there again: level). Non-causal d = 128: every unit is
// as long as the others and the model's time is its rounds of units; session 27's call B (results/h200/s27/callB/,
// every divisor of the group forced on eight shapes no config names) had it within 4.12-4.22 us a modelled step
// over 2-40 subsets at 40 q / 1 kv heads N = 4500, where the cap of 8 kept 1.126x the fastest split's time (0.965x
// FlashAttention-2; 20 subsets 1.087x). Groups of at most 8 query heads are unchanged. Non-causal d = 64 since
// session 35 (whole groups too): 40 q / 1 kv head, batch 1, N = 7100 read 0.919x FlashAttention-2 under the cap of 8
// (results/h200/s35/A/, rounds-gqa.txt).
int max_head_split(const AttentionParams& p) {
  constexpr int kCausalMaxSplit = 16;
  const int cap = HeadSplitModel{}.max_split;
  if (grid_variant() == GridVariant::cap8) return cap;
  if (p.causal) return p.head_dim == 128 ? kCausalMaxSplit : cap;
  return std::max(p.heads / std::max(p.kv_heads, 1), cap);
}

// Whether a GQA head split's kernels reduce dQ into the tiled accumulator too (TcConfig::split_dq_tiled:
// the split kernel with kDqTiled) rather than by rows (`split`, session 8's kernels), the one place that
// decides it (dq_tiled() and the launcher read it): yes at both head dims, but under the probe `splitrows`
// (session 8-11's split kernels). The probe `splittile` measured it: at d = 128 in session 12's call A
// (+4.2-15.2% on the six causal MQA rows, 8/1 and 32/1 at N 1k-16k, 1.018-1.382x FlashAttention-2;
// results/h200/s12/callA/flashbwd/table.txt), at d = 64 in session 13's call B (+7.9-9.1% on the same six
// rows, 1.044-1.300x FlashAttention-2, was 0.967-1.197x; results/h200/s13/callB/r2-flashbwd/table.txt).
bool split_dq_tiled() { return grid_variant() != GridVariant::splitrows; }

// The warp-grid kernel's tiles for p (fp16/bf16, d = 64 or 128; else block_n = 0) and the device's SM
// count, or 0 where no split can run: no such kernel, no device (the workspace is asked for where none may
// be: a plan), or a device whose blocks get too little shared memory for it (A100: the fallback kernel).
int split_sms(const AttentionParams& p, SplitTiles& tiles) {
  dispatch_dtype(p.dtype, [&](auto traits) {
    using Elem = typename decltype(traits)::elem;
    if constexpr (sizeof(Elem) == 2) {
      if (p.head_dim == 64) tiles = main_tc_split_tiles<Elem, 64>();
      if (p.head_dim == 128) tiles = main_tc_split_tiles<Elem, 128>();
    }
  });
  int device = 0, sms = 0, optin = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess ||
      sms <= 0) {
    (void)cudaGetLastError();
    return 0;
  }
  return tiles.block_n == 0 || tiles.smem_bytes > optin ? 0 : sms;
}

// The main kernel's blocks for p: one per (batch, K/V head, tile of block_n keys).
long long key_tile_blocks(const AttentionParams& p, int block_n) {
  return (long long)((p.seq_k + block_n - 1) / block_n) * p.batch * p.kv_heads;
}

// Whether the warp-grid kernel's grid options (the head split, the tail split, the causal plane groups) may act on p:
// fp16/bf16 at d = 64 or 128, query heads a multiple of the K/V heads, no empty dimension.
bool warp_grid_shape(const AttentionParams& p) {
  return p.kv_heads >= 1 && p.heads % p.kv_heads == 0 && (p.head_dim == 64 || p.head_dim == 128) &&
         (p.dtype == Dtype::fp16 || p.dtype == Dtype::bf16) && p.seq_q >= 1 && p.seq_k >= 1 && p.batch >= 1;
}

// How many subsets a K/V plane's query heads are split into (the warp-grid kernel's kHeadSplit
// variant): 1 unless a split shortens the modelled time by kMinGain. Where a K/V plane has few key
// tiles (MQA: batch x key tiles blocks on the whole GPU) and the mask is causal, key tile j's block
// does the work of N - j * kBlockN queries for every head of the group, the first block twice the
// average, and it alone sets the time; split units are shorter and list-schedule onto the SMs.
// The model is model_head_split() (common/head_split.h), shared with flash-sm90's backward, on this
// kernel's tiles, with at most max_head_split() subsets. Only GQA/MQA, fp16/bf16 at d = 64 or 128 where
// the warp-grid kernel runs.
int head_split(const AttentionParams& p) {
  if (!warp_grid_shape(p)) return 1;
  const int group = p.heads / p.kv_heads;
  if (group <= 1) return 1;
  // The probes (FB_FLASH_BWD) time the unsplit kernels, `splitrows` and `cap8` aside (the default's
  // split).
  if (!default_grid(grid_variant())) return 1;
  SplitTiles tiles;
  const int sms = split_sms(p, tiles);
  if (sms == 0) return 1;
  if (const int forced = forced_split().load(); forced > 0) return std::min(forced, group);
  HeadSplitModel model;
  model.max_split = max_head_split(p);
  // Causal: the unsplit grid head-major as it runs (kHeadMajorCausal), since session 26. Calls H and I (results/h200/
  // s26/), on 24 causal rows of shapes no config names (d = 64 and 128, groups 2-7) where this flips the old model's
  // whole group to a split: 1.042-1.528x, all faster in both rounds. Non-causal d = 128 passes keep the unsplit time
  // with a whole last wave: that wave under tail_split() in the model (as flash-sm90's query tail) picked the faster
  // on 10 of 11 such rows in calls H and I (1.016-1.100x) but lost 0.952x at 32 q / 4 kv heads, batch 2, N = 2800.
  model.unsplit_plane_major = true;
  return model_head_split(p, sms, tiles.block_n, tiles.block_m, model);
}

// The plane group of an unsplit causal GQA grid on the head-major kernels (kHeadMajorCausal; MainArgs::plane_group):
// 1 (head-major: each K/V plane's key tiles in turn, the longest first within a plane, since session 7 for the L2: the
// blocks in flight share one or two planes' Q, dO and dQ) unless the schedule model (gqa_causal_plane_group(),
// common/head_split.h: causal_plane_group(), the one flash-sm90's d = 64 backward uses; a block costs its query-tile
// steps over the group's heads plus HeadSplitModel's unit overhead) has a group of planes, key tiles outermost within it, 2% or more faster,
// of groups whose blocks take at most two device-fulls. Under GQA a block runs the group's query heads and is long
// beside a SM's share of the grid, so head-major starts the last planes' longest key tiles late: 6 x 20 q / 4 kv heads,
// d = 64, N = 2600 (24 planes of 21 key tiles, no head split) read 0.973x FlashAttention-2 head-major and 1.172x under
// `lean` (tile-major; session 37's call C, results/h200/s37/C/). MHA passes (one head a block) and head-split passes
// (tile-major already) keep their order; `headmajor`: 1 everywhere (the order before). Cached per shape.
int causal_plane_group_of(const AttentionParams& p) {
  const GridVariant v = grid_variant();
  if (!p.causal || !warp_grid_shape(p) || !default_grid(v) || v == GridVariant::headmajor) return 1;
  const int group = p.heads / p.kv_heads;
  if (group <= 1 || head_split(p) > 1) return 1;
  SplitTiles tiles;
  const int sms = split_sms(p, tiles);
  if (sms == 0) return 1;
  using Key = std::tuple<int, int, int, int, int, int, int, int>;
  static std::mutex mu;
  static std::map<Key, int> cache;
  const Key key{p.batch, p.kv_heads, group, p.seq_q, p.seq_k, tiles.block_n, tiles.block_m, sms};
  {
    std::lock_guard<std::mutex> lock(mu);
    if (const auto it = cache.find(key); it != cache.end()) return it->second;
  }
  const int g = int(gqa_causal_plane_group(p, sms, tiles.block_n, tiles.block_m));
  std::lock_guard<std::mutex> lock(mu);
  cache.emplace(key, g);
  return g;
}

// Into how many units each block of the grid's last partial wave is split (kTailSplit; 1: none).
// Non-causal fp16/bf16 on the warp-grid kernel only (its blocks are equal: group x query tiles steps
// each), never with a head split. By default (and under `dqrows`) at d = 128 on grids of at least one
// whole wave (session 10's final call, probe `tail`: +1.8-2.7% at N = 4k-16k, level at d = 64; session
// 11's call A: +2.2-2.7% against `notail`); the probe `tail` at d = 64 and 128 on any grid; `notail`
// and `lean` never. Model: the whole blocks fill
// n_blocks / SMs waves; the tail's units then run in ceil(tail * S / SMs) rounds of L / S + 4 steps
// (L: a block's steps; 4: a unit's fixed cost, as model_head_split's), against one round of L + 4
// unsplit; the S in 2..16 (at most L) with the shortest time, if it is at least 1% shorter. (d = 128,
// 16k tokens: 2048 blocks, a tail of 68 on 132 SMs: S = 5 / 5 / 9 at N = 4k / 8k / 16k.) Since session 38 also by
// default on grids of less than one wave, every block a tail block ("Session 38: the tail split on grids of less than one
// wave", docs/perf-notes.md): without a head split 116 blocks of 16 query heads (1 x 64 q / 4 kv heads, N = 3700) left 16
// of 132 SMs idle for the whole pass and read 0.881x FlashAttention-2 (results/h200/s38/A/). Since session 39 at d = 64
// too, on grids of less than one wave only (the d = 64 whole-wave tail read level in session 10), with the tiled dQ
// (tail_dq_tiled): call A (results/h200/s39/A/, the probe `subwave64`, rule written before it) 1.088-1.376x on ten drawn
// d = 64 shapes (geomean 1.173), controls 0.993x / 0.999x. `nosubwave`: whole waves only at both, the choice before.
int tail_split(const AttentionParams& p) {
  if (descend_walk(p)) return 1;  // kDescend's walk runs whole blocks (the tail's units start its cursor mid-walk)
  // Which grids may split: after a whole wave (at d = 128 by default and under `dqrows`), and of less than one wave (at
  // d = 64 and 128 by default but under `nosubwave`); any grid under the probe `tail`.
  const GridVariant v = grid_variant();
  const bool probe = v == GridVariant::tail;
  const bool d128 = p.head_dim == 128;
  const bool whole_waves = probe || (d128 && (default_grid(v) || v == GridVariant::dqrows));
  const bool sub_wave = probe || ((d128 || p.head_dim == 64) && default_grid(v) && v != GridVariant::nosubwave);
  if ((!whole_waves && !sub_wave) || p.causal || !warp_grid_shape(p) || head_split(p) > 1) return 1;
  SplitTiles tiles;
  const int sms = split_sms(p, tiles);
  if (sms == 0) return 1;
  const long long n_blocks = key_tile_blocks(p, tiles.block_n);
  const int tail = tail_blocks(n_blocks, sms);
  if (tail == 0 || !(n_blocks < sms ? sub_wave : whole_waves)) return 1;
  // The shared model (common/head_split.h, model_tail_split(): units cut the walk anywhere).
  return model_tail_split(n_blocks, sms, (p.seq_q + tiles.block_m - 1) / tiles.block_m, p.heads / p.kv_heads);
}

// Whether the main kernel reduces dQ into the tiled accumulator (kDqTiled, TcLaunch::dq_tiled;
// [batch * heads, seq_pad, head_dim] floats in the dQ warps' fragment order): the default (and `notail`,
// `splitrows`, `cap8`, `desc2`) for fp16/bf16 at d = 64/128 where the warp-grid kernel runs, under a GQA head
// split only where split_dq_tiled() says so (else its kernels reduce dQ by rows). Session 11's call A (probe
// `dqtile`): +7.5-10.5% on every long-N row (d 64/128, both masks), 1.03-1.09x FlashAttention-2.
// dq_tiled_kernels: the same, the head split aside (the workspace's dQ section is sized by it, so a
// head split's workspace is the unsplit one plus its dK/dV accumulators, whichever dQ layout it uses).
bool dq_tiled_kernels(const AttentionParams& p) {
  const GridVariant v = grid_variant();
  if ((!default_grid(v) && v != GridVariant::notail && v != GridVariant::desc2) ||
      (p.head_dim != 64 && p.head_dim != 128) ||
      (p.dtype != Dtype::fp16 && p.dtype != Dtype::bf16))
    return false;
  SplitTiles tiles;
  return split_sms(p, tiles) != 0;
}
bool dq_tiled(const AttentionParams& p) {
  return dq_tiled_kernels(p) && (head_split(p) == 1 || split_dq_tiled());
}

// The tail split's accumulator rows: tail_blocks key tiles (an upper bound where a K/V plane's last
// tile is partial).
std::int64_t tail_rows(const AttentionParams& p, int block_n) {
  int device = 0, sms = 0;
  FB_CUDA_CHECK(cudaGetDevice(&device));
  FB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return std::int64_t(tail_blocks(key_tile_blocks(p, block_n), sms)) * block_n;
}

struct WorkspaceLayout {
  std::size_t lse = 0;  // Acc [batch*heads, seq_pad]
  std::size_t d = 0;    // Acc [batch*heads, seq_pad]
  std::size_t dq = 0;   // Acc [batch, heads, seq_q, head_dim]; tiled: float [batch * heads, seq_pad,
                        // head_dim] (TcLaunch::dq_tiled)
  std::size_t dkv = 0;  // head split only: float [2][batch, kv_heads, seq_k, head_dim] (dK, dV);
                        // tail split: float [2][tail_rows, head_dim]
  std::size_t total = 0;
};

constexpr std::size_t align_up(std::size_t x) { return (x + kWsAlign - 1) / kWsAlign * kWsAlign; }

WorkspaceLayout workspace_layout(const AttentionParams& p) {
  const std::size_t acc = accum_bytes(p.dtype);
  const std::size_t padded_rows = std::size_t(p.batch) * p.heads * padded_seq(p.seq_q);
  WorkspaceLayout w;
  w.lse = 0;
  w.d = align_up(w.lse + padded_rows * acc);
  w.dq = align_up(w.d + padded_rows * acc);
  const std::size_t dq_elems = dq_tiled_kernels(p) ? padded_rows * p.head_dim : std::size_t(p.q_elems());
  w.total = align_up(w.dq + dq_elems * acc);
  w.dkv = w.total;
  const std::size_t kv_elems = std::size_t(p.batch) * p.kv_heads * p.seq_k * p.head_dim;
  if (head_split(p) > 1) w.total = align_up(w.dkv + 2 * kv_elems * sizeof(float));
  if (tail_split(p) > 1)
    w.total = align_up(w.dkv + 2 * std::size_t(tail_rows(p, 128)) * p.head_dim * sizeof(float));
  return w;
}

// Calls f(std::integral_constant<int, D>) for the runtime head_dim.
template <typename F> void with_head_dim(int head_dim, F&& f) {
  switch (head_dim) {
    case 32: f(std::integral_constant<int, 32>{}); return;
    case 64: f(std::integral_constant<int, 64>{}); return;
    case 128: f(std::integral_constant<int, 128>{}); return;
    default: break;
  }
  throw std::invalid_argument("flash backward: head_dim " + std::to_string(head_dim) +
                              " not supported (32, 64, 128)");
}

}  // namespace

GridVariant grid_variant() {
  static fb::settings::PerOverlay<GridVariant> v_cache;
  const GridVariant& v = v_cache.get([] {
    const char* e = fb::settings::get("FB_FLASH_BWD");
    const std::string s = e != nullptr ? e : "";
    if (s.empty() || s == "standard") return GridVariant::standard;
    if (s == "lean") return GridVariant::lean;
    if (s == "tail") return GridVariant::tail;
    if (s == "notail") return GridVariant::notail;
    if (s == "dqrows") return GridVariant::dqrows;
    if (s == "splitrows") return GridVariant::splitrows;
    if (s == "cap8") return GridVariant::cap8;
    if (s == "desc2") return GridVariant::desc2;
    if (s == "nodesc2") return GridVariant::nodesc2;
    if (s == "headmajor") return GridVariant::headmajor;
    if (s == "nosubwave") return GridVariant::nosubwave;
    throw std::invalid_argument("FB_FLASH_BWD: '" + s +
                                "' is not a flash backward variant (standard, lean, tail, notail, dqrows, "
                                "splitrows, cap8, desc2, nodesc2, headmajor, nosubwave; s6 "
                                "and desc were removed in session 8, stagger in session 9, dqmid in "
                                "session 10, cap16 in session 14; dqtile became the default in session "
                                "11, splittile in session 13, subwave64 in session 39: docs/perf-notes.md)");
  });
  return v;
}

void set_smem_limit(const void* kernel, int bytes) {
  int dev = 0, optin = 0;
  FB_CUDA_CHECK(cudaGetDevice(&dev));
  FB_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  if (bytes > optin)
    throw CudaError("flash backward: a block needs " + std::to_string(bytes) +
                    " bytes of shared memory, the device offers " + std::to_string(optin));
  FB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

}  // namespace bwd

const char* backward_unsupported(const AttentionParams& p, Fp32Math math) {
  if (const char* why = fp32_math_unsupported(p.dtype, math)) return why;
  // The forward's d = 96 and 256 have no backward. At 256 a warp would keep dK and dV of its 16 keys
  // in registers, 2 x 128 f32 a thread (over the 255 a thread can have): that takes another split of
  // the work, not a new tile. 96 is not instantiated (not tuned or tested).
  if (p.head_dim != 32 && p.head_dim != 64 && p.head_dim != 128)
    return "flash backward: head_dim must be 32, 64 or 128 (d = 96 and 256 are forward only; at 256 dK "
           "and dV alone would need 256 registers a thread)";
  if (p.batch < 1 || p.heads < 1 || p.kv_heads < 1 || p.seq_q < 1 || p.seq_k < 1)
    return "flash backward: batch, heads, kv_heads, seq_q and seq_k must be at least 1";
  if (p.heads % p.kv_heads != 0) return "flash backward: kv_heads must divide heads";
  if (!(p.scale > 0.0) || !std::isfinite(p.scale))
    return "flash backward: softmax scale must be positive and finite";
  const std::int64_t kv_tiles = (std::int64_t(p.seq_k) + bwd::kMinBlockN - 1) / bwd::kMinBlockN;
  if (kv_tiles * p.batch * p.kv_heads > bwd::kMaxGridX)
    return "flash backward: batch * kv_heads * seq_k exceeds the grid limit";
  const std::int64_t padded_rows = std::int64_t(p.batch) * p.heads * bwd::padded_seq(p.seq_q);
  if ((padded_rows + bwd::kWarpsPerBlock - 1) / bwd::kWarpsPerBlock > bwd::kMaxGridX)
    return "flash backward: batch * heads * seq_q exceeds the grid limit";

  // What the current device offers; skipped where no device answers (the launch would report it).
  const auto caps = current_device_caps();
  if (!caps) return nullptr;
  const int major = caps->major, smem_optin = caps->smem_optin;
  const bool tensor_cores = p.dtype == Dtype::fp16 || p.dtype == Dtype::bf16;
  if (tensor_cores && major < bwd::kTensorCoreMinMajor)
    return "flash backward: fp16/bf16 need compute capability 8.0 or newer";
  const bool tf32 = uses_tf32(p.dtype, math);
  if (tf32 && major < bwd::kTensorCoreMinMajor)
    return "flash backward: fp32 on TF32 tensor cores needs compute capability 8.0 or newer (the "
           "exact CUDA-core path runs anywhere)";
  int smem = 0;
  dispatch_dtype(p.dtype, [&](auto traits) {
    using Elem = typename decltype(traits)::elem;
    bwd::with_head_dim(p.head_dim, [&](auto hd) {
      if (tf32) {
        smem = bwd::main_tf32_smem_bytes<decltype(hd)::value>();
      } else if constexpr (sizeof(Elem) == 2) {
        smem = bwd::main_tc_smem_bytes<Elem, decltype(hd)::value>();
      } else {
        smem = bwd::main_simt_smem_bytes<Elem, decltype(hd)::value>();
      }
    });
  });
  if (smem > smem_optin)
    return "flash backward: this tile configuration needs more shared memory per block than the GPU "
           "offers";
  return nullptr;
}

int backward_key_tile(const AttentionParams& p) { return backward_key_tile(p, Fp32Math::tf32x3); }

int backward_key_tile(const AttentionParams& p, Fp32Math math) {
  if (backward_unsupported(p, math) != nullptr) return 0;
  int keys = 0;
  const bool tf32 = uses_tf32(p.dtype, math);
  dispatch_dtype(p.dtype, [&](auto traits) {
    using Elem = typename decltype(traits)::elem;
    bwd::with_head_dim(p.head_dim, [&](auto hd) {
      if (tf32) {
        keys = bwd::main_tf32_key_tile<decltype(hd)::value>();
      } else if constexpr (sizeof(Elem) == 2) {
        keys = bwd::main_tc_key_tile<Elem, decltype(hd)::value>();
      } else {
        keys = bwd::main_simt_key_tile<Elem, decltype(hd)::value>();
      }
    });
  });
  return keys;
}

const char* backward_unsupported(const AttentionParams& p) {
  return backward_unsupported(p, Fp32Math::tf32x3);
}

std::size_t backward_workspace_bytes(const AttentionParams& p) {
  return bwd::workspace_layout(p).total;
}

int backward_padded_seq(int seq) { return bwd::padded_seq(seq); }

int backward_head_split(const AttentionParams& p) { return bwd::head_split(p); }

int backward_tail_split(const AttentionParams& p) { return bwd::tail_split(p); }

bool backward_descends(const AttentionParams& p) {
  return bwd::dq_tiled(p) && bwd::descend_walk(p) && bwd::head_split(p) <= 1;
}

int backward_causal_plane_group(const AttentionParams& p) { return bwd::causal_plane_group_of(p); }

int force_backward_head_split(int split) {
  if (split < 0) throw std::invalid_argument("flash backward: a head split cannot be negative");
  return bwd::forced_split().exchange(split);
}

void backward_prepass(const AttentionParams& p, void* lse_pad, void* d_pad, void* dq_acc,
                      bool dq_padded, bool lse_log2, const Context& ctx) {
  using namespace bwd;
  auto stream = static_cast<cudaStream_t>(ctx.stream);
  dispatch_dtype(p.dtype, [&](auto traits) {
    using Elem = typename decltype(traits)::elem;
    using Acc = typename decltype(traits)::accum;
    const int seq_pad = padded_seq(p.seq_q);
    const Acc lse_mult = lse_log2 ? Acc(kLog2e) : Acc(1);
    const std::int64_t padded_rows = std::int64_t(p.batch) * p.heads * seq_pad;
    const auto blocks = unsigned((padded_rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
    bwd_prepass_kernel<Elem, Acc><<<blocks, kWarpsPerBlock * 32, 0, stream>>>(
        static_cast<const Elem*>(p.o), static_cast<const Elem*>(p.dout),
        static_cast<const Acc*>(p.lse), static_cast<Acc*>(lse_pad), static_cast<Acc*>(d_pad),
        static_cast<Acc*>(dq_acc), dq_padded, padded_rows, p.seq_q, seq_pad, p.head_dim, lse_mult);
    FB_CUDA_CHECK_LAUNCH();
  });
}

void backward(const AttentionParams& p, const Context& ctx) { backward(p, ctx, Fp32Math::tf32x3); }

void backward(const AttentionParams& p, const Context& ctx, Fp32Math math) {
  using namespace bwd;
  if (const char* why = backward_unsupported(p, math)) throw std::invalid_argument(why);
  if (p.workspace == nullptr)
    throw std::invalid_argument("flash backward: params.workspace is null (needs " +
                                std::to_string(backward_workspace_bytes(p)) + " bytes)");
  auto stream = static_cast<cudaStream_t>(ctx.stream);
  const WorkspaceLayout ws = workspace_layout(p);
  auto* base = static_cast<unsigned char*>(p.workspace);

  dispatch_dtype(p.dtype, [&](auto traits) {
    using Elem = typename decltype(traits)::elem;
    using Acc = typename decltype(traits)::accum;
    constexpr bool kTensorCores = sizeof(Elem) == 2;
    const bool tf32 = uses_tf32(p.dtype, math);
    Acc* lse_pad = reinterpret_cast<Acc*>(base + ws.lse);
    Acc* d_pad = reinterpret_cast<Acc*>(base + ws.d);
    Acc* dq_acc = reinterpret_cast<Acc*>(base + ws.dq);
    const int seq_pad = padded_seq(p.seq_q);
    // dQ accumulated in the tiled layout (dq_tiled()), every padded row zeroed.
    const bool tiled = kTensorCores && dq_tiled(p);

    // The tensor-core kernels compute exp() as exp2(); their LSE copy is in the log2 domain.
    backward_prepass(p, lse_pad, d_pad, dq_acc, /*dq_padded=*/tiled, kTensorCores || tf32, ctx);

    MainArgs a{p.q, p.k, p.v, p.dout, p.dk, p.dv, lse_pad, d_pad, dq_acc,
               p.batch, p.heads, p.kv_heads, p.mask(), seq_pad, p.scale};
    [[maybe_unused]] TcLaunch how;
    how.dq_tiled = tiled;
    how.descend = tiled && descend_walk(p);
    // GQA/MQA with few K/V tiles: query heads split over blocks, dK/dV summed in fp32 (zeroed here,
    // converted below). head_split() is 1 for every other kernel and dtype.
    [[maybe_unused]] const std::int64_t kv_elems =
        std::int64_t(p.batch) * p.kv_heads * p.seq_k * p.head_dim;
    // The tail split: the last partial wave's blocks split, their dK/dV summed in fp32 (zeroed here,
    // converted below; tail_split() is 1 wherever head_split() is not).
    [[maybe_unused]] int tail = 1;
    [[maybe_unused]] std::int64_t tail_elems = 0, tail_row0 = 0;
    if constexpr (kTensorCores) {
      a.head_split = head_split(p);
      a.plane_group = causal_plane_group_of(p);
      if (a.head_split > 1) {
        a.dkv_acc = reinterpret_cast<float*>(base + ws.dkv);
        FB_CUDA_CHECK(cudaMemsetAsync(a.dkv_acc, 0, 2 * std::size_t(kv_elems) * sizeof(float), stream));
      }
      tail = tail_split(p);
      if (tail > 1) {
        constexpr int kTailBlockN = 128;  // both warp-grid kernels' key tile
        const std::int64_t rows = tail_rows(p, kTailBlockN);
        tail_elems = rows * p.head_dim;
        // The first tail block's first key row; the tail covers every row from there to the end.
        const std::int64_t n_tiles = (p.seq_k + kTailBlockN - 1) / kTailBlockN;
        const std::int64_t first = n_tiles * p.batch * p.kv_heads - rows / kTailBlockN;
        tail_row0 = first / n_tiles * p.seq_k + first % n_tiles * kTailBlockN;
        a.head_split = tail;
        how.tail = true;
        a.dkv_acc = reinterpret_cast<float*>(base + ws.dkv);
        FB_CUDA_CHECK(cudaMemsetAsync(a.dkv_acc, 0, 2 * std::size_t(tail_elems) * sizeof(float), stream));
      }
    }
    with_head_dim(p.head_dim, [&](auto hd) {
      constexpr int kD = decltype(hd)::value;
      if constexpr (kTensorCores) {
        run_main_tc<Elem, kD>(a, how, stream);
      } else if (tf32) {
        if (math == Fp32Math::tf32x1) {
          run_main_tf32<kD, Fp32Math::tf32x1>(a, stream);
        } else {
          run_main_tf32<kD, Fp32Math::tf32x3>(a, stream);
        }
      } else {
        run_main_simt<Elem, decltype(hd)::value>(a, stream);
      }
    });

    // Enough blocks to fill the GPU a few times over; the loop strides over the rest.
    constexpr std::int64_t kMaxConvertBlocks = 4096;
    const std::int64_t n = p.q_elems();
    const auto convert_blocks = unsigned(
        std::min<std::int64_t>((n + kConvertThreads - 1) / kConvertThreads, kMaxConvertBlocks));
    if (tiled) {
      if constexpr (kTensorCores) {
        with_head_dim(p.head_dim, [&](auto hd) {
          constexpr int kD = decltype(hd)::value;
          if constexpr (kD == 64 || kD == 128)
            run_convert_dq_tiled<Elem, kD>(reinterpret_cast<const float*>(dq_acc), p.dq,
                                           std::int64_t(p.batch) * p.heads, p.seq_q, seq_pad, stream);
        });
      }
    } else {
      bwd_convert_dq_kernel<Elem, Acc><<<convert_blocks, kConvertThreads, 0, stream>>>(
          dq_acc, static_cast<Elem*>(p.dq), n);
      FB_CUDA_CHECK_LAUNCH();
    }
    if constexpr (kTensorCores) {
      // Under the tail split a.head_split holds its unit count, and dkv_acc only the tail's rows.
      if (a.head_split > 1 && tail == 1) {
        const auto kv_blocks = unsigned(std::min<std::int64_t>(
            (kv_elems + kConvertThreads - 1) / kConvertThreads, kMaxConvertBlocks));
        bwd_convert_dq_kernel<Elem, float><<<kv_blocks, kConvertThreads, 0, stream>>>(
            a.dkv_acc, static_cast<Elem*>(p.dk), kv_elems);
        FB_CUDA_CHECK_LAUNCH();
        bwd_convert_dq_kernel<Elem, float><<<kv_blocks, kConvertThreads, 0, stream>>>(
            a.dkv_acc + kv_elems, static_cast<Elem*>(p.dv), kv_elems);
        FB_CUDA_CHECK_LAUNCH();
      }
      if (tail > 1) {
        // Only the tail's rows: tail_row0 to the end of dK and dV.
        const std::int64_t n_tail = kv_elems - tail_row0 * p.head_dim;
        const auto t_blocks = unsigned(std::min<std::int64_t>(
            (n_tail + kConvertThreads - 1) / kConvertThreads, kMaxConvertBlocks));
        bwd_convert_dq_kernel<Elem, float><<<t_blocks, kConvertThreads, 0, stream>>>(
            a.dkv_acc, static_cast<Elem*>(p.dk) + tail_row0 * p.head_dim, n_tail);
        FB_CUDA_CHECK_LAUNCH();
        bwd_convert_dq_kernel<Elem, float><<<t_blocks, kConvertThreads, 0, stream>>>(
            a.dkv_acc + tail_elems, static_cast<Elem*>(p.dv) + tail_row0 * p.head_dim, n_tail);
        FB_CUDA_CHECK_LAUNCH();
      }
    }
  });
}

}  // namespace fb::cuda::flash
