// kernels/common/fp8.h against a reference written from the format's definition alone: the value of
// every code from sign, exponent and mantissa with ldexp, and rounding as "the nearest finite code,
// ties to the even code" found by search over that table. Saturation needs no rule of its own there:
// beyond 448 the nearest finite code is 448.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "catch.h"
#include "common/fp8.h"

namespace {

bool is_nan_code(int code) { return (code & 0x7f) == 0x7f; }

// (-1)^s * 2^(1-7) * (0.m) for exponent field 0, (-1)^s * 2^(e-7) * (1.m) otherwise.
double definition_value(int code) {
  const int s = code >> 7, e = (code >> 3) & 0xf, m = code & 0x7;
  const double mag = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, e - 7);
  return s ? -mag : mag;
}

// Non-negative finite codes 0x00..0x7e: their values increase with the code.
std::vector<double> positive_values() {
  std::vector<double> v;
  for (int c = 0; c <= 0x7e; ++c) v.push_back(definition_value(c));
  return v;
}

// Nearest finite code to x (not NaN), ties to the even code.
int reference_encode(float x, const std::vector<double>& table) {
  const int sign = std::signbit(x) ? 0x80 : 0;
  const double a = std::abs(double(x));
  const auto it = std::lower_bound(table.begin(), table.end(), a);
  int code;
  if (it == table.end()) {
    code = 0x7e;  // beyond 448 (or infinite): the nearest finite code
  } else if (it == table.begin() || *it == a) {
    code = int(it - table.begin());
  } else {
    const int hi = int(it - table.begin()), lo = hi - 1;
    const double dlo = a - table[lo], dhi = table[hi] - a;
    code = dlo < dhi ? lo : dhi < dlo ? hi : (lo % 2 == 0 ? lo : hi);
  }
  return sign | code;
}

float float_from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace

TEST_CASE("fp8: every one of the 256 codes decodes to its defined value", "[fp8]") {
  for (int code = 0; code < 256; ++code) {
    const float got = fb::fp8_e4m3_to_float(std::uint8_t(code));
    INFO("code " << code);
    if (is_nan_code(code)) {
      CHECK(std::isnan(got));
    } else {
      CHECK(double(got) == definition_value(code));
      CHECK(std::signbit(got) == bool(code & 0x80));  // -0 is 0x80
    }
  }
  CHECK(fb::fp8_e4m3_to_float(0x7e) == 448.0f);
  CHECK(fb::fp8_e4m3_to_float(0x01) == std::ldexp(1.0f, -9));  // smallest subnormal
  CHECK(fb::fp8_e4m3_to_float(0x08) == std::ldexp(1.0f, -6));  // smallest normal
}

TEST_CASE("fp8: every finite code round-trips; NaN stays NaN", "[fp8]") {
  for (int code = 0; code < 256; ++code) {
    if (is_nan_code(code)) continue;
    INFO("code " << code);
    CHECK(int(fb::fp8_e4m3_from_float(fb::fp8_e4m3_to_float(std::uint8_t(code)))) == code);
  }
  CHECK(is_nan_code(fb::fp8_e4m3_from_float(std::numeric_limits<float>::quiet_NaN())));
  CHECK(is_nan_code(fb::fp8_e4m3_from_float(-std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("fp8: midpoints tie to even, one float ulp either side goes to the nearer code", "[fp8]") {
  const std::vector<double> table = positive_values();
  int ties_checked = 0;
  for (int lo = 0; lo + 1 <= 0x7e; ++lo) {
    const double mid = (table[lo] + table[lo + 1]) / 2;  // exact in float: 5 significant bits
    const float f = float(mid);
    REQUIRE(double(f) == mid);
    for (float sign : {1.0f, -1.0f}) {
      const int s = sign < 0 ? 0x80 : 0;
      INFO("between codes " << lo << " and " << lo + 1 << " sign " << sign);
      CHECK(int(fb::fp8_e4m3_from_float(sign * f)) == (s | (lo % 2 == 0 ? lo : lo + 1)));
      CHECK(int(fb::fp8_e4m3_from_float(sign * std::nextafter(f, 0.0f))) == (s | lo));
      CHECK(int(fb::fp8_e4m3_from_float(sign * std::nextafter(f, 1e9f))) == (s | (lo + 1)));
    }
    ++ties_checked;
  }
  CHECK(ties_checked == 126);
  // Below the smallest subnormal: 2^-10 ties to 0, anything above it to 2^-9.
  CHECK(fb::fp8_e4m3_from_float(std::ldexp(1.0f, -10)) == 0x00);
  CHECK(fb::fp8_e4m3_from_float(std::nextafter(std::ldexp(1.0f, -10), 1.0f)) == 0x01);
  CHECK(fb::fp8_e4m3_from_float(-std::ldexp(1.0f, -11)) == 0x80);
  CHECK(fb::fp8_e4m3_from_float(std::numeric_limits<float>::denorm_min()) == 0x00);
}

TEST_CASE("fp8: saturation at 448, infinities included; never NaN from a finite value", "[fp8]") {
  for (float sign : {1.0f, -1.0f}) {
    const int s = sign < 0 ? 0x80 : 0;
    for (float x : {448.0f, 449.0f, 463.99f, 464.0f, 465.0f, 512.0f, 1e6f, std::numeric_limits<float>::max(),
                    std::numeric_limits<float>::infinity()})
      CHECK(int(fb::fp8_e4m3_from_float(sign * x)) == (s | 0x7e));
    CHECK(int(fb::fp8_e4m3_from_float(sign * 432.0f)) == (s | 0x7e));  // tie 416|448 -> even 448
    CHECK(int(fb::fp8_e4m3_from_float(sign * 431.0f)) == (s | 0x7d));  // nearer 416
  }
}

TEST_CASE("fp8: the encoder matches the reference on a sweep of all float bit patterns", "[fp8]") {
  const std::vector<double> table = positive_values();
  // Every 61st pattern of all 2^32 (61 is odd: the sweep meets every residue of the dropped mantissa
  // bits), plus every 7th float of [2^-11, 2^10), both signs: all of e4m3's range and its edges.
  std::uint64_t mismatches = 0, checked = 0;
  auto check_bits = [&](std::uint32_t u) {
    const float f = float_from_bits(u);
    if (std::isnan(f)) return;
    ++checked;
    const int got = fb::fp8_e4m3_from_float(f);
    if (got != reference_encode(f, table) || is_nan_code(got)) ++mismatches;
  };
  for (std::uint64_t u = 0; u <= 0xffffffffull; u += 61) check_bits(std::uint32_t(u));
  const std::uint32_t from = 0x3a000000u, to = 0x44800000u;  // 2^-11 .. 2^10
  for (std::uint32_t u = from; u < to; u += 7) {
    check_bits(u);
    check_bits(u | 0x80000000u);
  }
  INFO(checked << " floats checked");
  CHECK(checked > 100000000);
  CHECK(mismatches == 0);
}
