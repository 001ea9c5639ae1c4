// Interleaved reps in flashbench run [interleave]: round_order's design, next_rounds, and the runner and CPU
// backend timing a case's kernels in turn. The drift test plays a device that slows as it runs, on a simulated
// clock: two identical kernels whose every call takes longer than the one before (any kernel's call, as a clock
// falling under a power cap slows them all). Back to back the second reads far slower; interleaved the two read
// alike. A kernel that
// breaks in the rounds is recorded failed and the others are timed again from the start.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "backend/cpu/cpu_attention.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/timing.h"
#include "catch.h"
#include "commands.h"
#include "record.h"
#include "registry.h"
#include "runner.h"
#include "spec.h"

using namespace fb;
namespace fs = std::filesystem;

namespace {

const Record& record_of(const Results& res, const std::string& kernel) {
  for (const Record& r : res.records)
    if (r.kernel == kernel) return r;
  FAIL("no record of " << kernel);
  return res.records.front();
}

// The simulated device: its clock (the CPU backend's timer in the drift test, BackendOptions::clock_ms) advances
// only inside the drifting kernels, each call kStepMs longer than the call before.
constexpr double kStepMs = 1.0;
long long g_calls = 0;
double g_clock_ms = 0;

void drift_wait() { g_clock_ms += kStepMs * double(g_calls++); }

// The built-in naive and flash, plus: "a" and "b", kernels of the drifting device; "breaks", flash that throws
// on its `break_at`-th call (0-based; warm-up runs count).
KernelSet test_kernels(int break_at) {
  const Descriptor& flash = *builtin_kernels().find("flash");
  std::vector<Descriptor> ds = {*builtin_kernels().find("naive"), flash};
  for (const char* name : {"a", "b"}) {
    Descriptor d = flash;
    d.name = name;
    // The wait alone (outputs left poisoned; the drift sweeps do not verify).
    d.cpu.forward = [](const AttentionParams&, const cpu::Context&, cpu::Saved&) { drift_wait(); };
    ds.push_back(d);
  }
  Descriptor breaks = flash;
  breaks.name = "breaks";
  const auto inner = flash.cpu.forward;
  auto calls = std::make_shared<int>(0);
  breaks.cpu.forward = [inner, calls, break_at](const AttentionParams& p, const cpu::Context& cx, cpu::Saved& s) {
    if ((*calls)++ == break_at) throw std::runtime_error("test kernel broke in the rounds");
    inner(p, cx, s);
  };
  ds.push_back(breaks);
  return KernelSet(ds);
}

Sweep small_sweep(const std::vector<std::string>& kernels, int reps, bool interleaved, bool verify = true) {
  nlohmann::json spec = {{"seq", {48}},       {"batch", {1}},       {"heads", {2}},      {"head_dim", {32}},
                         {"dtype", {"fp32"}}, {"causal", {false}},  {"pass", {"fwd"}},   {"warmup", 0},
                         {"reps", reps},      {"verify", verify},   {"kernels", {"naive", "flash"}}};
  Sweep s = sweep_from_json(spec);
  s.kernels = kernels;
  s.rep_order = interleaved ? RepOrder::interleaved : RepOrder::blocked;
  return s;
}

double median_ratio(const Results& res, const std::string& a, const std::string& b) {
  return record_of(res, b).time_ms.median / record_of(res, a).time_ms.median;
}

}  // namespace

TEST_CASE("round_order: a Williams design, peers.py's orders", "[interleave]") {
  CHECK(round_order(1, 0) == std::vector<int>{0});
  CHECK(round_order(1, 7) == std::vector<int>{0});
  CHECK(round_order(0, 3).empty());
  // peers.py round_orders(3) and (4), row by row.
  const std::vector<std::vector<int>> three = {{0, 1, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}, {0, 2, 1}, {1, 0, 2}};
  for (std::size_t r = 0; r < three.size(); ++r) CHECK(round_order(3, long(r)) == three[r]);
  const std::vector<std::vector<int>> four = {{0, 1, 3, 2}, {1, 2, 0, 3}, {2, 3, 1, 0}, {3, 0, 2, 1}};
  for (std::size_t r = 0; r < four.size(); ++r) CHECK(round_order(4, long(r)) == four[r]);
  CHECK(round_order(3, 6) == three[0]);  // cycled

  for (int n = 1; n <= 7; ++n) {
    INFO("kernels " << n);
    const int rows = n % 2 ? 2 * n : n;
    std::map<std::pair<int, int>, int> place, follows;
    for (int r = 0; r < rows; ++r) {
      const std::vector<int> o = round_order(n, r);
      REQUIRE(int(o.size()) == n);
      CHECK(std::set<int>(o.begin(), o.end()).size() == std::size_t(n));  // each kernel once a round
      for (int i = 0; i < n; ++i) ++place[{o[std::size_t(i)], i}];
      for (int i = 1; i < n; ++i) ++follows[{o[std::size_t(i - 1)], o[std::size_t(i)]}];
    }
    for (int k = 0; k < n; ++k)
      for (int i = 0; i < n; ++i) CHECK(place[{k, i}] == rows / n);
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b)
        if (a != b) CHECK(follows[{a, b}] == rows / n);  // n (n - 1) ordered pairs, rows x (n - 1) adjacencies
  }
}

TEST_CASE("next_rounds: the most any kernel asks for, each charged its share of the wall time", "[interleave]") {
  TimingPolicy fixed;
  fixed.reps = 10;
  CHECK(next_rounds(fixed, {{}, {}}, 0) == 10);
  CHECK(next_rounds(fixed, {std::vector<double>(10, 1.0), std::vector<double>(4, 1.0)}, 1) == 6);
  CHECK(next_rounds(fixed, {std::vector<double>(10, 1.0), std::vector<double>(10, 1.0)}, 1) == 0);
  CHECK(next_rounds(fixed, {}, 0) == 0);
  TimingPolicy adaptive;
  adaptive.reps = 2;
  adaptive.min_time_s = 1.0;
  adaptive.max_time_s = 10.0;
  // Two kernels of 100 ms a rep, 2 reps each, 0.4 s of wall time: each has 0.2 s of it and needs 8 more reps.
  const std::vector<double> two(2, 100.0);
  CHECK(next_rounds(adaptive, {two, two}, 0.4) == next_batch(adaptive, two, 0.2));
  CHECK(next_rounds(adaptive, {two, two}, 0.4) == 8);
  // Past the cap for its share: stop.
  CHECK(next_rounds(adaptive, {two, two}, 20.5) == 0);
}

TEST_CASE("interleaved on the CPU: every kernel timed in the same rounds, verified, settings say so",
          "[interleave]") {
  const KernelSet kernels = test_kernels(-1);
  RunnerOptions opts;
  opts.kernels = &kernels;
  auto backend = make_cpu_backend();
  const Results blocked = run_sweep(small_sweep({"naive", "flash"}, 5, false), *backend, opts);
  const Results inter = run_sweep(small_sweep({"naive", "flash"}, 5, true), *backend, opts);
  CHECK(blocked.settings.at("rep_order") == "blocked");
  CHECK(blocked.settings.at("timing").at("rep_order") == "blocked");
  CHECK(inter.settings.at("rep_order") == "interleaved");
  CHECK(inter.settings.at("timing").at("rep_order") == "interleaved");
  for (const std::string k : {"naive", "flash"}) {
    INFO(k);
    const Record& r = record_of(inter, k);
    CHECK(r.status == Status::ok);
    CHECK(r.verified == std::optional<bool>(true));
    CHECK(r.time_ms.reps == 5);
    CHECK(r.time_ms.samples.size() == 5);
    CHECK(r.peak_bytes == record_of(blocked, k).peak_bytes);  // the same memory measure either way
    CHECK(r.peak_bytes > 0);
    CHECK(r.max_abs_diff.has_value() == (k == "flash"));
  }
}

TEST_CASE("interleaved reps cancel a drift that back-to-back reps put on one kernel", "[interleave]") {
  const KernelSet kernels = test_kernels(-1);
  RunnerOptions opts;
  opts.kernels = &kernels;
  cpu::BackendOptions simulated;
  simulated.clock_ms = [] { return g_clock_ms; };
  auto backend = cpu::make_cpu_backend(simulated);
  g_calls = 0;
  const Results blocked = run_sweep(small_sweep({"a", "b"}, 8, false, false), *backend, opts);
  g_calls = 0;
  const Results inter = run_sweep(small_sweep({"a", "b"}, 8, true, false), *backend, opts);
  const double rb = median_ratio(blocked, "a", "b"), ri = median_ratio(inter, "a", "b");
  INFO("b / a back to back " << rb << ", interleaved " << ri);
  // Back to back: a's calls 0-7, b's 8-15: medians 3.5 and 11.5 steps. Interleaved: both 7.5 (a's calls 0, 3, 4, 7,
  // ..., b's 1, 2, 5, 6, ...); under a fixed order (a first in every round) b's would be 8 to a's 7.
  CHECK(std::abs(rb - 11.5 / 3.5) < 1e-9);
  CHECK(std::abs(ri - 1.0) < 1e-9);
  // Rep r of both kernels came from round r, one call apart: paired, exactly one step (back to back eight).
  const auto gaps = [](const Results& res) {
    const auto& sa = record_of(res, "a").time_ms.samples;
    const auto& sb = record_of(res, "b").time_ms.samples;
    REQUIRE(sa.size() == 8);
    REQUIRE(sb.size() == 8);
    std::set<double> g;
    for (std::size_t r = 0; r < sa.size(); ++r) g.insert(std::abs(sb[r] - sa[r]) / kStepMs);
    return g;
  };
  CHECK(gaps(inter) == std::set<double>{1.0});
  CHECK(gaps(blocked) == std::set<double>{8.0});
}

TEST_CASE("interleaved adaptive timing: rounds until every kernel has its kernel time", "[interleave]") {
  const KernelSet kernels = test_kernels(-1);
  RunnerOptions opts;
  opts.kernels = &kernels;
  opts.timing.min_time_s = 0.2;  // 200 ms of (simulated) kernel time each
  opts.timing.max_time_s = 60;
  cpu::BackendOptions simulated;
  simulated.clock_ms = [] { return g_clock_ms; };
  auto backend = cpu::make_cpu_backend(simulated);
  g_calls = 0;
  const Results res = run_sweep(small_sweep({"a", "b"}, 4, true, false), *backend, opts);
  const TimeStats& a = record_of(res, "a").time_ms;
  const TimeStats& b = record_of(res, "b").time_ms;
  CHECK(a.reps == b.reps);  // whole rounds
  CHECK(a.reps > 4);
  double sa = 0, sb = 0;
  for (double x : a.samples) sa += x;
  for (double x : b.samples) sb += x;
  CHECK(sa >= 200);
  CHECK(sb >= 200);
  CHECK(res.settings.at("timing").at("mode") == "adaptive");
  CHECK(res.settings.at("timing").at("rep_order") == "interleaved");
}

TEST_CASE("a kernel that breaks in the rounds is recorded failed; the rest are timed again from the start",
          "[interleave]") {
  const KernelSet kernels = test_kernels(3);  // its 4th call: round 3 (no warm-up)
  RunnerOptions opts;
  opts.kernels = &kernels;
  auto backend = make_cpu_backend();
  const Results res = run_sweep(small_sweep({"naive", "breaks", "flash"}, 6, true), *backend, opts);
  const Record& broke = record_of(res, "breaks");
  CHECK(broke.status == Status::failed);
  CHECK(broke.reason.find("test kernel broke in the rounds") != std::string::npos);
  for (const std::string k : {"naive", "flash"}) {
    INFO(k);
    const Record& r = record_of(res, k);
    CHECK(r.status == Status::ok);
    CHECK(r.time_ms.reps == 6);  // not 3 + 6: the broken rounds' samples are dropped
    CHECK(r.verified == std::optional<bool>(true));
  }
  // Back to back the same kernel breaks in its own reps; the others are untouched.
  const KernelSet again = test_kernels(3);
  opts.kernels = &again;
  const Results blocked = run_sweep(small_sweep({"naive", "breaks", "flash"}, 6, false), *backend, opts);
  CHECK(record_of(blocked, "breaks").status == Status::failed);
  CHECK(record_of(blocked, "flash").time_ms.reps == 6);
}

TEST_CASE("rep_order in a spec and --interleave on the command line", "[interleave]") {
  const nlohmann::json base = {{"seq", {32}}, {"batch", {1}}, {"heads", {1}}, {"head_dim", {32}},
                               {"dtype", {"fp32"}}, {"pass", {"fwd"}}, {"kernels", {"naive", "flash"}}};
  nlohmann::json j = base;
  CHECK(sweep_from_json(j).rep_order == RepOrder::blocked);
  j["rep_order"] = "interleaved";
  CHECK(sweep_from_json(j).rep_order == RepOrder::interleaved);
  j["rep_order"] = "interleave";
  try {
    sweep_from_json(j);
    FAIL("rep_order 'interleave' accepted");
  } catch (const SpecError& e) {
    const std::string what = e.what();
    CHECK(what.find("rep_order") != std::string::npos);
    CHECK(what.find("did you mean 'interleaved'") != std::string::npos);
  }
  j["rep_order"] = true;
  CHECK_THROWS_AS(sweep_from_json(j), SpecError);

  const fs::path dir = fs::temp_directory_path() / ("flashbench-interleave-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path spec = dir / "spec.json", out = dir / "out.json";
  nlohmann::json s = base;
  s["kernels"] = {"naive", "flash"};
  s["reps"] = 4;
  s["warmup"] = 0;
  std::ofstream(spec) << s.dump();
  RunOptions o;
  o.spec_path = spec.string();
  o.json_out = out.string();
  o.backend = "cpu";
  o.quiet = true;
  o.interleave = true;
  o.no_ceilings = true;
  REQUIRE(run_command(o) == kExitOk);
  const Results res = load_results(out.string());
  CHECK(res.settings.at("rep_order") == "interleaved");
  CHECK(res.settings.at("overrides").at("rep_order") == "interleaved");
  for (const Record& r : res.records) {
    CHECK(r.status == Status::ok);
    CHECK(r.verified == std::optional<bool>(true));
    CHECK(r.time_ms.samples.size() == 4);
  }
  fs::remove_all(dir);
}
