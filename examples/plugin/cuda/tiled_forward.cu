// An example flashbench plug-in in CUDA: a minimal tiled attention forward (FlashAttention's loop
// without tensor cores), fp32/fp16/bf16, head dims 64 and 128. Built by CMake when CUDA is enabled
// (target fb_example_cuda), or by hand:
//
//     nvcc -O2 -shared -Xcompiler -fPIC -I include examples/plugin/cuda/tiled_forward.cu \
//          -o libfb_example_cuda.so
//     flashbench run configs/plugin_example.json --kernel-lib ./libfb_example_cuda.so --kernels naive,example-cuda
//
// One thread block per (batch, head, tile of kBr query rows), one thread per query row. K and V are
// staged in shared memory kBc rows at a time; each thread keeps its q row, its O accumulator and the
// online-softmax statistics (m = running max, l = running sum of exp(s - m)) in registers. That is
// 2 x d floats per thread: at d = 128 some spill to local memory. A fast kernel splits a row over
// several threads and uses tensor cores (kernels/flash); this one is written to be read.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>

#include "flashbench/plugin.h"

namespace {

constexpr int kBr = 64;  // query rows (threads) per block
constexpr int kBc = 32;  // key rows per shared-memory tile: 2 * 32 * 128 * 4 B = 32 KiB at d = 128
constexpr int kMaxGridYZ = 65535;

__device__ float to_float(float x) { return x; }
__device__ float to_float(__half x) { return __half2float(x); }
__device__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
template <class T> __device__ T from_float(float x);
template <> __device__ float from_float<float>(float x) { return x; }
template <> __device__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// The fields of fb_params the kernel reads, by value (fb_params itself lives on the host).
struct Args {
  const void *q, *k, *v;
  void *o, *lse;
  long long qs[4], ks[4], vs[4], os[4], ls[3];
  int seq_q, seq_k, group;
  int causal;
  float scale;
};

template <class T, int D> __global__ void __launch_bounds__(kBr) forward_kernel(Args a) {
  __shared__ float k_tile[kBc][D];  // (kBc, D)
  __shared__ float v_tile[kBc][D];  // (kBc, D)
  const int b = blockIdx.z, h = blockIdx.y, hk = h / a.group;
  const int i = blockIdx.x * kBr + threadIdx.x;  // this thread's query row
  const bool row_valid = i < a.seq_q;
  const T* q = static_cast<const T*>(a.q);
  const T* k = static_cast<const T*>(a.k);
  const T* v = static_cast<const T*>(a.v);

  // Keys [0, end) row i sees (bottom-right causal alignment: j <= i + seq_k - seq_q); the block loads
  // keys up to what its last row sees.
  const int offset = a.seq_k - a.seq_q;
  const auto key_end = [&](int row) {
    return a.causal ? max(0, min(a.seq_k, row + offset + 1)) : a.seq_k;
  };
  const int end = row_valid ? key_end(i) : 0;
  const int block_end = key_end(min(a.seq_q - 1, blockIdx.x * kBr + kBr - 1));

  float q_row[D], acc[D];
  const long long qi = b * a.qs[0] + h * a.qs[1] + (long long)(row_valid ? i : 0) * a.qs[2];
#pragma unroll
  for (int c = 0; c < D; ++c) {
    q_row[c] = row_valid ? to_float(q[qi + c * a.qs[3]]) * a.scale : 0.f;  // scale folded into q
    acc[c] = 0.f;
  }
  float m = -INFINITY, l = 0.f;

  for (int j0 = 0; j0 < block_end; j0 += kBc) {
    // Stage K and V rows j0 .. j0 + kBc: every thread loads, whatever its own row.
    __syncthreads();
    for (int e = threadIdx.x; e < kBc * D; e += kBr) {
      const int r = e / D, c = e % D, j = j0 + r;
      const bool in = j < a.seq_k;
      const long long kj = b * a.ks[0] + hk * a.ks[1] + (long long)j * a.ks[2] + c * a.ks[3];
      const long long vj = b * a.vs[0] + hk * a.vs[1] + (long long)j * a.vs[2] + c * a.vs[3];
      k_tile[r][c] = in ? to_float(k[kj]) : 0.f;
      v_tile[r][c] = in ? to_float(v[vj]) : 0.f;
    }
    __syncthreads();
    // S = q K^T for this tile (masked keys -inf), then one rescale of acc and l per tile.
    float s[kBc];
    float tile_max = -INFINITY;
#pragma unroll
    for (int r = 0; r < kBc; ++r) {
      float dot = 0.f;
#pragma unroll
      for (int c = 0; c < D; ++c) dot += q_row[c] * k_tile[r][c];
      s[r] = j0 + r < end ? dot : -INFINITY;
      tile_max = fmaxf(tile_max, s[r]);
    }
    if (tile_max == -INFINITY) continue;  // nothing this row sees in the tile (acc, l unchanged)
    const float m_new = fmaxf(m, tile_max);
    const float rescale = expf(m - m_new);  // 0 on the first visible tile (m = -inf)
    l *= rescale;
#pragma unroll
    for (int c = 0; c < D; ++c) acc[c] *= rescale;
#pragma unroll
    for (int r = 0; r < kBc; ++r) {
      const float p = expf(s[r] - m_new);  // masked: exp(-inf) = 0 (expf, not __expf: fp32 cases are judged at fp32 accuracy)
      l += p;
#pragma unroll
      for (int c = 0; c < D; ++c) acc[c] += p * v_tile[r][c];
    }
    m = m_new;
  }
  if (!row_valid) return;
  // O = acc / l, LSE = m + log l; a row that sees no key: O = 0, LSE = -inf (flashbench's definition).
  T* o = static_cast<T*>(a.o);
  const long long oi = b * a.os[0] + h * a.os[1] + (long long)i * a.os[2];
  const float inv_l = end > 0 ? 1.f / l : 0.f;
#pragma unroll
  for (int c = 0; c < D; ++c) o[oi + c * a.os[3]] = from_float<T>(acc[c] * inv_l);
  static_cast<float*>(a.lse)[b * a.ls[0] + h * a.ls[1] + (long long)i * a.ls[2]] =
      end > 0 ? m + logf(l) : -INFINITY;
}

thread_local char last_message[256];

int fail(const char* what, cudaError_t e) {
  std::snprintf(last_message, sizeof last_message, "%s: %s", what, cudaGetErrorString(e));
  return FB_ERROR;
}

const char* last_error() { return last_message; }

int supports(const fb_params* p, char* why, size_t why_size) {
  if (p->heads > kMaxGridYZ || p->batch > kMaxGridYZ) {
    std::snprintf(why, why_size, "heads %d and batch %d must be at most %d (grid y, z)", p->heads, p->batch,
                  kMaxGridYZ);
    return 0;
  }
  return 1;
}

template <class T, int D> void launch(const Args& a, const fb_params* p, cudaStream_t s) {
  const dim3 grid((p->seq_q + kBr - 1) / kBr, p->heads, p->batch);
  forward_kernel<T, D><<<grid, kBr, 0, s>>>(a);
}

template <class T> void launch_dim(const Args& a, const fb_params* p, cudaStream_t s) {
  if (p->head_dim == 64)
    launch<T, 64>(a, p, s);
  else
    launch<T, 128>(a, p, s);
}

int forward(const fb_params* p, void* stream) {
  Args a{};
  a.q = p->q;
  a.k = p->k;
  a.v = p->v;
  a.o = p->o;
  a.lse = p->lse;
  for (int x = 0; x < 4; ++x) {
    a.qs[x] = p->q_stride[x];
    a.ks[x] = p->k_stride[x];
    a.vs[x] = p->v_stride[x];
    a.os[x] = p->o_stride[x];
  }
  for (int x = 0; x < 3; ++x) a.ls[x] = p->lse_stride[x];
  a.seq_q = p->seq_q;
  a.seq_k = p->seq_k;
  a.group = p->heads / p->kv_heads;
  a.causal = p->causal;
  a.scale = float(p->scale);
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (p->dtype) {  // flashbench asks only for the dtypes and head dims the table lists
    case FB_FP32: launch_dim<float>(a, p, s); break;
    case FB_FP16: launch_dim<__half>(a, p, s); break;
    case FB_BF16: launch_dim<__nv_bfloat16>(a, p, s); break;
    default: std::snprintf(last_message, sizeof last_message, "dtype %d not built", p->dtype); return FB_ERROR;
  }
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? FB_OK : fail("forward launch", e);
}

const int32_t head_dims[] = {64, 128};

const fb_kernel kernels[] = {{
    sizeof(fb_kernel),
    "example-cuda",
    "example plug-in (examples/plugin/cuda): tiled forward, one thread per query row, K/V tiles in shared memory",
    FB_DEVICE_CUDA,
    FB_DTYPE_BIT(FB_FP32) | FB_DTYPE_BIT(FB_FP16) | FB_DTYPE_BIT(FB_BF16),
    FB_PASS_FWD,
    head_dims,
    int32_t(sizeof head_dims / sizeof head_dims[0]),
    kBr,
    supports,
    nullptr,  // no workspace
    forward,
    nullptr,  // forward only
}};

const fb_plugin plugin = {
    sizeof(fb_plugin), FB_PLUGIN_ABI_VERSION, "flashbench example CUDA plug-in", 1, kernels, last_error,
};

}  // namespace

extern "C" const fb_plugin* flashbench_plugin(void) { return &plugin; }
