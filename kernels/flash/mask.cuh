// Which keys a query row may attend to, defined once for the tiled kernels: key j is visible to
// query row i when j < seq and, for causal attention, j <= i (seq_q == seq_k, aligned at 0).
#pragma once

namespace fb::cuda::flash {

struct Mask {
  int seq = 0;
  bool causal = false;

  __host__ __device__ bool visible(int row, int key) const {
    return key < seq && !(causal && key > row);
  }
  // One past the last key any row in [q0, q0 + rows) can see.
  __host__ __device__ int key_end(int q0, int rows) const {
    const int last_row_end = q0 + rows;
    return causal && last_row_end < seq ? last_row_end : seq;
  }
  // KV tiles of `cols` keys that rows [q0, q0 + rows) touch; causal skips the fully masked ones.
  __host__ __device__ int kv_tiles(int q0, int rows, int cols) const {
    return (key_end(q0, rows) + cols - 1) / cols;
  }
  // Whether keys [k0, k0 + cols) hide anything from some row in [q0, ...): past the end of the
  // sequence, or (causal) right of the diagonal of the first row. Only such tiles pay for the mask.
  __host__ __device__ bool tile_needs_mask(int q0, int k0, int cols) const {
    return k0 + cols > seq || (causal && k0 + cols - 1 > q0);
  }
};

}  // namespace fb::cuda::flash
