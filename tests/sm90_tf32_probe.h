// The TF32 wgmma unit probe (tests/sm90_tf32_probe.cu), as the host test sees it.
#pragma once

#include <cstdint>

namespace fb::test {

// Shape of the probe: 64 query rows, kProbeKeys keys, head_dim 64.
inline constexpr int kProbeRows = 64;
inline constexpr int kProbeKeys = 64;
inline constexpr int kProbeDim = 64;

// Runs the fp32 forward kernel's pieces on one tile (device pointers, row-major):
//   q (rows, d), k (keys, d), v (keys, d), p (rows, keys) -> s = q k^T (rows, keys), o = p v (rows, d).
// split: 3xTF32, else 1xTF32. session7: the pieces as the session-7 probe variants build them (cvt.rn
// splits, S in one pass into three accumulators, descriptors from the tile's: FB_SM90_FP32_FWD_PROBE
// rn,onepass,desc). Returns false when this build or device has no sm_90a code.
bool run_sm90_tf32_probe(const float* q, const float* k, const float* v, const float* p, float* s,
                         float* o, bool split, bool session7 = false);

// ptx::split_tf32_as<true> (cvt.rn.tf32.f32) on n values (device pointers): hi, lo as the 32-bit
// patterns the tensor core reads. Returns false without sm_90a code.
bool run_sm90_tf32_rn_split(const float* x, std::uint32_t* hi, std::uint32_t* lo, int n);

}  // namespace fb::test
