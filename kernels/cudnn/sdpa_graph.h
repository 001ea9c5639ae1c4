// The SDPA forward and backward as cuDNN backend operation graphs (cudnn_graph.h), written node by
// node: the fused-attention pattern cuDNN 9.x matches to its flash-attention engines (the pattern
// NVIDIA's cudnn-frontend builds for its composite SDPA nodes on cuDNN < 9.21).
//
// Layout (attention.h): Q, O, dO, dQ [b, h, s_q, d] and K, V, dK, dV [b, h_kv, s_k, d], contiguous;
// LSE [b, h, s_q] fp32. K and V are handed to the matmuls as transposed views (strides swapped), GQA by
// K/V's own head count (cuDNN broadcasts a K/V head over its group; the backward sums the group's
// dK/dV with a reduction node).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "attention.h"
#include "cudnn/cudnn_check.h"

namespace fb::cuda::cudnn_sdpa {

// Owns one backend descriptor (move-only).
class BackendDesc {
 public:
  explicit BackendDesc(cudnnBackendDescriptorType_t type);
  BackendDesc(BackendDesc&& o) noexcept : d_(std::exchange(o.d_, nullptr)) {}
  BackendDesc& operator=(BackendDesc&&) = delete;
  BackendDesc(const BackendDesc&) = delete;
  BackendDesc& operator=(const BackendDesc&) = delete;
  ~BackendDesc();
  cudnnBackendDescriptor_t get() const { return d_; }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

// Unique ids of the graph's non-virtual tensors: the variant pack names buffers by them. By-value
// scalars (scale, -inf, 1, sequence lengths) are tensors too: their host values ride in the variant
// pack at execution.
enum Uid : std::int64_t {
  kQ = 1,
  kK,
  kV,
  kO,
  kStats,    // LSE, [b, h, s_q, 1] fp32
  kDout,
  kDq,
  kDk,
  kDv,
  kRowDot,   // backward: rowsum(dO * O), [b, h, s_q, 1] fp32, in the workspace
  kDqAccum,  // backward: dQ accumulated in fp32, [b, h, s_q, d], in the workspace
  kScale,    // softmax scale (fp32 by value)
  kNegInf,   // what masked scores become (fp32 by value)
  kOne,      // 1 (fp32 by value)
  kSeqQ,     // s_q (int32 by value), bottom-right causal only
  kSeqK,     // s_k (int32 by value), bottom-right causal only
  // fp8 forward only: per-tensor factors (fp32 [1,1,1,1] in device memory, as cudnn-frontend binds
  // them) and the two amax outputs cuDNN's FP8 pattern ends in (written, never read here).
  kDescaleQ,
  kDescaleK,
  kDescaleV,
  kDescaleS,  // 1 / scale_s: undoes P's scale after P.V
  kScaleS,    // P is multiplied by this before its e4m3 rounding (flashbench's p_scale)
  kScaleO,    // O is multiplied by this before it is stored (1 for a bf16 O)
  kAmaxS,
  kAmaxO,
  // backward with the padding-mask workaround (Shape::padding_mask): every sequence's full length,
  // int32 [b, 1, 1, 1] in device memory.
  kSeqLenQ,
  kSeqLenKv,
  kFirstVirtual = 100,
};

// The shape a graph is built and planned for.
struct Shape {
  Dtype dtype = Dtype::bf16;
  std::int64_t batch = 1, heads = 1, kv_heads = 1, seq_q = 1, seq_k = 1, head_dim = 64;
  bool causal = false;
  // Backward only: a padding mask at the full lengths and the GEMM size overrides that go with it.
  // It masks nothing; it is cudnn-frontend's workaround for cuDNN < 9.16, whose backward without one
  // is wrong when seq_k is not a multiple of 128.
  bool padding_mask = false;
  // fp8 forward with an e4m3 O only: that O (ours, in the workspace) laid out [b, s_q, h, d] as in
  // cudnn-frontend's FP8 samples, instead of the BHSD of every other tensor (the widening reorders).
  bool o_bshd = false;
  // fp8 forward, diagnostics only (cudnn_sdpa.h, Fp8Probe): Q, K, V laid out [b, s, h, d] by the caller.
  bool qkv_bshd = false;
  // fp16/bf16 forward, measurement only (FB_CUDNN_FWD_PROBE=nostats, cudnn_sdpa.cpp): the graph without
  // the Stats (LSE) output, as cudnn-frontend builds it with generate_stats false (PyTorch's forward
  // under no_grad); LSE is not written.
  bool no_stats = false;
  bool operator<(const Shape& o) const;
};
Shape shape_of(const AttentionParams& p);

// An operation graph under construction: every descriptor it made (the plan refers to them, so they
// live as long as it), its operations in order, and the uids of its non-virtual tensors.
struct Graph {
  std::vector<BackendDesc> descs;
  std::vector<cudnnBackendDescriptor_t> ops;
  std::vector<std::int64_t> uids;
  std::int64_t next_virtual = kFirstVirtual;
  // By-value scalars made so far: one tensor per uid however many nodes read it (the variant pack
  // refuses a uid twice).
  std::map<std::int64_t, cudnnBackendDescriptor_t> scalars;
};

// O and LSE from Q, K, V (O alone with s.no_stats).
void build_forward(Graph& g, const Shape& s);

// Element type of the fp8 forward's O: what cuDNN's FP8 engine stores. Hopper's takes e4m3 only
// (cudnn-frontend: a 16-bit O is Blackwell with cuDNN >= 9.13); bf16 is asked first in case it is.
enum class Fp8Out { bf16, e4m3 };
// The fp8 forward (kernels/attention.h's definition, dtype fp8): e4m3 Q, K, V; S = Q K^T times
// scale, descale_q and descale_k in fp32; softmax as build_forward's (LSE from the fp32 S); P times
// scale_s rounded to e4m3; O = (P V) descale_s descale_v scale_o, stored as `out`; amax of P and of
// the unscaled O. Masks: none, or causal when seq_q == seq_k (top-left and bottom-right coincide;
// the caller refuses other causal shapes) or seq_q == 1 (the one row sees every key: no mask).
void build_forward_fp8(Graph& g, const Shape& s, Fp8Out out);
// dQ, dK, dV from Q, K, V, O, LSE, dO (and the two workspace tensors kRowDot, kDqAccum; with
// s.padding_mask also kSeqLenQ and kSeqLenKv).
void build_backward(Graph& g, const Shape& s);

// Bytes of the backward's workspace tensors.
std::size_t row_dot_bytes(const Shape& s);
std::size_t dq_accum_bytes(const Shape& s);

}  // namespace fb::cuda::cudnn_sdpa
