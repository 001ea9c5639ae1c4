// The split-KV decode kernel as its Ops see it (host-only declarations). Device code:
// flash_decode_kernel.cuh; tile configurations: flash_decode_traits.h; splits: common/splitkv.h.
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

#include "attention.h"
#include "common/splitkv.h"

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

// How the split kernel fills its K/V ring: cp.async (sm_80+), bulk copies (sm_90a; the cp.async code
// runs where the binary's device pass is not sm_90a), or bulk copies into the deep ring (CfgDeep: up
// to sixteen query rows, at most one CTA per SM, sm_90's shared memory).
enum class Ring { cp_async, bulk, bulk_deep };
// The ring forward() launches: bulk_deep where it applies, else bulk on sm_90+, else cp_async. The
// environment variable FB_DECODE_RING = cpasync | bulk | deep forces that ring (A/B runs of one
// binary; bulk still runs cp.async below sm_90; deep applies to up to sixteen rows, on any grid).
Ring ring_for(const AttentionParams& p, const SplitPlan& plan);
// Bulk rings: tiles ahead of the one issued that are also prefetched into L2 (bytes in flight beyond
// what shared memory holds). FB_DECODE_L2PF = N sets it (A/B runs); default 0.
int l2_prefetch_tiles();

// Per head dim (flash_decode_hdim*.cu), fp16 or bf16: the split kernel and, with splits > 1, the combine.
void launch_hdim64(const AttentionParams& p, const SplitPlan& plan, Ring ring, cudaStream_t stream);
void launch_hdim128(const AttentionParams& p, const SplitPlan& plan, Ring ring, cudaStream_t stream);

}  // namespace fb::cuda::decode
