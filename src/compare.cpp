// The regression gate: pairs base and new results by case key + kernel and gives each pair a verdict.
//
// When is "slower" a regression? Both of these must hold:
//   1. the threshold:  ratio = new median / base median > 1 + max_slowdown, and
//   2. the noise:      new median - base median > kNoiseSigmas * sqrt(sd_base^2 + sd_new^2),
// where sd is each run's recorded sample standard deviation of single repetitions (time_ms.stddev).
// sqrt(sd_base^2 + sd_new^2) is the spread of the difference of one timing from each run, so the rule
// asks that the medians moved further apart than two such timings usually do (two sigmas: under a
// normal model one rep of each run differs by that much in this direction about 2% of the time). It
// deliberately uses the spread of single reps, not the standard error of the median: repetitions
// within one run are correlated (same clocks, same thermal state), and run-to-run drift is of the size
// of the per-rep spread, not of the shrinking standard error. With one rep (sd = 0) only the threshold decides.
// A slowdown past the threshold but inside the noise band is `slower_noise` (reported, not failing);
// "faster" is the same rule mirrored. A NaN or non-positive median on an ok record, or a NaN spread,
// never passes.
//
// Other verdicts, checked before timing:
//   error_exceeded  --max-error is set and the new error vs fp64 is above it (or NaN), for every new ok
//                   record, paired or added; or base was verified and new is not.
//   now_failed      base ok, new skipped or failed.
//   missing         base ok, no partner in new.
//   added           in new only, or base skipped/failed and new ok: not a failure.
// A base record that is skipped or failed measured nothing, so nothing about it can regress.
#include "compare.h"

#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

namespace fb {

namespace {

constexpr double kNoiseSigmas = 2.0;

std::string pair_key(const Record& r) { return r.c.key() + "|" + r.kernel; }

bool positive_finite(double x) { return std::isfinite(x) && x > 0; }

std::string format_err(double x) { return fmt::format("{:.3g}", x); }

// --max-error bounds every new ok record, paired or added; NaN exceeds every bound.
std::optional<std::string> error_over_max(const Record& n, const CompareOptions& opts) {
  if (n.status != Status::ok || !opts.max_error || !n.ref_max_abs_err) return std::nullopt;
  if (*n.ref_max_abs_err <= *opts.max_error) return std::nullopt;
  return fmt::format("error vs fp64 {} > max {}", format_err(*n.ref_max_abs_err),
                     format_err(*opts.max_error));
}

// Both ok: errors first (a wrong answer matters more than its speed), then timing.
void judge_ok_pair(Comparison& row, const Record& b, const Record& n, const CompareOptions& opts) {
  const TimeStats& tb = b.time_ms;
  const TimeStats& tn = n.time_ms;
  const bool timed = positive_finite(tb.median) && positive_finite(tn.median);
  if (timed) row.ratio = tn.median / tb.median;

  if (auto over = error_over_max(n, opts)) {
    row.verdict = Verdict::error_exceeded;
    row.note = *over;
    return;
  }
  if (n.verified == false && b.verified == true) {
    row.verdict = Verdict::error_exceeded;
    row.note = n.ref_max_abs_err
                   ? fmt::format("no longer verified (error vs fp64 {})", format_err(*n.ref_max_abs_err))
                   : std::string("no longer verified");
    return;
  }

  if (!timed) {
    // An ok record without a usable median cannot vouch for the new code: fail rather than pass.
    row.verdict = Verdict::regression;
    row.note = fmt::format("cannot compare medians (base {}, new {} ms)", tb.median, tn.median);
    return;
  }

  const double delta = tn.median - tb.median;
  const double noise = kNoiseSigmas * std::sqrt(tb.stddev * tb.stddev + tn.stddev * tn.stddev);
  // Written as !(... <= ...) so that a NaN spread cannot hide a slowdown.
  const bool beyond_noise = !(std::abs(delta) <= noise);
  if (row.ratio > 1 + opts.max_slowdown) {
    row.verdict = beyond_noise ? Verdict::regression : Verdict::slower_noise;
    row.note = fmt::format("+{:.3g} ms is {} noise ({:.3g} ms)", delta, beyond_noise ? "beyond" : "within",
                           noise);
  } else if (row.ratio < 1 - opts.max_slowdown && beyond_noise) {
    row.verdict = Verdict::faster;
  } else {
    row.verdict = Verdict::same;
  }
}

// A status that is not ok, with its reason, for notes.
std::string status_note(const Record& r) {
  std::string s(to_string(r.status));
  if (!r.reason.empty()) s += ": " + r.reason;
  return s;
}

}  // namespace

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::same: return "same";
    case Verdict::faster: return "faster";
    case Verdict::slower_noise: return "slower_noise";
    case Verdict::regression: return "regression";
    case Verdict::error_exceeded: return "error_exceeded";
    case Verdict::now_failed: return "now_failed";
    case Verdict::missing: return "missing";
    case Verdict::added: return "added";
  }
  return "?";
}

bool CompareReport::failed() const {
  for (const Comparison& r : rows) {
    switch (r.verdict) {
      case Verdict::regression:
      case Verdict::error_exceeded:
      case Verdict::now_failed:
      case Verdict::missing: return true;
      default: break;
    }
  }
  return false;
}

CompareReport compare_results(const Results& base, const Results& next, const CompareOptions& opts) {
  if (!(opts.max_slowdown >= 0) || !std::isfinite(opts.max_slowdown))
    throw std::runtime_error(fmt::format("max slowdown must be a finite fraction >= 0, not {}",
                                         opts.max_slowdown));
  if (opts.max_error && (!(*opts.max_error >= 0) || !std::isfinite(*opts.max_error)))
    throw std::runtime_error(fmt::format("max error must be finite and >= 0, not {}", *opts.max_error));

  // A file may hold the same (case, kernel) more than once (a repeated axis value): pair the k-th
  // occurrence in base with the k-th in next.
  std::map<std::string, std::vector<const Record*>> partners_of;
  for (const Record& r : next.records) partners_of[pair_key(r)].push_back(&r);
  std::map<std::string, std::size_t> taken;

  CompareReport rep;
  for (const Record& b : base.records) {
    const std::string k = pair_key(b);
    const auto& partners = partners_of[k];
    std::size_t& used = taken[k];
    const Record* n = used < partners.size() ? partners[used++] : nullptr;

    Comparison row;
    row.key = b.c.key();
    row.kernel = b.kernel;
    row.base = &b;
    row.next = n;

    if (b.status != Status::ok) {
      // The base never measured this pair, so nothing can have regressed.
      if (!n) {
        row.verdict = Verdict::same;
        row.note = fmt::format("{} in base, absent in new", to_string(b.status));
      } else if (n->status == Status::ok) {
        row.verdict = Verdict::added;
        row.note = fmt::format("base {}", status_note(b));
        if (auto over = error_over_max(*n, opts)) {
          row.verdict = Verdict::error_exceeded;
          row.note = *over;
        }
      } else {
        row.verdict = Verdict::same;
        row.note = b.status == n->status ? std::string(to_string(n->status))
                                         : fmt::format("{} -> {}", to_string(b.status), status_note(*n));
      }
    } else if (!n) {
      row.verdict = Verdict::missing;
      row.note = "ok in base, absent in new";
    } else if (n->status != Status::ok) {
      row.verdict = Verdict::now_failed;
      row.note = status_note(*n);
    } else {
      judge_ok_pair(row, b, *n, opts);
    }
    rep.rows.push_back(std::move(row));
  }

  // What next has beyond its partners in base, in next's order: the first taken[k] occurrences of
  // each key were paired above.
  std::map<std::string, std::size_t> seen;
  for (const Record& n : next.records) {
    const std::string k = pair_key(n);
    if (seen[k]++ < taken[k]) continue;
    Comparison row;
    row.key = n.c.key();
    row.kernel = n.kernel;
    row.next = &n;
    row.verdict = Verdict::added;
    if (n.status != Status::ok) row.note = status_note(n);
    if (auto over = error_over_max(n, opts)) {
      row.verdict = Verdict::error_exceeded;
      row.note = *over;
    }
    rep.rows.push_back(std::move(row));
  }
  return rep;
}

}  // namespace fb
