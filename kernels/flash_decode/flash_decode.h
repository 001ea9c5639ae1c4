// The split-KV decode kernel as its Ops see it (host-only declarations). Device code:
// flash_decode_kernel.cuh; tile configurations: flash_decode_traits.h; splits: common/splitkv.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "attention.h"
#include "common/splitkv.h"
#include "flash_decode/flash_decode_traits.h"

namespace fb::cuda::decode {

// More query rows than this per sequence is not decoding: such shapes belong to flash / flash-sm90.
inline constexpr int kMaxSeqQ = 64;

// nullptr when flash-decode can run `pass` on these params on the current device, else why not.
const char* unsupported(Pass pass, const AttentionParams& p);
// The splits the forward runs: p.kv_splits when > 0, else chosen from the shape and the SM count.
SplitPlan plan(const AttentionParams& p);
// Partial O (fp32) and LSE of every split when there is more than one, else 0.
std::size_t workspace_bytes(Pass pass, const AttentionParams& p);
// O and LSE from Q, K, V: the split kernel, then (splits > 1) the combine kernel.
void forward(const AttentionParams& p, const Context& ctx);

// What one configuration of the split kernel covers (flash_decode.cu picks it from the rows).
struct Shape {
  int rows_per_cta;  // query rows one CTA holds
  int tile_keys;     // keys per K/V tile
};
Shape shape_for(const AttentionParams& p);

// The K/V ring of the configurations for up to sixteen query rows: Cfg16's three stages (two CTAs per
// SM) or the deep ring (CfgDeep: every stage that fits an sm_90 SM, one CTA per SM), each filled by
// every thread's cp.async into padded rows or (sm_90a) by TMA boxes into 128-byte-swizzled rows.
enum class Ring { standard, deep, tma, tma_deep, small, standard_l2 };
// standard_l2: the standard ring with the .L2::128B hint, default_ring's choice for long splits.
// The ring forward() launches for up to sixteen rows: by default per shape (flash_decode.cu's
// default_ring: TMA, or the cp.async ring with the .L2::128B hint for long splits, at d = 128 on an sm_90a
// image with 16-byte aligned K and V; the cp.async ring elsewhere), unless FB_DECODE_RING (read once a
// process, for A/B runs of one binary; a bad value throws) says `std` (the cp.async ring, with
// FB_DECODE_L2's hint), `tma`, `deep` / `tmadeep` (where the grid is at most one CTA per SM),
// `deepall` (any grid); deep rings only where the device's shared memory holds them;
// `small` (a probe): CfgSmall, a two-stage ring at three CTAs per SM (with FB_DECODE_CTAS=3 the auto
// split count fills them).
Ring ring_for(const AttentionParams& p, const SplitPlan& plan);
// Timing probes of the configurations for up to sixteen query rows (one decode row of a GQA group; the
// standard and deep cp.async rings), read once a process for A/B runs of one binary; an unset variable
// keeps the default below, a bad value throws (on every forward) naming the variable:
//   FB_DECODE_SYNC=block|warp  block (default): the CTA's warps share each K/V tile, a block barrier per
//                              tile; warp: each warp loads and waits for its own keys of every tile
//                              (its cp.async groups and __syncwarp), no block barrier in the loop
//   FB_DECODE_L2=0|128|256|ef256  the ring's L2Hint (flash_decode_traits.h; default 0: none)
//   FB_DECODE_CTAS=0|1..8      CTAs per SM the auto split count aims at (0: auto_ctas_per_sm)
//   FB_DECODE_STREAMK=0|1      1: stream-K (auto splits only): the batch x K/V heads x seq_k keys laid
//                              end to end and cut into one equal range per CTA (FB_DECODE_CTAS per SM,
//                              default 2), each CTA running the heads' pieces its range meets; no CTA
//                              idles for want of a whole split, at any batch
//   FB_DECODE_ROTATE=0|1       1: each CTA runs its tiles from a hashed start, wrapping around (every
//                              configuration and ring): CTAs that start together read scattered
//                              offsets, not the same offset of K/V ranges a power of two apart
struct Probes {
  bool warp_ring = false;
  L2Hint l2 = L2Hint::none;
  int ctas_per_sm = 0;
  bool stream_k = false;
  bool rotate = false;
};
const Probes& probes();

// The stream-K plan of p (keys_per_cta = 0: not stream-K, the SplitPlan runs).
struct StreamPlan {
  long long keys_per_cta = 0;  // >= kMinKeysPerSplit
  int ctas = 0;
  int max_pieces = 0;          // partial slots a head may need
};
StreamPlan stream_plan(const AttentionParams& p);

// Per head dim (flash_decode_hdim*.cu), fp16 or bf16: the split kernel and, with splits > 1, the combine.
void launch_hdim64(const AttentionParams& p, const SplitPlan& plan, const StreamPlan& sk, Ring ring,
                   cudaStream_t stream);
void launch_hdim128(const AttentionParams& p, const SplitPlan& plan, const StreamPlan& sk, Ring ring,
                    cudaStream_t stream);

}  // namespace fb::cuda::decode
