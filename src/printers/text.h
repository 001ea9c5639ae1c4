// Small text helpers shared by the printers (private to src/printers/): number formats and padding
// by display width, since the tables carry UTF-8 symbols (Δ, ✓, ×) that take one column each.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include <fmt/format.h>

namespace fb::text {

// Code points, not bytes: every UTF-8 byte that is not a continuation byte (10xxxxxx) starts one.
inline std::size_t display_width(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char ch : s)
    if ((ch & 0xC0) != 0x80) ++n;
  return n;
}

inline std::string pad(const std::string& s, std::size_t width, bool left) {
  const std::size_t w = display_width(s);
  if (w >= width) return s;
  const std::string fill(width - w, ' ');
  return left ? s + fill : fill + s;
}

// Cut to at most `width` code points, marking the cut with an ellipsis.
inline std::string truncate_display(const std::string& s, std::size_t width) {
  if (display_width(s) <= width || width == 0) return s;
  std::string out;
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const unsigned char ch = static_cast<unsigned char>(s[i]);
    if ((ch & 0xC0) != 0x80 && ++n > width - 1) break;
    out += s[i];
  }
  return out + "…";
}

inline std::string non_finite(double x) { return std::isnan(x) ? "nan" : x > 0 ? "inf" : "-inf"; }

// Fixed-point with about `digits` significant digits (3.142, 31.42, 3142, 0.003142): timings and rates
// span many decades between a CPU and a GPU, and a fixed number of decimals would hide one end.
inline std::string format_significant(double x, int digits = 4) {
  if (!std::isfinite(x)) return non_finite(x);
  if (x == 0) return "0";
  constexpr int kMaxDecimals = 6;
  const int magnitude = int(std::floor(std::log10(std::abs(x))));
  const int decimals = std::clamp(digits - 1 - magnitude, 0, kMaxDecimals);
  return fmt::format("{:.{}f}", x, decimals);
}

// Errors span decades too, and their exponent is what a reader compares: scientific notation.
inline std::string format_error(const std::optional<double>& x) {
  if (!x) return "-";
  if (!std::isfinite(*x)) return non_finite(*x);
  return fmt::format("{:.2e}", *x);
}

// Relative noise of the timed samples: the coefficient of variation (stddev / mean), in percent, the
// measure adaptive timing (--max-noise) stops on. "-" for a single sample.
inline std::string format_noise(double stddev, double mean, int reps) {
  if (reps < 2 || !(mean > 0)) return "-";
  const double pct = 100.0 * stddev / mean;
  return fmt::format(pct < 10 ? "{:.1f}%" : "{:.0f}%", pct);
}

// Binary units, one decimal: 1.5 KiB, 12.0 MiB, 3.2 GiB.
inline std::string format_bytes(std::uint64_t bytes) {
  constexpr double kStep = 1024.0;
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  constexpr int kLast = int(sizeof kUnits / sizeof kUnits[0]) - 1;
  if (bytes < kStep) return fmt::format("{} B", bytes);
  double v = double(bytes);
  int unit = 0;
  while (v >= kStep && unit < kLast) {
    v /= kStep;
    ++unit;
  }
  return fmt::format("{:.1f} {}", v, kUnits[unit]);
}

}  // namespace fb::text
