// The mutants of mutants.h: one plain CPU FlashAttention, forward and backward, with a bug switch.
#include "mutants.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <type_traits>
#include <vector>

#include "backend/cpu/cpu_attention.h"
#include "backend/cpu/numeric.h"

namespace fb::test {

namespace {

using cpu::AccOf;
using cpu::load;
using cpu::store;
using Index = std::int64_t;

constexpr int kKeyTile = 64;

struct Geometry {
  int batch, heads, kv_heads, seq_q, seq_k, dim, group;
  bool causal;
  Index q_off(int b, int h) const { return (Index(b) * heads + h) * seq_q * dim; }
  Index kv_off(int b, int g) const { return (Index(b) * kv_heads + g) * seq_k * dim; }
  Index row_off(int b, int h) const { return (Index(b) * heads + h) * seq_q; }
};

Geometry geometry(const AttentionParams& p) {
  return {p.batch, p.heads, p.kv_heads, p.seq_q, p.seq_k, p.head_dim, p.group(), p.causal};
}

int kv_head_of(Bug bug, const Geometry& g, int h) {
  return bug == Bug::gqa_modulo ? h % g.kv_heads : h / g.group;
}

// Keys [0, end) query i sees (causal: bottom-right aligned, j <= i + seq_k - seq_q).
int visible_end(Bug bug, const Geometry& g, int i) {
  int end = g.seq_k;
  if (g.causal) {
    const int last = i + g.seq_k - g.seq_q;  // the last visible key
    end = last + 1;
    if (bug == Bug::causal_plus_one) end = last + 2;
    if (bug == Bug::causal_minus_one) end = last;
    end = std::max(0, std::min(g.seq_k, end));
  }
  if (bug == Bug::skip_last_16) end = std::min(end, std::max(0, g.seq_k - 16));
  if (bug == Bug::skip_last_tile) end = std::min(end, (g.seq_k - 1) / kKeyTile * kKeyTile);
  return end;
}

// A tensor widened to the accumulator type once, so that the inner loops are plain arithmetic.
template <class T> std::vector<AccOf<T>> widen(const void* data, Index n) {
  const T* x = static_cast<const T*>(data);
  std::vector<AccOf<T>> out(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) out[i] = load(x[i]);
  return out;
}

// fp8 (kernels/attention.h): the e4m3 codes are loaded unscaled (exact in fp32), Q's and K's descales
// go into the score scale and V's into O, as an FP8 kernel does; P is rounded to e4m3 at p_scale, O to
// bf16. The backward is not built for fp8.
template <class T> constexpr bool kIsFp8 = std::is_same_v<T, cpu::Fp8E4m3>;
template <class T> using OutOf = std::conditional_t<kIsFp8<T>, cpu::BFloat16, T>;

template <class T> void forward_t(Bug bug, const AttentionParams& p, const cpu::Context& ctx) {
  using A = AccOf<T>;
  const Geometry g = geometry(p);
  A scale = bug == Bug::scale_one_over_d ? A(1) / A(g.dim) : A(p.scale);
  if constexpr (kIsFp8<T>) scale *= p.descale_q * p.descale_k;
  const A p_scale = kIsFp8<T> ? A(p.p_scale) : A(1);
  const A v_scale = kIsFp8<T> ? A(p.descale_v) : A(1);
  const std::vector<A> qw = widen<T>(p.q, p.q_elems()), kw = widen<T>(p.k, p.kv_elems()),
                       vw = widen<T>(p.v, p.kv_elems());
  const A* q = qw.data();
  const A* k = kw.data();
  const A* v = vw.data();
  OutOf<T>* o = static_cast<OutOf<T>*>(p.o);
  A* lse = static_cast<A*>(p.lse);
  const Index rows = Index(g.batch) * g.heads * g.seq_q;
  ctx.pool->parallel_for(rows, [&](Index task, int) {
    const int i = int(task % g.seq_q);
    const int h = int(task / g.seq_q % g.heads);
    const int b = int(task / g.seq_q / g.heads);
    const int hk = kv_head_of(bug, g, h);
    const A* qrow = q + g.q_off(b, h) + Index(i) * g.dim;
    const A* kb = k + g.kv_off(b, hk);
    const A* vb = v + g.kv_off(b, hk);
    std::vector<A> acc(g.dim, A(0)), s(kKeyTile);
    A m = -std::numeric_limits<A>::infinity(), l = 0;
    const int end = visible_end(bug, g, i);
    for (int j0 = 0; j0 < end; j0 += kKeyTile) {
      const int n = std::min(kKeyTile, end - j0);
      A tile_max = -std::numeric_limits<A>::infinity();
      for (int j = 0; j < n; ++j) {
        const A* kj = kb + Index(j0 + j) * g.dim;
        A dot = 0;
        for (int c = 0; c < g.dim; ++c) dot += qrow[c] * kj[c];
        s[j] = dot * scale;
        tile_max = std::max(tile_max, s[j]);
      }
      const A m_new = std::max(m, tile_max);
      const A correction = std::exp(m - m_new);
      l *= correction;
      if (bug != Bug::no_rescale)
        for (int c = 0; c < g.dim; ++c) acc[c] *= correction;
      for (int j = 0; j < n; ++j) {
        const A pj = std::exp(s[j] - m_new);
        l += pj;
        const A pr = load(store<T>(pj * p_scale));  // P in the input dtype for P.V, as on tensor cores
        const A* vj = vb + Index(j0 + j) * g.dim;
        for (int c = 0; c < g.dim; ++c) acc[c] += pr * vj[c];
      }
      m = m_new;
    }
    OutOf<T>* oi = o + g.q_off(b, h) + Index(i) * g.dim;
    // A row with no visible key: O = 0, LSE = -inf (kernels/attention.h).
    for (int c = 0; c < g.dim; ++c)
      oi[c] = store<OutOf<T>>(bug == Bug::zero_output || l == 0 ? A(0) : acc[c] * v_scale / (p_scale * l));
    A value = l == 0 ? -std::numeric_limits<A>::infinity() : m + std::log(l);
    if (bug == Bug::lse_base2) value *= A(1.4426950408889634);
    lse[g.row_off(b, h) + i] = value;
  });
}

template <class T> void backward_t(Bug bug, const AttentionParams& p, const cpu::Context& ctx) {
  using A = AccOf<T>;
  const Geometry g = geometry(p);
  const A scale = bug == Bug::scale_one_over_d ? A(1) / A(g.dim) : A(p.scale);
  const std::vector<A> qw = widen<T>(p.q, p.q_elems()), kw = widen<T>(p.k, p.kv_elems()),
                       vw = widen<T>(p.v, p.kv_elems()), ow = widen<T>(p.o, p.q_elems()),
                       dow = widen<T>(p.dout, p.q_elems());
  const A* q = qw.data();
  const A* k = kw.data();
  const A* v = vw.data();
  const A* o = ow.data();
  const A* dout = dow.data();
  const A* lse = static_cast<const A*>(p.lse);
  T* dq = static_cast<T*>(p.dq);
  T* dk = static_cast<T*>(p.dk);
  T* dv = static_cast<T*>(p.dv);
  const Index rows = Index(g.batch) * g.heads * g.seq_q;

  // D = rowsum(dO o O) per query row.
  std::vector<A> d(rows, A(0));
  if (bug != Bug::no_rowsum_term)
    ctx.pool->parallel_for(rows, [&](Index r, int) {
      A sum = 0;
      for (int c = 0; c < g.dim; ++c) sum += dout[r * g.dim + c] * o[r * g.dim + c];
      d[r] = sum;
    });
  const A log2e = A(1.4426950408889634);
  // P_ij = exp(S_ij - LSE_i), with the LSE the forward wrote (base 2 undone the way the bug wrote it).
  const auto p_of = [&](A s, Index row) {
    const A l = bug == Bug::lse_base2 ? lse[row] / log2e : lse[row];
    return std::exp(s - l);
  };
  const auto dot = [&](const A* a, const A* b) {
    A sum = 0;
    for (int c = 0; c < g.dim; ++c) sum += a[c] * b[c];
    return sum;
  };
  const auto score = [&](const A* qi, const A* kj) { return dot(qi, kj) * scale; };

  // dQ_i = scale sum_j dS_ij K_j, one task per query row.
  ctx.pool->parallel_for(rows, [&](Index task, int) {
    const int i = int(task % g.seq_q);
    const int h = int(task / g.seq_q % g.heads);
    const int b = int(task / g.seq_q / g.heads);
    const int hk = kv_head_of(bug, g, h);
    const A* qi = q + g.q_off(b, h) + Index(i) * g.dim;
    const A* doi = dout + g.q_off(b, h) + Index(i) * g.dim;
    std::vector<A> acc(g.dim, A(0));
    const int end = visible_end(bug, g, i);
    for (int j = 0; j < end; ++j) {
      const A* kj = k + g.kv_off(b, hk) + Index(j) * g.dim;
      const A* vj = v + g.kv_off(b, hk) + Index(j) * g.dim;
      const A pij = p_of(score(qi, kj), task);
      const A ds = pij * (dot(doi, vj) - d[task]);
      for (int c = 0; c < g.dim; ++c) acc[c] += ds * kj[c];
    }
    T* out = dq + g.q_off(b, h) + Index(i) * g.dim;
    for (int c = 0; c < g.dim; ++c) out[c] = store<T>(scale * acc[c]);
  });

  // dK_j, dV_j: one task per (batch, K/V head, key row), over the query heads that read that K/V head.
  const Index kv_rows = Index(g.batch) * g.kv_heads * g.seq_k;
  ctx.pool->parallel_for(kv_rows, [&](Index task, int) {
    const int j = int(task % g.seq_k);
    const int hk = int(task / g.seq_k % g.kv_heads);
    const int b = int(task / g.seq_k / g.kv_heads);
    const A* kj = k + g.kv_off(b, hk) + Index(j) * g.dim;
    const A* vj = v + g.kv_off(b, hk) + Index(j) * g.dim;
    std::vector<A> acc_k(g.dim, A(0)), acc_v(g.dim, A(0));
    for (int h = 0; h < g.heads; ++h) {
      if (kv_head_of(bug, g, h) != hk) continue;
      for (int i = 0; i < g.seq_q; ++i) {
        if (j >= visible_end(bug, g, i)) continue;
        const Index row = g.row_off(b, h) + i;
        const A* qi = q + g.q_off(b, h) + Index(i) * g.dim;
        const A* doi = dout + g.q_off(b, h) + Index(i) * g.dim;
        const A pij = p_of(score(qi, kj), row);
        const A ds = pij * (dot(doi, vj) - d[row]);
        for (int c = 0; c < g.dim; ++c) {
          acc_v[c] += pij * doi[c];
          acc_k[c] += ds * qi[c];
        }
      }
    }
    const int target = bug == Bug::dkdv_other_head ? (hk + 1) % g.kv_heads : hk;
    T* outk = dk + g.kv_off(b, target) + Index(j) * g.dim;
    T* outv = dv + g.kv_off(b, target) + Index(j) * g.dim;
    for (int c = 0; c < g.dim; ++c) {
      outk[c] = store<T>(scale * acc_k[c]);
      outv[c] = store<T>(acc_v[c]);
    }
  });
}

std::string slug(Bug b) {
  switch (b) {
    case Bug::none: return "control";
    case Bug::zero_output: return "zero-output";
    case Bug::skip_last_tile: return "skip-last-tile";
    case Bug::skip_last_16: return "skip-last-16-keys";
    case Bug::causal_plus_one: return "causal-plus-one";
    case Bug::causal_minus_one: return "causal-minus-one";
    case Bug::no_rescale: return "no-rescale";
    case Bug::scale_one_over_d: return "scale-1-over-d";
    case Bug::lse_base2: return "lse-base2";
    case Bug::gqa_modulo: return "gqa-modulo";
    case Bug::no_rowsum_term: return "no-rowsum-term";
    case Bug::dkdv_other_head: return "dkdv-other-head";
  }
  return "?";
}

Mutant make(Bug b, bool bwd, bool causal, bool gqa) { return {b, "mutant-" + slug(b), bwd, causal, gqa}; }

}  // namespace

const std::vector<Mutant>& mutants() {
  static const std::vector<Mutant> list = {
      make(Bug::zero_output, false, false, false),     make(Bug::skip_last_tile, false, false, false),
      make(Bug::skip_last_16, false, false, false),    make(Bug::causal_plus_one, false, true, false),
      make(Bug::causal_minus_one, false, true, false), make(Bug::no_rescale, false, false, false),
      make(Bug::scale_one_over_d, false, false, false), make(Bug::lse_base2, false, false, false),
      make(Bug::gqa_modulo, false, false, true),       make(Bug::no_rowsum_term, true, false, false),
      make(Bug::dkdv_other_head, true, false, false),
  };
  return list;
}

Mutant control() { return make(Bug::none, false, false, false); }

Descriptor mutant_descriptor(const Mutant& m) {
  Descriptor d;
  d.name = m.name;
  d.description = "test mutant: " + slug(m.bug);
  d.role = Role::tiled;
  d.dtypes = {std::begin(kDtypes), std::end(kDtypes)};
  d.passes = {Pass::fwd, Pass::bwd, Pass::fwd_bwd};
  d.bytes = tiled_bytes;
  d.origin = "tests/mutants.cpp";
  const Bug bug = m.bug;
  d.cpu.unsupported = [](Pass pass, const AttentionParams& p) -> std::optional<std::string> {
    if (p.dtype == Dtype::fp8 && pass != Pass::fwd) return std::string("fp8 runs the forward only");
    return std::nullopt;
  };
  d.cpu.workspace_bytes = [](Pass, const AttentionParams&) { return std::size_t(0); };
  d.cpu.forward = [bug](const AttentionParams& p, const cpu::Context& ctx, cpu::Saved&) {
    cpu::dispatch_dtype(p.dtype, [&](auto tag) { forward_t<decltype(tag)>(bug, p, ctx); });
  };
  d.cpu.backward = [bug](const AttentionParams& p, const cpu::Context& ctx, cpu::Saved&) {
    cpu::dispatch_dtype(p.dtype, [&](auto tag) {
      if constexpr (!kIsFp8<decltype(tag)>) backward_t<decltype(tag)>(bug, p, ctx);
    });
  };
  return d;
}

}  // namespace fb::test
