// The fp8 forward's last step when cuDNN stores O in e4m3 (sdpa_graph.h, Fp8Out): flashbench's fp8
// dtype writes O in bf16 (kernels/attention.h), so the e4m3 codes are widened here.
#pragma once

#include <cstdint>

namespace fb::cuda::cudnn_sdpa {

// dst[i] = bf16(e4m3 value of src[i] * factor) for i < n, on `stream` (a cudaStream_t). n must be a
// multiple of kE4m3ToBf16Multiple; src and dst 16-byte aligned.
constexpr std::int64_t kE4m3ToBf16Multiple = 16;
void e4m3_to_bf16(const void* src, void* dst, std::int64_t n, float factor, void* stream);
// The same from src laid out [b, s, h, d] into dst laid out [b, h, s, d] (n = b h s d elements):
// d must be a multiple of kE4m3ToBf16Multiple.
void e4m3_bshd_to_bf16_bhsd(const void* src, void* dst, std::int64_t n, std::int64_t heads, std::int64_t seq,
                            std::int64_t dim, float factor, void* stream);

}  // namespace fb::cuda::cudnn_sdpa
