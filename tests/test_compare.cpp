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

TEST_CASE("noise rule: slower past the threshold AND past 2 sqrt(sd_b^2 + sd_n^2)", "[compare]") {
  // 10 ms -> 10.6 ms (6% > 5%). Noise band 2*sqrt(0.1^2 + 0.1^2) = 0.283 ms < 0.6 ms.
  CHECK(judge(timed(10, 0.1), timed(10.6, 0.1)) == fb::Verdict::regression);
  // Same shift, new run spread 0.5 ms: band 2*sqrt(0.01 + 0.25) = 1.02 ms > 0.6 ms.
  CHECK(judge(timed(10, 0.1), timed(10.6, 0.5)) == fb::Verdict::slower_noise);
  // Either run's spread counts: a noisy base hides the shift just the same.
  CHECK(judge(timed(10, 0.5), timed(10.6, 0.1)) == fb::Verdict::slower_noise);
  // Inside the threshold: no verdict of slowness at all, however tight the runs.
  CHECK(judge(timed(10, 0), timed(10.4, 0)) == fb::Verdict::same);
  // One rep each (sd 0): only the threshold decides.
  CHECK(judge(timed(10, 0), timed(10.6, 0)) == fb::Verdict::regression);
  // Just either side of the noise band: delta 0.6 ms, band 2*sqrt(2)*sd.
  const double sd_edge = 0.6 / (2 * std::sqrt(2.0));
  CHECK(judge(timed(10, sd_edge * 0.99), timed(10.6, sd_edge * 0.99)) == fb::Verdict::regression);
  CHECK(judge(timed(10, sd_edge * 1.01), timed(10.6, sd_edge * 1.01)) == fb::Verdict::slower_noise);
  // The threshold is configurable.
  fb::CompareOptions tight;
  tight.max_slowdown = 0.01;
  CHECK(judge(timed(10, 0), timed(10.4, 0), tight) == fb::Verdict::regression);

  SECTION("faster mirrors it") {
    CHECK(judge(timed(10, 0.1), timed(9.0, 0.1)) == fb::Verdict::faster);
    CHECK(judge(timed(10, 1.0), timed(9.0, 1.0)) == fb::Verdict::same);  // inside the noise
    CHECK(judge(timed(10, 0.1), timed(9.7, 0.1)) == fb::Verdict::same);  // inside the threshold
  }
  SECTION("NaN never passes") {
    CHECK(judge(timed(10, 0.1), timed(kNaN, 0.1)) == fb::Verdict::regression);
    CHECK(judge(timed(10, 0.1), timed(0, 0)) == fb::Verdict::regression);
    CHECK(judge(timed(10, kNaN), timed(10.6, 0.1)) == fb::Verdict::regression);
    fb::Record bad = timed(10, 0.1);
    bad.ref_max_abs_err = kNaN;
    fb::CompareOptions opts;
    opts.max_error = 1.0;
    CHECK(judge(timed(10, 0.1), bad, opts) == fb::Verdict::error_exceeded);
  }
}

TEST_CASE("verdicts beyond timing", "[compare]") {
  SECTION("verification lost is an error regression, even without --max-error") {
    fb::Record next = timed(10, 0.1);
    next.verified = false;
    CHECK(judge(timed(10, 0.1), next) == fb::Verdict::error_exceeded);
    fb::Record base = timed(10, 0.1);
    base.verified = false;  // never verified: not a new failure
    CHECK(judge(base, next) == fb::Verdict::same);
  }
  SECTION("the error check comes before timing and keeps the ratio") {
    fb::Record next = timed(13, 0.1);
    next.ref_max_abs_err = 0.5;
    fb::CompareOptions opts;
    opts.max_error = 0.1;
    const fb::CompareReport rep = fb::compare_results(results_of({timed(10, 0.1)}), results_of({next}), opts);
    CHECK(rep.rows.at(0).verdict == fb::Verdict::error_exceeded);
    CHECK(std::abs(rep.rows.at(0).ratio - 1.3) <= 1e-12);
  }
  SECTION("base skipped: absent, still skipped or now ok never fail") {
    fb::Record skipped = timed(0, 0);
    skipped.status = fb::Status::skipped;
    skipped.reason = "too big";
    const fb::Results base = results_of({skipped});
    CHECK_FALSE(fb::compare_results(base, results_of({}), {}).failed());
    CHECK_FALSE(fb::compare_results(base, results_of({skipped}), {}).failed());
    const fb::CompareReport now_ok = fb::compare_results(base, results_of({timed(5, 0.1)}), {});
    CHECK_FALSE(now_ok.failed());
    CHECK(now_ok.rows.at(0).verdict == fb::Verdict::added);
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
    CHECK(rep.rows[2].next->time_ms.median == 30);
  }
  SECTION("options out of range are refused") {
    fb::CompareOptions neg;
    neg.max_slowdown = -0.1;
    CHECK_THROWS_AS(fb::compare_results({}, {}, neg), std::runtime_error);
    fb::CompareOptions nan_err;
    nan_err.max_error = kNaN;
    CHECK_THROWS_AS(fb::compare_results({}, {}, nan_err), std::runtime_error);
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
    CHECK(first == "**1 regression**, " + std::to_string(unchanged) + " unchanged");
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
    CHECK(md.rfind("1 added\n", 0) == 0);
  }
  SECTION("table: every row, verdicts and a closing summary") {
    const std::string t = print(rep, fb::CompareFormat::table);
    INFO(t);
    CHECK(contains(t, "regression"));
    CHECK(contains(t, "1.30×"));
    CHECK(contains(t, "1 regression, " + std::to_string(unchanged) + " unchanged - FAILED"));
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
