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
  for (Dtype t : {Dtype::fp64, Dtype::fp32, Dtype::fp16, Dtype::bf16})
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
  return fmt::format("b{}-h{}-kv{}-{}-d{}-{}-{}-{}", batch, heads, kv_heads, len, head_dim,
                     to_string(dtype), causal ? "causal" : "full", to_string(pass));
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

double bytes_moved(const Case& c, Algo algo, int query_tile) {
  if (algo == Algo::reference) return 0;
  const double e = double(dtype_bytes(c.dtype));
  const double a = double(accum_bytes(c.dtype));
  const CausalMask mask = c.params().mask();
  const double nq = c.seq_q;
  const double q = double(c.batch) * c.heads * nq * c.head_dim * e;          // Q, O, dO, dQ each
  const double kv = double(c.batch) * c.kv_heads * c.seq_k * c.head_dim * e;  // K, V, dK, dV each
  const double rows = double(c.batch) * c.heads * nq;
  // Score-matrix elements actually touched (the visible pairs when causal).
  const double nn = double(c.batch) * c.heads * mask.visible_pairs();
  // S and P are kept in the input dtype, except fp32 softmax statistics (fp64 for fp64).
  const double s = e;

  double fwd = 0, bwd = 0;
  if (algo == Algo::naive) {
    // Q, K, V in; S written, S read, P written, P read; O and LSE out.
    fwd = q + 2 * kv + 4 * nn * s + q + rows * a;
    // dV = P^T dO (read P, dO), dP = dO V^T (write dP), dS = P o (dP - D) (read P, dP; write dS),
    // dQ = dS K, dK = dS^T Q (read dS twice); plus Q, K, V, O, dO reads and dQ, dK, dV writes.
    bwd = (q + 2 * kv + 2 * q + rows * a) + nn * s * 7 + (q + 2 * kv);
  } else {
    const int br = query_tile > 0 ? query_tile : 1;
    const int tiles = (c.seq_q + br - 1) / br;
    // Causal: query tile t reads only the keys its last row sees. Square: about half on average
    // (the figure results had before seq_q/seq_k); otherwise summed tile by tile (decode shapes are
    // far from half: one query tile of seq_q = 1 reads every key).
    double kv_reads = tiles;
    if (c.causal && c.square()) {
      kv_reads = 0.5 * tiles;
    } else if (c.causal) {
      kv_reads = 0;
      for (int t = 0; t < tiles; ++t) kv_reads += double(mask.key_end(t * br, br)) / c.seq_k;
    }
    fwd = q + 2 * kv * kv_reads + q + rows * a;
    // Q, O, dO, LSE, D read; K, V read per query tile; dQ, dK, dV written.
    bwd = 3 * q + 2 * rows * a + 2 * kv * kv_reads + q + 2 * kv;
  }
  switch (c.pass) {
    case Pass::fwd: return fwd;
    case Pass::bwd: return bwd;
    case Pass::fwd_bwd: return fwd + bwd;
  }
  return fwd;
}

}  // namespace fb
