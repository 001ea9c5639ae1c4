// The exact fp64 yardstick (host-only declarations). fp64 inputs, fp64 outputs, fp64 throughout: scores,
// softmax statistics, P, dP and dS are never rounded to a lower precision.
//
// Forward: one block per (batch, head, tile of query rows); key tiles streamed through shared memory;
// a first pass finds each row's max, a second sums exp(s - max) and accumulates P V (no rescaling, so
// no online-softmax rounding). Backward, with D = rowsum(dO o O):
//   dQ kernel : per query tile, over key tiles:  dQ = scale * sum_j dS_ij K_j
//   dKV kernel: per key tile of a kv head, over the group's query heads and query tiles:
//               dV = sum_i P_ij dO_i,  dK = scale * sum_i dS_ij Q_i       (no atomics: deterministic)
#pragma once

#include <cstddef>

#include "attention.h"

namespace fb::cuda::reference {

const char* unsupported(Pass pass, const AttentionParams& p);
// fwd: none; bwd: D (one double per query row).
std::size_t workspace_bytes(Pass pass, const AttentionParams& p);
void forward(const AttentionParams& p, const Context& ctx);
// Reads p.o (the reference forward's O) to form D.
void backward(const AttentionParams& p, const Context& ctx);

}  // namespace fb::cuda::reference
