// The tiled FlashAttention kernels as kernels/dispatch.cu sees them (host-only declarations).
//
// Forward (flash_fwd.cu and its instantiation files): one thread block per (batch, head, query tile),
// K/V tiles streamed through shared memory, online softmax, nothing N x N. fp16/bf16 run on tensor
// cores (mma.sync, sm_80+); fp64 on CUDA cores with exact arithmetic; fp32 as Fp32Math says
// (flash/fp32_math.h): by default on TF32 tensor cores with the 3xTF32 split (fp32-level accuracy),
// or exactly on CUDA cores, or with plain TF32 (the 1xTF32 diagnostic).
// Backward: flash/flash_bwd.h.
//
// Every entry point comes in two forms: without Fp32Math (fp32 = tf32x3, the `flash` kernel) and with
// it (the exact path and the diagnostic are other kernels for users: `flash-exact`, `flash-tf32`).
// With Fp32Math::exact fp16/bf16 are refused; with tf32x1 every dtype but fp32 is.
#pragma once

#include <algorithm>
#include <cstddef>

#include "attention.h"
#include "flash/flash_bwd.h"
#include "flash/fp32_math.h"

namespace fb::cuda::flash {

// ---- forward (flash_fwd.cu) ----

// nullptr when the forward kernel can run these params, else why not (names the field).
const char* unsupported_forward(const AttentionParams& p);
const char* unsupported_forward(const AttentionParams& p, Fp32Math math);
// O [B,H,N,D] and LSE [B,H,N] (natural log, accumulator type) from Q, K, V. Uses params.workspace where
// forward_workspace_bytes asks for some (d = 128's split tail, kFwdKvTail); runs without it when it is null.
void forward(const AttentionParams& p, const Context& ctx);
void forward(const AttentionParams& p, const Context& ctx, Fp32Math math);
// Query rows per thread block of the forward kernel for these params (Br).
int query_tile(const AttentionParams& p);
int query_tile(const AttentionParams& p, Fp32Math math);

// ---- backward: declared in flash/flash_bwd.h (flash_bwd*.cu) ----

// ---- per-pass answers for the dispatcher ----

// nullptr when `pass` can run on these params. Every pass runs the forward first.
inline const char* unsupported(Pass pass, const AttentionParams& p, Fp32Math math) {
  // e4m3 mma.sync needs sm_89; the FP8 forward is planned for flash-sm90's wgmma (issue 14).
  if (p.dtype == Dtype::fp8) return "flash: fp8 is not built (FP8 is planned on flash-sm90's wgmma)";
  if (const char* why = unsupported_forward(p, math)) return why;
  if (pass == Pass::fwd) return nullptr;
  return backward_unsupported(p, math);
}
inline const char* unsupported(Pass pass, const AttentionParams& p) {
  return unsupported(pass, p, Fp32Math::tf32x3);
}

// The forward's scratch bytes: the partials of d = 128's non-causal split tail where it splits (kFwdKvTail, at most
// two blocks an SM of ~70 KB each: 18 MB on an H200), else 0; 0 where no device answers.
std::size_t forward_workspace_bytes(const AttentionParams& p);

// Scratch bytes for `pass`: the forward's (it writes LSE as an output), and for the backward the larger of that and
// its own (the forward runs first in the same workspace and is done with it when the backward starts).
inline std::size_t workspace_bytes(Pass pass, const AttentionParams& p) {
  const std::size_t fwd = forward_workspace_bytes(p);
  return pass == Pass::fwd ? fwd : std::max(fwd, backward_workspace_bytes(p));
}
// The same for every Fp32Math (the backward's workspace layout does not depend on it).
inline std::size_t workspace_bytes(Pass pass, const AttentionParams& p, Fp32Math) {
  return workspace_bytes(pass, p);
}

}  // namespace fb::cuda::flash
