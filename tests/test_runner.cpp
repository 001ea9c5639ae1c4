// The runner when a backend loses its context mid-sweep [runner]: what a kernel fault on a GPU does to
// the CUDA context, played on the CPU by a backend that "faults" in one kernel of one case and from then
// on reports its context lost. Checked: the records (the fault failed with its error, its case's other
// kernels unverified or skipped, every later case skipped with the reason), the journal (only what
// needs no second run), the results file, the one line on stderr, exit 3, and --resume finishing it.
#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "catch.h"
#include "commands.h"
#include "journal.h"
#include "record.h"
#include "runner.h"
#include "spec.h"

using namespace fb;
namespace fs = std::filesystem;

namespace {

constexpr const char* kFault = "fake fault: an illegal memory access was encountered";
constexpr const char* kLost = "test context lost (a kernel faulted)";

// The CPU backend, except that running `fault_kernel` on the `fault_case`-th prepared case (0-based)
// throws and loses the context: from then on context_lost() says so, and any call that would need the
// device is counted (the runner must make none) and throws.
class LosingBackend final : public Backend {
 public:
  LosingBackend(std::size_t fault_case, std::string fault_kernel)
      : cpu_(make_cpu_backend()), fault_case_(fault_case), fault_kernel_(std::move(fault_kernel)) {}

  int calls_after_loss = 0;
  // Stamped on every run, as the CUDA backend's NVML readings would be (the CPU backend reads none).
  std::optional<unsigned> stamp_mhz;
  std::optional<std::uint64_t> stamp_reasons;

  std::string name() const override { return cpu_->name(); }  // "cpu": a journal it writes resumes on the CPU
  nlohmann::json device() const override {
    if (lost_) throw BackendError(kLost);
    return cpu_->device();
  }
  nlohmann::json settings() const override { return cpu_->settings(); }
  std::optional<std::string> check_fits(const Case& c, const Descriptor& k) override {
    used_after_loss();
    return cpu_->check_fits(c, k);
  }
  void prepare(const Case& c, std::uint64_t seed, double input_scale) override {
    used_after_loss();
    ++prepared_;
    cpu_->prepare(c, seed, input_scale);
  }
  using Backend::run;
  KernelRun run(const Descriptor& k, const TimingPolicy& timing) override {
    used_after_loss();
    if (prepared_ == fault_case_ + 1 && k.name == fault_kernel_) {
      lost_ = true;
      throw BackendError(kFault);
    }
    KernelRun run = cpu_->run(k, timing);
    if (stamp_mhz) run.sm_mhz_min = stamp_mhz;
    if (stamp_reasons) run.clock_event_reasons = stamp_reasons;
    return run;
  }
  void arm(const Descriptor& k, const TimingPolicy& timing) override {
    used_after_loss();
    if (prepared_ == fault_case_ + 1 && k.name == fault_kernel_) {
      lost_ = true;
      throw BackendError(kFault);
    }
    cpu_->arm(k, timing);
  }
  std::vector<KernelRun> run_armed(const TimingPolicy& timing) override {
    used_after_loss();
    return cpu_->run_armed(timing);
  }
  void disarm(const std::string& k) override { cpu_->disarm(k); }
  void run_reference() override {
    used_after_loss();
    cpu_->run_reference();
  }
  ErrorReport compare(const std::string& a, const std::string& b) override {
    used_after_loss();
    return cpu_->compare(a, b);
  }
  std::vector<HostTensor> fetch(const std::string& what) override {
    used_after_loss();
    return cpu_->fetch(what);
  }
  void release() override { cpu_->release(); }  // must stay safe after a loss
  std::optional<std::string> context_lost() override {
    return lost_ ? std::optional<std::string>(kLost) : std::nullopt;
  }

 private:
  void used_after_loss() {
    if (!lost_) return;
    ++calls_after_loss;
    throw BackendError(kLost);
  }
  std::unique_ptr<Backend> cpu_;
  std::size_t fault_case_;
  std::string fault_kernel_;
  std::size_t prepared_ = 0;
  bool lost_ = false;
};

// Four small cases (seq 64, 80, 96, 112) of naive and flash, verified.
const char* const kSpec = R"({"seq": [64, 80, 96, 112], "batch": [1], "heads": [1], "head_dim": [32],
                              "dtype": ["fp32"], "causal": [false], "pass": ["fwd"],
                              "kernels": ["naive", "flash"], "warmup": 0, "reps": 1})";

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

const Record& record_of(const std::vector<Record>& rs, const Case& c, const std::string& kernel) {
  for (const Record& r : rs)
    if (r.c == c && r.kernel == kernel) return r;
  FAIL("no record of " << kernel << " on " << c.key());
  return rs.front();
}

fs::path scratch() {
  const fs::path d = fs::temp_directory_path() / ("flashbench-runner-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

// Runs `run_command` on `backend` with std::cerr captured.
int run_capturing(const RunOptions& o, Backend* backend, std::string& err) {
  std::ostringstream captured;
  std::streambuf* old = std::cerr.rdbuf(captured.rdbuf());
  int code = -1;
  try {
    code = run_command(o, backend);
  } catch (...) {
    std::cerr.rdbuf(old);
    throw;
  }
  std::cerr.rdbuf(old);
  err = captured.str();
  return code;
}

}  // namespace

TEST_CASE("a run's clock readings reach its record and its JSON; the CPU's runs carry none", "[runner]") {
  const Sweep sweep = sweep_from_json(nlohmann::json::parse(kSpec));
  LosingBackend backend(sweep.cases.size(), "none");  // never faults
  const Results plain = run_sweep(sweep, backend);
  REQUIRE(!plain.records.empty());
  for (const Record& r : plain.records) {
    CHECK(r.status == Status::ok);
    CHECK(r.clocks.empty());
    CHECK(!to_json(r).contains("clocks"));
  }
  backend.stamp_mhz = 1770;
  backend.stamp_reasons = 0x4;
  const Results capped = run_sweep(sweep, backend);
  REQUIRE(capped.records.size() == plain.records.size());
  for (const Record& r : capped.records) {
    CHECK(r.clocks.at("sm_mhz_min") == 1770);
    CHECK(r.clocks.at("event_reasons") == nlohmann::json::array({"sw_power_cap"}));
    CHECK(record_from_json(to_json(r)).clocks == r.clocks);
  }
}

TEST_CASE("a lost context: the fault failed, the rest of its case and every later case skipped", "[runner]") {
  const Sweep sweep = sweep_from_json(nlohmann::json::parse(kSpec));
  REQUIRE(sweep.cases.size() == 4);
  const Case& faulting = sweep.cases[1];

  SECTION("the fault in the second kernel: the first one's row is kept, unverified") {
    LosingBackend backend(1, "flash");
    RunnerOptions opts;
    std::vector<std::string> handed_on;  // case keys given to on_case_done (what a journal holds)
    opts.on_case_done = [&](const std::vector<Record>& rs) { handed_on.push_back(rs.front().c.key()); };
    int told = 0;
    opts.on_context_lost = [&](const std::string& why, const Case& c, std::size_t not_run) {
      ++told;
      CHECK(why == kLost);
      CHECK(c == faulting);
      CHECK(not_run == 2);
    };
    const Results res = run_sweep(sweep, backend, opts);

    CHECK(told == 1);
    CHECK(backend.calls_after_loss == 0);  // nothing but release() once the context is gone
    REQUIRE(res.records.size() == 4 * 2);  // every case x kernel has its record
    CHECK(handed_on == std::vector<std::string>{sweep.cases[0].key(), faulting.key()});
    for (const std::string k : {"naive", "flash"}) {  // before the fault: measured and verified
      const Record& r = record_of(res.records, sweep.cases[0], k);
      CHECK(r.status == Status::ok);
      CHECK(r.verified == std::optional<bool>(true));
    }
    const Record& before = record_of(res.records, faulting, "naive");
    CHECK(before.status == Status::ok);  // measured before the fault, never judged: not a pass
    CHECK(before.verified == std::optional<bool>(false));
    CHECK(contains(before.errors.value("verify_failed", ""), kLost));
    const Record& fault = record_of(res.records, faulting, "flash");
    CHECK(fault.status == Status::failed);
    CHECK(fault.reason == kFault);
    for (std::size_t i = 2; i < 4; ++i)
      for (const std::string k : {"naive", "flash"}) {
        const Record& r = record_of(res.records, sweep.cases[i], k);
        INFO(r.reason);
        CHECK(r.status == Status::skipped);
        CHECK(r.reason == std::string(kLost) + " after case " + faulting.key() + ": " + opts.rerun_hint);
        CHECK(r.flops > 0);
      }
    // The device read at the end is not attempted either.
    CHECK(!res.device.contains("clocks_end"));

    // The file's view of it: valid, and read back the same (with what run_command adds: the tool).
    Results file = res;
    file.tool = {{"name", "flashbench"}, {"version", "test"}, {"git", "test"}};
    file.created = "2026-12-01T00:00:00Z";
    const Results back = results_from_json(nlohmann::json::parse(to_json(file).dump()));
    REQUIRE(back.records.size() == res.records.size());
    CHECK(back.records[2].verified == std::optional<bool>(false));  // case 1 naive
    CHECK(back.records[3].status == Status::failed);
    CHECK(back.records[7].status == Status::skipped);
    CHECK(back.records[7].reason == res.records[7].reason);
  }

  SECTION("the fault in the first kernel: the kernels after it in its case are skipped, not run") {
    LosingBackend backend(1, "naive");
    const Results res = run_sweep(sweep, backend);
    CHECK(backend.calls_after_loss == 0);
    REQUIRE(res.records.size() == 4 * 2);
    CHECK(record_of(res.records, faulting, "naive").status == Status::failed);
    const Record& after = record_of(res.records, faulting, "flash");
    CHECK(after.status == Status::skipped);
    CHECK(after.reason == std::string(kLost) + " when kernel 'naive' failed in this case: not run");
    CHECK(!after.verified.has_value());
    CHECK(record_of(res.records, sweep.cases[3], "flash").status == Status::skipped);
  }

  SECTION("interleaved, the fault arming the second kernel: the first, armed, is skipped untimed") {
    Sweep inter = sweep;
    inter.rep_order = RepOrder::interleaved;
    LosingBackend backend(1, "flash");
    const Results res = run_sweep(inter, backend);
    CHECK(backend.calls_after_loss == 0);
    REQUIRE(res.records.size() == 4 * 2);
    for (const std::string k : {"naive", "flash"}) {
      const Record& r = record_of(res.records, sweep.cases[0], k);
      CHECK(r.status == Status::ok);
      CHECK(r.verified == std::optional<bool>(true));
    }
    CHECK(record_of(res.records, faulting, "flash").status == Status::failed);
    const Record& armed = record_of(res.records, faulting, "naive");
    CHECK(armed.status == Status::skipped);
    CHECK(armed.reason == std::string(kLost) + " when kernel 'flash' failed in this case: not timed");
    CHECK(!armed.verified.has_value());
    CHECK(record_of(res.records, sweep.cases[2], "naive").status == Status::skipped);
  }

  SECTION("the fault in the last case: nothing left to skip, still told") {
    LosingBackend backend(3, "flash");
    std::size_t left = 99;
    RunnerOptions opts;
    opts.on_context_lost = [&](const std::string&, const Case&, std::size_t not_run) { left = not_run; };
    const Results res = run_sweep(sweep, backend, opts);
    CHECK(left == 0);
    REQUIRE(res.records.size() == 4 * 2);
    CHECK(record_of(res.records, sweep.cases[3], "flash").status == Status::failed);
  }
}

TEST_CASE("run: a lost context writes every case, keeps the journal, says it once and exits 3", "[runner]") {
  const fs::path d = scratch();
  const fs::path spec = d / "losing-spec.json";
  const fs::path out = d / "losing.json";
  const fs::path journal = d / "losing.json.journal.jsonl";
  for (const fs::path& p : {out, journal}) fs::remove(p);
  std::ofstream(spec) << kSpec;
  const Sweep sweep = sweep_from_json(nlohmann::json::parse(kSpec));

  RunOptions o;
  o.spec_path = spec.string();
  o.json_out = out.string();
  o.backend = "cpu";
  o.quiet = true;
  o.argv = {"flashbench", "run", spec.string()};
  LosingBackend backend(1, "flash");
  std::string err;
  const int code = run_capturing(o, &backend, err);
  INFO(err);
  CHECK(code == kExitContextLost);
  CHECK(code == 3);  // documented in README and --help
  // One line on stderr: what happened, where, what was left, and how to finish.
  CHECK(std::count(err.begin(), err.end(), '\n') == 1);
  CHECK(contains(err, kLost));
  CHECK(contains(err, sweep.cases[1].key()));
  CHECK(contains(err, "2 later cases"));
  CHECK(contains(err, "--resume"));

  // The file: valid, every case x kernel, marked partial; the unrun rows say how to get them.
  REQUIRE(fs::exists(out));
  nlohmann::json j;
  {
    std::ifstream in(out);
    j = nlohmann::json::parse(in);
  }
  CHECK(j["complete"] == false);
  REQUIRE(j["results"].size() == 4 * 2);
  const Results file = load_results(out.string());
  for (const Record& r : file.records) {
    if (r.c == sweep.cases[2] || r.c == sweep.cases[3]) {
      CHECK(r.status == Status::skipped);
      CHECK(contains(r.reason, "after case " + sweep.cases[1].key() + ": run again with --resume"));
    }
  }
  // The journal holds the two cases that ran (the faulting one included: run again, it would fault
  // again), so --resume measures exactly the two left.
  REQUIRE(fs::exists(journal));
  const JournalContents jc = read_journal(journal.string());
  CHECK(jc.records.size() == 2 * 2);

  RunOptions again = o;
  again.resume = true;
  std::string err2;
  const int code2 = run_capturing(again, nullptr, err2);  // a fresh (CPU) backend: a new process on a GPU
  INFO(err2);
  CHECK(code2 == kExitFailed);  // the faulting kernel's row stays failed
  const Results finished = load_results(out.string());
  CHECK(finished.complete);
  REQUIRE(finished.records.size() == 4 * 2);
  for (const Record& r : finished.records) {
    INFO(r.kernel << " " << r.c.key() << ": " << r.reason);
    if (r.c == sweep.cases[1] && r.kernel == "flash") {
      CHECK(r.status == Status::failed);
    } else if (r.c == sweep.cases[1]) {
      CHECK(r.verified == std::optional<bool>(false));
    } else {
      CHECK(r.status == Status::ok);
      CHECK(r.verified == std::optional<bool>(true));
    }
  }
  CHECK(!fs::exists(journal));  // the final file holds everything now
  fs::remove_all(d);
}
