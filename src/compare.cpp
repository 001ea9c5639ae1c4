// The regression gate: pairs base and new results by case key + kernel and gives each pair a verdict.
//
// When is "slower" a regression? Timings on a GPU move between runs of the same binary: on the
// H200 a case's median moves by a few percent from run to run, and now and then by ~10% (clock steps,
// where the buffers land), far more than the spread of reps inside one run shows
// (results/h200/gate-study.json). So the gate reads, all robust to a single slow rep:
//   1. the ratio     r = median(new reps) / median(base runs' medians)
//   2. the history   drift = 1.4826 x median_k |log(m_k / m_base)| over the base runs given (several
//                    files: this pair's run-to-run spread; one odd base run does not move it); the
//                    threshold is max(max_slowdown, exp(3 drift) - 1).
//   3. the interval  a seeded percentile bootstrap of median(new) / median(base reps pooled over the
//                    history), at `confidence` (99%).
// regression    : r > 1 + threshold and the interval lies above 1 (slower, and not by chance)
// slower_noise  : r > 1 + max_slowdown but not a regression (reported, not failing)
// faster        : r < 1 - threshold and the interval lies below 1
// unconfirmed   : a regression that a re-measure of just that case (--confirm) did not repeat. A CI job
//                 re-runs the suspects (--emit-suspects, run --filter) and passes --confirm: a one-off
//                 jump of one run then cannot fail the gate, while a real slowdown repeats.
// Reps beyond 5 robust sigmas of the new run's median are counted as outliers and reported; they
// cannot widen anything (medians and MAD ignore them). Files without per-rep samples (schema 1.0)
// use a normal approximation from the median and MAD (or stddev).
//
// Status rules, checked before timing (any of them fails the gate):
//   now_failed     base ok -> new skipped/failed; base skipped -> new failed.
//   missing        base ok, no partner in new.
//   unverified     an ok new row whose verification did not pass (false), or that is unverified
//                  (null) when the base row was verified or the row is new: added kernels too.
//   error_exceeded --max-error is set and the new error vs fp64 is above it (or NaN).
// Refused outright (exit 2, unless --force): different device, backend or schema major; a verify
// run's JSON (its single cold rep is not a benchmark time; never gated on, --force or not).
// Warned of (the verdict unchanged): files run under different FB_* kernel settings (settings.env), rep orders
// (settings.rep_order) or variants of one name (settings.variants: `run --variant`).
#include "compare.h"

#include "registry.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace fb {

namespace {

constexpr double kDriftFactor = 3.0;     // a change must exceed 3 robust sigmas of the history
constexpr double kOutlierSigmas = 5.0;   // robust sigmas beyond which a rep is an outlier
constexpr double kMadToSigma = 1.4826;   // MAD of a normal distribution -> its sigma

std::string pair_key(const Record& r) { return r.c.key() + "|" + r.kernel; }

bool positive_finite(double x) { return std::isfinite(x) && x > 0; }

std::string format_err(double x) { return fmt::format("{:.3g}", x); }

std::string pct(double ratio) { return fmt::format("{:+.1f}%", (ratio - 1) * 100); }

// --max-error bounds every new ok record, paired or added; NaN exceeds every bound.
std::optional<std::string> error_over_max(const Record& n, const CompareOptions& opts) {
  if (n.status != Status::ok || !opts.max_error || !n.ref_max_abs_err) return std::nullopt;
  if (*n.ref_max_abs_err <= *opts.max_error) return std::nullopt;
  return fmt::format("error vs fp64 {} > max {}", format_err(*n.ref_max_abs_err),
                     format_err(*opts.max_error));
}

// A verification problem of an ok new row, if any. `base_verified`: the paired base row's verdict
// (nullopt for an added row).
std::optional<std::string> verification_problem(const Record& n, const Record* base) {
  if (n.status != Status::ok || is_peer(n.kernel)) return std::nullopt;
  if (n.verified == false)
    return n.ref_max_abs_err
               ? fmt::format("failed verification (error vs fp64 {})", format_err(*n.ref_max_abs_err))
               : std::string("failed verification");
  if (!n.verified.has_value() && (!base || base->verified.has_value()))
    return base ? std::string("not verified (the base row was)") : std::string("added, not verified");
  return std::nullopt;
}

std::string status_note(const Record& r) {
  std::string s(to_string(r.status));
  if (!r.reason.empty()) s += ": " + r.reason;
  return s;
}

// The reps of a record, or a stand-in built from its summary (schema 1.0 files).
struct Timing {
  double median = 0;
  std::vector<double> samples;  // empty: use median and spread
  double spread = 0;            // robust sigma of single reps (ms)
  int reps = 0;
};

Timing timing_of(const Record& r) {
  Timing t;
  t.median = r.time_ms.median;
  t.reps = r.time_ms.reps;
  if (!r.time_ms.samples.empty()) {
    t.samples = r.time_ms.samples;
    t.median = median_of(t.samples);
    t.spread = kMadToSigma * mad_of(t.samples);
    t.reps = int(t.samples.size());
  } else {
    t.spread = r.time_ms.mad > 0 ? kMadToSigma * r.time_ms.mad : r.time_ms.stddev;
  }
  return t;
}

double z_of(double confidence) {
  // Two-sided normal quantile for the common confidences (no inverse erf in the standard library).
  if (confidence >= 0.999) return 3.291;
  if (confidence >= 0.99) return 2.576;
  if (confidence >= 0.95) return 1.960;
  return 1.645;
}

// Interval of median(next) / median(base): bootstrap when both have samples, else normal.
std::pair<double, double> ratio_interval(const std::vector<Timing>& base, const Timing& next,
                                         double base_median, const CompareOptions& opts) {
  std::vector<double> pooled;
  bool samples = !next.samples.empty();
  for (const Timing& t : base) {
    if (t.samples.empty()) samples = false;
    pooled.insert(pooled.end(), t.samples.begin(), t.samples.end());
  }
  if (samples)
    return bootstrap_ratio_interval(pooled, next.samples, opts.confidence, opts.bootstrap, opts.seed);
  // Standard error of a median ~ 1.2533 sigma / sqrt(n); combined on the log scale.
  const auto se_log = [](double spread, int n, double median) {
    return n > 1 && median > 0 ? 1.2533 * spread / std::sqrt(double(n)) / median : 0.0;
  };
  double var = std::pow(se_log(next.spread, next.reps, next.median), 2);
  double base_var = 0;
  for (const Timing& t : base) base_var += std::pow(se_log(t.spread, t.reps, t.median), 2);
  var += base_var / double(base.size() * base.size());
  const double r = next.median / base_median;
  const double h = z_of(opts.confidence) * std::sqrt(var);
  return {r * std::exp(-h), r * std::exp(h)};
}

// Timing verdict of one ok pair against its history of ok base records.
void judge_timing(Comparison& row, const std::vector<const Record*>& history, const Record& n,
                  const CompareOptions& opts) {
  std::vector<Timing> base;
  std::vector<double> medians;
  for (const Record* b : history) {
    base.push_back(timing_of(*b));
    medians.push_back(base.back().median);
  }
  const Timing next = timing_of(n);
  row.history = int(base.size());
  row.base_median = median_of(medians);
  if (!positive_finite(row.base_median) || !positive_finite(next.median) ||
      !std::all_of(medians.begin(), medians.end(), positive_finite)) {
    // An ok record without a usable median cannot vouch for the new code: fail rather than pass.
    row.verdict = Verdict::regression;
    row.note = fmt::format("cannot compare medians (base {}, new {} ms)", row.base_median, next.median);
    return;
  }
  row.ratio = next.median / row.base_median;

  // Run-to-run spread of this pair in the history: a robust sigma of the base runs' log medians
  // (1.4826 x their median absolute deviation), so that one odd base run does not blind the gate.
  std::vector<double> dev;
  for (double m : medians) dev.push_back(std::abs(std::log(m / row.base_median)));
  const double drift = kMadToSigma * median_of(dev);
  row.threshold = std::max(opts.max_slowdown, std::exp(kDriftFactor * drift) - 1);

  const auto [lo, hi] = ratio_interval(base, next, row.base_median, opts);
  row.ci_lo = lo;
  row.ci_hi = hi;

  if (!next.samples.empty() && next.spread > 0)
    for (double x : next.samples)
      if (std::abs(x - next.median) > kOutlierSigmas * next.spread) ++row.outliers;

  const std::string interval =
      fmt::format("{} [{}, {}], threshold {}", pct(row.ratio), pct(lo), pct(hi), pct(1 + row.threshold));
  if (row.ratio > 1 + row.threshold && lo > 1) {
    row.verdict = Verdict::regression;
    row.note = interval;
  } else if (row.ratio < 1 - row.threshold && hi < 1) {
    row.verdict = Verdict::faster;
    row.note = interval;
  } else if (row.ratio > 1 + opts.max_slowdown) {
    row.verdict = Verdict::slower_noise;
    row.note = interval + ": within noise";
  } else {
    row.verdict = Verdict::same;
  }
  if (row.outliers > 0) row.note += fmt::format("{}{} outlier rep{}", row.note.empty() ? "" : "; ",
                                                row.outliers, row.outliers == 1 ? "" : "s");
  // Reps that trended (rep_drift, run's summary's rule): the GPU's state moved under the timing, so the median
  // depends on what ran before it. Said, not judged: the verdict stands on the medians and their spread.
  const auto drift_of = [](const Record& r) { return rep_drift(r.time_ms.samples); };
  const auto drifted = [](double d) { return std::isfinite(d) && std::abs(d) > kDriftWarn; };
  double base_drift = std::nan("");
  for (const Record* b : history) {
    const double d = drift_of(*b);
    if (drifted(d) && (std::isnan(base_drift) || std::abs(d) > std::abs(base_drift))) base_drift = d;
  }
  const double new_drift = drift_of(n);
  for (const auto& [side, d] : {std::pair<const char*, double>{"base", base_drift}, {"new", new_drift}})
    if (drifted(d))
      row.note += fmt::format("{}{} reps drifted {:+.1f}%", row.note.empty() ? "" : "; ", side, d * 100);
}

std::string schema_major(const std::string& v) { return v.substr(0, v.find('.')); }

// Why two files cannot be compared (nullopt: they can).
std::optional<std::string> mismatch(const Results& a, const Results& b, const char* what) {
  const std::string da = a.device.value("name", std::string()), db = b.device.value("name", std::string());
  if (a.backend != b.backend)
    return fmt::format("{} ran on backend '{}', the new file on '{}'", what, a.backend, b.backend);
  if (da != db) return fmt::format("{} ran on device '{}', the new file on '{}'", what, da, db);
  if (schema_major(a.schema_version) != schema_major(b.schema_version))
    return fmt::format("{} has schema {}, the new file {}", what, a.schema_version, b.schema_version);
  return std::nullopt;
}

// A warning where two files ran under different FB_* kernel settings (settings.env, absent: none set; probe words that
// change what a kernel runs): an A/B of a probe means to, a regression gate does not.
std::optional<std::string> env_difference(const Results& a, const Results& b, const char* what) {
  const auto env_of = [](const Results& r) { return env_line(r.settings.value("env", nlohmann::json::object())); };
  const std::string ea = env_of(a), eb = env_of(b);
  if (ea == eb) return std::nullopt;
  return fmt::format("{} ran under FB_* kernel settings {}, the new file under {}", what, ea, eb);
}

// A warning where two files took their reps in different orders (settings.rep_order, absent: blocked): interleaved
// reps put a drift of the device's speed on every kernel alike, blocked ones on whichever ran when it came, so a
// kernel's time may move between the files with no change in it.
std::optional<std::string> rep_order_difference(const Results& a, const Results& b, const char* what) {
  const auto order_of = [](const Results& r) {
    const auto it = r.settings.find("rep_order");
    return it != r.settings.end() && it->is_string() ? it->get<std::string>() : std::string("blocked");
  };
  const std::string oa = order_of(a), ob = order_of(b);
  if (oa == ob) return std::nullopt;
  return fmt::format("{} took its reps {}, the new file {} (settings.rep_order): times may differ by the order alone",
                     what, oa, ob);
}

// A warning where both files name a variant (settings.variants, `run --variant`) that is another kernel or runs
// under other settings in each: their rows share a name, not a kernel.
std::optional<std::string> variant_difference(const Results& a, const Results& b, const char* what) {
  const auto variants_of = [](const Results& r) { return r.settings.value("variants", nlohmann::json::object()); };
  const nlohmann::json va = variants_of(a), vb = variants_of(b);
  if (!va.is_object() || !vb.is_object()) return std::nullopt;
  const auto shown = [](const nlohmann::json& v) {
    return fmt::format("{} under {}", v.value("kernel", "?"), env_line(v.value("env", nlohmann::json::object())));
  };
  std::vector<std::string> differ;
  for (const auto& [name, v] : va.items())
    if (vb.contains(name) && vb.at(name) != v)
      differ.push_back(fmt::format("'{}' is {} there, {} in the new file", name, shown(v), shown(vb.at(name))));
  if (differ.empty()) return std::nullopt;
  return fmt::format("{} names variants that differ from the new file's: {}", what, fmt::join(differ, "; "));
}

// `verify` marks its results settings.timing.mode = "verify-cold".
bool is_verify_run(const Results& r) {
  const auto it = r.settings.find("timing");
  if (it == r.settings.end()) return false;
  if (it->is_string()) return *it == "verify-cold";
  return it->is_object() && it->value("mode", std::string()) == "verify-cold";
}

}  // namespace

double mad_of(const std::vector<double>& v) {
  const double m = median_of(v);
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::abs(x - m));
  return median_of(std::move(dev));
}

std::pair<double, double> bootstrap_ratio_interval(const std::vector<double>& base,
                                                   const std::vector<double>& next, double confidence,
                                                   int resamples, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<double> ratios;
  ratios.reserve(std::size_t(std::max(resamples, 1)));
  std::vector<double> a(base.size()), b(next.size());
  std::uniform_int_distribution<std::size_t> pick_a(0, base.size() - 1), pick_b(0, next.size() - 1);
  for (int i = 0; i < resamples; ++i) {
    for (auto& x : a) x = base[pick_a(gen)];
    for (auto& x : b) x = next[pick_b(gen)];
    ratios.push_back(median_of(b) / median_of(a));
  }
  std::sort(ratios.begin(), ratios.end());
  const double tail = (1 - confidence) / 2;
  const auto at = [&](double q) {
    const std::size_t i = std::min(ratios.size() - 1, std::size_t(q * double(ratios.size())));
    return ratios[i];
  };
  return {at(tail), at(1 - tail)};
}

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::same: return "same";
    case Verdict::faster: return "faster";
    case Verdict::slower_noise: return "slower_noise";
    case Verdict::unconfirmed: return "unconfirmed";
    case Verdict::regression: return "regression";
    case Verdict::error_exceeded: return "error_exceeded";
    case Verdict::unverified: return "unverified";
    case Verdict::now_failed: return "now_failed";
    case Verdict::missing: return "missing";
    case Verdict::added: return "added";
  }
  return "?";
}

bool is_failure(Verdict v) {
  switch (v) {
    case Verdict::regression:
    case Verdict::error_exceeded:
    case Verdict::unverified:
    case Verdict::now_failed:
    case Verdict::missing: return true;
    default: return false;
  }
}

bool CompareReport::failed() const {
  return std::any_of(rows.begin(), rows.end(), [](const Comparison& r) { return is_failure(r.verdict); });
}

std::vector<std::string> CompareReport::suspects() const {
  std::vector<std::string> keys;
  for (const Comparison& r : rows)
    if ((r.verdict == Verdict::regression || r.verdict == Verdict::unconfirmed) &&
        std::find(keys.begin(), keys.end(), r.key) == keys.end())
      keys.push_back(r.key);
  return keys;
}

CompareReport compare_results(const Results& base, const Results& next, const CompareOptions& opts) {
  return compare_results(std::vector<Results>{base}, next, opts);
}

CompareReport compare_results(const std::vector<Results>& history, const Results& next,
                              const CompareOptions& opts, const Results* confirm) {
  if (history.empty()) throw std::invalid_argument("compare needs at least one base file");
  if (!(opts.max_slowdown >= 0) || !std::isfinite(opts.max_slowdown))
    throw std::invalid_argument(fmt::format("--max-slowdown must be a finite fraction >= 0, not {}",
                                            opts.max_slowdown));
  if (opts.max_error && (!(*opts.max_error >= 0) || !std::isfinite(*opts.max_error)))
    throw std::invalid_argument(fmt::format("--max-error must be finite and >= 0, not {}", *opts.max_error));
  if (!(opts.confidence > 0.5 && opts.confidence < 1) || opts.bootstrap < 100)
    throw std::invalid_argument("confidence must be in (0.5, 1) and bootstrap at least 100 resamples");

  CompareReport rep;
  rep.history = int(history.size());
  for (std::size_t i = 0; i < history.size(); ++i) {
    const std::string what = history.size() == 1 ? std::string("the base file") : fmt::format("base file {}", i + 1);
    if (is_verify_run(history[i]))
      throw std::invalid_argument(what + " is a `verify` run: its single cold rep is not a benchmark time");
    if (auto why = mismatch(history[i], next, what.c_str())) {
      if (!opts.force) throw std::invalid_argument(*why + " (use --force to compare anyway)");
      rep.warnings.push_back(*why);
    }
    if (auto why = env_difference(history[i], next, what.c_str())) rep.warnings.push_back(*why);
    if (auto why = rep_order_difference(history[i], next, what.c_str())) rep.warnings.push_back(*why);
    if (auto why = variant_difference(history[i], next, what.c_str())) rep.warnings.push_back(*why);
  }
  if (is_verify_run(next))
    throw std::invalid_argument("the new file is a `verify` run: its single cold rep is not a benchmark time");
  if (confirm && is_verify_run(*confirm))
    throw std::invalid_argument("the --confirm file is a `verify` run: its single cold rep is not a benchmark time");
  if (confirm) {
    if (auto why = mismatch(*confirm, next, "the --confirm file")) {
      if (!opts.force) throw std::invalid_argument(*why + " (use --force to compare anyway)");
      rep.warnings.push_back(*why);
    }
    if (auto why = env_difference(*confirm, next, "the --confirm file")) rep.warnings.push_back(*why);
    if (auto why = rep_order_difference(*confirm, next, "the --confirm file")) rep.warnings.push_back(*why);
    if (auto why = variant_difference(*confirm, next, "the --confirm file")) rep.warnings.push_back(*why);
  }

  // Every base run's ok records by pair, for the timing history. A file may hold the same pair more
  // than once (a repeated axis value): the k-th occurrence pairs with the k-th.
  using Index = std::map<std::string, std::vector<const Record*>>;
  const auto index = [](const Results& r) {
    Index idx;
    for (const Record& rec : r.records) idx[pair_key(rec)].push_back(&rec);
    return idx;
  };
  std::vector<Index> base_idx;
  for (const Results& h : history) base_idx.push_back(index(h));
  const Index next_idx = index(next);
  const Index confirm_idx = confirm ? index(*confirm) : Index{};
  const auto occurrence = [](const Index& idx, const std::string& k, std::size_t i) -> const Record* {
    auto it = idx.find(k);
    return it != idx.end() && i < it->second.size() ? it->second[i] : nullptr;
  };

  const Results& latest = history.back();
  std::map<std::string, std::size_t> seen_base;
  double log_sum = 0;
  for (const Record& b : latest.records) {
    const std::string k = pair_key(b);
    const std::size_t occ = seen_base[k]++;
    const Record* n = occurrence(next_idx, k, occ);

    Comparison row;
    row.key = b.c.key();
    row.kernel = b.kernel;
    row.base = &b;
    row.next = n;

    if (!n) {
      row.verdict = b.status == Status::ok ? Verdict::missing : Verdict::same;
      row.note = b.status == Status::ok ? "ok in base, absent in new"
                                        : fmt::format("{} in base, absent in new", to_string(b.status));
    } else if (b.status == Status::ok && n->status != Status::ok) {
      row.verdict = Verdict::now_failed;
      row.note = status_note(*n);
    } else if (b.status == Status::skipped && n->status == Status::failed) {
      row.verdict = Verdict::now_failed;
      row.note = "skipped -> " + status_note(*n);
    } else if (n->status != Status::ok) {
      row.verdict = Verdict::same;
      row.note = b.status == n->status ? std::string(to_string(n->status))
                                       : fmt::format("{} -> {}", to_string(b.status), status_note(*n));
    } else if (auto over = error_over_max(*n, opts)) {
      row.verdict = Verdict::error_exceeded;
      row.note = *over;
    } else if (auto problem = verification_problem(*n, b.status == Status::ok ? &b : nullptr)) {
      row.verdict = Verdict::unverified;
      row.note = *problem;
    } else if (b.status != Status::ok) {
      row.verdict = Verdict::added;
      row.note = fmt::format("base {}", status_note(b));
    } else {
      std::vector<const Record*> hist;
      for (const Index& idx : base_idx)
        if (const Record* h = occurrence(idx, k, occ); h && h->status == Status::ok) hist.push_back(h);
      judge_timing(row, hist, *n, opts);
      if (row.verdict == Verdict::regression && confirm) {
        if (const Record* again = occurrence(confirm_idx, k, 0); again && again->status == Status::ok) {
          Comparison re = row;
          judge_timing(re, hist, *again, opts);
          if (re.verdict == Verdict::regression) {
            row.note += fmt::format("; confirmed on re-measure ({})", pct(re.ratio));
          } else {
            row.verdict = Verdict::unconfirmed;
            row.note += fmt::format("; not repeated on re-measure ({})", pct(re.ratio));
          }
        }
      }
      if (row.ratio > 0) {
        log_sum += std::log(row.ratio);
        ++rep.timed_pairs;
      }
    }
    rep.rows.push_back(std::move(row));
  }

  // What next has beyond its partners in the latest base, in next's order.
  const Index latest_idx = index(latest);
  std::map<std::string, std::size_t> seen_next;
  for (const Record& n : next.records) {
    const std::string k = pair_key(n);
    const std::size_t occ = seen_next[k]++;
    if (occurrence(latest_idx, k, occ)) continue;
    Comparison row;
    row.key = n.c.key();
    row.kernel = n.kernel;
    row.next = &n;
    row.verdict = Verdict::added;
    if (n.status != Status::ok) row.note = status_note(n);
    if (auto over = error_over_max(n, opts)) {
      row.verdict = Verdict::error_exceeded;
      row.note = *over;
    } else if (auto problem = verification_problem(n, nullptr)) {
      row.verdict = Verdict::unverified;
      row.note = *problem;
    }
    rep.rows.push_back(std::move(row));
  }
  if (rep.timed_pairs > 0) rep.geomean_ratio = std::exp(log_sum / rep.timed_pairs);
  return rep;
}

}  // namespace fb
