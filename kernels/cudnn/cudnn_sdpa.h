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
// (a check of ours, cuDNN's own refusal, or a shape where cuDNN's engine is known wrong: the fp8
// forward's race, cudnn_sdpa.cpp, fp8_race_shape). Plans what it checks: the first call per shape costs
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

// Diagnostics of the fp8 forward with an e4m3 O (tests/test_gpu_cudnn_fp8.cpp): what every later call
// does differently from the shipped path, to tell a fault of cuDNN's engine from one of ours. The
// defaults are the shipped path. Not for measurements.
struct Fp8Probe {
  bool o_bshd = false;             // cuDNN's e4m3 O laid out [b, s, h, d] (Shape::o_bshd), then reordered
  int sentinel = -1;               // byte written over the e4m3 O before each call (-1: none)
  bool sync_before_widen = false;  // the device synchronised between cuDNN's kernels and the widening
  float o_scale_factor = 1.0f;     // cuDNN's scale_o times this (the widening divides it back out)
  bool scalars_apart = false;      // each per-tensor factor and amax 256 bytes apart (else 4 bytes)
  bool zero_scratch = false;       // cuDNN's workspace part and the two amax outputs zeroed before each call
  void* o_e4m3 = nullptr;          // the caller's buffer for the e4m3 O instead of the workspace
  bool qkv_bshd = false;           // the graph takes Q, K, V laid out [b, s, h, d]: the caller passes them so
  bool run_racy = false;           // run where cuDNN's engine races (cudnn_sdpa.cpp) instead of refusing
};
void set_fp8_probe(const Fp8Probe& probe);
// The last fp8 call with an e4m3 O: where O's codes and the amax outputs are (device pointers),
// the widening factor (code value times it is O), and O's layout.
struct Fp8Last {
  const void* o_e4m3 = nullptr;
  const float* amax_s = nullptr;
  const float* amax_o = nullptr;
  float factor = 0.0f;
  bool o_bshd = false;
};
Fp8Last fp8_last();

// cudnnGetVersion() of the library loaded at run time (e.g. 91400 for 9.14.0).
std::size_t library_version();

}  // namespace fb::cuda::cudnn_sdpa
