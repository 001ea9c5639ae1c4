// One point of a sweep, and the models that go with it: FLOPs and modelled memory traffic.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "attention.h"

namespace fb {

struct Case {
  int batch = 1;
  int heads = 1;
  int kv_heads = 1;
  int seq_q = 1;  // query rows (Q, O, dO, dQ, LSE)
  int seq_k = 1;  // key rows (K, V, dK, dV); causal aligns bottom-right (kernels/common/mask.h)
  int head_dim = 64;
  Dtype dtype = Dtype::fp32;
  bool causal = false;
  Pass pass = Pass::fwd;
  // KV splits asked of a split-KV kernel (flash-decode): 0 = the kernel chooses (kernels/common/
  // splitkv.h). Kernels that do not split the keys run only splits = 0 (the descriptor's kv_splits).
  int splits = 0;

  // Sets seq_q = seq_k = n (self-attention).
  void set_seq(int n) { seq_q = seq_k = n; }
  bool square() const { return seq_q == seq_k; }

  // A stable key for pairing results across files: "b1-h16-kv16-n4096-d128-bf16-causal-fwd" when
  // seq_q == seq_k (the key results had before seq_q/seq_k existed), else "...-q1-k4096-...";
  // "-s16" at the end when splits != 0 (auto keeps the key it had before splits existed).
  std::string key() const;
  // Params with shapes and scale filled in, pointers null.
  AttentionParams params() const;
};

bool operator==(const Case& a, const Case& b);

// Every dtype, in the order listings show them.
inline constexpr Dtype kDtypes[] = {Dtype::fp64, Dtype::fp32, Dtype::fp16, Dtype::bf16, Dtype::fp8};

std::string_view to_string(Dtype t);
std::string_view to_string(Pass p);
std::optional<Dtype> parse_dtype(std::string_view s);
std::optional<Pass> parse_pass(std::string_view s);

// FlashAttention's convention: fwd = 4*B*H*seq_q*seq_k*d (two GEMMs); bwd = 2.5 x fwd; fwd+bwd =
// 3.5 x fwd. Causal: halved when seq_q == seq_k (FlashAttention's figure, so square results stay
// comparable with its papers and with earlier runs), else scaled by the exact fraction of visible
// (query, key) pairs (CausalMask::visible_pairs), since halving would be far off for decode shapes.
double flops(const Case& c);

// Modelled HBM traffic in bytes, the fewest bytes each algorithm must move (case.cpp details them):
//   naive : read Q, K, V; write S; read S, write P; read P and V; write O and LSE (all N x N even when
//           causal: the GEMM writes every score). Backward: P and dP/dS round trips.
//   tiled : forward reads K and V once per query tile; backward reads Q, dO, LSE and D once per key
//           tile and accumulates dQ in fp32 per key tile. Causal halves the tile pairs.
// The naive model (S and P round trips) and the tiled one (K/V re-read per query tile of
// `query_tile` rows in the forward; Q, dO re-read per key tile in the backward): descriptors point at
// these.
double naive_bytes(const Case& c, int query_tile);
double tiled_bytes(const Case& c, int query_tile);
// Split-KV decode (forward only): Q, K and V read once, O and LSE written, and with more than one
// split each split's partial O (fp32) and LSE written and read back by the combine. `keys_per_split`
// is the kernel's tile (the KV range one CTA streams); the split count is c.splits, or (auto)
// ceil(seq_k / keys_per_split).
double splitkv_bytes(const Case& c, int keys_per_split);
// The split count a split-KV kernel ran with: c.splits, or (auto) from the keys per split it reported.
int splits_used(const Case& c, int keys_per_split);

// Bytes of the inputs a case reads (Q, K, V, and dO for backward), allocated once per case.
std::uint64_t input_bytes(const Case& c);

}  // namespace fb
