// Padding for naive's fp8 path (fp8.cu). cuBLASLt's FP8 GEMMs take only dimensions and leading
// dimensions that are 16-byte aligned (16 e4m3 codes), so a shape whose head_dim or seq_k is off that
// grid runs on padded copies in the workspace, and naive stays the baseline at every shape:
//   head_dim d -> dp = round_up(d, 16): Q and K get zero columns, so S = Q K^T is unchanged (every extra
//     term is 0 x 0); V^T gets zero rows, so O is computed dp wide into the workspace and its first d
//     columns are copied out (bf16 bits, exact).
//   seq_k n -> np = round_up(n, 16), which is already S's and P's row stride (naive.h Layout::ld): K gets
//     zero rows and V^T zero columns. Their scores land in S's padding columns, which the row kernel
//     never lets in: keys j >= seq_k are masked (-inf before the row max and sum, P = 0), exactly as the
//     causal mask hides keys. V^T's padding must be written, not left as workspace bytes: P = 0 times an
//     e4m3 NaN code would still be NaN.
// At aligned shapes nothing is padded: no copies, no extra workspace, the GEMMs as they were.
//
// Plain C++ (the index map is FB_HOST_DEVICE, the device copy uses it): tests/test_fp8_pad.cpp checks
// it on the host.
#pragma once

#include <cstddef>
#include <cstdint>

#include "attention.h"
#include "common/mask.h"  // FB_HOST_DEVICE

namespace fb::cuda::naive {

// cuBLASLt's FP8 requirement: dimensions and leading dimensions 16-byte aligned, i.e. 16 e4m3 codes.
constexpr int kFp8Align = 16;

constexpr std::int64_t fp8_round_up(std::int64_t x) { return (x + kFp8Align - 1) / kFp8Align * kFp8Align; }

// A batch of row-major matrices [batch][rows_in][cols_in] copied into [batch][rows_out][cols_out]: the
// overlap is copied, the rest of the output is 0. Padding (out >= in) and cropping (O's padding columns
// dropped) alike.
struct Resize {
  std::int64_t batch = 1;
  std::int64_t rows_in = 0, cols_in = 0;
  std::int64_t rows_out = 0, cols_out = 0;

  FB_HOST_DEVICE std::int64_t out_elems() const { return batch * rows_out * cols_out; }
  // The input element that output element `i` copies, or -1 where the output is 0.
  FB_HOST_DEVICE std::int64_t source(std::int64_t i) const {
    const std::int64_t c = i % cols_out, t = i / cols_out;
    const std::int64_t r = t % rows_out, b = t / rows_out;
    if (r >= rows_in || c >= cols_in) return -1;
    return (b * rows_in + r) * cols_in + c;
  }
};

// The padded extents of one fp8 forward.
struct Fp8Padding {
  int head_dim = 0, seq_k = 0;  // as given
  int dim_pad = 0, keys_pad = 0;  // rounded up to kFp8Align

  bool pads_dim() const { return dim_pad != head_dim; }
  bool pads_keys() const { return keys_pad != seq_k; }
  bool any() const { return pads_dim() || pads_keys(); }
};

inline Fp8Padding fp8_padding(const AttentionParams& p) {
  Fp8Padding pad;
  pad.head_dim = p.head_dim;
  pad.seq_k = p.seq_k;
  pad.dim_pad = int(fp8_round_up(p.head_dim));
  pad.keys_pad = int(fp8_round_up(p.seq_k));
  return pad;
}

// The workspace buffers of the GEMM operands that padding touches, in bytes (0 where none is needed);
// naive.cu's layout() places them beside S, P and cuBLASLt's scratch, so workspace_bytes (and the
// memory tracker) count them.
struct Fp8PadBuffers {
  std::size_t q = 0;   // Q dp wide: [batch * heads * seq_q][dp] e4m3, when head_dim is padded
  std::size_t k = 0;   // K: [batch * kv_heads][np][dp] e4m3, when either extent is padded
  std::size_t o = 0;   // O dp wide: [batch * heads * seq_q][dp] bf16, when head_dim is padded
  std::size_t vt = 0;  // V^T: [batch * kv_heads][dp][np] e4m3, always (the P.V GEMM's K-major operand)
};

inline Fp8PadBuffers fp8_pad_buffers(const AttentionParams& p) {
  const Fp8Padding pad = fp8_padding(p);
  const std::size_t planes = std::size_t(p.batch) * std::size_t(p.kv_heads);
  const std::size_t rows = std::size_t(p.rows());  // batch * heads * seq_q
  const std::size_t dp = std::size_t(pad.dim_pad), np = std::size_t(pad.keys_pad);
  Fp8PadBuffers b;
  b.vt = planes * dp * np;
  if (pad.pads_dim()) {
    b.q = rows * dp;
    b.o = rows * dp * dtype_bytes(output_dtype(Dtype::fp8));
  }
  if (pad.any()) b.k = planes * np * dp;
  return b;
}

// The copies, written in terms of Resize: [batch * heads * seq_q][d] -> [..][dp] for Q, the kv planes'
// [n][d] -> [np][dp] for K, and O's [..][dp] -> [..][d].
inline Resize fp8_q_resize(const AttentionParams& p) {
  const Fp8Padding pad = fp8_padding(p);
  return Resize{1, p.rows(), pad.head_dim, p.rows(), pad.dim_pad};
}
inline Resize fp8_k_resize(const AttentionParams& p) {
  const Fp8Padding pad = fp8_padding(p);
  return Resize{std::int64_t(p.batch) * p.kv_heads, pad.seq_k, pad.head_dim, pad.keys_pad, pad.dim_pad};
}
inline Resize fp8_o_crop(const AttentionParams& p) {
  const Fp8Padding pad = fp8_padding(p);
  return Resize{1, p.rows(), pad.dim_pad, p.rows(), pad.head_dim};
}

}  // namespace fb::cuda::naive
