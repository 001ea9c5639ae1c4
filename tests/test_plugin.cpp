// Plug-in kernels (--kernel-lib, include/flashbench/plugin.h) [plugin]: the example CPU plug-in gives
// verified rows through the real binary; libraries that are wrong are refused with one line naming the
// path (exit 2, nothing written); a plug-in's refusal is a skipped row and its error a failed one.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "catch.h"
#include "plugin.h"
#include "registry.h"

namespace fs = std::filesystem;

namespace {

const std::string kExample = FB_EXAMPLE_CPU_PLUGIN;
const std::string kSpec = std::string(FLASHBENCH_SOURCE_DIR) + "/examples/plugin/spec.json";

struct Outcome {
  int code = -1;
  std::string out;  // stdout and stderr together
};

fs::path scratch() {
  fs::path d = fs::temp_directory_path() / ("flashbench-plugin-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

Outcome flashbench(const std::string& args) {
  const fs::path log = scratch() / "out.txt";
  const std::string cmd = std::string("'") + FLASHBENCH_EXE + "' " + args + " > '" + log.string() + "' 2>&1";
  const int status = std::system(cmd.c_str());
  Outcome o;
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  o.out = ss.str();
  return o;
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

std::size_t lines(const std::string& s) { return std::size_t(std::count(s.begin(), s.end(), '\n')); }

// A small spec file with the given kernels (fp32, N = 64, forward).
std::string small_spec(const std::string& kernels, bool causal_too = false) {
  const fs::path p = scratch() / "small.json";
  std::ofstream(p) << R"({"seq": [64], "batch": [1], "heads": [2], "head_dim": [32], "dtype": ["fp32"], "causal": )"
                   << (causal_too ? "[false, true]" : "[false]") << R"(, "pass": ["fwd"], "kernels": )" << kernels
                   << R"(, "warmup": 0, "reps": 2})";
  return p.string();
}

}  // namespace

TEST_CASE("a plug-in kernel is a descriptor like a built-in: role tiled, tiled byte model, origin its path",
          "[plugin]") {
  const std::vector<fb::Descriptor> ks = fb::load_kernel_library(kExample);
  REQUIRE(ks.size() == 1);
  const fb::Descriptor& k = ks.front();
  CHECK(k.name == "example-cpu");
  CHECK(k.role == fb::Role::tiled);
  CHECK(k.origin == kExample);
  CHECK(k.dtypes.size() == 4);
  CHECK(k.head_dims.empty());  // any
  CHECK(std::count(k.passes.begin(), k.passes.end(), fb::Pass::fwd_bwd) == 1);
  CHECK(k.runs_on(fb::BackendId::cpu));
  CHECK_FALSE(k.runs_on(fb::BackendId::cuda));
  REQUIRE(k.bytes);
  fb::Case c;
  c.set_seq(256);
  CHECK(k.bytes(c, 1) == fb::tiled_bytes(c, 1));
  // Its workspace comes from flashbench: the example asks for its accumulators.
  CHECK(k.cpu.workspace_bytes(fb::Pass::fwd, c.params()) > 0);
  CHECK(k.cpu.workspace_bytes(fb::Pass::bwd, c.params()) > k.cpu.workspace_bytes(fb::Pass::fwd, c.params()));
}

TEST_CASE("run --kernel-lib: the spec names the plug-in's kernel and every row of it is verified", "[plugin]") {
  const fs::path out = scratch() / "example.json";
  fs::remove(out);
  const Outcome o = flashbench("run " + quoted(kSpec) + " --kernel-lib " + quoted(kExample) + " -o " +
                               quoted(out.string()) + " --reps 1 --warmup 0");
  INFO(o.out);
  REQUIRE(o.code == 0);
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(out));
  int rows = 0;
  std::set<std::string> passes;
  for (const auto& r : j["results"]) {
    if (r["kernel"] != "example-cpu") continue;
    ++rows;
    INFO(r.dump());
    CHECK(r["status"] == "ok");
    CHECK(r["verified"] == true);
    CHECK(r["time_ms"]["median"].get<double>() > 0);
    CHECK(r["memory"]["peak_bytes"].get<double>() > 0);  // outputs and the workspace it asked for
    CHECK(r["bytes_moved"].get<double>() > 0);
    passes.insert(r["case"]["pass"].get<std::string>());
  }
  CHECK(rows == 16);  // 2 seq x 2 dtypes x 2 causal x 2 passes
  CHECK(passes.size() == 2);
  CHECK(j["settings"]["kernel_libs"] == nlohmann::json::array({kExample}));
}

TEST_CASE("verify and info take --kernel-lib too", "[plugin]") {
  const Outcome v = flashbench("verify --backend cpu --seq-q 37 --seq-k 70 --dtype fp16 --pass all --kernel-lib " +
                               quoted(kExample));
  INFO(v.out);
  CHECK(v.code == 0);
  CHECK(v.out.find("[OK]   example-cpu") != std::string::npos);
  CHECK(v.out.find("[FAIL]") == std::string::npos);

  const Outcome info = flashbench("info --backend cpu --json --kernel-lib " + quoted(kExample));
  INFO(info.out);
  REQUIRE(info.code == 0);
  bool listed = false;
  const nlohmann::json j = nlohmann::json::parse(info.out);
  for (const auto& k : j["kernels"])
    if (k["name"] == "example-cpu") {
      listed = true;
      CHECK(k["origin"] == kExample);
      CHECK(k["role"] == "tiled");
      CHECK(k["passes"].size() == 3);
    }
  CHECK(listed);
}

TEST_CASE("without --kernel-lib the plug-in's kernel is unknown to the spec", "[plugin]") {
  const Outcome o = flashbench("run " + quoted(kSpec) + " --list");
  CHECK(o.code == 2);
  CHECK(o.out.find("unknown kernel 'example-cpu'") != std::string::npos);
}

TEST_CASE("a library that cannot be used is refused: one line naming the path, exit 2, nothing written",
          "[plugin]") {
  const std::string missing = (scratch() / "no-such-lib.so").string();
  const struct {
    std::string path, says;
  } bad[] = {
      {missing, "no such file"},
      {FB_FIXTURE_BAD_VERSION, "built for plug-in ABI version 99, this flashbench loads version 1"},
      {FB_FIXTURE_NO_ENTRY, "does not export flashbench_plugin()"},
      {FB_FIXTURE_NO_FORWARD, "kernel #0 'fixture-fails': forward is NULL"},
      {kSpec, "cannot load it"},  // not a shared library at all
  };
  const std::string spec = small_spec(R"(["naive"])");
  for (const auto& b : bad) {
    for (const std::string& command : {"run " + quoted(spec), std::string("verify --seq 64"), std::string("info")}) {
      const fs::path out = scratch() / "refused.json";
      fs::remove(out);
      const bool writes = command.rfind("info", 0) != 0;
      const Outcome o =
          flashbench(command + " --kernel-lib " + quoted(b.path) + (writes ? " -o " + quoted(out.string()) : ""));
      INFO(command << " --kernel-lib " << b.path << "\n" << o.out);
      CHECK(o.code == 2);
      CHECK(lines(o.out) == 1);
      CHECK(o.out.find("--kernel-lib " + b.path + ": ") != std::string::npos);
      CHECK(o.out.find(b.says) != std::string::npos);
      CHECK_FALSE(fs::exists(out));
    }
  }
  // The same kernel twice: the second library is refused, naming where the name came from.
  const Outcome twice = flashbench("run " + quoted(spec) + " --kernel-lib " + quoted(kExample) + " --kernel-lib " +
                                   quoted(kExample));
  CHECK(twice.code == 2);
  CHECK(twice.out.find("kernel 'example-cpu' is already registered (by " + kExample + ")") != std::string::npos);
}

TEST_CASE("a plug-in's supports() refusal is a skipped row, its error a failed row with its message",
          "[plugin]") {
  const fs::path out = scratch() / "fails.json";
  fs::remove(out);
  const Outcome o = flashbench("run " + quoted(small_spec(R"(["naive", "fixture-fails"])", true)) +
                               " --kernel-lib " + quoted(FB_FIXTURE_OK) + " -o " + quoted(out.string()));
  INFO(o.out);
  CHECK(o.code == 1);  // a failed row fails the run
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(out));
  int failed = 0, skipped = 0;
  for (const auto& r : j["results"]) {
    INFO(r.dump());
    if (r["kernel"] == "naive") {
      CHECK(r["status"] == "ok");  // the sweep goes on around the plug-in
      continue;
    }
    const std::string reason = r["reason"];
    if (r["case"]["causal"] == true) {
      ++skipped;
      CHECK(r["status"] == "skipped");
      CHECK(reason.find("fixture-fails refuses causal cases") != std::string::npos);
    } else {
      ++failed;
      CHECK(r["status"] == "failed");
      CHECK(reason.find("forward returned 7: deliberate failure at seq_q 64") != std::string::npos);
    }
  }
  CHECK(failed == 1);
  CHECK(skipped == 1);
}
