// e4m3 -> bf16 for the fp8 forward's O (fp8_out.h). Memory-bound: 16 codes in, 16 bf16 out per thread
// per step (one 16-byte load, two 16-byte stores).
#include "cudnn/fp8_out.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "common/check.h"
#include "common/fp8.h"

namespace fb::cuda::cudnn_sdpa {
namespace {

constexpr int kThreads = 256;
// Enough blocks to fill any current GPU several times over; the loop strides past them.
constexpr std::int64_t kMaxBlocks = 4096;

// Where destination chunk i (BHSD) is in the source: itself, or (bshd) its [b, s, h, d] position.
struct SourceLayout {
  bool bshd = false;
  std::int64_t heads = 1, seq = 1, dim_chunks = 1;  // dim_chunks: head_dim / 16
  __device__ std::int64_t operator()(std::int64_t i) const {
    if (!bshd) return i;
    const std::int64_t c = i % dim_chunks, row = i / dim_chunks;  // row = (b heads + h) seq + s
    const std::int64_t s = row % seq, bh = row / seq;
    const std::int64_t h = bh % heads, b = bh / heads;
    return ((b * seq + s) * heads + h) * dim_chunks + c;
  }
};

__global__ void e4m3_to_bf16_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, std::int64_t chunks,
                                    float factor, SourceLayout layout) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < chunks; i += stride) {
    const uint4 in = src[layout(i)];
    const unsigned words[4] = {in.x, in.y, in.z, in.w};
    unsigned out[8];  // two bf16 each, lower address in the low half
#pragma unroll
    for (int w = 0; w < 4; ++w)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        // Bytes 2h and 2h+1 of word w, lowest address first: element order is kept.
        const auto lo = static_cast<std::uint8_t>(words[w] >> (16 * h));
        const auto hi = static_cast<std::uint8_t>(words[w] >> (16 * h + 8));
        const __nv_bfloat162 pair =
            __floats2bfloat162_rn(fp8_e4m3_to_float(lo) * factor, fp8_e4m3_to_float(hi) * factor);
        unsigned bits;
        memcpy(&bits, &pair, sizeof bits);
        out[2 * w + h] = bits;
      }
    dst[2 * i] = make_uint4(out[0], out[1], out[2], out[3]);
    dst[2 * i + 1] = make_uint4(out[4], out[5], out[6], out[7]);
  }
}

void launch(const void* src, void* dst, std::int64_t n, float factor, SourceLayout layout, void* stream) {
  const std::int64_t chunks = n / kE4m3ToBf16Multiple;
  if (chunks == 0) return;
  const auto blocks = static_cast<unsigned>(std::min(kMaxBlocks, (chunks + kThreads - 1) / kThreads));
  e4m3_to_bf16_kernel<<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const uint4*>(src), static_cast<uint4*>(dst), chunks, factor, layout);
  FB_CUDA_CHECK_LAUNCH();
}

}  // namespace

void e4m3_to_bf16(const void* src, void* dst, std::int64_t n, float factor, void* stream) {
  launch(src, dst, n, factor, SourceLayout{}, stream);
}

void e4m3_bshd_to_bf16_bhsd(const void* src, void* dst, std::int64_t n, std::int64_t heads, std::int64_t seq,
                            std::int64_t dim, float factor, void* stream) {
  launch(src, dst, n, factor, SourceLayout{true, heads, seq, dim / kE4m3ToBf16Multiple}, stream);
}

}  // namespace fb::cuda::cudnn_sdpa
