// The tiled FlashAttention kernels as kernels/dispatch.cu sees them (host-only declarations).
//
// Forward (flash_fwd.cu and its instantiation files): one thread block per (batch, head, query tile),
// K/V tiles streamed through shared memory, online softmax, nothing N x N. fp16/bf16 run on tensor
// cores (mma.sync, sm_80+), fp32/fp64 on CUDA cores with exact arithmetic.
// Backward: flash/flash_bwd.h.
#pragma once

#include <cstddef>

#include "attention.h"
#include "flash/flash_bwd.h"

namespace fb::cuda::flash {

// ---- forward (flash_fwd.cu) ----

// nullptr when the forward kernel can run these params, else why not (names the field).
const char* unsupported_forward(const AttentionParams& p);
// O [B,H,N,D] and LSE [B,H,N] (natural log, accumulator type) from Q, K, V. Needs no workspace.
void forward(const AttentionParams& p, const Context& ctx);
// Query rows per thread block of the forward kernel for these params (Br).
int query_tile(const AttentionParams& p);

// ---- backward: declared in flash/flash_bwd.h (flash_bwd*.cu) ----

// ---- per-pass answers for the dispatcher ----

// nullptr when `pass` can run on these params. Every pass runs the forward first.
inline const char* unsupported(Pass pass, const AttentionParams& p) {
  if (const char* why = unsupported_forward(p)) return why;
  if (pass == Pass::fwd) return nullptr;
  return backward_unsupported(p);
}

// Scratch bytes for `pass`: the forward writes LSE as an output and needs none; the backward's
// scratch is its own.
inline std::size_t workspace_bytes(Pass pass, const AttentionParams& p) {
  return pass == Pass::fwd ? 0 : backward_workspace_bytes(p);
}

}  // namespace fb::cuda::flash
