/* An example flashbench plug-in in plain C99: tiled attention with an online softmax, forward and
 * backward, on the CPU, for every flashbench dtype (fp16/bf16 are converted bit by bit; all arithmetic
 * is in double). It is meant to be read: one query row at a time, keys in tiles of KEY_TILE rows, no
 * threads, no SIMD. Build it with flashbench (CMake target fb_example_cpu) or by hand:
 *
 *     cc -O2 -fPIC -shared -I include examples/plugin/cpu/tiled_attention.c -o libfb_example_cpu.so -lm
 *     flashbench run configs/plugin_example.json --kernel-lib ./libfb_example_cpu.so
 *
 * Everything flashbench needs to know is in the table at the bottom (flashbench_plugin). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "flashbench/plugin.h"

#define KEY_TILE 64 /* key rows per tile (Bc): the scores of one tile live in the workspace */

/* ---- element access: every dtype read as and written from double ---- */

static double half_to_double(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0)
    v = ldexp((double)mant, -24); /* subnormal: mant * 2^-24 */
  else if (exp == 31)
    v = mant ? NAN : INFINITY;
  else { /* normal: the same fields, re-biased into a float (exact) */
    const uint32_t u = (uint32_t)(exp - 15 + 127) << 23 | (uint32_t)mant << 13;
    float f;
    memcpy(&f, &u, sizeof f);
    v = f;
  }
  return sign ? -v : v;
}

/* Round to nearest, ties to even. */
static uint16_t double_to_half(double x) {
  if (isnan(x)) return 0x7e00;
  const uint16_t sign = signbit(x) ? 0x8000 : 0;
  double a = fabs(x);
  if (a >= 65520.0) return sign | 0x7c00; /* past the largest half (65504) by half an ulp: inf */
  int e;
  frexp(a, &e); /* a = f * 2^e, f in [0.5, 1) */
  int exp = e - 1 + 15;           /* biased exponent of a as a half */
  if (exp < 1) exp = 1;           /* subnormals share the smallest normal's spacing */
  const double ulp = ldexp(1.0, exp - 15 - 10);
  double m = nearbyint(a / ulp);  /* the default rounding mode: to nearest, ties to even */
  /* m counts ulps of 2^(exp-25); it may carry into the next binade (m = 2048), which the bit layout
   * absorbs: (exp-1) << 10 + m. */
  if (a < ldexp(1.0, -14)) return sign | (uint16_t)m; /* subnormal (m = 1024 is the smallest normal) */
  return sign | (uint16_t)(((exp - 1) << 10) + (int)m);
}

static double bf16_to_double(uint16_t b) {
  const uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint16_t double_to_bf16(double x) {
  float f = (float)x;
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if (isnan(f)) return 0x7fc0;
  u += 0x7fff + ((u >> 16) & 1); /* round to nearest even on the 16 dropped bits */
  return (uint16_t)(u >> 16);
}

static double load(const void* base, int32_t dtype, int64_t i) {
  switch (dtype) {
    case FB_FP64: return ((const double*)base)[i];
    case FB_FP32: return ((const float*)base)[i];
    case FB_FP16: return half_to_double(((const uint16_t*)base)[i]);
    default: return bf16_to_double(((const uint16_t*)base)[i]);
  }
}

static void store(void* base, int32_t dtype, int64_t i, double x) {
  switch (dtype) {
    case FB_FP64: ((double*)base)[i] = x; break;
    case FB_FP32: ((float*)base)[i] = (float)x; break;
    case FB_FP16: ((uint16_t*)base)[i] = double_to_half(x); break;
    default: ((uint16_t*)base)[i] = double_to_bf16(x); break;
  }
}

/* LSE is double for fp64 cases, float otherwise. */
static void store_lse(const fb_params* p, int64_t i, double x) {
  if (p->dtype == FB_FP64)
    ((double*)p->lse)[i] = x;
  else
    ((float*)p->lse)[i] = (float)x;
}
static double load_lse(const fb_params* p, int64_t i) {
  return p->dtype == FB_FP64 ? ((const double*)p->lse)[i] : ((const float*)p->lse)[i];
}

static int64_t at(const int64_t* stride, int b, int h, int row) {
  return b * stride[0] + h * stride[1] + row * stride[2];
}

/* Keys [0, end) query row i sees: bottom-right causal alignment, j <= i + seq_k - seq_q. */
static int key_end(const fb_params* p, int i) {
  if (!p->causal) return p->seq_k;
  const int end = i + p->seq_k - p->seq_q + 1;
  return end < 0 ? 0 : end > p->seq_k ? p->seq_k : end;
}

/* ---- the error message of the last failed call ---- */

static _Thread_local char last_message[256];

static int fail(const char* what) {
  snprintf(last_message, sizeof last_message, "%s", what);
  return FB_ERROR;
}

static const char* last_error(void) { return last_message; }

/* ---- workspace (doubles) ----
 * forward : acc[d] (the O row being accumulated), s[KEY_TILE] (one tile's scores)
 * backward: the forward's, plus dq[d] and dK, dV accumulators for every key row of one K/V head:
 *           2 * seq_k * d. Accumulated in double, written in the dtype at the end. */

static uint64_t workspace_bytes(const fb_params* p) {
  uint64_t doubles = (uint64_t)p->head_dim + KEY_TILE;
  if (p->pass & FB_PASS_BWD) doubles += (uint64_t)p->head_dim + 2ull * (uint64_t)p->seq_k * p->head_dim;
  return doubles * sizeof(double);
}

static int supports(const fb_params* p, char* why, size_t why_size) {
  if (p->kv_heads < 1 || p->heads % p->kv_heads != 0) {
    snprintf(why, why_size, "kv_heads %d does not divide heads %d", p->kv_heads, p->heads);
    return 0;
  }
  return 1;
}

/* ---- forward: per query row, keys in tiles; m = running max, l = running sum of exp(s - m) ---- */

static int forward(const fb_params* p, void* stream) {
  (void)stream; /* CPU kernels get NULL */
  const int d = p->head_dim, group = p->heads / p->kv_heads;
  if (!p->workspace || p->workspace_size < workspace_bytes(p)) return fail("workspace smaller than asked for");
  double* acc = (double*)p->workspace; /* [d] */
  double* s = acc + d;                 /* [KEY_TILE] */
  for (int b = 0; b < p->batch; ++b) {
    for (int h = 0; h < p->heads; ++h) {
      const int hk = h / group;
      for (int i = 0; i < p->seq_q; ++i) {
        const int64_t qi = at(p->q_stride, b, h, i), oi = at(p->o_stride, b, h, i);
        const int end = key_end(p, i);
        double m = -INFINITY, l = 0.0;
        for (int c = 0; c < d; ++c) acc[c] = 0.0;
        for (int j0 = 0; j0 < end; j0 += KEY_TILE) {
          const int j1 = j0 + KEY_TILE < end ? j0 + KEY_TILE : end;
          double tile_max = -INFINITY;
          for (int j = j0; j < j1; ++j) { /* S = scale * q_i . k_j */
            const int64_t kj = at(p->k_stride, b, hk, j);
            double dot = 0.0;
            for (int c = 0; c < d; ++c)
              dot += load(p->q, p->dtype, qi + c * p->q_stride[3]) * load(p->k, p->dtype, kj + c * p->k_stride[3]);
            s[j - j0] = p->scale * dot;
            if (s[j - j0] > tile_max) tile_max = s[j - j0];
          }
          const double m_new = tile_max > m ? tile_max : m;
          const double rescale = exp(m - m_new); /* exp(-inf) = 0 on the first tile */
          l *= rescale;
          for (int c = 0; c < d; ++c) acc[c] *= rescale;
          for (int j = j0; j < j1; ++j) { /* O += P V */
            const double pj = exp(s[j - j0] - m_new);
            const int64_t vj = at(p->v_stride, b, hk, j);
            l += pj;
            for (int c = 0; c < d; ++c) acc[c] += pj * load(p->v, p->dtype, vj + c * p->v_stride[3]);
          }
          m = m_new;
        }
        /* A row that sees no key: O = 0, LSE = -inf (flashbench's definition). */
        for (int c = 0; c < d; ++c) store(p->o, p->dtype, oi + c * p->o_stride[3], end > 0 ? acc[c] / l : 0.0);
        store_lse(p, at(p->lse_stride, b, h, i), end > 0 ? m + log(l) : -INFINITY);
      }
    }
  }
  return FB_OK;
}

/* ---- backward: P = exp(S - LSE), dP = dO V^T, dS = P (dP - D) with D = dO . O;
 *      dQ = scale dS K, dK = scale dS^T Q, dV = P^T dO ---- */

static int backward(const fb_params* p, void* stream) {
  (void)stream;
  const int d = p->head_dim, group = p->heads / p->kv_heads;
  if (!p->workspace || p->workspace_size < workspace_bytes(p)) return fail("workspace smaller than asked for");
  double* dq = (double*)p->workspace + d + KEY_TILE; /* [d] */
  double* dk = dq + d;                               /* [seq_k, d] of one K/V head */
  double* dv = dk + (int64_t)p->seq_k * d;           /* [seq_k, d] */
  for (int b = 0; b < p->batch; ++b) {
    for (int hk = 0; hk < p->kv_heads; ++hk) {
      memset(dk, 0, sizeof(double) * 2 * (size_t)p->seq_k * d);
      for (int h = hk * group; h < (hk + 1) * group; ++h) {
        for (int i = 0; i < p->seq_q; ++i) {
          const int64_t qi = at(p->q_stride, b, h, i), oi = at(p->o_stride, b, h, i);
          const int end = key_end(p, i);
          double D = 0.0;
          for (int c = 0; c < d; ++c)
            D += load(p->dout, p->dtype, oi + c * p->o_stride[3]) * load(p->o, p->dtype, oi + c * p->o_stride[3]);
          const double lse = load_lse(p, at(p->lse_stride, b, h, i));
          for (int c = 0; c < d; ++c) dq[c] = 0.0;
          for (int j = 0; j < end; ++j) {
            const int64_t kj = at(p->k_stride, b, hk, j), vj = at(p->v_stride, b, hk, j);
            double s = 0.0, dp = 0.0;
            for (int c = 0; c < d; ++c) {
              s += load(p->q, p->dtype, qi + c * p->q_stride[3]) * load(p->k, p->dtype, kj + c * p->k_stride[3]);
              dp += load(p->dout, p->dtype, oi + c * p->o_stride[3]) * load(p->v, p->dtype, vj + c * p->v_stride[3]);
            }
            const double pij = exp(p->scale * s - lse);
            const double ds = pij * (dp - D);
            for (int c = 0; c < d; ++c) {
              dq[c] += p->scale * ds * load(p->k, p->dtype, kj + c * p->k_stride[3]);
              dk[(int64_t)j * d + c] += p->scale * ds * load(p->q, p->dtype, qi + c * p->q_stride[3]);
              dv[(int64_t)j * d + c] += pij * load(p->dout, p->dtype, oi + c * p->o_stride[3]);
            }
          }
          for (int c = 0; c < d; ++c) store(p->dq, p->dtype, qi + c * p->q_stride[3], dq[c]); /* 0 if no key */
        }
      }
      for (int j = 0; j < p->seq_k; ++j) {
        const int64_t kj = at(p->k_stride, b, hk, j), vj = at(p->v_stride, b, hk, j);
        for (int c = 0; c < d; ++c) {
          store(p->dk, p->dtype, kj + c * p->k_stride[3], dk[(int64_t)j * d + c]);
          store(p->dv, p->dtype, vj + c * p->v_stride[3], dv[(int64_t)j * d + c]);
        }
      }
    }
  }
  return FB_OK;
}

/* ---- the table flashbench reads ---- */

static const fb_kernel kernels[] = {{
    sizeof(fb_kernel),
    "example-cpu",
    "example plug-in (examples/plugin/cpu): one query row at a time, keys in tiles, online softmax, in C",
    FB_DEVICE_CPU,
    FB_ALL_DTYPES,
    FB_PASS_FWD | FB_PASS_BWD,
    NULL, 0,  /* any head dim */
    1,        /* one query row per "tile": K and V are read once per query row */
    supports,
    workspace_bytes,
    forward,
    backward,
}};

static const fb_plugin plugin = {
    sizeof(fb_plugin), FB_PLUGIN_ABI_VERSION, "flashbench example CPU plug-in",
    (int32_t)(sizeof kernels / sizeof kernels[0]), kernels, last_error,
};

const fb_plugin* flashbench_plugin(void) { return &plugin; }
