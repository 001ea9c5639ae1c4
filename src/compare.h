// The regression gate: pairs base and new results by case + kernel and gives each pair a verdict.
// compare.cpp explains the statistics; README "CI gate" the workflow.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "record.h"

namespace fb {

struct CompareOptions {
  double max_slowdown = 0.05;       // 5%: slower beyond this (and beyond noise) is a regression
  std::optional<double> max_error;  // if set, ref_max_abs_err above it is a regression
  double confidence = 0.99;         // of the bootstrap interval of the median ratio
  int bootstrap = 2000;             // resamples per pair
  std::uint64_t seed = 1;           // the bootstrap's: the same files give the same verdicts
  bool force = false;               // compare files of different devices, backends or schemas
};

enum class Verdict {
  same,
  faster,
  slower_noise,    // slower than the threshold, but not beyond noise: reported, not failing
  unconfirmed,     // a regression in NEW that the re-measured run (--confirm) did not repeat
  regression,
  error_exceeded,  // less accurate: over --max-error, or verified before and not now
  unverified,      // an ok row in NEW (paired or added) that verification did not pass
  now_failed,      // ok (or skipped) in base, failed/skipped (failed) in new
  missing,         // ok in base, absent in new
  added,
};
std::string_view to_string(Verdict v);
bool is_failure(Verdict v);

struct Comparison {
  std::string key;  // case key
  std::string kernel;
  const Record* base = nullptr;  // the latest base record (null if added)
  const Record* next = nullptr;  // null if missing
  double base_median = 0;  // median of the base runs' medians (ms)
  double ratio = 0;        // new median / base median (0 when not both ok)
  double ci_lo = 0, ci_hi = 0;  // interval of the ratio at the options' confidence
  double threshold = 0;         // slowdown needed, max(max_slowdown, run-to-run drift of the history)
  int history = 0;              // base runs with an ok record of this pair
  int outliers = 0;             // reps of the new run beyond 5 robust sigmas (reported, not used)
  Verdict verdict = Verdict::same;
  std::string note;
};

struct CompareReport {
  std::vector<Comparison> rows;
  double geomean_ratio = 0;  // over pairs timed in both (0 if none)
  int timed_pairs = 0;
  int history = 0;  // base files given
  std::vector<std::string> warnings;
  bool failed() const;
  // Case keys of the rows that regressed (or are unconfirmed), for `run --filter` and `--confirm`.
  std::vector<std::string> suspects() const;
};

// Throws std::invalid_argument (exit 2) when the files cannot be compared: different device, backend
// or schema major (unless opts.force), a verify run's single cold rep, or bad options.
// `history` are the base runs, oldest first (at least one); `confirm` an optional re-measure of the
// suspects of `next` (same binary, same machine): a regression counts only if it repeats there.
CompareReport compare_results(const std::vector<Results>& history, const Results& next,
                              const CompareOptions& opts, const Results* confirm = nullptr);
// One base file.
CompareReport compare_results(const Results& base, const Results& next, const CompareOptions& opts);

// The statistics, exposed for tests (median_of: record.h).
double mad_of(const std::vector<double>& v);  // median absolute deviation
// [lo, hi] of median(next) / median(base) at `confidence`, by a seeded percentile bootstrap.
std::pair<double, double> bootstrap_ratio_interval(const std::vector<double>& base,
                                                   const std::vector<double>& next, double confidence,
                                                   int resamples, std::uint64_t seed);

}  // namespace fb
