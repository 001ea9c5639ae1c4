// Attention on the CPU, in plain C++ over fb::AttentionParams (BHSD layout, see
// kernels/attention.h): the naive algorithm (S and P materialised as N x N arrays), the tiled
// FlashAttention algorithm (online softmax, nothing N x N) and an exact fp64 reference, forward and
// backward.
//
// Storage types: fp64 and fp32 natively; fp16/bf16 stored as 16 bits (numeric.h) and computed in
// fp32. The naive path stores S, P, dP and dS in the input dtype (fp32 for fp32, fp64 for fp64), as
// the GPU naive path does. LSE and D are in the accumulator type (double for fp64, float
// otherwise).
//
// Every byte the kernels allocate (N x N arrays, per-thread tiles, accumulators) is a Buffer
// charged to ctx.tracker; the caller owns and charges the outputs (O, LSE, dQ, dK, dV).
#pragma once

#include <cstdint>
#include <vector>

#include "attention.h"
#include "common/splitkv.h"
#include "backend/cpu/memory.h"
#include "backend/cpu/parallel.h"

namespace fb::cpu {

// Tile shape of the tiled kernels: Br query rows x Bc key rows. 64 x 64 keeps one thread's working
// set (Q tile, K^T and V tiles, the S/P tile, the O accumulator) at 4*64*d + 64*64 floats:
// 144 KiB at d = 128, about a core's L2. The naive path blocks its GEMMs with the same shape.
struct Tiles {
  int br = 64;
  int bc = 64;
};

struct Context {
  MemoryTracker* tracker = nullptr;  // charged for every buffer the kernels allocate
  ThreadPool* pool = nullptr;        // the threads that share the work
  Tiles tiles{};
};

// What a forward keeps for its backward, held by the caller between the two calls (its bytes stay
// charged to the tracker). naive keeps P = softmax(S), [batch, heads, seq, seq] in the input dtype.
struct Saved {
  Buffer p;
};

// Throws std::invalid_argument naming the field when the shape is unusable (a size < 1, kv_heads
// not dividing heads, scale not finite or zero, tiles < 1).
void check_shape(const AttentionParams& p, const Tiles& tiles = {});
// check_shape, and a pointer `pass` needs left null.
void check_params(const AttentionParams& p, Pass pass, const Tiles& tiles = {});

// Bytes of the N x N arrays naive holds at once: 2 * batch * heads * seq^2 * dtype_bytes (S and P
// in the forward; P and dP/dS in the backward); fp8: S in fp32 and P in e4m3.
std::uint64_t naive_matrix_bytes(const AttentionParams& p);

// ---- naive: S = scale * Q K^T (N x N), P = softmax(S) (N x N), O = P V ----
// Three passes over memory, like the GPU path's GEMM / softmax / GEMM. Writes O and LSE; when
// `saved` is given, P is moved into it for naive_backward (anything it held is freed first).
void naive_forward(const AttentionParams& p, const Context& ctx, Saved* saved = nullptr);

// dV = P^T dO, dP = dO V^T, dS = P o (dP - D) with D = rowsum(dO o O), dQ = scale dS K,
// dK = scale dS^T Q (summed over the query heads that share a K/V head). Reads p.o and the P that
// naive_forward saved.
void naive_backward(const AttentionParams& p, const Context& ctx, const Saved& saved);

// ---- flash: Br x Bc tiles, online softmax ----
// One task per (batch, head, query tile). Per KV tile: S = scale Q_i K_j^T, m' = max(m, rowmax S),
// P = exp(S - m'), l = exp(m - m') l + rowsum P, O = exp(m - m') O + P V_j (one rescale per tile);
// at the end O /= l and LSE = m + log l. Causal: KV tiles entirely above the diagonal are skipped.
void flash_forward(const AttentionParams& p, const Context& ctx);

// D = rowsum(dO o O) first; then one task per (batch, K/V head, slice of KV tiles): per KV tile j
// it recomputes S and P = exp(S - LSE) for every query tile of the heads sharing that K/V head and
// accumulates dK_j, dV_j locally, and dS K_j directly into a dQ accumulator private to the slice.
// Order is fixed: KV tiles ascending within a slice, query heads and tiles ascending, slices summed
// in index order at the end; the slice count depends only on the shape (not on the thread count),
// so results are bit-identical for any number of threads.
void flash_backward(const AttentionParams& p, const Context& ctx);

// How many KV-tile slices flash_backward splits each (batch, K/V head) into (exposed for tests and
// for the memory model: it holds that many fp32/fp64 dQ accumulators).
int flash_backward_slices(const AttentionParams& p, const Tiles& tiles);

// ---- flash-decode: split-KV (flash-decoding), forward only ----
// The algorithm of the CUDA kernel (kernels/flash_decode), with the same split rule (common/splitkv.h):
// one task per (batch, K/V head, split) streams the split's keys in tiles of kDecodeTileKeys and
// applies each tile to every query row of the GQA group (group x seq_q rows, online softmax). With
// one split it writes O and LSE; with more, each split writes its partial O (normalised by its own sum)
// and LSE (natural log, -inf when the split shows the row no key) into p.workspace, and a combine pass
// merges them exactly: L = max LSE_s, w_s = exp(LSE_s - L), O = sum w_s O_s / sum w_s,
// LSE = L + log sum w_s (O = 0, LSE = -inf when every w_s is 0).
inline constexpr int kDecodeMaxSeqQ = 64;  // as the CUDA kernel: longer query blocks are not decode
inline constexpr int kDecodeTileKeys = 64;
// The CPU's "device" for the automatic split count: this many tasks (a constant rather than the thread
// count, so results do not depend on the machine), each split at least kDecodeTileKeys keys.
inline constexpr int kDecodeTargetTasks = 64;
SplitPlan decode_plan(const AttentionParams& p);
// Partial O and LSE (accumulator type) of every split when there is more than one, else 0.
std::size_t decode_workspace_bytes(const AttentionParams& p);
void decode_forward(const AttentionParams& p, const Context& ctx);

// ---- exact fp64 reference (p.dtype must be fp64, all pointers double) ----
// Query rows of every (batch, head) a reference computes: sorted, distinct, in [0, seq).
std::vector<int> all_rows(int seq);
// `count` distinct rows including 0 and seq - 1 (all rows when count >= seq), drawn from a
// generator seeded with `seed`: the same arguments give the same rows.
std::vector<int> sample_rows(int seq, int count, std::uint64_t seed);

// O [batch, heads, rows.size(), head_dim] and LSE [batch, heads, rows.size()] for the listed query
// rows only (p.o / p.lse are ignored). Cost: batch * heads * rows.size() * seq * head_dim.
void reference_forward(const AttentionParams& p, const std::vector<int>& rows, double* o,
                       double* lse, ThreadPool& pool);

// dQ [batch, heads, q_rows.size(), head_dim] for the listed query rows, and dK, dV
// [batch, kv_heads, kv_rows.size(), head_dim] for the listed key rows (none when kv_rows is empty),
// computed from p.q, p.k, p.v, p.dout alone (its own fp64 O and LSE; p.o and p.lse are ignored).
// dK/dV rows need the softmax statistics of every query row: a full fp64 forward, whatever kv_rows
// holds; dQ rows alone cost as much as reference_forward on those rows.
void reference_backward(const AttentionParams& p, const std::vector<int>& q_rows,
                        const std::vector<int>& kv_rows, double* dq, double* dk, double* dv,
                        ThreadPool& pool);

}  // namespace fb::cpu
