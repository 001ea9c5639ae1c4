// Element types of the CPU backend: IEEE binary16 ("half") and bfloat16 stored as 16 bits, with our
// own float conversions (round to nearest, ties to even; NaN stays NaN, Inf stays Inf), and the
// traits that map each storage type to its accumulator type and Dtype.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "attention.h"
#include "common/fp8.h"

namespace fb::cpu {

namespace detail {
inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
}  // namespace detail

// ---- binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits ----

inline std::uint16_t float_to_half_bits(float f) {
  constexpr std::uint32_t kF32Inf = 0x7f800000u;
  // 65520 = halfway between the largest half (65504) and 2^16: ties-to-even rounds it up to Inf.
  constexpr std::uint32_t kHalfOverflow = 0x477ff000u;
  constexpr std::uint32_t kHalfMinNormal = 0x38800000u;  // 2^-14
  constexpr std::uint32_t kHalfTieToZero = 0x33000000u;  // 2^-25: half the smallest subnormal
  constexpr std::uint32_t kRebias = (127u - 15u) << 23;  // float exponent bias -> half bias
  constexpr int kDroppedBits = 23 - 10;                  // mantissa bits float has and half lacks

  const std::uint32_t x = detail::float_bits(f);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t a = x & 0x7fffffffu;
  if (a >= kF32Inf) {
    if (a == kF32Inf) return sign | 0x7c00u;
    // NaN: keep the top payload bits and force the quiet bit so a payload in the low bits
    // cannot turn into Inf.
    return static_cast<std::uint16_t>(sign | 0x7e00u | ((a >> kDroppedBits) & 0x3ffu));
  }
  if (a >= kHalfOverflow) return sign | 0x7c00u;
  if (a >= kHalfMinNormal) {
    std::uint32_t h = (a - kRebias) >> kDroppedBits;
    const std::uint32_t rest = a & ((1u << kDroppedBits) - 1);
    const std::uint32_t halfway = 1u << (kDroppedBits - 1);
    if (rest > halfway || (rest == halfway && (h & 1u))) ++h;  // a carry into the exponent is right
    return static_cast<std::uint16_t>(sign | h);
  }
  if (a <= kHalfTieToZero) return sign;  // rounds to (signed) zero, 2^-25 itself ties to even 0
  // Subnormal half: value = m * 2^-24. The float is (1.mantissa) * 2^(e-127), so
  // m = significand24 >> (126 - e) with e the biased float exponent.
  const int e = static_cast<int>(a >> 23);
  const std::uint32_t significand = (a & 0x7fffffu) | 0x800000u;
  const int shift = 126 - e;  // 14..24 here
  std::uint32_t h = significand >> shift;
  const std::uint32_t rest = significand & ((1u << shift) - 1);
  const std::uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (h & 1u))) ++h;  // may round up to the smallest normal
  return static_cast<std::uint16_t>(sign | h);
}

inline float half_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) return detail::bits_float(sign | 0x7f800000u | (mant << 13));  // Inf, NaN
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in float.
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  return detail::bits_float(sign | ((exp + 127u - 15u) << 23) | (mant << 13));
}

// ---- bfloat16: the top 16 bits of a float ----

inline std::uint16_t float_to_bf16_bits(float f) {
  const std::uint32_t x = detail::float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    // NaN: truncating could clear every payload bit left (-> Inf); set the quiet bit.
    return static_cast<std::uint16_t>((x >> 16) | 0x0040u);
  }
  // Ties to even: add 0x7fff, plus one more when the kept part is odd. Overflow lands on Inf.
  const std::uint32_t rounded = x + 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>(rounded >> 16);
}

inline float bf16_bits_to_float(std::uint16_t b) {
  return detail::bits_float(std::uint32_t(b) << 16);
}

// Storage types. Arithmetic always goes through float (compute type for fp16/bf16/fp8).
struct Half {
  std::uint16_t bits = 0;
};
struct BFloat16 {
  std::uint16_t bits = 0;
};
// e4m3 code (kernels/common/fp8.h): the unscaled value; a tensor's descale factor lives in
// AttentionParams, so load() gives the code's exact value and the kernels apply the descales.
struct Fp8E4m3 {
  std::uint8_t bits = 0;
};

// Traits: the accumulator type for each storage type (double for fp64, float otherwise).
template <class T> struct ElemTraits;
template <> struct ElemTraits<double> {
  using Acc = double;
  static constexpr Dtype dtype = Dtype::fp64;
};
template <> struct ElemTraits<float> {
  using Acc = float;
  static constexpr Dtype dtype = Dtype::fp32;
};
template <> struct ElemTraits<Half> {
  using Acc = float;
  static constexpr Dtype dtype = Dtype::fp16;
};
template <> struct ElemTraits<BFloat16> {
  using Acc = float;
  static constexpr Dtype dtype = Dtype::bf16;
};
template <> struct ElemTraits<Fp8E4m3> {
  using Acc = float;
  static constexpr Dtype dtype = Dtype::fp8;
};
template <class T> using AccOf = typename ElemTraits<T>::Acc;

inline double to_double(double x) { return x; }
inline double to_double(float x) { return x; }
inline double to_double(Half x) { return half_bits_to_float(x.bits); }
inline double to_double(BFloat16 x) { return bf16_bits_to_float(x.bits); }
inline double to_double(Fp8E4m3 x) { return fp8_e4m3_to_float(x.bits); }

inline float to_float(float x) { return x; }
inline float to_float(Half x) { return half_bits_to_float(x.bits); }
inline float to_float(BFloat16 x) { return bf16_bits_to_float(x.bits); }
inline float to_float(Fp8E4m3 x) { return fp8_e4m3_to_float(x.bits); }

// Load into the accumulator type.
template <class T> inline AccOf<T> load(T x) {
  if constexpr (std::is_same_v<T, double>) {
    return x;
  } else {
    return to_float(x);
  }
}

// Round an accumulator value into storage type T.
template <class T> inline T store(AccOf<T> x) {
  if constexpr (std::is_same_v<T, Half>) {
    return Half{float_to_half_bits(x)};
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return BFloat16{float_to_bf16_bits(x)};
  } else if constexpr (std::is_same_v<T, Fp8E4m3>) {
    return Fp8E4m3{fp8_e4m3_from_float(x)};  // saturating: never NaN from a finite x
  } else {
    return x;
  }
}

// Rounds a double to what dtype `t` can hold, returned as double (float first for 16-bit types).
inline double round_to(Dtype t, double x) {
  switch (t) {
    case Dtype::fp64: return x;
    case Dtype::fp32: return static_cast<float>(x);
    case Dtype::fp16: return half_bits_to_float(float_to_half_bits(static_cast<float>(x)));
    case Dtype::bf16: return bf16_bits_to_float(float_to_bf16_bits(static_cast<float>(x)));
    case Dtype::fp8: return fp8_e4m3_round(static_cast<float>(x));
  }
  return x;
}

// Calls f(T{}) with T the storage type of `t`.
template <class F> decltype(auto) dispatch_dtype(Dtype t, F&& f) {
  switch (t) {
    case Dtype::fp64: return f(double{});
    case Dtype::fp32: return f(float{});
    case Dtype::fp16: return f(Half{});
    case Dtype::bf16: return f(BFloat16{});
    case Dtype::fp8: return f(Fp8E4m3{});
  }
  return f(float{});  // unreachable: every Dtype is handled above
}

}  // namespace fb::cpu
