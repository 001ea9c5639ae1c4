// The CLI end to end, as a user runs it: the real binary, real files, exit codes.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <vector>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "catch.h"

namespace fs = std::filesystem;

namespace {

struct Outcome {
  int code = -1;
  std::string out;  // stdout and stderr together
};

fs::path scratch_dir() {
  fs::path d = fs::temp_directory_path() / ("flashbench-cli-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

Outcome flashbench(const std::string& args) {
  const fs::path log = scratch_dir() / "out.txt";
  const std::string cmd = std::string("cd '") + FLASHBENCH_SOURCE_DIR + "' && '" + FLASHBENCH_EXE + "' " +
                          args + " > '" + log.string() + "' 2>&1";
  const int status = std::system(cmd.c_str());
  Outcome o;
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  o.out = ss.str();
  return o;
}

// A shell command line as given (for limits such as ulimit), output captured like flashbench().
Outcome flashbench_shell(const std::string& command) {
  const fs::path log = scratch_dir() / "out.txt";
  const std::string cmd = std::string("cd '") + FLASHBENCH_SOURCE_DIR + "' && (" + command + ") > '" +
                          log.string() + "' 2>&1";
  const int status = std::system(cmd.c_str());
  Outcome o;
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  o.out = ss.str();
  return o;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string write_spec(const std::string& name, const std::string& text) {
  const fs::path p = scratch_dir() / name;
  std::ofstream(p) << text;
  return p.string();
}

}  // namespace

TEST_CASE("run configs/quick.json on the CPU writes valid JSON and CSV", "[cli]") {
  const fs::path json = scratch_dir() / "quick.json";
  const fs::path csv = scratch_dir() / "quick.csv";
  fs::remove(json);
  fs::remove(csv);
  Outcome o = flashbench("run configs/quick.json --backend cpu -o '" + json.string() + "' --csv '" +
                         csv.string() + "'");
  INFO(o.out);
  REQUIRE(o.code == 0);
  REQUIRE(fs::exists(json));
  REQUIRE(fs::exists(csv));
  std::ifstream in(json);
  nlohmann::json j = nlohmann::json::parse(in);
  REQUIRE(j["backend"] == "cpu");
  REQUIRE(j["tool"]["name"] == "flashbench");
  REQUIRE(j["settings"]["argv"].size() >= 3);  // the command line, for reproduction
  REQUIRE(j["settings"]["argv"][1] == "run");
  REQUIRE(j["results"].size() > 0);
  bool saw_naive = false, saw_flash = false;
  for (const auto& r : j["results"]) {
    REQUIRE(r["status"] == "ok");
    REQUIRE(r["verified"] == true);
    REQUIRE(r["time_ms"]["median"].get<double>() > 0);
    REQUIRE(r["memory"]["peak_bytes"].get<double>() > 0);
    saw_naive |= r["kernel"] == "naive";
    saw_flash |= r["kernel"] == "flash";
  }
  REQUIRE(saw_naive);
  REQUIRE(saw_flash);
  // The table is on stdout with both kernels named.
  REQUIRE(contains(o.out, "naive"));
  REQUIRE(contains(o.out, "flash"));

  // The run compared with itself passes the gate.
  Outcome same = flashbench("compare '" + json.string() + "' '" + json.string() + "'");
  INFO(same.out);
  REQUIRE(same.code == 0);
}

TEST_CASE("a bad spec exits 2, names the field, and writes no file", "[cli]") {
  const fs::path json = scratch_dir() / "bad.json";
  fs::remove(json);
  const std::string spec = write_spec("bad-spec.json",
                                      R"({"seq": [128], "batch": [1], "heads": [2], "head_dim": [64],
                                          "dtype": ["fp33"]})");
  Outcome o = flashbench("run '" + spec + "' --backend cpu -o '" + json.string() + "'");
  INFO(o.out);
  REQUIRE(o.code == 2);
  REQUIRE(contains(o.out, "dtype"));
  REQUIRE(!fs::exists(json));

  const std::string broken = write_spec("broken.json", "{\n  \"seq\": [128,\n}");
  o = flashbench("run '" + broken + "' --backend cpu -o '" + json.string() + "'");
  INFO(o.out);
  REQUIRE(o.code == 2);
  REQUIRE(contains(o.out, "line"));
  REQUIRE(!fs::exists(json));

  o = flashbench("run does-not-exist.json --backend cpu");
  REQUIRE(o.code == 2);
  REQUIRE(contains(o.out, "does-not-exist.json"));
}

TEST_CASE("usage errors exit 2 with the flag named", "[cli]") {
  Outcome o = flashbench("run configs/quick.json --backend tpu");
  REQUIRE(o.code == 2);
  REQUIRE(contains(o.out, "--backend"));
  o = flashbench("verify --seq 0 --backend cpu");
  REQUIRE(o.code == 2);
  REQUIRE(contains(o.out, "--seq"));
  o = flashbench("frobnicate");
  REQUIRE(o.code == 2);
  o = flashbench("run configs/quick.json --backend cpu -o /nonexistent-dir/x.json");
  REQUIRE(o.code == 2);
  REQUIRE(contains(o.out, "--output"));
}

TEST_CASE("--version prints version and git commit; --help lists the subcommands", "[cli]") {
  Outcome o = flashbench("--version");
  REQUIRE(o.code == 0);
  REQUIRE(contains(o.out, "flashbench"));
  REQUIRE(contains(o.out, "git"));
  o = flashbench("--help");
  REQUIRE(o.code == 0);
  for (const char* sub : {"run", "verify", "compare", "info", "merge"}) REQUIRE(contains(o.out, sub));
}

TEST_CASE("verify on the CPU passes and prints a verdict per check", "[cli]") {
  Outcome o = flashbench("verify --seq 300 --backend cpu --dtype all --causal both");
  INFO(o.out);
  REQUIRE(o.code == 0);
  REQUIRE(contains(o.out, "[OK]"));
  REQUIRE(!contains(o.out, "[FAIL]"));
  REQUIRE(contains(o.out, "checks passed"));
  REQUIRE(contains(o.out, "[OK]   flash B=1 H=1 N=300 d=64 fp8 causal fwd"));  // all includes fp8
}

TEST_CASE("verify --dtype fp8 on the CPU: the forward passes, the backward is skipped with the reason", "[cli]") {
  const fs::path json = scratch_dir() / "verify-fp8.json";
  fs::remove(json);
  Outcome o = flashbench("verify --seq-q 37 --seq-k 300 --heads 4 --kv-heads 2 --backend cpu --dtype fp8 "
                         "--causal both --pass all -o '" + json.string() + "'");
  INFO(o.out);
  REQUIRE(o.code == 0);
  REQUIRE(contains(o.out, "[OK]   naive B=1 H=4/2 Nq=37 Nk=300 d=64 fp8 full fwd"));
  REQUIRE(contains(o.out, "[OK]   flash B=1 H=4/2 Nq=37 Nk=300 d=64 fp8 causal fwd"));
  REQUIRE(!contains(o.out, "[FAIL]"));
  REQUIRE(contains(o.out, "[SKIP] flash B=1 H=4/2 Nq=37 Nk=300 d=64 fp8 causal bwd  fp8 runs the forward only"));
  std::ifstream in(json);
  const nlohmann::json j = nlohmann::json::parse(in);
  int skipped = 0;
  for (const auto& r : j["results"])
    if (r["case"]["pass"] == "bwd") {
      REQUIRE(r["status"] == "skipped");
      REQUIRE(contains(r["reason"].get<std::string>(), "fp8 runs the forward only"));
      ++skipped;
    }
  REQUIRE(skipped > 0);
}

TEST_CASE("verify --dim 256 runs the kernels that list it, both passes", "[cli]") {
  // flash-exact (CUDA only) does not list 256: the CPU run must not be refused for it.
  Outcome o = flashbench("verify --seq 40 --dim 256 --heads 2 --kv-heads 1 --backend cpu --dtype bf16 --causal both "
                         "--pass all");
  INFO(o.out);
  REQUIRE(o.code == 0);
  REQUIRE(contains(o.out, "[OK]   flash"));
  REQUIRE(contains(o.out, "[OK]   naive"));
  REQUIRE(!contains(o.out, "[FAIL]"));
  REQUIRE(contains(o.out, "8/8 checks passed"));
}

TEST_CASE("verify --seq-q/--seq-k: decode and rows with no visible key pass; one length alone is refused",
          "[cli]") {
  for (const char* lengths : {"--seq-q 1 --seq-k 333", "--seq-q 90 --seq-k 31", "--seq 64 --seq-q 8"}) {
    Outcome o = flashbench(std::string("verify ") + lengths + " --backend cpu --kv-heads 1 --heads 2 "
                           "--dtype bf16 --causal both --pass all");
    INFO(lengths << "\n" << o.out);
    REQUIRE(o.code == 0);
    REQUIRE(!contains(o.out, "[FAIL]"));
    REQUIRE(contains(o.out, "checks passed"));
  }
  REQUIRE(contains(flashbench("verify --seq-q 1 --seq-k 333 --backend cpu --dtype fp32 --causal yes").out,
                   "Nq=1 Nk=333"));
  Outcome o = flashbench("verify --seq-q 4 --backend cpu");
  REQUIRE(o.code == 2);
  REQUIRE(contains(o.out, "--seq-k"));
  o = flashbench("verify --seq-k 0 --seq-q 1 --backend cpu");
  REQUIRE(o.code == 2);
  REQUIRE(contains(o.out, "--seq-k"));
}

TEST_CASE("info --json lists backend and kernels", "[cli]") {
  Outcome o = flashbench("info --backend cpu --json");
  INFO(o.out);
  REQUIRE(o.code == 0);
  nlohmann::json j = nlohmann::json::parse(o.out);
  REQUIRE(j["backend"] == "cpu");
  REQUIRE(j["kernels"].size() >= 2);
  // cudnn is listed in every build (a peer on CUDA only), with why it does not run here.
  bool cudnn = false;
  for (const auto& k : j["kernels"])
    if (k["name"] == "cudnn") {
      cudnn = true;
      CHECK(k["role"] == "peer");
      CHECK(k["dtypes"].empty());
      CHECK(k["unavailable"].get<std::string>().find("CPU backend") != std::string::npos);
    }
  CHECK(cudnn);
}

TEST_CASE("a spec naming cudnn on the CPU backend runs the rest and records it skipped with why", "[cli]") {
  Outcome o = flashbench("run configs/quick.json --backend cpu --list --kernels naive,cudnn --filter n64-");
  INFO(o.out);
  REQUIRE(o.code == 0);
  REQUIRE(contains(o.out, "kernel 'cudnn' does not run on the CPU backend"));
}

TEST_CASE("compare on fixtures: same 0, slower 1, missing 1, noise 0, bad file 2", "[cli]") {
  const std::string dir = "tests/data/results/";
  REQUIRE(flashbench("compare " + dir + "base.json " + dir + "same.json").code == 0);
  REQUIRE(flashbench("compare " + dir + "base.json " + dir + "slower.json").code == 1);
  REQUIRE(flashbench("compare " + dir + "base.json " + dir + "missing.json").code == 1);
  REQUIRE(flashbench("compare " + dir + "base.json " + dir + "noisy.json").code == 0);
  Outcome md = flashbench("compare " + dir + "base.json " + dir + "slower.json --format markdown");
  REQUIRE(contains(md.out, "|"));
  REQUIRE(flashbench("compare " + dir + "base.json no-such-file.json").code == 2);
}

TEST_CASE("merge joins files and refuses duplicates", "[cli]") {
  const fs::path out = scratch_dir() / "merged.json";
  fs::remove(out);
  const std::string dir = "tests/data/results/";
  Outcome o = flashbench("merge " + dir + "base.json " + dir + "base.json -o '" + out.string() + "'");
  REQUIRE(o.code == 2);
  REQUIRE(!fs::exists(out));
  o = flashbench("merge " + dir + "base.json -o '" + out.string() + "'");
  INFO(o.out);
  REQUIRE(o.code == 0);
  REQUIRE(fs::exists(out));
}

namespace {

std::set<std::string> result_keys(const fs::path& json_path) {
  std::ifstream in(json_path);
  nlohmann::json j = nlohmann::json::parse(in);
  std::set<std::string> keys;
  for (const auto& r : j["results"]) keys.insert(r["key"].get<std::string>() + "/" + r["kernel"].get<std::string>());
  return keys;
}

std::size_t line_count(const fs::path& p) {
  std::ifstream in(p);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

// Starts the shell line `command` and stops it with SIGTERM once `journal` holds `lines` lines (its header and the
// results after it); its exit status, or -1 where the journal never got there or it did not exit.
int interrupt_when_journalled(const std::string& command, const fs::path& journal, std::size_t lines) {
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  for (int i = 0; i < 600 && line_count(journal) < lines; ++i) usleep(50 * 1000);
  const bool reached = line_count(journal) >= lines;
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  return reached && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A sweep slow enough on the CPU (a second or more) to be interrupted between cases.
std::string slow_spec() {
  return write_spec("slow.json", R"({"seq": [256, 320, 384, 448, 512, 576, 640, 704], "batch": 1, "heads": 4,
                                     "head_dim": 64, "dtype": ["fp32", "bf16"], "reps": 2, "warmup": 0})");
}

}  // namespace

TEST_CASE("--shard I/N splits the sweep; merged shards hold the single run's cases", "[cli]") {
  const fs::path d = scratch_dir();
  const std::string spec = "configs/quick.json";
  for (const char* f : {"single.json", "s0.json", "s1.json", "s2.json", "merged.json"}) fs::remove(d / f);
  REQUIRE(flashbench("run " + spec + " --backend cpu -q -o '" + (d / "single.json").string() + "'").code == 0);
  for (int i = 0; i < 3; ++i) {
    Outcome o = flashbench("run " + spec + " --backend cpu -q --shard " + std::to_string(i) + "/3 -o '" +
                           (d / ("s" + std::to_string(i) + ".json")).string() + "'");
    INFO(o.out);
    REQUIRE(o.code == 0);
  }
  // Shards are disjoint and none is empty.
  std::set<std::string> seen;
  for (int i = 0; i < 3; ++i) {
    auto keys = result_keys(d / ("s" + std::to_string(i) + ".json"));
    REQUIRE(!keys.empty());
    for (const auto& k : keys) REQUIRE(seen.insert(k).second);
  }
  Outcome m = flashbench("merge '" + (d / "s0.json").string() + "' '" + (d / "s1.json").string() + "' '" +
                         (d / "s2.json").string() + "' -o '" + (d / "merged.json").string() + "'");
  INFO(m.out);
  REQUIRE(m.code == 0);
  REQUIRE(result_keys(d / "merged.json") == result_keys(d / "single.json"));

  REQUIRE(flashbench("run " + spec + " --backend cpu --shard 3/3").code == 2);
  REQUIRE(flashbench("run " + spec + " --backend cpu --shard x").code == 2);
}

TEST_CASE("an interrupted run keeps its journal and --resume finishes it", "[cli]") {
  const fs::path d = scratch_dir();
  const fs::path out = d / "resumed.json";
  const fs::path journal = d / "resumed.json.journal.jsonl";
  const fs::path full = d / "uninterrupted.json";
  for (const fs::path& p : {out, journal, full}) fs::remove(p);
  const std::string spec = slow_spec();
  REQUIRE(flashbench("run '" + spec + "' --backend cpu -q -o '" + full.string() + "'").code == 0);

  // Start it, wait until two cases are journalled, then stop it: SIGTERM ends it after the current case.
  const std::string cmd = std::string("cd '") + FLASHBENCH_SOURCE_DIR + "' && exec '" + FLASHBENCH_EXE +
                          "' run '" + spec + "' --backend cpu -q -o '" + out.string() + "'";
  // Header + two cases of two kernels each.
  REQUIRE(interrupt_when_journalled(cmd, journal, 5) == 128 + SIGTERM);
  REQUIRE(fs::exists(journal));  // kept for --resume
  REQUIRE(fs::exists(out));       // what was done, written whole, and marked partial
  {
    std::ifstream in(out);
    REQUIRE(nlohmann::json::parse(in)["complete"] == false);
  }
  Outcome note = flashbench("compare '" + full.string() + "' '" + out.string() + "'");
  REQUIRE(contains(note.out, "interrupted run"));
  const fs::path merged = d / "merged-partial.json";
  fs::remove(merged);
  note = flashbench("merge '" + out.string() + "' -o '" + merged.string() + "'");
  REQUIRE(note.code == 0);
  REQUIRE(contains(note.out, "interrupted run"));
  {
    std::ifstream in(merged);
    REQUIRE(nlohmann::json::parse(in)["complete"] == false);  // a merge of a partial run is partial
  }
  // Starting over the unfinished run is refused without --resume or --fresh; nothing is touched.
  const std::size_t journalled = line_count(journal);
  Outcome refused = flashbench("run '" + spec + "' --backend cpu -q -o '" + out.string() + "'");
  INFO(refused.out);
  REQUIRE(refused.code == 2);
  REQUIRE(contains(refused.out, "--resume"));
  REQUIRE(contains(refused.out, "--fresh"));
  REQUIRE(std::count(refused.out.begin(), refused.out.end(), '\n') == 1);
  REQUIRE(line_count(journal) == journalled);
  const auto partial = result_keys(out);
  const auto everything = result_keys(full);
  REQUIRE(partial.size() < everything.size());

  // A torn last line (the process died mid-write) is tolerated.
  std::ofstream(journal, std::ios::app) << "{\"key\": \"b1-h4";
  Outcome o = flashbench("run '" + spec + "' --backend cpu -o '" + out.string() + "' --resume");
  INFO(o.out);
  REQUIRE(o.code == 0);
  REQUIRE(contains(o.out, "resuming"));
  REQUIRE(result_keys(out) == everything);
  REQUIRE(!fs::exists(journal));  // the final file holds everything now
  {
    std::ifstream in(out);
    REQUIRE(nlohmann::json::parse(in)["complete"] == true);
  }

  // A journal of another sweep is refused, not mixed in.
  std::ofstream(journal) << "{\"journal\": 1, \"fingerprint\": \"0000000000000000\"}\n";
  o = flashbench("run '" + spec + "' --backend cpu -q -o '" + out.string() + "' --resume");
  REQUIRE(o.code == 2);
  REQUIRE(contains(o.out, "different spec"));
  REQUIRE(flashbench("run '" + spec + "' --backend cpu --resume").code == 2);  // needs -o
}

// FB_* variables are the kernels' settings (probe words): a run names them on stderr and records them in
// settings.env; a run without any records none; a journal of a run under other settings is not resumed.
TEST_CASE("FB_* kernel settings: named, recorded, part of a journal's identity", "[cli]") {
  const fs::path d = scratch_dir();
  const std::string spec = write_spec("env.json", R"({"seq": [64], "batch": 1, "heads": 2, "head_dim": 64,
                                                      "dtype": "fp32", "reps": 1, "warmup": 0})");
  const fs::path with = d / "env-with.json", without = d / "env-without.json";
  fs::remove(with);
  fs::remove(without);
  const std::string exe = std::string("'") + FLASHBENCH_EXE + "'";
  Outcome o = flashbench_shell("env -i PATH=\"$PATH\" FB_TEST_SETTING=on FB_OTHER=2 " + exe + " run '" + spec +
                               "' --backend cpu -o '" + with.string() + "'");
  INFO(o.out);
  REQUIRE(o.code == 0);
  CHECK(contains(o.out, "kernel settings from the environment: FB_OTHER=2 FB_TEST_SETTING=on"));
  {
    std::ifstream in(with);
    const nlohmann::json j = nlohmann::json::parse(in);
    CHECK(j["settings"]["env"] == nlohmann::json({{"FB_OTHER", "2"}, {"FB_TEST_SETTING", "on"}}));
  }
  o = flashbench_shell("env -i PATH=\"$PATH\" " + exe + " run '" + spec + "' --backend cpu -o '" + without.string() +
                       "'");
  REQUIRE(o.code == 0);
  CHECK_FALSE(contains(o.out, "kernel settings from the environment"));
  {
    std::ifstream in(without);
    CHECK_FALSE(nlohmann::json::parse(in)["settings"].contains("env"));
  }
  // compare warns, naming both, and keeps its verdict
  o = flashbench("compare '" + without.string() + "' '" + with.string() + "' --max-slowdown 1000");
  CHECK(contains(o.out, "FB_* kernel settings none, the new file under FB_OTHER=2 FB_TEST_SETTING=on"));
  // merge keeps the first file's settings: files run under other ones are refused unless --force
  const fs::path merged = d / "env-merged.json";
  fs::remove(merged);
  o = flashbench("merge '" + without.string() + "' '" + with.string() + "' -o '" + merged.string() + "'");
  CHECK(o.code == 2);
  CHECK(contains(o.out, "ran under FB_* kernel settings FB_OTHER=2 FB_TEST_SETTING=on"));
  CHECK_FALSE(fs::exists(merged));
  CHECK(flashbench("merge '" + without.string() + "' '" + with.string() + "' --force -o '" + merged.string() + "'")
            .code == 0);

  // An interrupted run under FB_TEST_SETTING=a is resumed under a, not under b.
  const fs::path out = d / "env-resumed.json";
  const fs::path journal = d / "env-resumed.json.journal.jsonl";
  fs::remove(out);
  fs::remove(journal);
  const std::string slow = slow_spec();
  const std::string cmd = std::string("cd '") + FLASHBENCH_SOURCE_DIR + "' && exec env FB_TEST_SETTING=a " + exe +
                          " run '" + slow + "' --backend cpu -q -o '" + out.string() + "'";
  REQUIRE(interrupt_when_journalled(cmd, journal, 3) == 128 + SIGTERM);
  REQUIRE(fs::exists(journal));
  o = flashbench_shell("FB_TEST_SETTING=b " + exe + " run '" + slow + "' --backend cpu -q -o '" + out.string() +
                       "' --resume");
  CHECK(o.code == 2);
  CHECK(contains(o.out, "FB_* kernel settings"));
  o = flashbench_shell("FB_TEST_SETTING=a " + exe + " run '" + slow + "' --backend cpu -q -o '" + out.string() +
                       "' --resume");
  INFO(o.out);
  CHECK(o.code == 0);
  CHECK_FALSE(fs::exists(journal));
}

TEST_CASE("run --variant on the command line: repeated, after its kernel, part of a journal's identity", "[cli]") {
  const fs::path d = scratch_dir();
  const std::string spec = write_spec("variant.json", R"({"seq": [48], "batch": 1, "heads": 2, "head_dim": 32,
                                                          "dtype": "fp32", "reps": 2, "warmup": 0,
                                                          "kernels": ["naive", "flash"]})");
  const fs::path out = d / "variant.json.out";
  fs::remove(out);
  Outcome o = flashbench("run '" + spec + "' --backend cpu -q --interleave --variant p=flash:FB_FLASH_FWD_PROBE=persist "
                         "--variant=q=flash:FB_FLASH_BWD=lean:FB_SM90_BWD64=direct -o '" + out.string() + "'");
  INFO(o.out);
  REQUIRE(o.code == 0);
  {
    std::ifstream in(out);
    const nlohmann::json j = nlohmann::json::parse(in);
    std::vector<std::string> kernels;
    for (const auto& r : j["results"]) {
      kernels.push_back(r["kernel"]);
      CHECK(r["verified"] == true);
    }
    CHECK(kernels == std::vector<std::string>{"naive", "flash", "p", "q"});
    CHECK(j["settings"]["variants"]["q"]["env"] ==
          nlohmann::json({{"FB_FLASH_BWD", "lean"}, {"FB_SM90_BWD64", "direct"}}));
  }
  // One line naming the flag, exit 2, nothing written.
  fs::remove(out);
  o = flashbench("run '" + spec + "' --backend cpu -q --variant p=flash:FB_L2_FLUSH=clean -o '" + out.string() + "'");
  CHECK(o.code == 2);
  CHECK(contains(o.out, "--variant p=flash:FB_L2_FLUSH=clean: 'FB_L2_FLUSH' is not a kernel setting"));
  CHECK_FALSE(fs::exists(out));

  // An interrupted run with variant p under one setting is resumed under that setting, not another.
  const std::string exe = std::string("'") + FLASHBENCH_EXE + "'";
  const fs::path journal = d / "variant.json.out.journal.jsonl";
  fs::remove(journal);
  const std::string slow = slow_spec();
  const std::string cmd = std::string("cd '") + FLASHBENCH_SOURCE_DIR + "' && exec " + exe + " run '" + slow +
                          "' --backend cpu -q --variant p=flash:FB_FLASH_FWD_PROBE=persist -o '" + out.string() + "'";
  REQUIRE(interrupt_when_journalled(cmd, journal, 3) == 128 + SIGTERM);
  REQUIRE(fs::exists(journal));
  o = flashbench("run '" + slow + "' --backend cpu -q --variant p=flash:FB_FLASH_FWD_PROBE=l2order -o '" +
                 out.string() + "' --resume");
  CHECK(o.code == 2);
  o = flashbench("run '" + slow + "' --backend cpu -q --variant p=flash:FB_FLASH_FWD_PROBE=persist -o '" +
                 out.string() + "' --resume");
  INFO(o.out);
  CHECK(o.code == 0);
  CHECK_FALSE(fs::exists(journal));
}

namespace {

// A minimal .npy reader for the test: the header text and the payload as raw bytes.
struct Npy {
  std::string header;
  std::string payload;
};

Npy read_npy(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(all.size() >= 10);
  REQUIRE(all.compare(0, 6, "\x93NUMPY") == 0);
  const std::size_t len = std::uint8_t(all[8]) | (std::size_t(std::uint8_t(all[9])) << 8);
  REQUIRE((10 + len) % 64 == 0);  // the format aligns the payload
  return {all.substr(10, len), all.substr(10 + len)};
}

}  // namespace

TEST_CASE("--dump writes inputs and outputs as .npy files", "[cli]") {
  const fs::path dir = scratch_dir() / "dump";
  fs::remove_all(dir);
  const std::string spec = write_spec("dump.json", R"({"seq": 17, "batch": 1, "heads": 2, "head_dim": 64,
                                                       "dtype": ["bf16", "fp64"], "reps": 1, "warmup": 0})");
  Outcome o = flashbench("run '" + spec + "' --backend cpu -q --dump '" + dir.string() + "'");
  INFO(o.out);
  REQUIRE(o.code == 0);
  const fs::path bf16 = dir / "b1-h2-kv2-n17-d64-bf16-full-fwd";
  for (const char* f : {"inputs.Q.npy", "inputs.K.npy", "inputs.V.npy", "naive.O.npy", "naive.LSE.npy",
                        "flash.O.npy", "flash.LSE.npy", "reference.O.npy", "reference.LSE.npy"})
    REQUIRE(fs::exists(bf16 / f));

  Npy q = read_npy(bf16 / "inputs.Q.npy");
  REQUIRE(contains(q.header, "'descr': '<f4'"));  // bf16 widened to fp32 (exact)
  REQUIRE(contains(q.header, "'shape': (1, 2, 17, 64)"));
  REQUIRE(q.payload.size() == 2 * 17 * 64 * sizeof(float));
  Npy lse = read_npy(bf16 / "flash.LSE.npy");
  REQUIRE(contains(lse.header, "'shape': (1, 2, 17)"));

  // The dumped flash output agrees with the dumped fp64 reference to bf16 accuracy, element by element.
  Npy fo = read_npy(dir / "b1-h2-kv2-n17-d64-fp64-full-fwd" / "flash.O.npy");
  Npy ro = read_npy(dir / "b1-h2-kv2-n17-d64-fp64-full-fwd" / "reference.O.npy");
  REQUIRE(contains(fo.header, "'descr': '<f8'"));
  REQUIRE(fo.payload.size() == ro.payload.size());
  std::vector<double> a(fo.payload.size() / 8), b(a.size());
  std::memcpy(a.data(), fo.payload.data(), fo.payload.size());
  std::memcpy(b.data(), ro.payload.data(), ro.payload.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  REQUIRE(worst < 1e-12);
  REQUIRE(worst == worst);  // not NaN

  REQUIRE(flashbench("run '" + spec + "' --backend cpu -q --dump /proc/nope").code == 2);
}

TEST_CASE("verify with large inputs: scores that overflow a plain exp still match fp64", "[cli]") {
  // Q, K ~ 10 x N(0,1): scores of order +-500, exp overflows fp32 past 88 and fp64 past 709 without
  // the running-max subtraction both kernels use.
  Outcome o = flashbench("verify --seq 150 --backend cpu --dtype fp32 --causal both --input-scale 10");
  INFO(o.out);
  REQUIRE(o.code == 0);
  o = flashbench("verify --seq 150 --backend cpu --dtype fp64 --causal no --input-scale 100");
  INFO(o.out);
  REQUIRE(o.code == 0);
  REQUIRE(contains(o.out, "2/2 checks passed"));
  REQUIRE(flashbench("verify --seq 150 --backend cpu --input-scale 0").code == 2);
}

TEST_CASE("--devices and --device on the CPU backend are refused, not ignored", "[cli]") {
  // The CPU backend has no devices: a flag that would change nothing is an error (the worker-and-merge
  // path of --devices runs on a GPU: scripts/device_run.sh's `devices` step).
  const fs::path out = scratch_dir() / "devices.json";
  fs::remove(out);
  for (const char* flags : {"--devices 0,1", "--device 3"}) {
    Outcome o = flashbench(std::string("run configs/quick.json --backend cpu -q ") + flags + " -o '" +
                           out.string() + "'");
    INFO(o.out);
    REQUIRE(o.code == 2);
    REQUIRE(contains(o.out, std::string(flags).substr(0, std::string(flags).find(' '))));
    REQUIRE(contains(o.out, "CPU backend has no devices"));
    REQUIRE(std::count(o.out.begin(), o.out.end(), '\n') == 1);
    REQUIRE(!fs::exists(out));
  }
  Outcome v = flashbench("verify --seq 64 --backend cpu --device 1");
  REQUIRE(v.code == 2);
  REQUIRE(contains(v.out, "--device 1"));
  REQUIRE(flashbench("info --backend cpu --device 2").code == 2);
}

namespace {

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

std::size_t lines_of(const std::string& s) { return std::size_t(std::count(s.begin(), s.end(), '\n')); }

}  // namespace

TEST_CASE("run overrides: --reps, --warmup, --kernels, --filter, recorded in settings", "[cli]") {
  const fs::path out = scratch_dir() / "overrides.json";
  fs::remove(out);
  Outcome o = flashbench("run configs/quick.json --backend cpu -q --reps 2 --warmup 0 --kernels flash "
                         "--filter 'n(64|128)-d64-fp32' -o '" + out.string() + "'");
  INFO(o.out);
  REQUIRE(o.code == 0);
  const nlohmann::json j = read_json(out);
  REQUIRE(j["settings"]["reps"] == 2);
  REQUIRE(j["settings"]["warmup"] == 0);
  REQUIRE(j["settings"]["overrides"]["kernels"] == nlohmann::json{"flash"});
  REQUIRE(j["settings"]["overrides"]["filter"] == "n(64|128)-d64-fp32");
  REQUIRE(j["settings"]["overrides"]["reps"] == 2);
  REQUIRE(j["results"].size() == 4);  // N 64 and 128, causal and not, fp32 only; flash only
  for (const auto& r : j["results"]) {
    REQUIRE(r["kernel"] == "flash");
    REQUIRE(r["time_ms"]["reps"] == 2);
    REQUIRE(r["case"]["dtype"] == "fp32");
  }

  // Each bad value: exit 2, one line naming the flag, nothing written.
  fs::remove(out);
  for (const auto& [flags, named] : std::vector<std::pair<std::string, std::string>>{
           {"--kernels flash,nope", "--kernels"},
           {"--kernels flash,flash", "--kernels"},
           {"--filter 'n(64'", "--filter"},
           {"--filter n999999", "--filter"},
           {"--reps 0", "--reps"},
           {"--warmup -1", "--warmup"},
           {"--max-noise 0", "--max-noise"},
           {"--min-time -2", "--min-time"},
       }) {
    Outcome bad = flashbench("run configs/quick.json --backend cpu -q " + flags + " -o '" + out.string() + "'");
    INFO(flags << "\n" << bad.out);
    REQUIRE(bad.code == 2);
    REQUIRE(contains(bad.out, named));
    REQUIRE(lines_of(bad.out) == 1);
    REQUIRE(!fs::exists(out));
  }
}

TEST_CASE("run --list shows the cases and each kernel's memory, runs and writes nothing", "[cli]") {
  const fs::path out = scratch_dir() / "listed.json";
  fs::remove(out);
  Outcome o = flashbench("run configs/quick.json --backend cpu --list --filter bf16 -o '" + out.string() + "'");
  INFO(o.out);
  REQUIRE(o.code == 0);
  REQUIRE(contains(o.out, "8 cases x 2 kernels"));
  REQUIRE(contains(o.out, "b1-h2-kv2-n512-d64-bf16-causal-fwd"));
  REQUIRE(!contains(o.out, "fp32"));
  REQUIRE(contains(o.out, "KiB"));  // the memory each kernel needs
  REQUIRE(contains(o.out, "nothing was run"));
  REQUIRE(!fs::exists(out));
  REQUIRE(!fs::exists(out.string() + ".journal.jsonl"));

  // A kernel that cannot run a case here says why, once, by number.
  o = flashbench("run configs/quick.json --backend cpu --list --kernels naive,flash-sm90 --filter n64-");
  INFO(o.out);
  REQUIRE(o.code == 0);
  REQUIRE(contains(o.out, "skip [1]"));
  REQUIRE(contains(o.out, "[1] kernel 'flash-sm90' does not run on the CPU backend"));
}

TEST_CASE("adaptive timing samples past the minimum reps and records its policy", "[cli]") {
  const fs::path out = scratch_dir() / "adaptive.json";
  fs::remove(out);
  const std::string spec = write_spec("adaptive-spec.json", R"({"seq": 64, "batch": 1, "heads": 1, "head_dim": 64,
                                                                "dtype": "fp32", "kernels": ["flash"],
                                                                "reps": 3, "warmup": 0})");
  // A 64x64 flash forward takes well under a millisecond: 20 ms of kernel time needs many more than 3.
  Outcome o = flashbench("run '" + spec + "' --backend cpu -q --min-time 0.02 --max-time 2 -o '" + out.string() + "'");
  INFO(o.out);
  REQUIRE(o.code == 0);
  const nlohmann::json j = read_json(out);
  REQUIRE(j["settings"]["timing"]["mode"] == "adaptive");
  REQUIRE(j["settings"]["timing"]["min_time_s"] == 0.02);
  REQUIRE(j["settings"]["timing"]["max_time_s"] == 2.0);
  REQUIRE(j["settings"]["timing"]["noise"] == "cv");
  const auto& t = j["results"][0]["time_ms"];
  REQUIRE(t["reps"].get<int>() > 3);
  // It stopped once the samples added up to min-time (2 s of wall time, the cap, is far away).
  REQUIRE(t["reps"].get<double>() * t["mean"].get<double>() >= 0.02 * 1e3 * 0.99);
}

TEST_CASE("run prints rows as cases finish and closes with a summary", "[cli]") {
  const fs::path out = scratch_dir() / "summary.json";
  fs::remove(out);
  Outcome o = flashbench("run configs/quick.json --backend cpu --filter 'n64-' -o '" + out.string() + "'");
  INFO(o.out);
  REQUIRE(o.code == 0);
  // Not a terminal: one plain line per result, numbered by case.
  REQUIRE(contains(o.out, "[1/4] B=1 H=2 N=64 d=64 fp32 full fwd  naive  ok"));
  REQUIRE(contains(o.out, "[4/4] B=1 H=2 N=64 d=64 bf16 causal fwd  flash  ok"));
  REQUIRE(contains(o.out, "reps)"));
  REQUIRE(contains(o.out, "8 results: 8 ok, 0 skipped, 0 failed"));
  REQUIRE(contains(o.out, "than naive (geomean of 4 cases"));
  REQUIRE(contains(o.out, "wrote " + out.string()));

  // -q without -o: a warning that nothing is kept.
  Outcome q = flashbench("run configs/quick.json --backend cpu -q --filter 'n64-d64-fp32-full'");
  REQUIRE(q.code == 0);
  REQUIRE(contains(q.out, "saved nowhere"));
}

TEST_CASE("a spec without kernels runs only the kernels of this backend", "[cli]") {
  const fs::path out = scratch_dir() / "applicable.json";
  fs::remove(out);
  const std::string spec = write_spec("no-kernels.json", R"({"seq": 64, "batch": 1, "heads": 1, "head_dim": 64,
                                                             "dtype": "bf16", "reps": 1, "warmup": 0})");
  Outcome o = flashbench("run '" + spec + "' --backend cpu -o '" + out.string() + "'");
  INFO(o.out);
  REQUIRE(o.code == 0);
  REQUIRE(!contains(o.out, "flash-sm90"));
  REQUIRE(!contains(o.out, "skipped: "));
  std::set<std::string> kernels;
  const nlohmann::json j = read_json(out);
  for (const auto& r : j["results"]) kernels.insert(r["kernel"].get<std::string>());
  REQUIRE(kernels == std::set<std::string>{"naive", "flash"});

  // verify likewise; -q prints only failures and the summary line.
  Outcome v = flashbench("verify --seq 64 --backend cpu --dtype bf16 -q");
  INFO(v.out);
  REQUIRE(v.code == 0);
  REQUIRE(lines_of(v.out) == 1);
  REQUIRE(contains(v.out, "4/4 checks passed"));
  REQUIRE(!contains(v.out, "[SKIP]"));
}

TEST_CASE("messages: one line naming the flag, exit 2, nothing written", "[cli]") {
  const fs::path out = scratch_dir() / "messages.json";
  fs::remove(out);

  Outcome o = flashbench("run no-such-spec.json --backend cpu -o '" + out.string() + "'");
  REQUIRE(o.code == 2);
  REQUIRE(lines_of(o.out) == 1);
  REQUIRE(o.out.find("no-such-spec.json") == o.out.rfind("no-such-spec.json"));  // the path once

  o = flashbench("verify --seq 0 --backend cpu");
  INFO(o.out);
  REQUIRE(o.code == 2);
  REQUIRE(lines_of(o.out) == 1);
  REQUIRE(contains(o.out, "--seq: must be at least 1, got 0"));
  REQUIRE(o.out.size() < 120);  // no DBL_MAX in 309 digits

  o = flashbench("verify --seq 128 --dim 48 --backend cpu");
  INFO(o.out);
  REQUIRE(o.code == 2);
  REQUIRE(lines_of(o.out) == 1);
  REQUIRE(contains(o.out, "--dim 48: "));
  REQUIRE(!contains(o.out, "spec."));

  o = flashbench("verify --seq 4000000000 --backend cpu");
  REQUIRE(o.code == 2);
  REQUIRE(contains(o.out, "--seq"));

  o = flashbench("run configs/quick.json --backend cpu -o /proc/nope.json");
  INFO(o.out);
  REQUIRE(o.code == 2);
  REQUIRE(lines_of(o.out) == 1);
  REQUIRE(contains(o.out, "--output /proc/nope.json"));
  REQUIRE(!contains(o.out, "journal"));

  o = flashbench("run configs/quick.json --backend cpu --resume --fresh -o '" + out.string() + "'");
  REQUIRE(o.code == 2);
  REQUIRE(contains(o.out, "--fresh"));
  REQUIRE(!fs::exists(out));

  // An unfinished run's journal (of any sweep) is kept unless --fresh says to replace it.
  const fs::path journal = out.string() + ".journal.jsonl";
  std::ofstream(journal) << "{\"journal\": 1, \"fingerprint\": \"0000000000000000\"}\n";
  o = flashbench("run configs/quick.json --backend cpu -q --filter n64-d64-fp32-full -o '" + out.string() + "'");
  INFO(o.out);
  REQUIRE(o.code == 2);
  REQUIRE(lines_of(o.out) == 1);
  REQUIRE(contains(o.out, "unfinished run"));
  REQUIRE(line_count(journal) == 1);
  REQUIRE(!fs::exists(out));
  o = flashbench("run configs/quick.json --backend cpu -q --fresh --filter n64-d64-fp32-full -o '" + out.string() + "'");
  INFO(o.out);
  REQUIRE(o.code == 0);
  REQUIRE(fs::exists(out));
  REQUIRE(!fs::exists(journal));
}

TEST_CASE("a sweep skipped for memory allocates no inputs", "[cli]") {
  // Naive's N x N arrays at N = 65536, 32 heads, fp32 need far more than any test machine has, so every
  // case is skipped. The inputs alone are 1.5 GiB; under a 1 GiB address-space limit, allocating them
  // would fail the case instead of skipping it.
  const fs::path out = scratch_dir() / "too-big.json";
  fs::remove(out);
  const std::string spec = write_spec("too-big.json", R"({"seq": 65536, "batch": 1, "heads": 32, "head_dim": 64,
                                                          "dtype": "fp32", "kernels": ["naive"]})");
  // One worker thread: a pool of one per core would reserve stacks and malloc arenas past the limit on
  // a many-core machine before anything is measured.
  const std::string cmd = "ulimit -v 1048576 && FLASHBENCH_THREADS=1 '" + std::string(FLASHBENCH_EXE) + "' run '" + spec +
                          "' --backend cpu -q -o '" + out.string() + "'";
  Outcome o = flashbench_shell(cmd);
  INFO(o.out);
  REQUIRE(o.code == 0);
  const nlohmann::json j = read_json(out);
  REQUIRE(j["results"].size() == 1);
  REQUIRE(j["results"][0]["status"] == "skipped");
  REQUIRE(contains(j["results"][0]["reason"].get<std::string>(), "seq_q x seq_k arrays"));
}

TEST_CASE("info prints a text block with an aligned kernel table", "[cli]") {
  Outcome o = flashbench("info --backend cpu");
  INFO(o.out);
  REQUIRE(o.code == 0);
  REQUIRE(!contains(o.out, "{"));  // no raw JSON
  std::istringstream lines(o.out);
  std::string header, naive, flash;
  for (std::string line; std::getline(lines, line);) {
    if (contains(line, "kernel") && contains(line, "dtypes")) header = line;
    if (line.rfind("  naive ", 0) == 0 && naive.empty()) naive = line;
    if (line.rfind("  flash ", 0) == 0 && flash.empty()) flash = line;
  }
  REQUIRE(!header.empty());
  REQUIRE(contains(naive, "fp64 fp32 fp16 bf16"));
  REQUIRE(contains(flash, "32 64 96 128 256"));
  REQUIRE(contains(flash, "fwd bwd"));
  REQUIRE(header.find("dtypes") == naive.find("fp64"));
  REQUIRE(naive.find("fp64") == flash.find("fp64"));
  REQUIRE(contains(o.out, "does not run on the CPU backend"));  // flash-sm90's line says why it is not here
}
