// The regression gate: pairs base and new results by case + kernel.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "record.h"

namespace fb {

struct CompareOptions {
  double max_slowdown = 0.05;          // 5%: slower beyond this AND beyond noise is a regression
  std::optional<double> max_error;     // if set, ref_max_abs_err above it is a regression
};

enum class Verdict { same, faster, slower_noise, regression, error_exceeded, now_failed, missing, added };
std::string_view to_string(Verdict v);

struct Comparison {
  std::string key;     // case key
  std::string kernel;
  const Record* base = nullptr;  // null if added
  const Record* next = nullptr;  // null if missing
  double ratio = 0;    // new median / base median (0 when not both ok)
  Verdict verdict = Verdict::same;
  std::string note;
};

struct CompareReport {
  std::vector<Comparison> rows;
  bool failed() const;  // any regression, error_exceeded, now_failed or missing
};

CompareReport compare_results(const Results& base, const Results& next, const CompareOptions& opts);

}  // namespace fb
