// cuDNN's fused scaled-dot-product attention as a flashbench kernel family (host-only declarations).
//
// The forward and backward are written as cuDNN backend operation graphs (sdpa_graph.h): the classic
// fused-attention pattern of matmul, pointwise and reduction nodes that cuDNN 9.x recognises and runs
// as one flash-attention kernel. The graph is planned once per shape and device (engine heuristics,
// then the first engine configuration that finalises) and the plan is kept for the life of the process;
// what cuDNN refuses comes back from unsupported() with cuDNN's reason.
#pragma once

#include <cstddef>

#include "attention.h"

namespace fb::cuda::cudnn_sdpa {

// nullptr when cuDNN has an engine for `pass` on these params on the current device, else why not
// (a check of ours, or cuDNN's own refusal). Plans what it checks: the first call per shape costs
// the planning.
const char* unsupported(Pass pass, const AttentionParams& p);
// The plan's workspace; for the backward also the fp32 dQ accumulator and dO.O row sums the graph
// keeps there (what cudnn-frontend calls its own workspace). 0 for a shape cuDNN refuses.
std::size_t workspace_bytes(Pass pass, const AttentionParams& p);
// O and LSE (cuDNN's softmax stats: max + log(sum exp), natural log of the scaled scores). fp8: e4m3
// Q, K, V with p's descales and p_scale as cuDNN's scale_s (kernels/attention.h), O in bf16.
void forward(const AttentionParams& p, const Context& ctx);
// dQ, dK, dV from Q, K, V, O, LSE, dO.
void backward(const AttentionParams& p, const Context& ctx);

// fp8 forward (dtype fp8): the bits cuDNN stores O in on the current device, 16 (bf16, written to
// p.o directly) or 8 (e4m3 in the workspace, then widened to bf16: one more rounding, 2^-4 relative
// at most, see sdpa_graph.h); 0 when cuDNN has no plan for p. Plans as unsupported() does.
int fp8_o_bits(const AttentionParams& p);

// cudnnGetVersion() of the library loaded at run time (e.g. 91400 for 9.14.0).
std::size_t library_version();

}  // namespace fb::cuda::cudnn_sdpa
