// Which keys a query row attends to, defined once for every implementation (CUDA naive, flash,
// flash-sm90, the fp64 references, and the CPU backend): plain C++ that compiles on the host and, under
// nvcc, on the device.
//
// Query rows i in [0, seq_q), keys j in [0, seq_k). Without causal, every row sees every key. With
// causal, the mask is aligned to the bottom-right corner of the seq_q x seq_k score matrix
// (FlashAttention >= 2.1): row i sees keys j <= i + (seq_k - seq_q), so the last query row always sees
// every key, and with seq_q == seq_k this is the usual j <= i. When seq_q > seq_k, the first
// seq_q - seq_k rows see no key at all: such an empty row has O = 0 and LSE = -inf, and contributes
// nothing to the backward (its dQ row is 0). See attention.h.
#pragma once

#if defined(__CUDACC__)
#define FB_HOST_DEVICE __host__ __device__
#else
#define FB_HOST_DEVICE
#endif

namespace fb {

// All index arithmetic is 32-bit: kernels evaluate it per tile and per score, where 64-bit integer
// operations cost (on the GPU they are pairs of instructions). It is exact for seq_q, seq_k <= kMaxSeq
// (every intermediate stays within [-2^30, 2^31)): spec validation keeps sequences far below it.
struct CausalMask {
  static constexpr int kMaxSeq = 1 << 30;

  int seq_q = 0;
  int seq_k = 0;
  bool causal = false;

  // Row i sees keys j <= i + offset() when causal.
  FB_HOST_DEVICE int offset() const { return seq_k - seq_q; }

  FB_HOST_DEVICE bool visible(int row, int key) const {
    return key < seq_k && !(causal && key > row + offset());
  }
  // One past the last key row `row` sees: it sees keys [0, key_end(row)); 0 for an empty row.
  FB_HOST_DEVICE int key_end(int row) const {
    if (!causal) return seq_k;
    const int end = row + offset() + 1;
    return end < 0 ? 0 : end > seq_k ? seq_k : end;
  }
  FB_HOST_DEVICE bool row_empty(int row) const { return key_end(row) == 0; }
  // First query row that sees key `key` (seq_q when none does); rows after it see it too.
  FB_HOST_DEVICE int first_row(int key) const {
    if (!causal) return 0;
    const int r = key - offset();
    return r < 0 ? 0 : r > seq_q ? seq_q : r;
  }

  // ---- tiles: rows [q0, q0 + rows) against keys [k0, k0 + cols) ----
  // One past the last key any row of the tile sees (rows past seq_q count as the last row).
  FB_HOST_DEVICE int key_end(int q0, int rows) const {
    const int last = q0 + rows < seq_q ? q0 + rows : seq_q;
    return key_end(last - 1);
  }
  // KV tiles of `cols` keys the rows touch; causal skips the fully masked ones. May be 0 (every row
  // of the tile is empty): kernels that always run one tile must treat it as fully masked.
  FB_HOST_DEVICE int kv_tiles(int q0, int rows, int cols) const {
    return (key_end(q0, rows) + cols - 1) / cols;
  }
  // Query tiles of `rows` rows before the first one that sees any of keys [k0, ...): a K/V tile's
  // loop over query tiles starts there (causal; 0 otherwise).
  FB_HOST_DEVICE int first_q_tile(int k0, int rows) const { return first_row(k0) / rows; }
  // Whether keys [k0, k0 + cols) hide anything from some row in [q0, ...): past the end of the keys,
  // or (causal) right of the first row's last visible key. Only such tiles pay for the mask.
  FB_HOST_DEVICE bool tile_needs_mask(int q0, int k0, int cols) const {
    return k0 + cols > seq_k || (causal && k0 + cols - 1 > q0 + offset());
  }

  // (query, key) pairs that are visible: the work a causal pass does.
  FB_HOST_DEVICE double visible_pairs() const {
    if (!causal) return double(seq_q) * seq_k;
    // Rows before lo are empty, rows [lo, hi) see i + offset + 1 keys (an arithmetic series), rows
    // from hi on see all seq_k keys.
    const long long off = offset();
    long long lo = -off;
    if (lo < 0) lo = 0;
    long long hi = seq_k - 1 - off;
    if (hi > seq_q) hi = seq_q;
    if (hi < lo) hi = lo;
    const double n = double(hi - lo);
    return n * double(lo + off + 1) + n * (n - 1) / 2 + double(seq_q - hi) * seq_k;
  }
};

}  // namespace fb
