// The flash backward pass: dQ, dK, dV from Q, K, V, O, LSE and dO, nothing N x N.
//
// Host-side interface for kernels/dispatch.cu. Every pointer in the params is a device pointer; the
// forward's O and LSE (natural log, accumulator type) are inputs.
//
// What runs (flash_bwd.cu):
//   1. pre-pass: D = rowsum(dO * O), a padded copy of LSE (see flash_bwd_common.cuh), dQ accumulator
//      zeroed;
//   2. main kernel, one block per (batch, K/V head, K/V tile): recomputes P from Q, K and LSE, keeps
//      dK and dV in registers over the whole query range of the g = heads/kv_heads query heads that
//      share the K/V head (so dK/dV need no atomics), and adds its dQ share into the accumulator with
//      atomics (fp32 for fp16/bf16/fp32, fp64 for fp64); GQA/MQA with few K/V tiles: one block per
//      (K/V tile, subset of those heads), dK/dV partials added into fp32 accumulators
//      (backward_head_split());
//      Non-causal MHA/GQA at d = 128 with a whole wave of blocks or more: each block of the grid's last
//      partial wave runs as several units over its query steps, their dK/dV partials likewise summed
//      in fp32 (the tail split, flash_bwd.cu tail_split());
//   3. convert: dQ accumulator -> dQ in the element type (and dK, dV under a head or tail split).
// fp16/bf16 run on tensor cores (mma.sync m16n8k16, fp32 accumulation); fp32 on TF32 tensor cores
// (mma.sync m16n8k8) with the 3xTF32 split unless Fp32Math says otherwise (flash/fp32_math.h); fp64,
// and fp32 with Fp32Math::exact, on CUDA cores.
//
// dQ through atomics makes the summation order, and so the last bits of dQ, vary between runs; dK
// and dV are summed in a fixed order and repeat exactly.
#pragma once

#include <cstddef>

#include "attention.h"
#include "flash/fp32_math.h"

namespace fb::cuda::flash {

// nullptr when backward() can run these params, else why not. Without Fp32Math: fp32 as tf32x3.
const char* backward_unsupported(const AttentionParams& p);
const char* backward_unsupported(const AttentionParams& p, Fp32Math math);

// Bytes of p.workspace backward() needs (D, padded LSE, dQ accumulator; under a head split also
// the fp32 dK/dV accumulators).
std::size_t backward_workspace_bytes(const AttentionParams& p);

// The pre-pass every tiled backward starts with (one launch on ctx's stream): per query row,
// D = rowsum(dO o O) and LSE (times log2(e) when lse_log2) into [batch * heads,
// backward_padded_seq(seq_q)] arrays of the accumulator type (float; double for fp64), padding rows
// and rows with no visible key D = 0 and LSE = +inf (so that P = 0 there); and, when dq_acc is not
// null, zeros into dq_acc: [batch * heads, seq_q, head_dim] elements, or [batch * heads,
// backward_padded_seq(seq_q), head_dim] with dq_padded.
void backward_prepass(const AttentionParams& p, void* lse_pad, void* d_pad, void* dq_acc,
                      bool dq_padded, bool lse_log2, const Context& ctx);
// Rows per (batch, head) of the pre-pass arrays: seq (seq_q) rounded up to a multiple of 128.
int backward_padded_seq(int seq);

// GQA/MQA: query-head subsets per K/V plane the backward splits into for these params on the
// current device (1: no split). Where a K/V plane has few key tiles, the causal backward's first key
// tile (every query, every head of the group) sets the time; split, each block takes a subset of the
// group's heads and adds its partial dK and dV into fp32 accumulators in the workspace (then
// converted), so their last bits vary between runs as dQ's do. fp16/bf16 at d = 64/128 where the
// warp-grid kernel runs; a model of the block scheduling picks the split (flash_bwd.cu).
int backward_head_split(const AttentionParams& p);
// Forces the split wherever it can run, for the rest of the process: N subsets (at most the group;
// 1: off), 0: the model's choice (the default; FB_FLASH_BWD_SPLIT=N, read once, sets the starting
// value). For tests and A/B runs. Returns the previous setting.
int force_backward_head_split(int split);

// Into how many units each block of the main kernel's last partial wave is split for these params on
// the current device (1: none): non-causal fp16/bf16 at d = 128 (under FB_FLASH_BWD=tail also d = 64)
// on grids of at least one whole wave of blocks, never with a head split; their dK/dV partials meet
// in fp32 accumulators in the workspace, so their last bits vary between runs as dQ's do.
int backward_tail_split(const AttentionParams& p);

// Whether the main kernel walks each plane's query tiles from the last down (kDescend, no tail split) for these params:
// by default non-causal fp16/bf16 MHA passes at d = 128 of up to 4096 keys (flash_bwd.cu descend_walk(); d = 64's
// walk of session 66 was withdrawn by session 67's call E); under FB_FLASH_BWD=desc2 wherever the tiled dQ runs
// unsplit. Needs a device.
bool backward_descends(const AttentionParams& p);

// K/V planes whose key tiles the causal backward runs together, key tiles outermost (1: head-major, plane after plane):
// unsplit causal GQA passes on the warp-grid kernel where the schedule model says (flash_bwd.cu
// causal_plane_group_of()); 1 elsewhere. Needs a device to say more than 1 (the SM count); tests use it.
int backward_causal_plane_group(const AttentionParams& p);

// Keys per block of the main kernel for these params (the byte model's key tile).
int backward_key_tile(const AttentionParams& p);
int backward_key_tile(const AttentionParams& p, Fp32Math math);

// Writes p.dq, p.dk, p.dv. Throws std::invalid_argument for unsupported params or a missing
// workspace, fb::CudaError for a failed launch.
void backward(const AttentionParams& p, const Context& ctx);
void backward(const AttentionParams& p, const Context& ctx, Fp32Math math);

}  // namespace fb::cuda::flash
