// FP8 E4M3 (OCP "E4M3FN", the format of Hopper's e4m3 tensor cores): 1 sign, 4 exponent bits (bias
// 7), 3 mantissa bits; no infinities; S.1111.111 is NaN, so the largest finite is S.1111.110 = 448.
// Normal values (1.m) * 2^(e-7) for e = 1..15; subnormals (0.m) * 2^-6, the smallest 2^-9.
//
// Plain C++ that compiles on the host and, under nvcc, on the device: the CPU backend's emulation
// and (later) the CUDA kernels quantise with the same code.
//
// float -> e4m3 rounds to nearest, ties to even, and saturates: a finite value beyond 448 (or one
// that would round past it) becomes +-448, as NVIDIA's cvt.rn.satfinite.e4m3x2.f32 does. Infinity
// saturates too; only a NaN input gives NaN (0x7f / 0xff), so a finite tensor never quantises to NaN.
#pragma once

#include <cstdint>
#include <cstring>

#include "common/mask.h"  // FB_HOST_DEVICE

namespace fb {

constexpr float kFp8E4m3Max = 448.0f;
constexpr std::uint8_t kFp8E4m3MaxBits = 0x7e;  // S.1111.110
constexpr std::uint8_t kFp8E4m3NaN = 0x7f;      // S.1111.111 (sign kept from the input)

namespace detail_fp8 {
FB_HOST_DEVICE inline std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
FB_HOST_DEVICE inline float float_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
}  // namespace detail_fp8

// The value of an e4m3 code: exact in float (4 significant bits, exponents -9..8).
FB_HOST_DEVICE inline float fp8_e4m3_to_float(std::uint8_t b) {
  const std::uint32_t sign = std::uint32_t(b & 0x80u) << 24;
  const std::uint32_t exp = (b >> 3) & 0xfu;
  const std::uint32_t mant = b & 0x7u;
  if (exp == 0xfu && mant == 0x7u) return detail_fp8::float_of(sign | 0x7fc00000u);  // NaN
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-9; the float 2^-9 is 0x3b000000 (a power of two: exact product).
    const float v = float(mant) * detail_fp8::float_of(0x3b000000u);
    return sign ? -v : v;
  }
  // Normal: rebias 7 -> 127 and move the 3 mantissa bits to the top of float's 23.
  return detail_fp8::float_of(sign | ((exp + 127u - 7u) << 23) | (mant << 20));
}

// Nearest e4m3 code to f, ties to even, saturating at +-448 (see the header comment).
FB_HOST_DEVICE inline std::uint8_t fp8_e4m3_from_float(float f) {
  const std::uint32_t x = detail_fp8::bits_of(f);
  const auto sign = static_cast<std::uint8_t>((x >> 24) & 0x80u);
  const std::uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | kFp8E4m3NaN;
  // 464 = halfway between 448 and the (absent) next code 512: at or beyond it the rounded value
  // would pass 448, so saturate; below it, rounding cannot carry past 0x7e (448 itself is even).
  constexpr std::uint32_t kSaturateFrom = 0x43e80000u;  // 464.0f
  if (a >= kSaturateFrom) return sign | kFp8E4m3MaxBits;
  constexpr std::uint32_t kMinNormal = 0x3c800000u;  // 2^-6
  constexpr int kDropped = 23 - 3;                   // mantissa bits float has and e4m3 lacks
  if (a >= kMinNormal) {
    constexpr std::uint32_t kRebias = (127u - 7u) << 23;
    std::uint32_t h = (a - kRebias) >> kDropped;  // exponent and mantissa of e4m3, truncated
    const std::uint32_t rest = a & ((1u << kDropped) - 1);
    const std::uint32_t halfway = 1u << (kDropped - 1);
    if (rest > halfway || (rest == halfway && (h & 1u))) ++h;  // a carry into the exponent is right
    return static_cast<std::uint8_t>(sign | h);
  }
  // Subnormal (or zero): code = round(|f| / 2^-9), which may round up to the smallest normal (8).
  // |f| = significand24 * 2^(e - 150) with e the biased float exponent; |f| in (2^-10, 2^-6) here.
  constexpr std::uint32_t kHalfSmallest = 0x3a800000u;  // 2^-10: ties to even -> 0
  if (a <= kHalfSmallest) return sign;
  const int e = static_cast<int>(a >> 23);
  const std::uint32_t significand = (a & 0x7fffffu) | 0x800000u;
  // |f| / 2^-9 = significand * 2^(e - 141): shift right by 141 - e (here e in 117..120 -> 24..21).
  const int shift = 141 - e;
  std::uint32_t h = significand >> shift;
  const std::uint32_t rest = significand & ((1u << shift) - 1);
  const std::uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (h & 1u))) ++h;
  return static_cast<std::uint8_t>(sign | h);
}

// e4m3 rounding of f, returned as float: what a value becomes when an FP8 kernel stores it.
FB_HOST_DEVICE inline float fp8_e4m3_round(float f) { return fp8_e4m3_to_float(fp8_e4m3_from_float(f)); }

}  // namespace fb
