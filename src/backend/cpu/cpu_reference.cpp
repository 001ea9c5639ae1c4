// The fp64 reference, row by row: the yardstick every kernel's error is measured against.
// Plain formulas with no tiling and no online softmax, so it shares no code (and no bug) with the
// kernels it checks; only the causal rule (kernels/common/mask.h: key j masked when
// j > i + seq_k - seq_q) is the same by definition. A query row with no visible key gets O = 0 and
// LSE = -inf, and dQ = 0 (attention.h).
//
// Accuracy: every sum over the sequence (softmax denominators, P V, the gradient sums) is
// Kahan-compensated, so its error stays near one rounding instead of growing like sqrt(N) u; that
// keeps the reference well ahead of an fp64 kernel whose plain sums carry exactly that growth. The
// dot products over head_dim (scores, dP, D) are plain fp64 sums in index order: their rounding,
// about sqrt(d) u relative, is what is left of the reference's own error.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <stdexcept>
#include <string>

#include "backend/cpu/cpu_attention.h"

#if defined(__FAST_MATH__)
#error \
    "cpu_reference.cpp needs IEEE arithmetic: -ffast-math would optimise its compensated sums away"
#endif

namespace fb::cpu {

namespace {

// sum += x with Kahan compensation: `comp` carries the low-order part the addition lost.
inline void kahan_add(double& sum, double& comp, double x) {
  const double y = x - comp;
  const double t = sum + y;
  comp = (t - sum) - y;
  sum = t;
}

using Index = std::int64_t;

// Rows per parallel task. A block of rows shares each sweep over K^T (or V, Q^T, dO^T), which
// keeps that sweep in cache instead of streaming it from memory once per row.
constexpr int kRowsPerTask = 16;
// Columns per block of Rows::products: kRowsPerTask x 256 doubles = 32 KiB, an L1's worth.
constexpr Index kColumnBlock = 256;

// A [groups, seq, dim] tensor and, for `groups` > 0, its transpose [groups, dim, seq]. Dot products
// of a few rows against every row of the tensor then run over contiguous memory (vectorised); each
// one still sums over t = 0..dim-1 in order, in fp64.
struct Rows {
  const double* data = nullptr;
  std::vector<double> transposed;
  int seq = 0, dim = 0;

  Rows(const double* base, Index groups, int seq_, int dim_) : data(base), seq(seq_), dim(dim_) {
    transposed.resize(std::size_t(groups) * seq * dim);
    for (Index g = 0; g < groups; ++g)
      for (Index j = 0; j < seq; ++j)
        for (int t = 0; t < dim; ++t)
          transposed[(g * dim + t) * seq + j] = base[(g * seq + j) * dim + t];
  }
  const double* row(Index group, Index j) const { return data + (group * seq + j) * dim; }

  // out[x * seq + j] = xs[x] . row(group, j) for j in [from[x], to[x]), x < count.
  void products(const double* const* xs, const Index* from, const Index* to, int count, Index group,
                double* out) const {
    for (int x = 0; x < count; ++x) std::fill(out + x * seq + from[x], out + x * seq + to[x], 0.0);
    const double* base = transposed.data() + group * dim * seq;
    const Index lo = *std::min_element(from, from + count), hi = *std::max_element(to, to + count);
    // Column blocks keep the block's outputs in L1 while t runs over the whole dimension.
    for (Index j0 = lo; j0 < hi; j0 += kColumnBlock) {
      const Index j1 = std::min(hi, j0 + kColumnBlock);
      for (int t = 0; t < dim; ++t) {
        const double* col = base + Index(t) * seq;
        for (int x = 0; x < count; ++x) {
          const double xt = xs[x][t];
          double* o = out + Index(x) * seq;
          const Index end = std::min(j1, to[x]);
          for (Index j = std::max(j0, from[x]); j < end; ++j) o[j] += xt * col[j];
        }
      }
    }
  }
};

struct RefShape {
  int batch, heads, kv_heads, seq_q, seq_k, dim, group;
  bool causal;
  double scale;
  CausalMask mask;
  Index qgroup(int b, int h) const { return Index(b) * heads + h; }              // Q, dO, LSE
  Index kvgroup(int b, int h) const { return Index(b) * kv_heads + h / group; }  // K, V of head h
  // Keys query i sees: [0, keys(i)) (none for an empty row).
  Index keys(Index i) const { return mask.key_end(static_cast<int>(i)); }
};

RefShape ref_shape(const AttentionParams& p) {
  if (p.dtype != Dtype::fp64) throw std::invalid_argument("reference: params must be fp64");
  check_shape(p);
  if (!p.q || !p.k || !p.v) throw std::invalid_argument("reference: q, k and v must be set");
  return RefShape{p.batch,    p.heads,  p.kv_heads, p.seq_q, p.seq_k,
                  p.head_dim, p.group(), p.causal,  p.scale, p.mask()};
}

void check_rows(const std::vector<int>& rows, int seq, const char* what) {
  for (std::size_t r = 0; r < rows.size(); ++r)
    if (rows[r] < 0 || rows[r] >= seq || (r > 0 && rows[r] <= rows[r - 1]))
      throw std::invalid_argument(std::string("reference: ") + what +
                                  " must be sorted, distinct and in [0, " + std::to_string(seq) + ")");
}

// A block of query rows of one (batch, head) and their scaled scores s [count, seq_k] (row x valid
// on [0, keys(rows[x]))), with each row's LSE.
struct QueryBlock {
  int b = 0, h = 0, count = 0;
  const int* rows = nullptr;
  std::vector<double> s, lse;
  std::vector<Index> from, to;
  std::vector<const double*> x;  // scratch: the rows multiplied
};

void scores(const RefShape& r, const Rows& q, const Rows& k, QueryBlock& blk) {
  blk.s.resize(std::size_t(blk.count) * r.seq_k);
  blk.lse.resize(blk.count);
  blk.from.assign(blk.count, 0);
  blk.to.resize(blk.count);
  blk.x.resize(blk.count);
  for (int x = 0; x < blk.count; ++x) {
    blk.to[x] = r.keys(blk.rows[x]);
    blk.x[x] = q.row(r.qgroup(blk.b, blk.h), blk.rows[x]);
  }
  k.products(blk.x.data(), blk.from.data(), blk.to.data(), blk.count, r.kvgroup(blk.b, blk.h),
             blk.s.data());
  for (int x = 0; x < blk.count; ++x) {
    double* s = blk.s.data() + Index(x) * r.seq_k;
    double m = -std::numeric_limits<double>::infinity();
    for (Index j = 0; j < blk.to[x]; ++j) {
      s[j] *= r.scale;
      m = std::max(m, s[j]);
    }
    double l = 0, comp = 0;
    for (Index j = 0; j < blk.to[x]; ++j) kahan_add(l, comp, std::exp(s[j] - m));
    // An empty row has no score: LSE = -inf, and outputs() leaves its O at 0.
    blk.lse[x] = blk.to[x] == 0 ? -std::numeric_limits<double>::infinity() : m + std::log(l);
  }
}

// O rows of the block: o[x] = sum_j exp(s_xj - LSE_x) V_j.
void outputs(const RefShape& r, const Rows& v, const QueryBlock& blk, double* o, Index o_stride) {
  thread_local std::vector<double> comp;
  comp.assign(std::size_t(blk.count) * r.dim, 0.0);
  for (int x = 0; x < blk.count; ++x) std::fill(o + x * o_stride, o + x * o_stride + r.dim, 0.0);
  const Index last = *std::max_element(blk.to.begin(), blk.to.end());
  for (Index j = 0; j < last; ++j) {
    const double* vj = v.row(r.kvgroup(blk.b, blk.h), j);
    for (int x = 0; x < blk.count; ++x) {
      if (j >= blk.to[x]) continue;
      const double pj = std::exp(blk.s[Index(x) * r.seq_k + j] - blk.lse[x]);
      double* ox = o + x * o_stride;
      double* cx = comp.data() + Index(x) * r.dim;
      for (int c = 0; c < r.dim; ++c) kahan_add(ox[c], cx[c], pj * vj[c]);
    }
  }
}

// Runs fn(b, h, x0, x1) over blocks [x0, x1) of [0, count) for every (batch, head), in parallel.
template <class F>
void for_blocks(int batch, int heads, std::size_t count, ThreadPool& pool, F&& fn) {
  const Index chunks = (Index(count) + kRowsPerTask - 1) / kRowsPerTask;
  pool.parallel_for(Index(batch) * heads * chunks, [&](Index task, int) {
    const Index chunk = task % chunks, bh = task / chunks;
    const Index end = std::min<Index>(Index(count), (chunk + 1) * kRowsPerTask);
    fn(static_cast<int>(bh / heads), static_cast<int>(bh % heads), chunk * kRowsPerTask, end);
  });
}

}  // namespace

std::vector<int> all_rows(int seq) {
  std::vector<int> rows(std::max(seq, 0));
  for (int i = 0; i < seq; ++i) rows[i] = i;
  return rows;
}

std::vector<int> sample_rows(int seq, int count, std::uint64_t seed) {
  if (count >= seq) return all_rows(seq);
  std::set<int> picked{0, seq - 1};  // the first row sees one key (causal), the last all of them
  std::mt19937_64 gen(seed);
  while (static_cast<int>(picked.size()) < std::max(count, 2))
    picked.insert(static_cast<int>(gen() % static_cast<std::uint64_t>(seq)));
  return std::vector<int>(picked.begin(), picked.end());
}

void reference_forward(const AttentionParams& p, const std::vector<int>& rows, double* o,
                       double* lse, ThreadPool& pool) {
  const RefShape r = ref_shape(p);
  check_rows(rows, r.seq_q, "rows");
  const Rows q(static_cast<const double*>(p.q), 0, r.seq_q, r.dim);  // rows only, no transpose
  const Rows k(static_cast<const double*>(p.k), Index(r.batch) * r.kv_heads, r.seq_k, r.dim);
  const Rows v(static_cast<const double*>(p.v), 0, r.seq_k, r.dim);
  const Index nrows = Index(rows.size());
  for_blocks(r.batch, r.heads, rows.size(), pool, [&](int b, int h, Index x0, Index x1) {
    thread_local QueryBlock blk;
    blk.b = b;
    blk.h = h;
    blk.rows = rows.data() + x0;
    blk.count = static_cast<int>(x1 - x0);
    scores(r, q, k, blk);
    const Index at = r.qgroup(b, h) * nrows + x0;
    std::copy(blk.lse.begin(), blk.lse.end(), lse + at);
    outputs(r, v, blk, o + at * r.dim, r.dim);
  });
}

void reference_backward(const AttentionParams& p, const std::vector<int>& q_rows,
                        const std::vector<int>& kv_rows, double* dq, double* dk, double* dv,
                        ThreadPool& pool) {
  const RefShape r = ref_shape(p);
  if (p.dout == nullptr) throw std::invalid_argument("reference: dout must be set for backward");
  check_rows(q_rows, r.seq_q, "q_rows");
  check_rows(kv_rows, r.seq_k, "kv_rows");
  const Index q_groups = Index(r.batch) * r.heads, kv_groups = Index(r.batch) * r.kv_heads;
  // Transposes only where a sweep needs them: K and V for rows of dQ, Q and dO for rows of dK/dV.
  const bool want_kv = !kv_rows.empty();
  const Rows q(static_cast<const double*>(p.q), want_kv ? q_groups : 0, r.seq_q, r.dim);
  const Rows dout(static_cast<const double*>(p.dout), want_kv ? q_groups : 0, r.seq_q, r.dim);
  const Rows k(static_cast<const double*>(p.k), kv_groups, r.seq_k, r.dim);
  const Rows v(static_cast<const double*>(p.v), kv_groups, r.seq_k, r.dim);

  // Statistics per query row: LSE and D = dO . O (from the reference's own O). dK/dV rows sum over
  // every query row, so then all rows need them; dQ alone needs only its own rows.
  const std::vector<int> stat_rows = want_kv ? all_rows(r.seq_q) : q_rows;
  std::vector<double> lse(q_groups * r.seq_q, std::numeric_limits<double>::quiet_NaN());
  std::vector<double> dsum(q_groups * r.seq_q, std::numeric_limits<double>::quiet_NaN());
  auto stat = [&](int b, int h, Index i) { return r.qgroup(b, h) * r.seq_q + i; };
  for_blocks(r.batch, r.heads, stat_rows.size(), pool, [&](int b, int h, Index x0, Index x1) {
    thread_local QueryBlock blk;
    thread_local std::vector<double> o;
    blk.b = b;
    blk.h = h;
    blk.rows = stat_rows.data() + x0;
    blk.count = static_cast<int>(x1 - x0);
    scores(r, q, k, blk);
    o.resize(std::size_t(blk.count) * r.dim);
    outputs(r, v, blk, o.data(), r.dim);
    for (int x = 0; x < blk.count; ++x) {
      const Index i = blk.rows[x];
      const double* doi = dout.row(r.qgroup(b, h), i);
      double sum = 0;
      for (int c = 0; c < r.dim; ++c) sum += doi[c] * o[Index(x) * r.dim + c];
      lse[stat(b, h, i)] = blk.lse[x];
      dsum[stat(b, h, i)] = sum;
    }
  });

  // dQ_i = scale * sum_j P_ij (dP_ij - D_i) K_j with P_ij = exp(s_ij - LSE_i), dP_ij = dO_i . V_j.
  const Index nq = Index(q_rows.size());
  for_blocks(r.batch, r.heads, q_rows.size(), pool, [&](int b, int h, Index x0, Index x1) {
    thread_local QueryBlock blk;
    thread_local std::vector<double> dp;
    blk.b = b;
    blk.h = h;
    blk.rows = q_rows.data() + x0;
    blk.count = static_cast<int>(x1 - x0);
    scores(r, q, k, blk);
    for (int x = 0; x < blk.count; ++x) blk.x[x] = dout.row(r.qgroup(b, h), blk.rows[x]);
    dp.resize(std::size_t(blk.count) * r.seq_k);
    v.products(blk.x.data(), blk.from.data(), blk.to.data(), blk.count, r.kvgroup(b, h), dp.data());
    double* out = dq + (r.qgroup(b, h) * nq + x0) * r.dim;
    std::fill(out, out + Index(blk.count) * r.dim, 0.0);
    thread_local std::vector<double> comp;
    comp.assign(std::size_t(blk.count) * r.dim, 0.0);
    const Index last = *std::max_element(blk.to.begin(), blk.to.end());
    for (Index j = 0; j < last; ++j) {
      const double* kj = k.row(r.kvgroup(b, h), j);
      for (int x = 0; x < blk.count; ++x) {
        if (j >= blk.to[x]) continue;
        const Index i = blk.rows[x], e = Index(x) * r.seq_k + j;
        const double ds = std::exp(blk.s[e] - lse[stat(b, h, i)]) * (dp[e] - dsum[stat(b, h, i)]);
        double* ox = out + Index(x) * r.dim;
        double* cx = comp.data() + Index(x) * r.dim;
        for (int c = 0; c < r.dim; ++c) kahan_add(ox[c], cx[c], ds * kj[c]);
      }
    }
    for (Index e = 0; e < Index(blk.count) * r.dim; ++e) out[e] *= r.scale;
  });

  if (!want_kv) return;
  // dV_j = sum_h sum_i P_ij dO_i and dK_j = scale * sum_h sum_i dS_ij Q_i over the query heads
  // sharing K/V head hk and the queries that see key j.
  const Index nkv = Index(kv_rows.size());
  for_blocks(r.batch, r.kv_heads, kv_rows.size(), pool, [&](int b, int hk, Index x0, Index x1) {
    thread_local std::vector<double> s, dp;
    thread_local std::vector<Index> from, to;
    thread_local std::vector<const double*> kx, vx;
    const int count = static_cast<int>(x1 - x0);
    const Index kvg = Index(b) * r.kv_heads + hk;
    s.resize(std::size_t(count) * r.seq_q);
    dp.resize(std::size_t(count) * r.seq_q);
    from.resize(count);
    to.assign(count, r.seq_q);
    kx.resize(count);
    vx.resize(count);
    for (int x = 0; x < count; ++x) {
      const Index j = kv_rows[x0 + x];
      from[x] = r.mask.first_row(static_cast<int>(j));  // queries before it do not see key j
      kx[x] = k.row(kvg, j);
      vx[x] = v.row(kvg, j);
    }
    double* dk_out = dk + (kvg * nkv + x0) * r.dim;
    double* dv_out = dv + (kvg * nkv + x0) * r.dim;
    std::fill(dk_out, dk_out + Index(count) * r.dim, 0.0);
    std::fill(dv_out, dv_out + Index(count) * r.dim, 0.0);
    thread_local std::vector<double> dk_comp, dv_comp;
    dk_comp.assign(std::size_t(count) * r.dim, 0.0);
    dv_comp.assign(std::size_t(count) * r.dim, 0.0);
    const Index first = *std::min_element(from.begin(), from.end());
    for (int t = 0; t < r.group; ++t) {
      const int h = hk * r.group + t;
      q.products(kx.data(), from.data(), to.data(), count, r.qgroup(b, h), s.data());
      dout.products(vx.data(), from.data(), to.data(), count, r.qgroup(b, h), dp.data());
      for (Index i = first; i < r.seq_q; ++i) {
        const double* qi = q.row(r.qgroup(b, h), i);
        const double* doi = dout.row(r.qgroup(b, h), i);
        const double row_lse = lse[stat(b, h, i)], row_d = dsum[stat(b, h, i)];
        for (int x = 0; x < count; ++x) {
          if (i < from[x]) continue;
          const Index e = Index(x) * r.seq_q + i;
          const double pij = std::exp(r.scale * s[e] - row_lse);
          const double ds = pij * (dp[e] - row_d);
          double* dvx = dv_out + Index(x) * r.dim;
          double* dkx = dk_out + Index(x) * r.dim;
          double* dvc = dv_comp.data() + Index(x) * r.dim;
          double* dkc = dk_comp.data() + Index(x) * r.dim;
          for (int c = 0; c < r.dim; ++c) {
            kahan_add(dvx[c], dvc[c], pij * doi[c]);
            kahan_add(dkx[c], dkc[c], ds * qi[c]);
          }
        }
      }
    }
    for (Index e = 0; e < Index(count) * r.dim; ++e) dk_out[e] *= r.scale;
  });
}

}  // namespace fb::cpu
