// The TF32 wgmma unit probe (tests/sm90_tf32_probe.cu), as the host test sees it.
#pragma once

namespace fb::test {

// Shape of the probe: 64 query rows, kProbeKeys keys, head_dim 64.
inline constexpr int kProbeRows = 64;
inline constexpr int kProbeKeys = 64;
inline constexpr int kProbeDim = 64;

// Runs the fp32 forward kernel's pieces on one tile (device pointers, row-major):
//   q (rows, d), k (keys, d), v (keys, d), p (rows, keys) -> s = q k^T (rows, keys), o = p v (rows, d).
// split: 3xTF32, else 1xTF32. Returns false when this build or device has no sm_90a code.
bool run_sm90_tf32_probe(const float* q, const float* k, const float* v, const float* p, float* s,
                         float* o, bool split);

}  // namespace fb::test
