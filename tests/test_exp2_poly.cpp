// Host test [fp8] of exp2_poly (common/exp2_poly.h), the FMA-pipe exponential that flash-sm90's fp8
// forward uses for part of its scores: relative error against exp2 over the range the kernel feeds
// it, what its e4m3 rounding does to P, and the masked / very negative inputs that must give 0
// exactly (a fully masked row's sum must stay 0, so its LSE is -inf) and never NaN.
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>

#include "catch.h"
#include "common/exp2_poly.h"
#include "common/fp8.h"

namespace {

double rel_err(float x) {
  const double want = std::exp2(double(x));
  return std::fabs(double(fb::exp2_poly(x)) / want - 1.0);
}

}  // namespace

TEST_CASE("exp2_poly: relative error <= 2^-13 wherever the result is a normal float", "[fp8]") {
  // Every argument step of 2^-12 over [-126, 8] (the fp8 forward's arguments are <= log2(p_scale)
  // = 8), plus the powers of two and the rounding ties of j = round(x).
  double worst = 0.0;
  float worst_x = 0.f;
  for (int i = -126 * 4096; i <= 8 * 4096; ++i) {
    const float x = float(i) / 4096.f;
    const double e = rel_err(x);
    if (e > worst) worst = e, worst_x = x;
  }
  INFO("worst x " << worst_x);
  CHECK(worst <= std::ldexp(1.0, -13));
  CHECK(worst > 0.0);  // a polynomial, not exp2 itself: the bound above is what is being tested
  for (int j = -126; j <= 64; ++j) {
    INFO("j " << j);
    CHECK(fb::exp2_poly(float(j)) == std::ldexp(1.0f, j));  // p(0) = 1: exact powers of two
    CHECK(rel_err(float(j) + 0.5f) <= std::ldexp(1.0, -13));  // ties: j rounds to even
    if (j > -126) CHECK(rel_err(float(j) - 0.5f) <= std::ldexp(1.0, -13));  // -126.5: below normal
  }
  CHECK(fb::exp2_poly(8.f) == 256.f);  // the fp8 forward's largest p' is exact, as with ex2
}

TEST_CASE("exp2_poly: masked and very negative arguments give +0 exactly, never NaN", "[fp8]") {
  const float inf = std::numeric_limits<float>::infinity();
  for (const float x : {-inf, -std::numeric_limits<float>::max(), -1e30f, -1e9f, -12582912.f, -1000.f,
                        -200.f, -128.5f, -128.f, -127.5f, -127.f}) {
    INFO("x " << x);
    const float y = fb::exp2_poly(x);
    CHECK(y == 0.f);
    CHECK(!std::signbit(y));
  }
  // Between -127 and -126: a denormal or 0 (ex2.approx.ftz flushes these to 0), never negative or
  // NaN, and below the smallest normal float.
  for (int i = 1; i < 4096; ++i) {
    const float x = -127.f + float(i) / 4096.f;
    const float y = fb::exp2_poly(x);
    INFO("x " << x);
    CHECK(y >= 0.f);
    CHECK(y < std::numeric_limits<float>::min());
  }
}

TEST_CASE("exp2_poly: P in e4m3 is the same as from exp2 but for rare one-step differences",
          "[fp8]") {
  // The fp8 forward converts p' = 2^x (x <= 8) to e4m3. A relative error of 1e-4 can move a value
  // across an e4m3 rounding midpoint only within 1e-4 of it: at most one step, rarely.
  int differ = 0, total = 0;
  for (int i = -20 * 8192; i <= 8 * 8192; ++i) {
    const float x = float(i) / 8192.f;
    const std::uint8_t a = fb::fp8_e4m3_from_float(fb::exp2_poly(x));
    const std::uint8_t b = fb::fp8_e4m3_from_float(std::exp2f(x));
    ++total;
    if (a != b) {
      ++differ;
      INFO("x " << x);
      CHECK((a > b ? a - b : b - a) == 1);  // positive codes are monotonic: one step apart
    }
  }
  INFO(differ << " of " << total << " differ");
  CHECK(double(differ) <= 0.005 * total);
}
