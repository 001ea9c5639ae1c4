#include "case.h"

#include <cmath>

#include <fmt/format.h>

namespace fb {

std::string_view to_string(Dtype t) {
  switch (t) {
    case Dtype::fp64: return "fp64";
    case Dtype::fp32: return "fp32";
    case Dtype::fp16: return "fp16";
    case Dtype::bf16: return "bf16";
    case Dtype::fp8: return "fp8";
  }
  return "?";
}

std::string_view to_string(Pass p) {
  switch (p) {
    case Pass::fwd: return "fwd";
    case Pass::bwd: return "bwd";
    case Pass::fwd_bwd: return "fwd+bwd";
  }
  return "?";
}

std::optional<Dtype> parse_dtype(std::string_view s) {
  for (Dtype t : kDtypes)
    if (s == to_string(t)) return t;
  return std::nullopt;
}

std::optional<Pass> parse_pass(std::string_view s) {
  for (Pass p : {Pass::fwd, Pass::bwd, Pass::fwd_bwd})
    if (s == to_string(p)) return p;
  return std::nullopt;
}

std::string Case::key() const {
  const std::string len =
      square() ? fmt::format("n{}", seq_q) : fmt::format("q{}-k{}", seq_q, seq_k);
  std::string k = fmt::format("b{}-h{}-kv{}-{}-d{}-{}-{}-{}", batch, heads, kv_heads, len, head_dim,
                              to_string(dtype), causal ? "causal" : "full", to_string(pass));
  if (splits != 0) k += fmt::format("-s{}", splits);
  return k;
}

AttentionParams Case::params() const {
  AttentionParams p;
  p.dtype = dtype;
  p.batch = batch;
  p.heads = heads;
  p.kv_heads = kv_heads;
  p.seq_q = seq_q;
  p.seq_k = seq_k;
  p.head_dim = head_dim;
  p.causal = causal;
  p.scale = 1.0 / std::sqrt(double(head_dim));
  p.kv_splits = splits;
  return p;
}

bool operator==(const Case& a, const Case& b) { return a.key() == b.key(); }

namespace {
double pass_factor(Pass p) { return p == Pass::fwd ? 1.0 : p == Pass::bwd ? 2.5 : 3.5; }
}  // namespace

double flops(const Case& c) {
  const double pairs = double(c.seq_q) * c.seq_k;
  double f = 4.0 * c.batch * c.heads * pairs * c.head_dim;
  if (c.causal) f *= c.square() ? 0.5 : c.params().mask().visible_pairs() / pairs;
  return f * pass_factor(c.pass);
}

std::uint64_t input_bytes(const Case& c) {
  const std::uint64_t e = dtype_bytes(c.dtype);
  const std::uint64_t q = std::uint64_t(c.batch) * c.heads * c.seq_q * c.head_dim * e;
  const std::uint64_t kv = std::uint64_t(c.batch) * c.kv_heads * c.seq_k * c.head_dim * e;
  std::uint64_t b = q + 2 * kv;
  if (c.pass != Pass::fwd) b += q;  // dO
  return b;
}

namespace {

struct Sizes {
  double q, kv, rows, acc;  // bytes of Q (= O, dO, dQ), of K (= V, dK, dV); query rows; accumulator bytes
  double o;                 // bytes of O: q, except fp8 (e4m3 Q, bf16 O)
};
Sizes sizes_of(const Case& c) {
  const double e = double(dtype_bytes(c.dtype));
  const double q_elems = double(c.batch) * c.heads * c.seq_q * c.head_dim;
  return {q_elems * e, double(c.batch) * c.kv_heads * c.seq_k * c.head_dim * e, double(c.batch) * c.heads * c.seq_q,
          double(accum_bytes(c.dtype)), q_elems * double(dtype_bytes(output_dtype(c.dtype)))};
}

double by_pass(const Case& c, double fwd, double bwd) {
  switch (c.pass) {
    case Pass::fwd: return fwd;
    case Pass::bwd: return bwd;
    case Pass::fwd_bwd: return fwd + bwd;
  }
  return fwd;
}

}  // namespace

double naive_bytes(const Case& c, int) {
  const Sizes z = sizes_of(c);
  // cuBLAS computes and writes the whole seq_q x seq_k S even when causal (the mask is applied in
  // the softmax, which still reads S and writes all of P), so causal moves as many bytes as full.
  const double pairs = double(c.batch) * c.heads * c.seq_q * double(c.seq_k);
  const double nn = pairs * double(dtype_bytes(c.dtype));
  // fp8: S in fp32, P in e4m3 (kernels/attention.h).
  const double s_bytes = c.dtype == Dtype::fp8 ? pairs * double(dtype_bytes(Dtype::fp32)) : nn;
  // fp8: cuBLASLt's FP8 GEMMs take both operands K-major, so V is transposed first (read, written).
  const double v_turn = c.dtype == Dtype::fp8 ? 2 * z.kv : 0;
  // Q, K, V in; S written, S read, P written, P read; O and LSE out.
  const double fwd = z.q + 2 * z.kv + 2 * s_bytes + 2 * nn + z.o + z.rows * z.acc + v_turn;
  // dV = P^T dO (read P, dO), dP = dO V^T (write dP), dS = P o (dP - D) (read P, dP; write dS),
  // dQ = dS K, dK = dS^T Q (read dS twice); plus Q, K, V, O, dO reads and dQ, dK, dV writes.
  const double bwd = (z.q + 2 * z.kv + 2 * z.q + z.rows * z.acc) + 7 * nn + (z.q + 2 * z.kv);
  return by_pass(c, fwd, bwd);
}

double tiled_bytes(const Case& c, int tile) {
  const Sizes z = sizes_of(c);
  const int t = tile > 0 ? tile : 1;
  const CausalMask mask = c.params().mask();
  // Forward, one block per query tile of t rows: Q read once, K and V once per query tile (causal:
  // the keys its last row sees; about half on average when square); O and LSE written.
  const int q_tiles = (c.seq_q + t - 1) / t;
  double kv_reads = q_tiles;  // in units of all of K and V
  if (c.causal) {
    kv_reads = 0;
    for (int i = 0; i < q_tiles; ++i) kv_reads += double(mask.key_end(i * t, t)) / c.seq_k;
  }
  const double fwd = z.q + 2 * z.kv * kv_reads + z.o + z.rows * z.acc;
  // Backward, one block per key tile of t keys: the pre-pass reads O, dO and writes D; the main
  // kernel reads K, V once and Q, dO, LSE, D once per key tile (causal: the rows that see the tile),
  // writes dK, dV, and adds its dQ share to an fp32 accumulator per key tile (read-modify-write,
  // counted once); the convert reads the accumulator and writes dQ.
  const int k_tiles = (c.seq_k + t - 1) / t;
  double q_reads = k_tiles;  // in units of all query rows
  if (c.causal) {
    q_reads = 0;
    for (int j = 0; j < k_tiles; ++j) q_reads += double(c.seq_q - mask.first_row(j * t)) / c.seq_q;
  }
  const double acc_q = z.q / double(dtype_bytes(c.dtype)) * z.acc;
  const double pre = 2 * z.q + z.rows * z.acc;
  const double main = 2 * z.kv + (2 * z.q + 2 * z.rows * z.acc + acc_q) * q_reads + 2 * z.kv;
  const double convert = acc_q + z.q;
  return by_pass(c, fwd, pre + main + convert);
}

int splits_used(const Case& c, int keys_per_split) {
  if (c.splits > 0) return c.splits;
  const int per = keys_per_split > 0 ? keys_per_split : c.seq_k;
  return (c.seq_k + per - 1) / per;
}

double splitkv_bytes(const Case& c, int keys_per_split) {
  const Sizes z = sizes_of(c);
  // Q in, K and V once (each CTA streams its own key range for every query row of the GQA group),
  // O and LSE out.
  double b = z.q + 2 * z.kv + z.o + z.rows * z.acc;
  const int splits = splits_used(c, keys_per_split);
  if (splits > 1) {
    // Partial O [splits, rows, d] and LSE [splits, rows] in fp32: written by the split kernel, read
    // by the combine.
    const double partial = double(splits) * z.rows * (double(c.head_dim) + 1) * 4;
    b += 2 * partial;
  }
  return b;
}

}  // namespace fb
