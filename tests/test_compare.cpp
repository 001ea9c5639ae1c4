// The regression gate: verdicts on the fixtures in tests/data/results/, the noise rule at its edges,
// and the comparison printers.
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>

#include "catch.h"
#include "compare.h"
#include "printers/printers.h"

using nlohmann::json;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

fb::Results fixture(const std::string& name) {
  return fb::load_results(std::string(FLASHBENCH_SOURCE_DIR) + "/tests/data/results/" + name);
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::size_t count_verdict(const fb::CompareReport& rep, fb::Verdict v) {
  std::size_t n = 0;
  for (const auto& row : rep.rows) n += row.verdict == v;
  return n;
}

const fb::Comparison& row_of(const fb::CompareReport& rep, const std::string& key, const std::string& kernel) {
  for (const auto& row : rep.rows)
    if (row.key == key && row.kernel == kernel) return row;
  throw std::runtime_error("no row " + key + " " + kernel);
}

// Every row but `except` has verdict `same`.
void others_same(const fb::CompareReport& rep, const fb::Comparison* except) {
  for (const auto& row : rep.rows) {
    if (&row == except) continue;
    INFO(row.key << " " << row.kernel << ": " << fb::to_string(row.verdict) << " " << row.note);
    CHECK(row.verdict == fb::Verdict::same);
  }
}

std::string print(const fb::CompareReport& rep, fb::CompareFormat f) {
  std::ostringstream os;
  fb::print_comparison(os, rep, f);
  return os.str();
}

// One ok record with the given timing statistics.
fb::Record timed(double median, double stddev, const std::string& kernel = "flash") {
  fb::Record r;
  r.c.set_seq(512);
  r.kernel = kernel;
  r.time_ms.median = r.time_ms.mean = median;
  r.time_ms.min = median - stddev;
  r.time_ms.max = median + stddev;
  r.time_ms.stddev = stddev;
  r.time_ms.reps = 10;
  r.ref_max_abs_err = 1e-6;
  r.verified = true;
  return r;
}

fb::Results results_of(std::vector<fb::Record> records) {
  fb::Results r;
  r.records = std::move(records);
  return r;
}

// Verdict of one base/new pair.
fb::Verdict judge(const fb::Record& base, const fb::Record& next, const fb::CompareOptions& opts = {}) {
  const fb::Results b = results_of({base}), n = results_of({next});
  const fb::CompareReport rep = fb::compare_results(b, n, opts);
  REQUIRE(rep.rows.size() == 1);
  return rep.rows[0].verdict;
}

const std::string kFull4096 = "b4-h16-kv16-n4096-d128-bf16-full-fwd";
const std::string kCausal4096 = "b4-h16-kv16-n4096-d128-bf16-causal-fwd";

}  // namespace

TEST_CASE("fixtures: identical runs pass", "[compare]") {
  const fb::Results base = fixture("base.json"), same = fixture("same.json");
  const fb::CompareReport rep = fb::compare_results(base, same, {});
  CHECK_FALSE(rep.failed());
  REQUIRE(rep.rows.size() == base.records.size());
  others_same(rep, nullptr);
  for (const auto& row : rep.rows) {
    if (row.base->status == fb::Status::ok) CHECK(row.ratio == 1.0);
    else CHECK(row.ratio == 0.0);  // the skipped naive row has no timing
  }
}

TEST_CASE("fixtures: 30% slower with a tight spread is a regression", "[compare]") {
  const fb::CompareReport rep = fb::compare_results(fixture("base.json"), fixture("slower.json"), {});
  CHECK(rep.failed());
  const fb::Comparison& row = row_of(rep, kFull4096, "flash");
  CHECK(row.verdict == fb::Verdict::regression);
  CHECK(std::abs(row.ratio - 1.30) <= 0.01);
  others_same(rep, &row);

  SECTION("a threshold above the slowdown lets it through") {
    fb::CompareOptions loose;
    loose.max_slowdown = 0.35;
    CHECK_FALSE(fb::compare_results(fixture("base.json"), fixture("slower.json"), loose).failed());
  }
}

TEST_CASE("fixtures: 8% slower inside a wide recorded spread is not a regression", "[compare]") {
  const fb::CompareReport rep = fb::compare_results(fixture("base.json"), fixture("noisy.json"), {});
  CHECK_FALSE(rep.failed());
  const fb::Comparison& row = row_of(rep, kCausal4096, "flash");
  CHECK(row.verdict == fb::Verdict::slower_noise);
  CHECK(row.ratio > 1.05);  // past the default threshold: only the noise rule spares it
  CHECK(row.ratio < 1.10);
  CHECK(contains(row.note, "within noise"));
  others_same(rep, &row);
}

TEST_CASE("fixtures: an ok case gone missing fails", "[compare]") {
  const fb::CompareReport rep = fb::compare_results(fixture("base.json"), fixture("missing.json"), {});
  CHECK(rep.failed());
  const fb::Comparison& row = row_of(rep, "b4-h16-kv16-n1024-d128-bf16-full-fwd", "flash");
  CHECK(row.verdict == fb::Verdict::missing);
  CHECK(row.next == nullptr);
  others_same(rep, &row);

  SECTION("the other way round it is only added") {
    const fb::CompareReport back = fb::compare_results(fixture("missing.json"), fixture("base.json"), {});
    CHECK_FALSE(back.failed());
    CHECK(count_verdict(back, fb::Verdict::added) == 1);
    CHECK(back.rows.back().verdict == fb::Verdict::added);  // added rows come last
    CHECK(back.rows.back().base == nullptr);
  }
}

TEST_CASE("fixtures: an ok case that now fails fails the gate", "[compare]") {
  const fb::CompareReport rep = fb::compare_results(fixture("base.json"), fixture("failed.json"), {});
  CHECK(rep.failed());
  const fb::Comparison& row = row_of(rep, "b4-h16-kv16-n4096-d64-bf16-full-fwd", "flash");
  CHECK(row.verdict == fb::Verdict::now_failed);
  CHECK(contains(row.note, "illegal memory access"));
  others_same(rep, &row);
}

TEST_CASE("fixtures: an error above --max-error fails only when the bound is given", "[compare]") {
  const fb::Results base = fixture("base.json"), next = fixture("error.json");
  CHECK_FALSE(fb::compare_results(base, next, {}).failed());

  fb::CompareOptions strict;
  strict.max_error = 1e-2;
  const fb::CompareReport rep = fb::compare_results(base, next, strict);
  CHECK(rep.failed());
  const fb::Comparison& row = row_of(rep, kCausal4096, "flash");
  CHECK(row.verdict == fb::Verdict::error_exceeded);
  CHECK(contains(row.note, "0.021"));
  others_same(rep, &row);

  fb::CompareOptions loose;
  loose.max_error = 5e-2;
  CHECK_FALSE(fb::compare_results(base, next, loose).failed());
}

namespace {

// An ok, verified record whose reps are `n` draws around `median` with relative spread `cv`
// (deterministic: a fixed pattern, so the tests do not depend on a generator).
fb::Record sampled(double median, double cv, int n = 20, const std::string& kernel = "flash") {
  fb::Record r = timed(median, median * cv, kernel);
  for (int i = 0; i < n; ++i) {
    const double u = (double(i) + 0.5) / double(n) - 0.5;  // -0.5 .. 0.5, symmetric
    r.time_ms.samples.push_back(median * (1 + 2 * cv * u));
  }
  r.time_ms = fb::summarize(r.time_ms.samples);
  return r;
}

fb::Verdict judge_history(const std::vector<fb::Record>& history, const fb::Record& next,
                          const fb::CompareOptions& opts = {}) {
  std::vector<fb::Results> h;
  for (const auto& r : history) h.push_back(results_of({r}));
  const fb::CompareReport rep = fb::compare_results(h, results_of({next}), opts);
  REQUIRE(rep.rows.size() == 1);
  return rep.rows[0].verdict;
}

}  // namespace

TEST_CASE("the gate says which side's reps drifted, and judges on the medians all the same", "[compare]") {
  // Session 55 (results/h100/s55/O): the same kernel's reps, climbing under the power cap when it was timed after
  // another kernel, flat when timed first. 2% apart in median: same either way; the climbing side is named.
  fb::Record flat = timed(19.2, 0.2);
  flat.time_ms = fb::summarize({19.0, 19.1, 19.2, 19.4, 19.3, 19.4, 19.4, 19.4, 19.0, 19.0});
  fb::Record climbing = timed(19.6, 0.2);
  climbing.time_ms = fb::summarize({19.0, 19.1, 19.2, 19.3, 19.4, 19.8, 19.9, 20.0, 20.1, 20.2});
  const fb::CompareReport rep = fb::compare_results(results_of({flat}), results_of({climbing}), {});
  REQUIRE(rep.rows.size() == 1);
  CHECK(rep.rows[0].verdict == fb::Verdict::same);
  CHECK(contains(rep.rows[0].note, "new reps drifted +4.2%"));
  CHECK_FALSE(contains(rep.rows[0].note, "base reps"));
  const fb::CompareReport back = fb::compare_results(results_of({climbing}), results_of({flat}), {});
  CHECK(contains(back.rows[0].note, "base reps drifted +4.2%"));
  CHECK_FALSE(contains(back.rows[0].note, "new reps"));
  const fb::CompareReport steady = fb::compare_results(results_of({flat}), results_of({flat}), {});
  CHECK_FALSE(contains(steady.rows[0].note, "drifted"));
}

TEST_CASE("robust gate: medians and a bootstrap interval, not one slow rep", "[compare]") {
  SECTION("one slow rep cannot hide a 2x slowdown (it widened the old stddev band)") {
    fb::Record slow = sampled(20, 0.01);
    slow.time_ms.samples[3] = 2000;  // one rep 100x slower
    slow.time_ms = fb::summarize(slow.time_ms.samples);
    CHECK(slow.time_ms.stddev > 400);  // the band the old rule would have used
    const fb::CompareReport rep = fb::compare_results(results_of({sampled(10, 0.01)}), results_of({slow}), {});
    REQUIRE(rep.rows.size() == 1);
    CHECK(rep.rows[0].verdict == fb::Verdict::regression);
    CHECK(rep.rows[0].outliers == 1);  // reported
    CHECK(contains(rep.rows[0].note, "1 outlier rep"));
  }
  SECTION("one slow rep in an unchanged run is an outlier, not a regression") {
    fb::Record same = sampled(10, 0.01);
    same.time_ms.samples[0] = 50;
    same.time_ms = fb::summarize(same.time_ms.samples);
    CHECK(judge(sampled(10, 0.01), same) == fb::Verdict::same);
  }
  SECTION("a 7% slowdown with tight reps is a regression; 3% is not") {
    CHECK(judge(sampled(10, 0.01), sampled(10.7, 0.01)) == fb::Verdict::regression);
    CHECK(judge(sampled(10, 0.01), sampled(10.3, 0.01)) == fb::Verdict::same);
  }
  SECTION("a 7% shift inside a 20% rep spread is only slower within noise") {
    CHECK(judge(sampled(10, 0.2, 10), sampled(10.7, 0.2, 10)) == fb::Verdict::slower_noise);
  }
  SECTION("faster mirrors it") {
    CHECK(judge(sampled(10, 0.01), sampled(9.0, 0.01)) == fb::Verdict::faster);
    CHECK(judge(sampled(10, 0.01), sampled(9.8, 0.01)) == fb::Verdict::same);
  }
  SECTION("history: the base runs' drift raises the threshold") {
    // Three base runs of one binary drifted 10.0 / 10.4 / 9.7 ms (up to 4%): a new run at 10.7 ms
    // (+7%) is within twice that drift...
    const std::vector<fb::Record> drifting = {sampled(10.0, 0.005), sampled(10.4, 0.005), sampled(9.7, 0.005)};
    CHECK(judge_history(drifting, sampled(10.7, 0.005)) != fb::Verdict::regression);
    // ...while against one steady base it is a regression, and so is a 25% slowdown with drift.
    CHECK(judge_history({sampled(10.0, 0.005)}, sampled(10.7, 0.005)) == fb::Verdict::regression);
    CHECK(judge_history(drifting, sampled(12.5, 0.005)) == fb::Verdict::regression);
    // A steady history keeps the threshold at --max-slowdown.
    const std::vector<fb::Record> steady = {sampled(10.0, 0.005), sampled(10.02, 0.005), sampled(9.99, 0.005)};
    CHECK(judge_history(steady, sampled(10.7, 0.005)) == fb::Verdict::regression);
  }
  SECTION("schema 1.0 files without samples: a normal approximation from median and spread") {
    CHECK(judge(timed(10, 0.1), timed(13, 0.1)) == fb::Verdict::regression);
    CHECK(judge(timed(10, 0.1), timed(10.1, 0.1)) == fb::Verdict::same);
    CHECK(judge(timed(10, 3.0), timed(10.8, 3.0)) == fb::Verdict::slower_noise);
  }
  SECTION("NaN never passes") {
    CHECK(judge(timed(10, 0.1), timed(kNaN, 0.1)) == fb::Verdict::regression);
    CHECK(judge(timed(10, 0.1), timed(0, 0)) == fb::Verdict::regression);
    fb::Record bad = timed(10, 0.1);
    bad.ref_max_abs_err = kNaN;
    fb::CompareOptions opts;
    opts.max_error = 1.0;
    CHECK(judge(timed(10, 0.1), bad, opts) == fb::Verdict::error_exceeded);
  }
  SECTION("the bootstrap interval is seeded and holds the true ratio") {
    const fb::Record b = sampled(10, 0.02, 30), n = sampled(11, 0.02, 30);
    const auto i1 = fb::bootstrap_ratio_interval(b.time_ms.samples, n.time_ms.samples, 0.99, 2000, 7);
    const auto i2 = fb::bootstrap_ratio_interval(b.time_ms.samples, n.time_ms.samples, 0.99, 2000, 7);
    CHECK(i1 == i2);
    CHECK(i1.first < 1.1);
    CHECK(i1.second > 1.1);
    CHECK(i1.second - i1.first < 0.05);
  }
}

TEST_CASE("re-measure: --confirm turns a one-off slow run into unconfirmed", "[compare]") {
  const fb::Results base = results_of({sampled(10, 0.01)});
  const fb::Results slow = results_of({sampled(10.8, 0.01)});
  const fb::CompareReport rep = fb::compare_results({base}, slow, {});
  REQUIRE(rep.suspects() == std::vector<std::string>{rep.rows[0].key});
  const fb::Results again_fast = results_of({sampled(10.05, 0.01)});
  const fb::CompareReport unconfirmed = fb::compare_results({base}, slow, {}, &again_fast);
  CHECK(unconfirmed.rows[0].verdict == fb::Verdict::unconfirmed);
  CHECK_FALSE(unconfirmed.failed());
  const fb::Results again_slow = results_of({sampled(10.9, 0.01)});
  const fb::CompareReport confirmed = fb::compare_results({base}, slow, {}, &again_slow);
  CHECK(confirmed.rows[0].verdict == fb::Verdict::regression);
  CHECK(contains(confirmed.rows[0].note, "confirmed"));
  CHECK(confirmed.failed());
}

TEST_CASE("geomean ratio over the timed pairs", "[compare]") {
  const fb::Results base = results_of({sampled(10, 0.01, 20, "naive"), sampled(10, 0.01, 20, "flash")});
  const fb::Results next = results_of({sampled(20, 0.01, 20, "naive"), sampled(5, 0.01, 20, "flash")});
  const fb::CompareReport rep = fb::compare_results(base, next, {});
  CHECK(rep.timed_pairs == 2);
  CHECK(std::abs(rep.geomean_ratio - 1.0) < 1e-9);  // 2x and 0.5x
  CHECK(contains(print(rep, fb::CompareFormat::table), "geomean new/base 1.000×"));
}

TEST_CASE("verdicts beyond timing", "[compare]") {
  SECTION("a new row that failed verification fails the gate, even without --max-error") {
    fb::Record next = timed(10, 0.1);
    next.verified = false;
    CHECK(judge(timed(10, 0.1), next) == fb::Verdict::unverified);
    fb::Record base = timed(10, 0.1);
    base.verified = false;  // never verified: still not a pass now
    CHECK(judge(base, next) == fb::Verdict::unverified);
  }
  SECTION("unverified (null) fails when the base was verified; both unverified is timing only") {
    fb::Record next = timed(10, 0.1);
    next.verified.reset();
    CHECK(judge(timed(10, 0.1), next) == fb::Verdict::unverified);
    fb::Record base = timed(10, 0.1);
    base.verified.reset();
    CHECK(judge(base, next) == fb::Verdict::same);
  }
  SECTION("an added kernel that is unverified or failed verification fails") {
    fb::Record added = timed(5, 0.1, "mine");
    added.verified = false;
    const fb::CompareReport rep = fb::compare_results(results_of({timed(10, 0.1)}),
                                                      results_of({timed(10, 0.1), added}), {});
    CHECK(rep.failed());
    CHECK(rep.rows.back().verdict == fb::Verdict::unverified);
    added.verified.reset();
    CHECK(fb::compare_results(results_of({timed(10, 0.1)}), results_of({timed(10, 0.1), added}), {}).failed());
    added.verified = true;
    CHECK_FALSE(fb::compare_results(results_of({timed(10, 0.1)}), results_of({timed(10, 0.1), added}), {}).failed());
  }
  SECTION("the error check comes before timing and keeps the ratio") {
    fb::Record next = timed(13, 0.1);
    next.ref_max_abs_err = 0.5;
    fb::CompareOptions opts;
    opts.max_error = 0.1;
    const fb::CompareReport rep = fb::compare_results(results_of({timed(10, 0.1)}), results_of({next}), opts);
    CHECK(rep.rows.at(0).verdict == fb::Verdict::error_exceeded);
  }
  SECTION("base skipped: absent, still skipped or now ok (verified) pass; now failed fails") {
    fb::Record skipped = timed(0, 0);
    skipped.status = fb::Status::skipped;
    skipped.reason = "too big";
    const fb::Results base = results_of({skipped});
    CHECK_FALSE(fb::compare_results(base, results_of({}), {}).failed());
    CHECK_FALSE(fb::compare_results(base, results_of({skipped}), {}).failed());
    const fb::CompareReport now_ok = fb::compare_results(base, results_of({timed(5, 0.1)}), {});
    CHECK_FALSE(now_ok.failed());
    CHECK(now_ok.rows.at(0).verdict == fb::Verdict::added);
    fb::Record failed = skipped;
    failed.status = fb::Status::failed;
    failed.reason = "illegal address";
    const fb::CompareReport now_failed = fb::compare_results(base, results_of({failed}), {});
    CHECK(now_failed.failed());
    CHECK(now_failed.rows.at(0).verdict == fb::Verdict::now_failed);
  }
  SECTION("an ok case now skipped fails") {
    fb::Record skipped = timed(0, 0);
    skipped.status = fb::Status::skipped;
    skipped.reason = "out of memory";
    const fb::CompareReport rep = fb::compare_results(results_of({timed(10, 0.1)}), results_of({skipped}), {});
    CHECK(rep.failed());
    CHECK(rep.rows.at(0).verdict == fb::Verdict::now_failed);
    CHECK(rep.rows.at(0).note == "skipped: out of memory");
  }
  SECTION("pairs by case and kernel, not by position") {
    const fb::Results base = results_of({timed(10, 0.1, "naive"), timed(5, 0.1, "flash")});
    const fb::Results next = results_of({timed(5, 0.1, "flash"), timed(10, 0.1, "naive")});
    const fb::CompareReport rep = fb::compare_results(base, next, {});
    CHECK_FALSE(rep.failed());
    REQUIRE(rep.rows.size() == 2);
    CHECK(rep.rows[0].kernel == "naive");
    CHECK(rep.rows[0].ratio == 1.0);
  }
  SECTION("a repeated case pairs in order; an extra copy is added") {
    const fb::Results base = results_of({timed(10, 0.1), timed(20, 0.1)});
    const fb::Results next = results_of({timed(10, 0.1), timed(20, 0.1), timed(30, 0.1)});
    const fb::CompareReport rep = fb::compare_results(base, next, {});
    REQUIRE(rep.rows.size() == 3);
    CHECK(rep.rows[0].ratio == 1.0);
    CHECK(rep.rows[1].ratio == 1.0);
    CHECK(rep.rows[2].verdict == fb::Verdict::added);
  }
  SECTION("different device, backend or schema major is refused unless forced") {
    fb::Results a = results_of({timed(10, 0.1)}), b = results_of({timed(10, 0.1)});
    a.backend = "cuda";
    b.backend = "cpu";
    CHECK_THROWS_AS(fb::compare_results(a, b, {}), std::invalid_argument);
    fb::CompareOptions force;
    force.force = true;
    const fb::CompareReport forced = fb::compare_results(a, b, force);
    CHECK(forced.warnings.size() == 1);
    b.backend = "cuda";
    a.device["name"] = "NVIDIA H200";
    b.device["name"] = "NVIDIA A100";
    CHECK_THROWS_AS(fb::compare_results(a, b, {}), std::invalid_argument);
    b.device["name"] = "NVIDIA H200";
    b.schema_version = "2.0.0";
    CHECK_THROWS_AS(fb::compare_results(a, b, {}), std::invalid_argument);
  }
  SECTION("files run under different FB_* kernel settings: a warning naming both, the verdict unchanged") {
    fb::Results a = results_of({timed(10, 0.1)}), b = results_of({timed(10, 0.1)});
    CHECK(fb::compare_results(a, b, {}).warnings.empty());  // neither records any
    b.settings["env"] = {{"FB_SM90_BWD_LAUNCHES", "pdl"}};
    fb::CompareReport rep = fb::compare_results(a, b, {});
    REQUIRE(rep.warnings.size() == 1);
    CHECK(contains(rep.warnings[0], "FB_* kernel settings none, the new file under FB_SM90_BWD_LAUNCHES=pdl"));
    CHECK(rep.rows.at(0).verdict == fb::Verdict::same);
    a.settings["env"] = {{"FB_SM90_BWD_LAUNCHES", "pdl"}};
    CHECK(fb::compare_results(a, b, {}).warnings.empty());  // the same settings
    a.settings["env"] = {{"FB_SM90_BWD_LAUNCHES", "fused"}, {"FB_FLASH_FWD_PROBE", "kvsubwave"}};
    rep = fb::compare_results(a, b, {});
    REQUIRE(rep.warnings.size() == 1);
    CHECK(contains(rep.warnings[0], "FB_FLASH_FWD_PROBE=kvsubwave FB_SM90_BWD_LAUNCHES=fused, the new file"));
    // the --confirm file too
    rep = fb::compare_results(std::vector<fb::Results>{b}, b, {}, &a);
    REQUIRE(rep.warnings.size() == 1);
    CHECK(contains(rep.warnings[0], "the --confirm file ran under"));
  }
  SECTION("files that took their reps in different orders: a warning naming both, the verdict unchanged") {
    fb::Results a = results_of({timed(10, 0.1)}), b = results_of({timed(10, 0.1)});
    b.settings["rep_order"] = "blocked";
    CHECK(fb::compare_results(a, b, {}).warnings.empty());  // absent reads blocked (files before it)
    b.settings["rep_order"] = "interleaved";
    fb::CompareReport rep = fb::compare_results(a, b, {});
    REQUIRE(rep.warnings.size() == 1);
    CHECK(contains(rep.warnings[0], "took its reps blocked, the new file interleaved"));
    CHECK(rep.rows.at(0).verdict == fb::Verdict::same);
    a.settings["rep_order"] = "interleaved";
    CHECK(fb::compare_results(a, b, {}).warnings.empty());
  }
  SECTION("files whose variants of one name differ: a warning naming both, the verdict unchanged") {
    fb::Results a = results_of({timed(10, 0.1)}), b = results_of({timed(10, 0.1)});
    const nlohmann::json k0 = {{"kernel", "flash-sm90"}, {"env", {{"FB_SM90_FWD_PROBE", "k0rec"}}}};
    a.settings["variants"] = {{"p", k0}};
    CHECK(fb::compare_results(a, b, {}).warnings.empty());  // in one file only: its rows are new or missing
    b.settings["variants"] = {{"p", k0}};
    CHECK(fb::compare_results(a, b, {}).warnings.empty());  // the same variant
    b.settings["variants"]["p"]["env"]["FB_SM90_FWD_PROBE"] = "early";
    const fb::CompareReport rep = fb::compare_results(a, b, {});
    REQUIRE(rep.warnings.size() == 1);
    CHECK(contains(rep.warnings[0], "'p' is flash-sm90 under FB_SM90_FWD_PROBE=k0rec there, flash-sm90 under "
                                    "FB_SM90_FWD_PROBE=early in the new file"));
    CHECK(rep.rows.at(0).verdict == fb::Verdict::same);
  }
  SECTION("a verify run's single cold rep is never gated on") {
    fb::Results v = results_of({timed(10, 0)});
    v.settings["timing"] = {{"mode", "verify-cold"}};
    fb::CompareOptions force;
    force.force = true;
    CHECK_THROWS_AS(fb::compare_results(results_of({timed(10, 0.1)}), v, force), std::invalid_argument);
    CHECK_THROWS_AS(fb::compare_results(v, results_of({timed(10, 0.1)}), force), std::invalid_argument);
  }
  SECTION("options out of range are refused") {
    fb::CompareOptions neg;
    neg.max_slowdown = -0.1;
    CHECK_THROWS_AS(fb::compare_results(results_of({}), results_of({}), neg), std::invalid_argument);
    fb::CompareOptions nan_err;
    nan_err.max_error = kNaN;
    CHECK_THROWS_AS(fb::compare_results(results_of({}), results_of({}), nan_err), std::invalid_argument);
  }
}

TEST_CASE("comparison printers: table, markdown, json", "[compare]") {
  const fb::Results base = fixture("base.json"), slower = fixture("slower.json");
  const fb::CompareReport rep = fb::compare_results(base, slower, {});
  const std::size_t unchanged = base.records.size() - 1;

  SECTION("markdown: a summary line first, then the changed rows, unchanged ones folded") {
    const std::string md = print(rep, fb::CompareFormat::markdown);
    INFO(md);
    const std::string first = md.substr(0, md.find('\n'));
    CHECK(contains(first, "**flashbench gate: FAILED**"));
    CHECK(contains(first, "**1 regression**, " + std::to_string(unchanged) + " unchanged"));
    CHECK(contains(md, "| Case | Kernel | Base (ms) | New (ms) | Ratio | Verdict | Note |"));
    CHECK(contains(md, "|:--|:--|--:|--:|--:|:--|:--|"));
    CHECK(contains(md, "| `" + kFull4096 + "` | flash |"));
    CHECK(contains(md, "| 1.30× | **regression** |"));
    CHECK(contains(md, "<details><summary>" + std::to_string(unchanged) + " unchanged</summary>"));
    CHECK(contains(md, "</details>"));
    // The regression sits above the fold.
    CHECK(md.find(kFull4096 + "` | flash") < md.find("<details>"));
  }
  SECTION("markdown: table cells escape pipes") {
    fb::CompareReport r;
    fb::Comparison c;
    c.key = "k";
    c.kernel = "flash";
    c.verdict = fb::Verdict::added;
    c.note = "a | b";
    r.rows.push_back(c);
    const std::string md = print(r, fb::CompareFormat::markdown);
    CHECK(contains(md, "a \\| b"));
    CHECK(contains(md.substr(0, md.find('\n')), "1 added"));
  }
  SECTION("table: every row, verdicts and a closing summary") {
    const std::string t = print(rep, fb::CompareFormat::table);
    INFO(t);
    CHECK(contains(t, "regression"));
    CHECK(contains(t, "1.30×"));
    CHECK(contains(t, "1 regression, " + std::to_string(unchanged) + " unchanged - FAILED"));
    CHECK(contains(t, "geomean new/base"));
    std::size_t lines = 0;
    for (char ch : t) lines += ch == '\n';
    CHECK(lines == base.records.size() + 3);  // title, rows, blank line, summary
  }
  SECTION("json: verdict counts and rows for scripts") {
    const json j = json::parse(print(rep, fb::CompareFormat::json));
    CHECK(j.at("failed") == true);
    CHECK(j.at("counts").at("regression") == 1);
    CHECK(j.at("counts").at("same") == unchanged);
    REQUIRE(j.at("rows").size() == base.records.size());
    bool found = false;
    for (const json& row : j.at("rows")) {
      if (row.at("verdict") != "regression") continue;
      found = true;
      CHECK(row.at("key") == kFull4096);
      CHECK(std::abs(row.at("ratio").get<double>() - 1.30) <= 0.01);
      CHECK(row.at("new_median_ms").get<double>() > row.at("base_median_ms").get<double>());
    }
    CHECK(found);
  }
  SECTION("nothing to compare") {
    CHECK(contains(print(fb::CompareReport{}, fb::CompareFormat::markdown), "nothing to compare"));
  }
}
