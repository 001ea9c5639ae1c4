// Naive and tiled (flash) attention on the CPU, forward and backward. The reference is in
// cpu_reference.cpp.
//
// Both algorithms are built from the same pieces: tile loads that convert the storage type to the
// accumulator type (A = double for fp64, float otherwise), three small row-major GEMMs whose inner
// loop runs over contiguous memory (so the compiler vectorises them without reassociating sums),
// and the one causal rule of kernels/common/mask.h (bottom-right aligned when seq_q != seq_k).
#include "backend/cpu/cpu_attention.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "backend/cpu/numeric.h"

namespace fb::cpu {

namespace {

using Index = std::int64_t;

// Target number of parallel tasks flash_backward makes per call by splitting each (batch, K/V
// head) into slices of KV tiles; a constant rather than the thread count so results do not depend
// on the machine. Each slice costs one dQ accumulator, so this bounds that extra memory too.
constexpr int kBackwardTasks = 16;

// Shapes of one call and the BHSD offsets derived from them.
struct Shape {
  int batch, heads, kv_heads, seq_q, seq_k, dim, group;
  bool causal;
  CausalMask mask;

  Index q_offset(int b, int h) const { return (Index(b) * heads + h) * seq_q * dim; }
  Index kv_offset(int b, int hk) const { return (Index(b) * kv_heads + hk) * seq_k * dim; }
  Index row_offset(int b, int h) const { return (Index(b) * heads + h) * seq_q; }  // LSE, D
  // S, P, dP, dS: [batch, heads, seq_q, seq_k].
  Index nn_offset(int b, int h) const { return (Index(b) * heads + h) * seq_q * seq_k; }
  // Keys a block of queries [i0, i0 + rows) sees: [0, key_end) (0 when every row is empty).
  Index key_end(Index i0, int rows) const { return mask.key_end(static_cast<int>(i0), rows); }
  // Keys query i sees: [0, keys(i)).
  Index keys(Index i) const { return mask.key_end(static_cast<int>(i)); }
  bool masked(Index query, Index key) const {
    return !mask.visible(static_cast<int>(query), static_cast<int>(key));
  }
};

Shape shape_of(const AttentionParams& p) {
  return Shape{p.batch, p.heads,    p.kv_heads, p.seq_q,  p.seq_k,
               p.head_dim, p.group(), p.causal,   p.mask()};
}

int ceil_div(Index a, Index b) { return static_cast<int>((a + b - 1) / b); }

// A task index split into (batch, head, tile) with tile fastest.
struct TaskId {
  int b, h, tile;
};
TaskId split_task(Index task, int heads, int tiles) {
  const int tile = static_cast<int>(task % tiles);
  const Index bh = task / tiles;
  return TaskId{static_cast<int>(bh / heads), static_cast<int>(bh % heads), tile};
}

// ---- fp8 (e4m3 inputs with per-tensor descales, kernels/attention.h) ----

template <class T> constexpr bool kIsFp8 = std::is_same_v<T, Fp8E4m3>;
// Element type of O: T itself, bf16 for fp8.
template <class T> using OutOf = std::conditional_t<kIsFp8<T>, BFloat16, T>;
// Factor on Q K^T: the softmax scale, times the descales of Q and K for fp8 (its codes are loaded
// unscaled, exactly).
template <class T> AccOf<T> score_scale(const AttentionParams& p) {
  if constexpr (kIsFp8<T>) return AccOf<T>(p.scale) * p.descale_q * p.descale_k;
  return static_cast<AccOf<T>>(p.scale);
}
// P as P.V reads it: fp8 rounds P * p_scale to e4m3 (P.V then carries p_scale, out_scale removes
// it); other dtypes keep P as it is.
template <class T> AccOf<T> quantise_p(AccOf<T> x, const AttentionParams& p) {
  if constexpr (kIsFp8<T>) return fp8_e4m3_round(x * p.p_scale);
  (void)p;
  return x;
}
// Factor on the P.V accumulator: descale_v / p_scale for fp8, 1 otherwise.
template <class T> AccOf<T> out_scale(const AttentionParams& p) {
  if constexpr (kIsFp8<T>) return p.descale_v / p.p_scale;
  (void)p;
  return AccOf<T>(1);
}

// ---- tile moves: storage type T <-> accumulator type A ----

// dst (rows x cols, leading dim ld_dst) = src (leading dim ld_src).
template <class T, class A>
void load_tile(const T* src, Index ld_src, int rows, int cols, A* dst, int ld_dst) {
  for (int r = 0; r < rows; ++r) {
    const T* s = src + r * ld_src;
    A* o = dst + Index(r) * ld_dst;
    for (int c = 0; c < cols; ++c) o[c] = load(s[c]);
  }
}

// dst (cols x rows, leading dim ld_dst) = transpose of src (rows x cols).
template <class T, class A>
void load_tile_transposed(const T* src, Index ld_src, int rows, int cols, A* dst, int ld_dst) {
  for (int r = 0; r < rows; ++r) {
    const T* s = src + r * ld_src;
    for (int c = 0; c < cols; ++c) dst[Index(c) * ld_dst + r] = load(s[c]);
  }
}

// dst (rows x cols, leading dim ld_dst) = factor * src, rounded to T.
template <class T, class A>
void store_tile(const A* src, int ld_src, int rows, int cols, A factor, T* dst, Index ld_dst) {
  for (int r = 0; r < rows; ++r) {
    const A* s = src + Index(r) * ld_src;
    T* o = dst + r * ld_dst;
    for (int c = 0; c < cols; ++c) o[c] = store<T>(factor * s[c]);
  }
}

// ---- GEMMs on accumulator tiles, row-major ----

// C (m x n) = A (m x k) * B (k x n), or C += when `accumulate`.
template <class A> void gemm_nn(int m, int n, int k, const A* __restrict__ a, int lda,
                                const A* __restrict__ b, int ldb, A* __restrict__ c, int ldc,
                                bool accumulate) {
  for (int r = 0; r < m; ++r) {
    A* cr = c + Index(r) * ldc;
    if (!accumulate) std::fill(cr, cr + n, A(0));
    const A* ar = a + Index(r) * lda;
    for (int t = 0; t < k; ++t) {
      const A av = ar[t];
      const A* br = b + Index(t) * ldb;
      for (int col = 0; col < n; ++col) cr[col] += av * br[col];
    }
  }
}

// C (m x n) += A^T * B with A (k x m), B (k x n).
template <class A> void gemm_tn(int m, int n, int k, const A* __restrict__ a, int lda,
                                const A* __restrict__ b, int ldb, A* __restrict__ c, int ldc) {
  for (int t = 0; t < k; ++t) {
    const A* at = a + Index(t) * lda;
    const A* bt = b + Index(t) * ldb;
    for (int r = 0; r < m; ++r) {
      const A av = at[r];
      A* cr = c + Index(r) * ldc;
      for (int col = 0; col < n; ++col) cr[col] += av * bt[col];
    }
  }
}

// One row of a tile's online-softmax step (the flash forward and the split-KV decode): sr holds the
// row's nc scaled scores, -inf where the mask hides a key. Turns them into exp(s - m_new), folds their
// sum into the running sum l, and rescales the row's O accumulator by exp(m - m_new); a row that has
// seen no visible key yet adds nothing (its P stays 0, m stays -inf).
template <class A> void online_softmax_row(A* sr, int nc, A& m, A& l, A* orow, int d) {
  const A neg_inf = -std::numeric_limits<A>::infinity();
  A row_max = neg_inf;
  for (int c = 0; c < nc; ++c) row_max = std::max(row_max, sr[c]);
  const A m_new = std::max(m, row_max);
  if (m_new == neg_inf) {
    std::fill(sr, sr + nc, A(0));
    return;
  }
  const A alpha = std::exp(m - m_new);  // 0 on the first visited tile (m = -inf)
  A sum = 0;
  for (int c = 0; c < nc; ++c) {
    sr[c] = std::exp(sr[c] - m_new);
    sum += sr[c];
  }
  l = alpha * l + sum;
  m = m_new;
  for (int c = 0; c < d; ++c) orow[c] *= alpha;
}

// Per-thread scratch arrays of A: one Buffer per worker, charged to the tracker, holding arrays of
// the given element counts (each starting on a cache line).
template <class A> class Scratch {
 public:
  Scratch(MemoryTracker& tracker, int workers, std::initializer_list<Index> counts) {
    constexpr Index kLine = 64 / sizeof(A);
    Index total = 0;
    for (Index n : counts) {
      offsets_.push_back(total);
      total += (n + kLine - 1) / kLine * kLine;
    }
    for (int w = 0; w < workers; ++w) buffers_.push_back(make_buffer<A>(tracker, total));
  }
  A* get(int worker, int which) { return buffers_[worker].template as<A>() + offsets_[which]; }

 private:
  std::vector<Index> offsets_;
  std::vector<Buffer> buffers_;
};

// D = rowsum(dO o O), per query row, in the accumulator type.
template <class T> void rowsum_do_o(const AttentionParams& p, const Context& ctx, AccOf<T>* d_out) {
  using A = AccOf<T>;
  const Shape s = shape_of(p);
  const T* o = static_cast<const T*>(p.o);
  const T* dout = static_cast<const T*>(p.dout);
  const int rows_per_task = ctx.tiles.br;
  const int tiles = ceil_div(s.seq_q, rows_per_task);
  ctx.pool->parallel_for(Index(s.batch) * s.heads * tiles, [&](Index task, int) {
    const TaskId id = split_task(task, s.heads, tiles);
    const Index i0 = Index(id.tile) * rows_per_task;
    const int mr = static_cast<int>(std::min<Index>(rows_per_task, s.seq_q - i0));
    for (int r = 0; r < mr; ++r) {
      const Index e = s.q_offset(id.b, id.h) + (i0 + r) * s.dim;
      A sum = 0;
      for (int c = 0; c < s.dim; ++c) sum += load(dout[e + c]) * load(o[e + c]);
      d_out[s.row_offset(id.b, id.h) + i0 + r] = sum;
    }
  });
}

// ================================ naive ================================

// out[b, h, i, j] = alpha * (X[b, h] Y[b, h / group]^T)[i, j], or `fill` where (i, j) is masked and for
// keys past the causal end of a row: one seq_q x seq_k array per (batch, head), as the naive path
// keeps them. X is query-side ([batch, heads, seq_q, d]: Q or dO), Y key-side ([batch, kv_heads,
// seq_k, d]: K or V).
template <class T, class Out = T>
void masked_products(const Shape& s, const Context& ctx, const T* x, const T* y, AccOf<T> alpha,
                     AccOf<T> fill, Out* out) {
  using A = AccOf<T>;
  const int br = ctx.tiles.br, bc = ctx.tiles.bc, d = s.dim;
  const Index nq = s.seq_q, n = s.seq_k;  // n: row stride of the score arrays
  const int q_tiles = ceil_div(nq, br);
  ThreadPool& pool = *ctx.pool;
  Scratch<A> scratch(*ctx.tracker, pool.size(), {Index(br) * d, Index(d) * bc, Index(br) * bc});
  pool.parallel_for(Index(s.batch) * s.heads * q_tiles, [&](Index task, int w) {
    const TaskId id = split_task(task, s.heads, q_tiles);
    A* xs = scratch.get(w, 0);  // (br, d)
    A* yt = scratch.get(w, 1);  // (d, bc)
    A* pt = scratch.get(w, 2);  // (br, bc)
    const Index i0 = Index(id.tile) * br;
    const int mr = static_cast<int>(std::min<Index>(br, nq - i0));
    const T* yh = y + s.kv_offset(id.b, id.h / s.group);
    Out* rows = out + s.nn_offset(id.b, id.h) + i0 * n;
    load_tile(x + s.q_offset(id.b, id.h) + i0 * d, d, mr, d, xs, d);
    const Index key_end = s.key_end(i0, mr);
    for (Index j0 = 0; j0 < key_end; j0 += bc) {
      const int nc = static_cast<int>(std::min<Index>(bc, key_end - j0));
      load_tile_transposed(yh + j0 * d, d, nc, d, yt, bc);
      gemm_nn(mr, nc, d, xs, d, yt, bc, pt, bc, false);
      for (int r = 0; r < mr; ++r)
        for (int c = 0; c < nc; ++c)
          rows[r * n + j0 + c] = store<Out>(s.masked(i0 + r, j0 + c) ? fill : alpha * pt[Index(r) * bc + c]);
    }
    for (int r = 0; r < mr; ++r) std::fill(rows + r * n + key_end, rows + (r + 1) * n, store<Out>(fill));
  });
}

// fp8: S in fp32 (what an FP8 GEMM with fp32 output writes), P stored as e4m3(P * p_scale), O in bf16.
template <class T>
void naive_forward_t(const AttentionParams& p, const Context& ctx, Saved* saved) {
  using A = AccOf<T>;
  using TS = std::conditional_t<kIsFp8<T>, float, T>;  // storage of S
  const Shape s = shape_of(p);
  const int br = ctx.tiles.br, bc = ctx.tiles.bc, d = s.dim;
  const Index nq = s.seq_q, n = s.seq_k;  // n: row stride of S and P
  const A scale = score_scale<T>(p);
  const A neg_inf = -std::numeric_limits<A>::infinity();
  const T* q = static_cast<const T*>(p.q);
  const T* k = static_cast<const T*>(p.k);
  const T* v = static_cast<const T*>(p.v);
  OutOf<T>* o = static_cast<OutOf<T>*>(p.o);
  A* lse = static_cast<A*>(p.lse);
  ThreadPool& pool = *ctx.pool;
  MemoryTracker& mem = *ctx.tracker;

  if (saved != nullptr) saved->p.reset();
  const Index nn = Index(s.batch) * s.heads * nq * n;
  Buffer s_buf = make_buffer<TS>(mem, nn);  // S [batch, heads, seq_q, seq_k]
  Buffer p_buf = make_buffer<T>(mem, nn);   // P [batch, heads, seq_q, seq_k]
  TS* S = s_buf.as<TS>();
  T* P = p_buf.as<T>();
  const int q_tiles = ceil_div(nq, br);
  const Index tasks = Index(s.batch) * s.heads * q_tiles;

  // 1. S = scale * Q K^T; masked scores are -inf.
  masked_products(s, ctx, q, k, scale, neg_inf, S);

  {  // 2. P = softmax(S) row by row (statistics in A, from the stored S); LSE = m + log(sum).
    Scratch<A> scratch(mem, pool.size(), {n});
    pool.parallel_for(tasks, [&](Index task, int w) {
      const TaskId id = split_task(task, s.heads, q_tiles);
      A* e = scratch.get(w, 0);  // (seq_k): exp(s - m) of one row
      const Index i0 = Index(id.tile) * br;
      const Index i1 = std::min<Index>(i0 + br, nq);
      for (Index i = i0; i < i1; ++i) {
        const TS* srow = S + s.nn_offset(id.b, id.h) + i * n;
        T* prow = P + s.nn_offset(id.b, id.h) + i * n;
        const Index cols = s.keys(i);
        if (cols == 0) {  // an empty row (causal, seq_q > seq_k): P = 0, O = 0, LSE = -inf
          std::fill(prow, prow + n, store<T>(A(0)));
          lse[s.row_offset(id.b, id.h) + i] = neg_inf;
          continue;
        }
        A m = neg_inf;
        for (Index j = 0; j < cols; ++j) m = std::max(m, load(srow[j]));
        A sum = 0;
        for (Index j = 0; j < cols; ++j) {
          e[j] = std::exp(load(srow[j]) - m);
          sum += e[j];
        }
        const A inv = A(1) / sum;
        for (Index j = 0; j < cols; ++j) prow[j] = store<T>(kIsFp8<T> ? e[j] * inv * p.p_scale : e[j] * inv);
        std::fill(prow + cols, prow + n, store<T>(A(0)));
        lse[s.row_offset(id.b, id.h) + i] = m + std::log(sum);
      }
    });
  }
  s_buf.reset();  // S is not needed any more

  {  // 3. O = P V.
    Scratch<A> scratch(mem, pool.size(), {Index(br) * bc, Index(bc) * d, Index(br) * d});
    pool.parallel_for(tasks, [&](Index task, int w) {
      const TaskId id = split_task(task, s.heads, q_tiles);
      A* ps = scratch.get(w, 0);    // (br, bc)
      A* vs = scratch.get(w, 1);    // (bc, d)
      A* oacc = scratch.get(w, 2);  // (br, d)
      const Index i0 = Index(id.tile) * br;
      const int mr = static_cast<int>(std::min<Index>(br, nq - i0));
      const T* vh = v + s.kv_offset(id.b, id.h / s.group);
      const T* prows = P + s.nn_offset(id.b, id.h) + i0 * n;
      const Index key_end = s.key_end(i0, mr);
      if (key_end == 0) std::fill(oacc, oacc + Index(mr) * d, A(0));  // every row empty
      for (Index j0 = 0; j0 < key_end; j0 += bc) {
        const int nc = static_cast<int>(std::min<Index>(bc, key_end - j0));
        load_tile(prows + j0, n, mr, nc, ps, bc);
        load_tile(vh + j0 * d, d, nc, d, vs, d);
        gemm_nn(mr, d, nc, ps, bc, vs, d, oacc, d, j0 > 0);
      }
      store_tile(oacc, d, mr, d, out_scale<T>(p), o + s.q_offset(id.b, id.h) + i0 * d, d);
    });
  }
  if (saved != nullptr) saved->p = std::move(p_buf);
}

template <class T>
void naive_backward_t(const AttentionParams& p, const Context& ctx, const Saved& saved) {
  using A = AccOf<T>;
  const Shape s = shape_of(p);
  const int br = ctx.tiles.br, bc = ctx.tiles.bc, d = s.dim;
  const Index nq = s.seq_q, n = s.seq_k;  // n: row stride of P, dP and dS
  const A scale = static_cast<A>(p.scale);
  const T* q = static_cast<const T*>(p.q);
  const T* k = static_cast<const T*>(p.k);
  const T* v = static_cast<const T*>(p.v);
  const T* dout = static_cast<const T*>(p.dout);
  T* dq = static_cast<T*>(p.dq);
  T* dk = static_cast<T*>(p.dk);
  T* dv = static_cast<T*>(p.dv);
  ThreadPool& pool = *ctx.pool;
  MemoryTracker& mem = *ctx.tracker;

  const Index nn = Index(s.batch) * s.heads * nq * n;
  if (saved.p.empty() || saved.p.bytes() != static_cast<std::size_t>(nn) * sizeof(T))
    throw std::invalid_argument(
        "naive_backward: no saved P of this shape (run naive_forward with a Saved first)");
  const T* P = saved.p.as<T>();

  Buffer d_buf = make_buffer<A>(mem, Index(s.batch) * s.heads * nq);  // D [batch, heads, seq_q]
  A* D = d_buf.as<A>();
  rowsum_do_o<T>(p, ctx, D);

  Buffer ds_buf = make_buffer<T>(mem, nn);  // dP, then dS in place [batch, heads, seq_q, seq_k]
  T* dS = ds_buf.as<T>();
  const int q_tiles = ceil_div(nq, br);
  const Index q_tasks = Index(s.batch) * s.heads * q_tiles;

  // 1. dP = dO V^T (zero where masked).
  masked_products(s, ctx, dout, v, A(1), A(0), dS);

  // 2. dS = P o (dP - D), in place; masked entries have P = 0 and stay 0.
  pool.parallel_for(q_tasks, [&](Index task, int) {
    const TaskId id = split_task(task, s.heads, q_tiles);
    const Index i0 = Index(id.tile) * br;
    const Index i1 = std::min<Index>(i0 + br, nq);
    for (Index i = i0; i < i1; ++i) {
      const T* prow = P + s.nn_offset(id.b, id.h) + i * n;
      T* row = dS + s.nn_offset(id.b, id.h) + i * n;
      const A di = D[s.row_offset(id.b, id.h) + i];
      const Index cols = s.keys(i);
      for (Index j = 0; j < cols; ++j) row[j] = store<T>(load(prow[j]) * (load(row[j]) - di));
    }
  });

  {  // 3. dQ = scale * dS K.
    Scratch<A> scratch(mem, pool.size(), {Index(br) * bc, Index(bc) * d, Index(br) * d});
    pool.parallel_for(q_tasks, [&](Index task, int w) {
      const TaskId id = split_task(task, s.heads, q_tiles);
      A* dss = scratch.get(w, 0);    // (br, bc)
      A* ks = scratch.get(w, 1);     // (bc, d)
      A* dqacc = scratch.get(w, 2);  // (br, d)
      const Index i0 = Index(id.tile) * br;
      const int mr = static_cast<int>(std::min<Index>(br, nq - i0));
      const T* kh = k + s.kv_offset(id.b, id.h / s.group);
      const T* rows = dS + s.nn_offset(id.b, id.h) + i0 * n;
      const Index key_end = s.key_end(i0, mr);
      if (key_end == 0) std::fill(dqacc, dqacc + Index(mr) * d, A(0));  // every row empty
      for (Index j0 = 0; j0 < key_end; j0 += bc) {
        const int nc = static_cast<int>(std::min<Index>(bc, key_end - j0));
        load_tile(rows + j0, n, mr, nc, dss, bc);
        load_tile(kh + j0 * d, d, nc, d, ks, d);
        gemm_nn(mr, d, nc, dss, bc, ks, d, dqacc, d, j0 > 0);
      }
      store_tile(dqacc, d, mr, d, scale, dq + s.q_offset(id.b, id.h) + i0 * d, d);
    });
  }

  {  // 4. dV = sum_h P^T dO and dK = scale * sum_h dS^T Q over the query heads of each K/V head.
    const int kv_tiles = ceil_div(n, bc);
    Scratch<A> scratch(mem, pool.size(),
                       {Index(br) * bc, Index(br) * d, Index(bc) * d, Index(bc) * d});
    pool.parallel_for(Index(s.batch) * s.kv_heads * kv_tiles, [&](Index task, int w) {
      // id.h is the K/V head, id.tile the KV tile.
      const TaskId id = split_task(task, s.kv_heads, kv_tiles);
      A* tile = scratch.get(w, 0);   // (br, bc): P, then dS
      A* rows = scratch.get(w, 1);   // (br, d): dO, then Q
      A* dvacc = scratch.get(w, 2);  // (bc, d)
      A* dkacc = scratch.get(w, 3);  // (bc, d)
      const Index j0 = Index(id.tile) * bc;
      const int nc = static_cast<int>(std::min<Index>(bc, n - j0));
      std::fill(dvacc, dvacc + Index(bc) * d, A(0));
      std::fill(dkacc, dkacc + Index(bc) * d, A(0));
      // Causal: query rows before mask.first_row(j0) see none of these keys.
      const int first_q_tile = s.mask.first_q_tile(static_cast<int>(j0), br);
      for (int t = 0; t < s.group; ++t) {
        const int h = id.h * s.group + t;
        for (int it = first_q_tile; it < q_tiles; ++it) {
          const Index i0 = Index(it) * br;
          const int mr = static_cast<int>(std::min<Index>(br, nq - i0));
          const Index at = s.nn_offset(id.b, h) + i0 * n + j0;
          load_tile(P + at, n, mr, nc, tile, bc);
          load_tile(dout + s.q_offset(id.b, h) + i0 * d, d, mr, d, rows, d);
          gemm_tn(nc, d, mr, tile, bc, rows, d, dvacc, d);
          load_tile(dS + at, n, mr, nc, tile, bc);
          load_tile(q + s.q_offset(id.b, h) + i0 * d, d, mr, d, rows, d);
          gemm_tn(nc, d, mr, tile, bc, rows, d, dkacc, d);
        }
      }
      const Index kv = s.kv_offset(id.b, id.h) + j0 * d;
      store_tile(dvacc, d, nc, d, A(1), dv + kv, d);
      store_tile(dkacc, d, nc, d, scale, dk + kv, d);
    });
  }
}

// ================================ flash ================================

// fp8: P = exp(S - m) of each tile rounded to e4m3 (times p_scale) for P.V, after its fp32 values
// went into the row sum l (as FlashAttention-3 does); O in bf16.
template <class T> void flash_forward_t(const AttentionParams& p, const Context& ctx) {
  using A = AccOf<T>;
  const Shape s = shape_of(p);
  const int br = ctx.tiles.br, bc = ctx.tiles.bc, d = s.dim;
  const Index nq = s.seq_q;
  const A scale = score_scale<T>(p);
  const A o_scale = out_scale<T>(p);
  const A neg_inf = -std::numeric_limits<A>::infinity();
  const T* q = static_cast<const T*>(p.q);
  const T* k = static_cast<const T*>(p.k);
  const T* v = static_cast<const T*>(p.v);
  OutOf<T>* o = static_cast<OutOf<T>*>(p.o);
  A* lse = static_cast<A*>(p.lse);
  ThreadPool& pool = *ctx.pool;

  const int q_tiles = ceil_div(nq, br);
  Scratch<A> scratch(
      *ctx.tracker, pool.size(),
      {Index(br) * d, Index(d) * bc, Index(bc) * d, Index(br) * bc, Index(br) * d, br, br});
  pool.parallel_for(Index(s.batch) * s.heads * q_tiles, [&](Index task, int w) {
    const TaskId id = split_task(task, s.heads, q_tiles);
    A* qs = scratch.get(w, 0);    // (br, d)
    A* kt = scratch.get(w, 1);    // (d, bc)
    A* vs = scratch.get(w, 2);    // (bc, d)
    A* st = scratch.get(w, 3);    // (br, bc): S, then P
    A* oacc = scratch.get(w, 4);  // (br, d)
    A* m = scratch.get(w, 5);     // (br): running row max
    A* l = scratch.get(w, 6);     // (br): running row sum of exp(s - m)
    const Index i0 = Index(id.tile) * br;
    const int mr = static_cast<int>(std::min<Index>(br, nq - i0));
    const T* kh = k + s.kv_offset(id.b, id.h / s.group);
    const T* vh = v + s.kv_offset(id.b, id.h / s.group);
    load_tile(q + s.q_offset(id.b, id.h) + i0 * d, d, mr, d, qs, d);
    std::fill(m, m + mr, neg_inf);
    std::fill(l, l + mr, A(0));
    std::fill(oacc, oacc + Index(mr) * d, A(0));

    // Causal: tiles starting after the last query row are fully masked and never visited.
    const Index key_end = s.key_end(i0, mr);
    for (Index j0 = 0; j0 < key_end; j0 += bc) {
      const int nc = static_cast<int>(std::min<Index>(bc, key_end - j0));
      load_tile_transposed(kh + j0 * d, d, nc, d, kt, bc);
      load_tile(vh + j0 * d, d, nc, d, vs, d);
      gemm_nn(mr, nc, d, qs, d, kt, bc, st, bc, false);  // S = Q_i K_j^T
      // Only a tile that reaches past the first query row's last key holds masked entries.
      const bool diagonal = s.mask.tile_needs_mask(static_cast<int>(i0), static_cast<int>(j0), nc);
      for (int r = 0; r < mr; ++r) {
        A* sr = st + Index(r) * bc;
        for (int c = 0; c < nc; ++c) sr[c] = (diagonal && s.masked(i0 + r, j0 + c)) ? neg_inf : scale * sr[c];
        online_softmax_row(sr, nc, m[r], l[r], oacc + Index(r) * d, d);
        if constexpr (kIsFp8<T>)
          for (int c = 0; c < nc; ++c) sr[c] = quantise_p<T>(sr[c], p);
      }
      gemm_nn(mr, d, nc, st, bc, vs, d, oacc, d, true);  // O += P V_j
    }
    OutOf<T>* orows = o + s.q_offset(id.b, id.h) + i0 * d;
    for (int r = 0; r < mr; ++r) {
      // An empty row (no visible key) has l = 0: O = 0 and LSE = -inf (attention.h).
      const A inv = l[r] > A(0) ? o_scale / l[r] : A(0);
      for (int c = 0; c < d; ++c) orows[Index(r) * d + c] = store<OutOf<T>>(oacc[Index(r) * d + c] * inv);
      lse[s.row_offset(id.b, id.h) + i0 + r] = l[r] > A(0) ? m[r] + std::log(l[r]) : neg_inf;
    }
  });
}

template <class T> void flash_backward_t(const AttentionParams& p, const Context& ctx) {
  using A = AccOf<T>;
  const Shape s = shape_of(p);
  const int br = ctx.tiles.br, bc = ctx.tiles.bc, d = s.dim;
  const Index nq = s.seq_q, n = s.seq_k;
  const A scale = static_cast<A>(p.scale);
  const T* q = static_cast<const T*>(p.q);
  const T* k = static_cast<const T*>(p.k);
  const T* v = static_cast<const T*>(p.v);
  const T* dout = static_cast<const T*>(p.dout);
  const A* lse = static_cast<const A*>(p.lse);
  T* dq = static_cast<T*>(p.dq);
  T* dk = static_cast<T*>(p.dk);
  T* dv = static_cast<T*>(p.dv);
  ThreadPool& pool = *ctx.pool;
  MemoryTracker& mem = *ctx.tracker;

  const Index rows = Index(s.batch) * s.heads * nq;
  Buffer d_buf = make_buffer<A>(mem, rows);  // D [batch, heads, seq_q]
  A* D = d_buf.as<A>();
  rowsum_do_o<T>(p, ctx, D);

  const int slices = flash_backward_slices(p, ctx.tiles);
  const Index q_size = rows * d;
  // Per slice: unscaled dQ [batch, heads, seq_q, d].
  Buffer dq_buf = make_buffer<A>(mem, slices * q_size);
  A* dq_acc = dq_buf.as<A>();
  std::fill(dq_acc, dq_acc + slices * q_size, A(0));

  const int q_tiles = ceil_div(nq, br);
  const int kv_tiles = ceil_div(n, bc);
  {
    Scratch<A> scratch(mem, pool.size(),
                       {Index(d) * bc, Index(bc) * d, Index(d) * bc, Index(br) * d, Index(br) * d,
                        Index(br) * bc, Index(br) * bc, Index(bc) * d, Index(bc) * d});
    // Task = (batch, K/V head, slice); slice `sl` takes KV tiles sl, sl + slices, ... (interleaved
    // so causal work, heavier for the first KV tiles, spreads over the slices).
    pool.parallel_for(Index(s.batch) * s.kv_heads * slices, [&](Index task, int w) {
      // id.h is the K/V head, id.tile the slice.
      const TaskId id = split_task(task, s.kv_heads, slices);
      A* kt = scratch.get(w, 0);     // (d, bc)
      A* ks = scratch.get(w, 1);     // (bc, d)
      A* vt = scratch.get(w, 2);     // (d, bc)
      A* qs = scratch.get(w, 3);     // (br, d)
      A* dos = scratch.get(w, 4);    // (br, d)
      A* pt = scratch.get(w, 5);     // (br, bc): P
      A* dst = scratch.get(w, 6);    // (br, bc): dP, then dS
      A* dkacc = scratch.get(w, 7);  // (bc, d)
      A* dvacc = scratch.get(w, 8);  // (bc, d)
      A* dq_slice = dq_acc + id.tile * q_size;
      const T* kh = k + s.kv_offset(id.b, id.h);
      const T* vh = v + s.kv_offset(id.b, id.h);
      for (int jt = id.tile; jt < kv_tiles; jt += slices) {
        const Index j0 = Index(jt) * bc;
        const int nc = static_cast<int>(std::min<Index>(bc, n - j0));
        load_tile_transposed(kh + j0 * d, d, nc, d, kt, bc);
        load_tile(kh + j0 * d, d, nc, d, ks, d);
        load_tile_transposed(vh + j0 * d, d, nc, d, vt, bc);
        std::fill(dkacc, dkacc + Index(bc) * d, A(0));
        std::fill(dvacc, dvacc + Index(bc) * d, A(0));
        // Causal: query rows before mask.first_row(j0) see none of these keys.
        const int first_q_tile = s.mask.first_q_tile(static_cast<int>(j0), br);
        for (int t = 0; t < s.group; ++t) {
          const int h = id.h * s.group + t;
          const A* lse_h = lse + s.row_offset(id.b, h);
          const A* d_h = D + s.row_offset(id.b, h);
          for (int it = first_q_tile; it < q_tiles; ++it) {
            const Index i0 = Index(it) * br;
            const int mr = static_cast<int>(std::min<Index>(br, nq - i0));
            load_tile(q + s.q_offset(id.b, h) + i0 * d, d, mr, d, qs, d);
            load_tile(dout + s.q_offset(id.b, h) + i0 * d, d, mr, d, dos, d);
            gemm_nn(mr, nc, d, qs, d, kt, bc, pt, bc, false);    // S = Q_i K_j^T
            gemm_nn(mr, nc, d, dos, d, vt, bc, dst, bc, false);  // dP = dO_i V_j^T
            for (int r = 0; r < mr; ++r) {
              A* pr = pt + Index(r) * bc;
              A* dsr = dst + Index(r) * bc;
              const A row_lse = lse_h[i0 + r], row_d = d_h[i0 + r];
              for (int c = 0; c < nc; ++c) {
                pr[c] = s.masked(i0 + r, j0 + c) ? A(0) : std::exp(scale * pr[c] - row_lse);
                dsr[c] = pr[c] * (dsr[c] - row_d);  // dS = P o (dP - D)
              }
            }
            gemm_tn(nc, d, mr, pt, bc, dos, d, dvacc, d);  // dV_j += P^T dO_i
            gemm_tn(nc, d, mr, dst, bc, qs, d, dkacc, d);  // dK_j += dS^T Q_i
            // dQ_i += dS K_j, straight into this slice's accumulator (no other task writes it).
            gemm_nn(mr, d, nc, dst, bc, ks, d, dq_slice + s.q_offset(id.b, h) + i0 * d, d, true);
          }
        }
        const Index kv = s.kv_offset(id.b, id.h) + j0 * d;
        store_tile(dvacc, d, nc, d, A(1), dv + kv, d);
        store_tile(dkacc, d, nc, d, scale, dk + kv, d);
      }
    });
  }

  // dQ = scale * sum over slices, in slice order.
  pool.parallel_for(Index(s.batch) * s.heads * q_tiles, [&](Index task, int) {
    const TaskId id = split_task(task, s.heads, q_tiles);
    const Index i0 = Index(id.tile) * br;
    const Index i1 = std::min<Index>(i0 + br, nq);
    const Index e0 = s.q_offset(id.b, id.h) + i0 * d, e1 = s.q_offset(id.b, id.h) + i1 * d;
    for (Index e = e0; e < e1; ++e) {
      A sum = dq_acc[e];
      for (int sl = 1; sl < slices; ++sl) sum += dq_acc[sl * q_size + e];
      dq[e] = store<T>(scale * sum);
    }
  });
}

// ================================ flash-decode ================================

template <class T> void decode_forward_t(const AttentionParams& p, const Context& ctx) {
  using A = AccOf<T>;
  const Shape s = shape_of(p);
  const int d = s.dim, bc = kDecodeTileKeys;
  const int rows = s.group * s.seq_q;  // query rows of one (batch, K/V head), contiguous in BHSD
  const Index total_rows = Index(s.batch) * s.heads * s.seq_q;
  const SplitPlan plan = decode_plan(p);
  const A scale = static_cast<A>(p.scale);
  const A neg_inf = -std::numeric_limits<A>::infinity();
  const T* q = static_cast<const T*>(p.q);
  const T* k = static_cast<const T*>(p.k);
  const T* v = static_cast<const T*>(p.v);
  T* o = static_cast<T*>(p.o);
  A* lse = static_cast<A*>(p.lse);
  const bool direct = plan.splits == 1;
  if (!direct && p.workspace == nullptr)
    throw std::invalid_argument("flash-decode: params.workspace is null (decode_workspace_bytes asks for it)");
  A* part_o = static_cast<A*>(p.workspace);                                  // [splits, total_rows, d]
  A* part_lse = direct ? nullptr : part_o + Index(plan.splits) * total_rows * d;  // [splits, total_rows]
  ThreadPool& pool = *ctx.pool;

  Scratch<A> scratch(*ctx.tracker, pool.size(),
                     {Index(rows) * d, Index(d) * bc, Index(bc) * d, Index(rows) * bc, Index(rows) * d, rows, rows});
  const Index groups = Index(s.batch) * s.kv_heads;
  pool.parallel_for(groups * plan.splits, [&](Index task, int w) {
    const Index bkv = task / plan.splits;
    const int split = static_cast<int>(task % plan.splits);
    A* qs = scratch.get(w, 0);    // (rows, d)
    A* kt = scratch.get(w, 1);    // (d, bc)
    A* vs = scratch.get(w, 2);    // (bc, d)
    A* st = scratch.get(w, 3);    // (rows, bc): S, then P
    A* oacc = scratch.get(w, 4);  // (rows, d)
    A* m = scratch.get(w, 5);     // (rows)
    A* l = scratch.get(w, 6);     // (rows)
    const Index row0 = bkv * rows;  // first global query row of the group
    const int k_lo = plan.key_begin(split, s.seq_k), k_hi = plan.key_end(split, s.seq_k);
    load_tile(q + row0 * d, d, rows, d, qs, d);
    std::fill(m, m + rows, neg_inf);
    std::fill(l, l + rows, A(0));
    std::fill(oacc, oacc + Index(rows) * d, A(0));
    const T* kh = k + bkv * s.seq_k * d;
    const T* vh = v + bkv * s.seq_k * d;
    // Each K/V tile is loaded once and applied to all rows of the group.
    for (int j0 = k_lo; j0 < k_hi; j0 += bc) {
      const int nc = std::min(bc, k_hi - j0);
      load_tile_transposed(kh + Index(j0) * d, d, nc, d, kt, bc);
      load_tile(vh + Index(j0) * d, d, nc, d, vs, d);
      gemm_nn(rows, nc, d, qs, d, kt, bc, st, bc, false);  // S = Q K^T
      for (int r = 0; r < rows; ++r) {
        const int key_end = s.mask.key_end(r % s.seq_q);  // rows run over heads, then positions
        A* sr = st + Index(r) * bc;
        for (int c = 0; c < nc; ++c) sr[c] = j0 + c < key_end ? scale * sr[c] : neg_inf;
        online_softmax_row(sr, nc, m[r], l[r], oacc + Index(r) * d, d);
      }
      gemm_nn(rows, d, nc, st, bc, vs, d, oacc, d, true);  // O += P V
    }
    for (int r = 0; r < rows; ++r) {
      // No visible key in this split (or at all): l = 0, O = 0, LSE = -inf.
      const A inv = l[r] > A(0) ? A(1) / l[r] : A(0);
      const A row_lse = l[r] > A(0) ? m[r] + std::log(l[r]) : neg_inf;
      const A* orow = oacc + Index(r) * d;
      if (direct) {
        for (int c = 0; c < d; ++c) o[(row0 + r) * d + c] = store<T>(orow[c] * inv);
        lse[row0 + r] = row_lse;
      } else {
        const Index prow = Index(split) * total_rows + row0 + r;
        for (int c = 0; c < d; ++c) part_o[prow * d + c] = orow[c] * inv;
        part_lse[prow] = row_lse;
      }
    }
  });
  if (direct) return;

  // Combine: splits in index order, so the result does not depend on the thread count.
  pool.parallel_for(total_rows, [&](Index row, int) {
    A top = neg_inf;
    for (int sp = 0; sp < plan.splits; ++sp) top = std::max(top, part_lse[Index(sp) * total_rows + row]);
    const A sub = top == neg_inf ? A(0) : top;
    A w_sum = 0;
    T* orow = o + row * d;
    std::vector<A> acc(std::size_t(d), A(0));
    for (int sp = 0; sp < plan.splits; ++sp) {
      const Index prow = Index(sp) * total_rows + row;
      const A w = std::exp(part_lse[prow] - sub);  // 0 for a split that showed the row no key
      if (w == A(0)) continue;
      w_sum += w;
      for (int c = 0; c < d; ++c) acc[std::size_t(c)] += w * part_o[prow * d + c];
    }
    const A inv = w_sum > A(0) ? A(1) / w_sum : A(0);
    for (int c = 0; c < d; ++c) orow[c] = store<T>(acc[std::size_t(c)] * inv);
    lse[row] = w_sum > A(0) ? sub + std::log(w_sum) : neg_inf;
  });
}

}  // namespace

// ================================ entry points ================================

void check_shape(const AttentionParams& p, const Tiles& tiles) {
  auto fail = [](const std::string& what) {
    throw std::invalid_argument("attention params: " + what);
  };
  if (p.batch < 1) fail("batch must be >= 1, got " + std::to_string(p.batch));
  if (p.heads < 1) fail("heads must be >= 1, got " + std::to_string(p.heads));
  if (p.kv_heads < 1 || p.heads % p.kv_heads != 0)
    fail("kv_heads must divide heads (" + std::to_string(p.heads) + "), got " +
         std::to_string(p.kv_heads));
  if (p.seq_q < 1) fail("seq_q must be >= 1, got " + std::to_string(p.seq_q));
  if (p.seq_k < 1) fail("seq_k must be >= 1, got " + std::to_string(p.seq_k));
  if (p.head_dim < 1) fail("head_dim must be >= 1, got " + std::to_string(p.head_dim));
  if (!std::isfinite(p.scale) || p.scale == 0) fail("scale must be finite and non-zero");
  if (tiles.br < 1 || tiles.bc < 1)
    fail("tiles must be >= 1, got " + std::to_string(tiles.br) + "x" + std::to_string(tiles.bc));
}

void check_params(const AttentionParams& p, Pass pass, const Tiles& tiles) {
  check_shape(p, tiles);
  if (!p.q || !p.k || !p.v || !p.o || !p.lse)
    throw std::invalid_argument("attention params: q, k, v, o and lse must be set");
  if (pass != Pass::fwd && (!p.dout || !p.dq || !p.dk || !p.dv))
    throw std::invalid_argument(
        "attention params: dout, dq, dk and dv must be set for a backward pass");
}

std::uint64_t naive_matrix_bytes(const AttentionParams& p) {
  const std::uint64_t nq = static_cast<std::uint64_t>(p.seq_q), nk = static_cast<std::uint64_t>(p.seq_k);
  // S and P in the dtype; fp8 keeps S in fp32 and P in e4m3.
  const std::uint64_t per = p.dtype == Dtype::fp8 ? dtype_bytes(Dtype::fp32) + dtype_bytes(Dtype::fp8)
                                                  : 2 * dtype_bytes(p.dtype);
  return std::uint64_t(p.batch) * std::uint64_t(p.heads) * nq * nk * per;
}

int flash_backward_slices(const AttentionParams& p, const Tiles& tiles) {
  const int groups = p.batch * p.kv_heads;
  const int kv_tiles = ceil_div(p.seq_k, tiles.bc);
  const int wanted = (kBackwardTasks + groups - 1) / groups;
  return std::max(1, std::min(kv_tiles, wanted));
}

namespace {
constexpr const char* kNoFp8Backward = "fp8 runs the forward only (no fp8 backward is built)";
void check_context(const Context& ctx) {
  if (ctx.tracker == nullptr || ctx.pool == nullptr)
    throw std::invalid_argument("cpu attention: context needs a tracker and a pool");
}
}  // namespace

void naive_forward(const AttentionParams& p, const Context& ctx, Saved* saved) {
  check_params(p, Pass::fwd, ctx.tiles);
  check_context(ctx);
  dispatch_dtype(p.dtype, [&](auto t) { naive_forward_t<decltype(t)>(p, ctx, saved); });
}

void naive_backward(const AttentionParams& p, const Context& ctx, const Saved& saved) {
  check_params(p, Pass::bwd, ctx.tiles);
  check_context(ctx);
  dispatch_dtype(p.dtype, [&](auto t) {
    if constexpr (kIsFp8<decltype(t)>) throw std::invalid_argument(kNoFp8Backward);
    else naive_backward_t<decltype(t)>(p, ctx, saved);
  });
}

void flash_forward(const AttentionParams& p, const Context& ctx) {
  check_params(p, Pass::fwd, ctx.tiles);
  check_context(ctx);
  dispatch_dtype(p.dtype, [&](auto t) { flash_forward_t<decltype(t)>(p, ctx); });
}

SplitPlan decode_plan(const AttentionParams& p) {
  return plan_splits(p.seq_k, p.kv_splits, static_cast<long long>(p.batch) * p.kv_heads, kDecodeTargetTasks,
                     kDecodeTileKeys, kDecodeTileKeys);
}

std::size_t decode_workspace_bytes(const AttentionParams& p) {
  const SplitPlan plan = decode_plan(p);
  if (plan.splits <= 1) return 0;
  return std::size_t(plan.splits) * std::size_t(p.rows()) * std::size_t(p.head_dim + 1) * accum_bytes(p.dtype);
}

void decode_forward(const AttentionParams& p, const Context& ctx) {
  check_params(p, Pass::fwd, ctx.tiles);
  check_context(ctx);
  if (p.seq_q > kDecodeMaxSeqQ)
    throw std::invalid_argument("flash-decode: seq_q must be at most " + std::to_string(kDecodeMaxSeqQ) +
                                ", got " + std::to_string(p.seq_q));
  if (p.kv_splits < 0 || p.kv_splits > kMaxKvSplits)
    throw std::invalid_argument("flash-decode: kv_splits must be 0 (auto) .. " + std::to_string(kMaxKvSplits) +
                                ", got " + std::to_string(p.kv_splits));
  dispatch_dtype(p.dtype, [&](auto t) {
    if constexpr (kIsFp8<decltype(t)>) throw std::invalid_argument("flash-decode: fp8 is not built");
    else decode_forward_t<decltype(t)>(p, ctx);
  });
}

void flash_backward(const AttentionParams& p, const Context& ctx) {
  check_params(p, Pass::bwd, ctx.tiles);
  check_context(ctx);
  dispatch_dtype(p.dtype, [&](auto t) {
    if constexpr (kIsFp8<decltype(t)>) throw std::invalid_argument(kNoFp8Backward);
    else flash_backward_t<decltype(t)>(p, ctx);
  });
}

}  // namespace fb::cpu
