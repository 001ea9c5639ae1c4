// FlashAttention for Hopper (sm_90a) as kernels/dispatch.cu sees it (host-only declarations).
#pragma once

#include <cstddef>

#include "attention.h"

namespace fb::cuda::flash_sm90 {

// nullptr when `pass` can run on these params on the current device, else why not.
const char* unsupported(Pass pass, const AttentionParams& p);
std::size_t workspace_bytes(Pass pass, const AttentionParams& p);
void forward(const AttentionParams& p, const Context& ctx);
void backward(const AttentionParams& p, const Context& ctx);
int query_tile(const AttentionParams& p);

// The fp32 forward and backward with operands rounded to TF32 once (no split): a diagnostic that
// must fail the FP32 rule. fp32 only.
const char* unsupported_tf32x1(Pass pass, const AttentionParams& p);
void forward_tf32x1(const AttentionParams& p, const Context& ctx);
void backward_tf32x1(const AttentionParams& p, const Context& ctx);

}  // namespace fb::cuda::flash_sm90
