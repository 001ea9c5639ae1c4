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
  kFirstVirtual = 100,
};

// The shape a graph is built and planned for.
struct Shape {
  Dtype dtype = Dtype::bf16;
  std::int64_t batch = 1, heads = 1, kv_heads = 1, seq_q = 1, seq_k = 1, head_dim = 64;
  bool causal = false;
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
};

// O and LSE from Q, K, V.
void build_forward(Graph& g, const Shape& s);
// dQ, dK, dV from Q, K, V, O, LSE, dO (and the two workspace tensors kRowDot, kDqAccum).
void build_backward(Graph& g, const Shape& s);

// Bytes of the backward's workspace tensors.
std::size_t row_dot_bytes(const Shape& s);
std::size_t dq_accum_bytes(const Shape& s);

}  // namespace fb::cuda::cudnn_sdpa
