// How a split-KV (flash-decoding) kernel cuts the keys of one (batch, K/V head) into splits, defined
// once for the CUDA kernel (kernels/flash_decode) and the CPU algorithm (src/backend/cpu), so that both
// run, and the byte model counts, the same splits. Plain C++ that compiles on the host and under nvcc.
//
// Split s covers keys [s * keys_per_split, min((s + 1) * keys_per_split, seq_k)); a split past the end
// covers no key (allowed: a forced split count larger than the keys gives empty splits, which the
// combine must treat as weight 0).
#pragma once

#include "common/mask.h"

namespace fb {

struct SplitPlan {
  int splits = 1;          // partial results per query row (1: the kernel writes O and LSE directly)
  int keys_per_split = 1;  // >= 1

  FB_HOST_DEVICE int key_begin(int s, int seq_k) const {
    const long long b = static_cast<long long>(s) * keys_per_split;
    return b > seq_k ? seq_k : static_cast<int>(b);
  }
  FB_HOST_DEVICE int key_end(int s, int seq_k) const {
    const long long e = (static_cast<long long>(s) + 1) * keys_per_split;
    return e > seq_k ? seq_k : static_cast<int>(e);
  }
};

// Largest split count auto or a user may ask for: each split costs a partial O (fp32) per query row.
inline constexpr int kMaxKvSplits = 1024;

// The split plan for `requested` splits (> 0: exactly that many, the keys shared as evenly as whole
// keys allow; 0: automatic). Automatic: the most splits whose CTAs fit in `target_ctas` (the caller's
// one wave of its device), counting `base_ctas` = CTAs the kernel launches per split (at least one
// split, so work that already fills the target is not split), with each split at least `min_keys`
// keys, its key range rounded up to whole tiles of `tile_keys`. Never more than fit: a partial second
// wave of short CTAs costs more than it spreads (results/h200/s4-final/decode-splits.json).
inline SplitPlan plan_splits(int seq_k, int requested, long long base_ctas, long long target_ctas,
                             int min_keys, int tile_keys) {
  SplitPlan p;
  if (requested > 0) {
    p.splits = requested;
    p.keys_per_split = (seq_k + requested - 1) / requested;
    if (p.keys_per_split < 1) p.keys_per_split = 1;
    return p;
  }
  long long want = base_ctas > 0 ? target_ctas / base_ctas : 1;
  const long long most = (seq_k + min_keys - 1) / min_keys;  // each split >= min_keys keys
  if (want > most) want = most;
  if (want > kMaxKvSplits) want = kMaxKvSplits;
  if (want < 1) want = 1;
  long long per = (seq_k + want - 1) / want;
  per = (per + tile_keys - 1) / tile_keys * tile_keys;  // whole tiles: no masked tail inside a range
  p.keys_per_split = static_cast<int>(per);
  p.splits = static_cast<int>((seq_k + per - 1) / per);
  return p;
}

}  // namespace fb
