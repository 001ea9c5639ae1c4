// Host tests [fp8] of the padding naive's CUDA fp8 path runs on at shapes off cuBLASLt FP8's 16-code
// grid (kernels/naive/fp8_pad.h): the padded extents, the workspace buffers they need (none at aligned
// shapes, so the aligned path is the one it was), the copy's index map, and that attention computed on
// the padded operands, with keys past seq_k masked, is attention on the originals. The device side
// (the same index map in fp8.cu's copy kernel, cuBLASLt on the padded operands) is
// tests/test_gpu_fp8_pad.cpp's.
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "catch.h"
#include "naive/fp8_pad.h"

namespace {

using namespace fb;
using namespace fb::cuda::naive;

AttentionParams shape(int batch, int heads, int kv_heads, int seq_q, int seq_k, int dim, bool causal = false) {
  AttentionParams p;
  p.dtype = Dtype::fp8;
  p.batch = batch;
  p.heads = heads;
  p.kv_heads = kv_heads;
  p.seq_q = seq_q;
  p.seq_k = seq_k;
  p.head_dim = dim;
  p.causal = causal;
  p.scale = 1.0 / std::sqrt(double(dim));
  return p;
}

// Applies a Resize on the host with the index map the device copy uses.
template <typename T> std::vector<T> resize_on_host(const Resize& g, const std::vector<T>& src) {
  std::vector<T> out(static_cast<std::size_t>(g.out_elems()));
  for (std::int64_t i = 0; i < g.out_elems(); ++i) {
    const std::int64_t s = g.source(i);
    out[std::size_t(i)] = s < 0 ? T(0) : src[std::size_t(s)];
  }
  return out;
}

}  // namespace

TEST_CASE("fp8 padding: head_dim and seq_k rounded up to 16, nothing at aligned shapes", "[fp8]") {
  const Fp8Padding aligned = fp8_padding(shape(1, 4, 4, 100, 256, 64));
  CHECK(aligned.dim_pad == 64);
  CHECK(aligned.keys_pad == 256);
  CHECK_FALSE(aligned.any());

  const Fp8Padding both = fp8_padding(shape(1, 4, 4, 777, 777, 72));
  CHECK(both.dim_pad == 80);
  CHECK(both.keys_pad == 784);
  CHECK(both.pads_dim());
  CHECK(both.pads_keys());

  const Fp8Padding one_key = fp8_padding(shape(1, 1, 1, 1, 1, 16));
  CHECK(one_key.keys_pad == 16);
  CHECK_FALSE(one_key.pads_dim());
  CHECK(fp8_round_up(16) == 16);
  CHECK(fp8_round_up(17) == 32);
}

TEST_CASE("fp8 padding: the workspace holds every padded operand, and none at aligned shapes", "[fp8]") {
  // Aligned: only V^T, as before the padding existed (the layout, and so the run, is unchanged).
  const AttentionParams a = shape(2, 8, 2, 1000, 1024, 128);
  const Fp8PadBuffers ba = fp8_pad_buffers(a);
  CHECK(ba.vt == std::size_t(a.kv_elems()));
  CHECK(ba.q == 0);
  CHECK(ba.k == 0);
  CHECK(ba.o == 0);

  // seq_k off the grid: K gets padding rows, V^T padding columns; Q and O untouched.
  const AttentionParams k = shape(2, 8, 2, 1000, 777, 128);
  const Fp8PadBuffers bk = fp8_pad_buffers(k);
  CHECK(bk.vt == std::size_t(2 * 2 * 784 * 128));
  CHECK(bk.k == std::size_t(2 * 2 * 784 * 128));
  CHECK(bk.q == 0);
  CHECK(bk.o == 0);

  // head_dim off the grid: Q and K dp wide, O dp wide in bf16 (2 bytes), V^T dp rows.
  const AttentionParams d = shape(1, 4, 2, 200, 333, 72);
  const Fp8PadBuffers bd = fp8_pad_buffers(d);
  CHECK(bd.q == std::size_t(1 * 4 * 200 * 80));
  CHECK(bd.o == std::size_t(1 * 4 * 200 * 80 * 2));
  CHECK(bd.k == std::size_t(1 * 2 * 336 * 80));
  CHECK(bd.vt == std::size_t(1 * 2 * 80 * 336));
  // Every copy writes exactly its buffer.
  CHECK(std::size_t(fp8_q_resize(d).out_elems()) == bd.q);
  CHECK(std::size_t(fp8_k_resize(d).out_elems()) == bd.k);
  CHECK(std::size_t(fp8_o_crop(d).out_elems()) == std::size_t(d.q_elems()));
}

TEST_CASE("fp8 padding: the copy's index map pads with zeros, crops, and round-trips", "[fp8]") {
  const Resize pad{3, 5, 7, 16, 16};  // 3 matrices of 5 x 7 into 16 x 16
  std::vector<int> src(3 * 5 * 7);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = int(i) + 1;  // no zeros among the real values
  const std::vector<int> padded = resize_on_host(pad, src);
  REQUIRE(padded.size() == std::size_t(3 * 16 * 16));
  std::vector<int> seen(src.size(), 0);
  for (int b = 0; b < 3; ++b)
    for (int r = 0; r < 16; ++r)
      for (int c = 0; c < 16; ++c) {
        const int v = padded[std::size_t((b * 16 + r) * 16 + c)];
        if (r < 5 && c < 7) {
          CHECK(v == src[std::size_t((b * 5 + r) * 7 + c)]);
          ++seen[std::size_t(v - 1)];
        } else {
          CHECK(v == 0);
        }
      }
  for (int n : seen) CHECK(n == 1);  // every input element lands once

  const Resize crop{3, 16, 16, 5, 7};
  CHECK(resize_on_host(crop, padded) == src);
}

TEST_CASE("fp8 padding: attention on the padded operands with keys past seq_k masked is the same",
          "[fp8]") {
  // In exact arithmetic on small integer values (exact in double too): S from the dp-wide Q and K
  // equals S from the originals (zero columns add 0), keys in [seq_k, np) are excluded as the row
  // kernel excludes them, P V from V^T's padded layout and O's crop give the original O.
  // seq_q < seq_k and > seq_k (causal: the first 9 rows then see no key); both extents padded.
  for (const AttentionParams& p : {shape(2, 4, 2, 9, 21, 6, false), shape(2, 4, 2, 9, 21, 6, true),
                                   shape(1, 2, 1, 30, 21, 6, true)}) {
    const Fp8Padding pad = fp8_padding(p);
    const int d = p.head_dim, dp = pad.dim_pad, n = p.seq_k, np = pad.keys_pad;
    const std::int64_t planes = std::int64_t(p.batch) * p.kv_heads, rows_g = std::int64_t(p.group()) * p.seq_q;
    std::mt19937 gen(7);
    std::uniform_int_distribution<int> small(-3, 3);
    std::vector<double> q(std::size_t(p.q_elems())), k(std::size_t(p.kv_elems())), v(std::size_t(p.kv_elems()));
    for (auto* t : {&q, &k, &v})
      for (double& x : *t) x = small(gen);
    const std::vector<double> qp = resize_on_host(fp8_q_resize(p), q), kp = resize_on_host(fp8_k_resize(p), k);
    // V^T as transpose_kv writes it: [plane][dp][np], zeros past d and n.
    std::vector<double> vt(std::size_t(planes * dp * np), 0.0);
    for (std::int64_t h = 0; h < planes; ++h)
      for (int j = 0; j < n; ++j)
        for (int c = 0; c < d; ++c) vt[std::size_t((h * dp + c) * np + j)] = v[std::size_t((h * n + j) * d + c)];

    const CausalMask mask = p.mask();
    std::vector<double> o_pad(std::size_t(p.rows() * dp)), o_plain(std::size_t(p.q_elems()));
    std::vector<double> lse_pad(std::size_t(p.rows())), lse_plain(std::size_t(p.rows()));
    for (std::int64_t h = 0; h < planes; ++h)
      for (std::int64_t r = 0; r < rows_g; ++r) {
        const std::int64_t row = h * rows_g + r;  // over batch * heads * seq_q
        const int end = mask.key_end(int(row % p.seq_q));
        // Padded: the GEMM's full np-wide S row, then the row kernel's mask (j >= end: -inf, P = 0).
        std::vector<double> s(static_cast<std::size_t>(np));
        for (int j = 0; j < np; ++j) {
          double acc = 0;
          for (int c = 0; c < dp; ++c) acc += qp[std::size_t(row * dp + c)] * kp[std::size_t((h * np + j) * dp + c)];
          s[std::size_t(j)] = j < end ? acc * p.scale : -std::numeric_limits<double>::infinity();
        }
        double mx = -std::numeric_limits<double>::infinity(), sum = 0;
        for (double x : s) mx = std::max(mx, x);
        for (double& x : s) sum += (x = end == 0 ? 0.0 : std::exp(x - mx));
        lse_pad[std::size_t(row)] = end == 0 ? -std::numeric_limits<double>::infinity() : mx + std::log(sum);
        for (int c = 0; c < dp; ++c) {
          double acc = 0;
          for (int j = 0; j < np; ++j) acc += (end == 0 ? 0.0 : s[std::size_t(j)] / sum) * vt[std::size_t((h * dp + c) * np + j)];
          o_pad[std::size_t(row * dp + c)] = acc;
        }
        // Plain: the originals, keys [0, end) only.
        double mx2 = -std::numeric_limits<double>::infinity(), sum2 = 0;
        std::vector<double> s2(static_cast<std::size_t>(end));
        for (int j = 0; j < end; ++j) {
          double acc = 0;
          for (int c = 0; c < d; ++c) acc += q[std::size_t(row * d + c)] * k[std::size_t((h * n + j) * d + c)];
          s2[std::size_t(j)] = acc * p.scale;
          mx2 = std::max(mx2, s2[std::size_t(j)]);
        }
        for (double& x : s2) sum2 += (x = std::exp(x - mx2));
        lse_plain[std::size_t(row)] = end == 0 ? -std::numeric_limits<double>::infinity() : mx2 + std::log(sum2);
        for (int c = 0; c < d; ++c) {
          double acc = 0;
          for (int j = 0; j < end; ++j) acc += s2[std::size_t(j)] / sum2 * v[std::size_t((h * n + j) * d + c)];
          o_plain[std::size_t(row * d + c)] = acc;
        }
      }
    const std::vector<double> o_cropped = resize_on_host(fp8_o_crop(p), o_pad);
    REQUIRE(o_cropped.size() == o_plain.size());
    for (std::size_t i = 0; i < o_plain.size(); ++i) CHECK(std::abs(o_cropped[i] - o_plain[i]) <= 1e-12);
    for (std::size_t i = 0; i < lse_plain.size(); ++i) {
      if (std::isinf(lse_plain[i])) CHECK(lse_pad[i] == lse_plain[i]);
      else CHECK(std::abs(lse_pad[i] - lse_plain[i]) <= 1e-12);
    }
    // O's padding columns are 0 (V^T's padding rows are), so the crop drops nothing.
    for (std::int64_t r = 0; r < p.rows(); ++r)
      for (int c = d; c < dp; ++c) CHECK(o_pad[std::size_t(r * dp + c)] == 0.0);
  }
}
