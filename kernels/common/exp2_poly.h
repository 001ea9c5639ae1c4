// exp2 on the FMA pipe: 2^x = 2^j * p(f), j = round(x), f = x - j in [-0.5, 0.5], p a degree-3
// polynomial, 2^j added into the exponent field as an integer.
//
// Why: at d = 128 the fp8 forward needs one exponential per 512 tensor FLOPs, and the H200's
// special-function unit (ex2.approx, 16 a clock per SM) then runs exactly as fast as its FP8 tensor
// cores; computing part of the exponentials with FADD/FMA and two integer ops (the FP32 pipe has 8x
// the MUFU rate) takes that share off the MUFU pipe (docs/perf-notes.md, flash-sm90 fp8 forward).
//
// Accuracy: p(f) is a minimax fit of 2^f on [-0.5, 0.5] for relative error with p(0) = 1 exactly;
// max relative error ~1.0e-4 (2^-13.3) after fp32 rounding, against e4m3's half-ulp of 2^-4: an e4m3
// rounding of p' can differ from ex2.approx's only for values within 1e-4 of a rounding midpoint, and
// then by one step (tests/test_exp2_poly.cpp bounds both). Exact powers of two (f = 0) are exact:
// 2^8 (the fp8 forward's largest p') is 256 as with ex2.
//
// Domain: x <= 127 (above it the exponent add overflows; the fp8 forward's arguments are <= 8).
// x <= -127, -inf included, returns +0 exactly, as ex2.approx.ftz (the clamp to -127 gives j = -127,
// f = 0, p = 1: the exponent field becomes 0 and the mantissa 0). For -127 < x < -126 the result is
// a denormal below 2^-126 where ex2.approx.ftz flushes to 0: below e4m3's range and far below any
// fp32 row sum's ulp (the row's largest p' is 2^8), so nothing downstream can tell. NaN maps to 0
// (fmaxf), not NaN: the fp8 forward's scores are finite or the -inf of a mask.
#pragma once

#include <cmath>
#include <cstdint>

#include "common/fp8.h"   // detail_fp8::bits_of / float_of
#include "common/mask.h"  // FB_HOST_DEVICE

namespace fb {

inline constexpr float kExp2PolyC1 = 0.6932829022407532f;
inline constexpr float kExp2PolyC2 = 0.2422109693288803f;
inline constexpr float kExp2PolyC3 = 0.05500893294811249f;

FB_HOST_DEVICE inline float exp2_poly(float x) {
  // x + 1.5 * 2^23 rounds x to the nearest integer j (ties to even), held in the low mantissa bits
  // as 0x4B400000 + j; subtracting the constant back gives j exactly, so f = x - j is exact.
  constexpr float kRound = 12582912.0f;
#ifdef __CUDA_ARCH__
  x = fmaxf(x, -127.0f);
  const float t = __fadd_rn(x, kRound);  // _rn: never contracted or reassociated
  const float f = __fsub_rn(x, __fsub_rn(t, kRound));
  const float p = fmaf(fmaf(fmaf(kExp2PolyC3, f, kExp2PolyC2), f, kExp2PolyC1), f, 1.0f);
#else
  x = std::fmax(x, -127.0f);
  const float t = x + kRound;  // IEEE single adds (the project builds without -ffast-math)
  const float f = x - (t - kRound);
  const float p = std::fma(std::fma(std::fma(kExp2PolyC3, f, kExp2PolyC2), f, kExp2PolyC1), f, 1.0f);
#endif
  // (bits of t) << 23 keeps j's low 9 bits in the exponent field: adding it scales p by 2^j.
  return detail_fp8::float_of(detail_fp8::bits_of(p) + (detail_fp8::bits_of(t) << 23));
}

}  // namespace fb
