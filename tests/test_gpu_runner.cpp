// A kernel fault on the GPU, end to end [gpu]: the real `flashbench run` with a plug-in whose kernel
// stores through a null pointer at seq_q = 256 (tests/plugins/fault.cu). The fault loses the process's
// CUDA context; the run must still write its results file whole, say so in one line on stderr (no
// cascade of failed releases), exit 3, and `--resume` must measure the case left in a new process. The
// CLI runs in a child process: the fault never touches this test process's context.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "catch.h"

namespace fs = std::filesystem;

namespace {

struct Outcome {
  int code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Outcome flashbench(const fs::path& dir, const std::string& args) {
  const fs::path out = dir / "stdout.txt", err = dir / "stderr.txt";
  const std::string cmd = std::string("'") + FLASHBENCH_EXE + "' " + args + " > '" + out.string() + "' 2> '" +
                          err.string() + "'";
  const int status = std::system(cmd.c_str());
  Outcome o;
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  o.out = slurp(out);
  o.err = slurp(err);
  return o;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

const nlohmann::json& row(const nlohmann::json& results, int seq, const std::string& kernel) {
  for (const auto& r : results)
    if (r["case"]["seq_q"] == seq && r["kernel"] == kernel) return r;
  FAIL("no row for " << kernel << " at seq " << seq);
  return results.front();
}

}  // namespace

TEST_CASE("a kernel that loses the CUDA context: the file is written whole, one line, exit 3, --resume finishes",
          "[gpu]") {
  const fs::path d = fs::temp_directory_path() / ("flashbench-gpu-runner-" + std::to_string(::getpid()));
  fs::create_directories(d);
  const fs::path spec = d / "fault-spec.json", out = d / "fault.json";
  const fs::path journal = d / "fault.json.journal.jsonl";
  // Three lengths: the fault kernel runs (and faults) only at 256, between naive and flash.
  std::ofstream(spec) << R"({"seq": [128, 256, 384], "batch": [1], "heads": [2], "head_dim": [64],
                             "dtype": ["bf16"], "causal": [false], "pass": ["fwd"],
                             "kernels": ["naive", "fault-illegal-address", "flash"], "warmup": 1, "reps": 3})";
  const std::string args = "run '" + spec.string() + "' --backend cuda --kernel-lib '" + FB_FIXTURE_FAULT +
                           "' --no-ceilings --warmup-time 0 -q -o '" + out.string() + "'";

  const Outcome o = flashbench(d, args);
  INFO("stdout:\n" << o.out << "\nstderr:\n" << o.err);
  CHECK(o.code == 3);
  // One line: the loss, where, and what to do; none of the releases that fail after it.
  CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
  CHECK(contains(o.err, "CUDA context lost"));
  CHECK(contains(o.err, "--resume"));
  for (const char* release : {"cudaFree", "cudaEventDestroy", "cudaStreamDestroy", "cublasDestroy"})
    CHECK(!contains(o.err, release));

  REQUIRE(fs::exists(out));
  const nlohmann::json j = nlohmann::json::parse(slurp(out));
  CHECK(j["complete"] == false);
  const nlohmann::json& rs = j["results"];
  REQUIRE(rs.size() == 3 * 3);
  // Before the fault: measured and verified; the fault kernel skipped by its own supports().
  for (const char* k : {"naive", "flash"}) {
    CHECK(row(rs, 128, k)["status"] == "ok");
    CHECK(row(rs, 128, k)["verified"] == true);
  }
  CHECK(row(rs, 128, "fault-illegal-address")["status"] == "skipped");
  // The faulting case: the fault failed with the CUDA error, naive measured but never verified, flash not run.
  const nlohmann::json& fault = row(rs, 256, "fault-illegal-address");
  CHECK(fault["status"] == "failed");
  CHECK(contains(fault["reason"].get<std::string>(), "illegal memory access"));
  CHECK(row(rs, 256, "naive")["verified"] == false);
  CHECK(row(rs, 256, "flash")["status"] == "skipped");
  CHECK(contains(row(rs, 256, "flash")["reason"].get<std::string>(), "CUDA context lost"));
  // After it: recorded, not run, with how to finish.
  for (const char* k : {"naive", "fault-illegal-address", "flash"}) {
    const nlohmann::json& r = row(rs, 384, k);
    CHECK(r["status"] == "skipped");
    CHECK(contains(r["reason"].get<std::string>(), "CUDA context lost"));
    CHECK(contains(r["reason"].get<std::string>(), "run again with --resume"));
  }
  REQUIRE(fs::exists(journal));

  // A new process has a new context: --resume runs the case left. Exit 1: the fault's row stays failed.
  const Outcome again = flashbench(d, args + " --resume");
  INFO("resume stdout:\n" << again.out << "\nresume stderr:\n" << again.err);
  CHECK(again.code == 1);
  const nlohmann::json k = nlohmann::json::parse(slurp(out));
  CHECK(k["complete"] == true);
  REQUIRE(k["results"].size() == 3 * 3);
  for (const char* name : {"naive", "flash"}) {
    CHECK(row(k["results"], 384, name)["status"] == "ok");
    CHECK(row(k["results"], 384, name)["verified"] == true);
  }
  CHECK(row(k["results"], 256, "fault-illegal-address")["status"] == "failed");
  CHECK(!fs::exists(journal));
  fs::remove_all(d);
}
