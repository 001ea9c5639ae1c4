// The CLI end to end, as a user runs it: the real binary, real files, exit codes.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

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
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Header + two cases of two kernels each.
  for (int i = 0; i < 600 && line_count(journal) < 5; ++i) usleep(50 * 1000);
  REQUIRE(line_count(journal) >= 5);
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 128 + SIGTERM);
  REQUIRE(fs::exists(journal));  // kept for --resume
  REQUIRE(fs::exists(out));       // what was done, written whole
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

  // A journal of another sweep is refused, not mixed in.
  std::ofstream(journal) << "{\"journal\": 1, \"fingerprint\": \"0000000000000000\"}\n";
  o = flashbench("run '" + spec + "' --backend cpu -q -o '" + out.string() + "' --resume");
  REQUIRE(o.code == 2);
  REQUIRE(contains(o.out, "different spec"));
  REQUIRE(flashbench("run '" + spec + "' --backend cpu --resume").code == 2);  // needs -o
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

TEST_CASE("--devices runs one worker per device and merges them into the single run's cases", "[cli]") {
  // On the CPU backend the device index is ignored: two workers split the sweep and run side by side.
  const fs::path d = scratch_dir();
  const fs::path single = d / "devices-single.json", merged = d / "devices-merged.json";
  fs::remove(single);
  fs::remove(merged);
  REQUIRE(flashbench("run configs/quick.json --backend cpu -q -o '" + single.string() + "'").code == 0);
  Outcome o = flashbench("run configs/quick.json --backend cpu -q --devices 0,1 -o '" + merged.string() + "'");
  INFO(o.out);
  REQUIRE(o.code == 0);
  REQUIRE(result_keys(merged) == result_keys(single));
  for (const auto& entry : fs::directory_iterator(d))  // worker parts are cleaned up
    REQUIRE(entry.path().filename().string().find("devices-merged.json.part") == std::string::npos);
  // Results come back in the sweep's case order, as a single run writes them.
  std::ifstream a(single), b(merged);
  const auto ja = nlohmann::json::parse(a), jb = nlohmann::json::parse(b);
  for (std::size_t i = 0; i < ja["results"].size(); ++i) REQUIRE(ja["results"][i]["key"] == jb["results"][i]["key"]);
  REQUIRE(flashbench("run configs/quick.json --backend cpu --devices 0,1").code == 2);  // needs -o
}
