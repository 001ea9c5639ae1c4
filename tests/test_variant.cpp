// Variants [variant]: a kernel run beside itself under other kernel settings in one process (common/settings.h's
// overlays, make_variant, `flashbench run --variant`). The overlay reaches every entry point the runner and the
// backend call: a test kernel that reads a setting and computes a wrong O under one value passes as itself and fails
// verification as its variant in the same interleaved rounds. The CLI puts a variant after its kernel, records it
// and refuses what it cannot run with one message.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "backend/cpu/cpu_attention.h"
#include "backend/cpu/cpu_backend.h"
#include "catch.h"
#include "commands.h"
#include "common/settings.h"
#include "record.h"
#include "registry.h"
#include "runner.h"
#include "spec.h"

using namespace fb;
namespace fs = std::filesystem;

namespace {

// A setting the test kernel reads (one a variant may assign; the CPU kernels read none of them themselves).
constexpr const char* kVar = "FB_FLASH_FWD_PROBE";

const Record& record_of(const Results& res, const std::string& kernel) {
  for (const Record& r : res.records)
    if (r.kernel == kernel) return r;
  FAIL("no record of " << kernel);
  return res.records.front();
}

// The runner's kernels: naive, flash, and "reads": flash that, where kVar is "wrong" when it runs (the environment
// or the overlay in force), scales O by 1.01 after computing it, and reports 7-row tiles.
KernelSet kernels_with_reader() {
  const Descriptor& flash = *builtin_kernels().find("flash");
  Descriptor reads = flash;
  reads.name = "reads";
  const auto inner = flash.cpu.forward;
  reads.cpu.forward = [inner](const AttentionParams& p, const cpu::Context& cx, cpu::Saved& s) {
    inner(p, cx, s);
    const char* v = settings::get(kVar);
    if (v == nullptr || std::string(v) != "wrong") return;
    float* o = static_cast<float*>(p.o);
    const long long n = static_cast<long long>(p.batch) * p.heads * p.seq_q * p.head_dim;
    for (long long i = 0; i < n; ++i) o[i] *= 1.01f;
  };
  const auto inner_tile = flash.cpu.tile;
  reads.cpu.tile = [inner_tile](Pass pass, const AttentionParams& p, const cpu::Context& cx) {
    const char* v = settings::get(kVar);
    return v != nullptr && std::string(v) == "wrong" ? 7 : inner_tile(pass, p, cx);
  };
  std::vector<Descriptor> ds = {*builtin_kernels().find("naive"), flash, reads};
  ds.push_back(make_variant(reads, "reads-wrong", {{kVar, "wrong"}}));
  ds.push_back(make_variant(reads, "reads-right", {{kVar, "right"}}));
  return KernelSet(ds);
}

Sweep small_sweep(const std::vector<std::string>& kernels, bool interleaved) {
  nlohmann::json spec = {{"seq", {40}},       {"batch", {1}},      {"heads", {2}},    {"head_dim", {32}},
                         {"dtype", {"fp32"}}, {"causal", {false}}, {"pass", {"fwd"}}, {"warmup", 1},
                         {"reps", 3},         {"kernels", {"naive", "flash"}}};
  Sweep s = sweep_from_json(spec);
  s.kernels = kernels;
  s.rep_order = interleaved ? RepOrder::interleaved : RepOrder::blocked;
  return s;
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("flashbench-variant-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

}  // namespace

TEST_CASE("settings overlays: one per set of assignments, in force inside a Scope, parsed once each", "[variant]") {
  const settings::Overlay* a = settings::overlay({{"FB_SM90_FWD_PROBE", "k0rec"}, {"FB_SM90_BWD64", "direct"}});
  const settings::Overlay* b = settings::overlay({{"FB_SM90_BWD64", "direct"}, {"FB_SM90_FWD_PROBE", "k0rec"}});
  CHECK(a == b);  // the same set in another order
  CHECK(a->id >= 1);
  CHECK(a->vars.front().first == "FB_SM90_BWD64");  // sorted
  const settings::Overlay* c = settings::overlay({{"FB_SM90_FWD_PROBE", "nok0rec"}});
  CHECK(c != a);
  CHECK(c->id != a->id);
  CHECK_THROWS_AS(settings::overlay({{"FB_L2_FLUSH", "clean"}}), std::invalid_argument);  // not read through get()
  CHECK_THROWS_AS(settings::overlay({{"FB_SM90_BWD64", "a"}, {"FB_SM90_BWD64", "b"}}), std::invalid_argument);

  // get(): the overlay's value where it assigns the variable, the environment's where it does not; Scopes nest.
  ::setenv("FB_SM90_BWD128", "from-env", 1);
  ::unsetenv("FB_SM90_FWD_PROBE");
  CHECK(settings::get("FB_SM90_FWD_PROBE") == nullptr);
  {
    settings::Scope outer(a);
    CHECK(std::string(settings::get("FB_SM90_FWD_PROBE")) == "k0rec");
    CHECK(std::string(settings::get("FB_SM90_BWD128")) == "from-env");
    {
      settings::Scope inner(c);
      CHECK(std::string(settings::get("FB_SM90_FWD_PROBE")) == "nok0rec");
      CHECK(settings::get("FB_SM90_BWD64") == nullptr);
    }
    CHECK(settings::current() == a);
  }
  CHECK(settings::current() == nullptr);
  ::unsetenv("FB_SM90_BWD128");

  // PerOverlay: one parse per overlay, kept; a parse that throws keeps nothing and throws again.
  settings::PerOverlay<std::string> cache;
  int parses = 0;
  const auto parse = [&] {
    ++parses;
    const char* v = settings::get("FB_SM90_FWD_PROBE");
    return std::string(v != nullptr ? v : "(unset)");
  };
  CHECK(cache.get(parse) == "(unset)");
  CHECK(cache.get(parse) == "(unset)");
  {
    settings::Scope s(a);
    CHECK(cache.get(parse) == "k0rec");
    CHECK(cache.get(parse) == "k0rec");
  }
  CHECK(cache.get(parse) == "(unset)");
  CHECK(parses == 2);
  settings::PerOverlay<int> throwing;
  int tries = 0;
  const auto refuse = [&]() -> int {
    ++tries;
    throw std::invalid_argument("FB_SM90_FWD_PROBE: not a word");
  };
  CHECK_THROWS_AS(throwing.get(refuse), std::invalid_argument);
  CHECK_THROWS_AS(throwing.get(refuse), std::invalid_argument);
  CHECK(tries == 2);
}

TEST_CASE("make_variant: the base's kernel under its settings; what it refuses", "[variant]") {
  const Descriptor& flash = *builtin_kernels().find("flash");
  const Descriptor v = make_variant(flash, "flash+p", {{"FB_FLASH_FWD_PROBE", "persist"}});
  CHECK(v.name == "flash+p");
  CHECK(v.variant_of == "flash");
  CHECK(v.role == flash.role);
  CHECK(v.dtypes == flash.dtypes);
  CHECK(v.passes == flash.passes);
  CHECK(bool(v.cpu.forward) == bool(flash.cpu.forward));
  CHECK(bool(v.cpu.backward) == bool(flash.cpu.backward));
  CHECK(v.description.find("FB_FLASH_FWD_PROBE=persist") != std::string::npos);
  REQUIRE(v.variant_env.size() == 1);

  const auto refused = [](const Descriptor& base, const std::string& name, settings::Assignments env,
                          const std::string& says) {
    INFO(base.name << " as " << name);
    try {
      make_variant(base, name, env);
      FAIL("accepted");
    } catch (const std::invalid_argument& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(says) != std::string::npos);
    }
  };
  refused(flash, "", {{"FB_FLASH_FWD_PROBE", "x"}}, "needs a name");
  refused(flash, "a,b", {{"FB_FLASH_FWD_PROBE", "x"}}, "letters, digits");
  refused(flash, "p", {}, "assigns no kernel setting");
  refused(flash, "p", {{"FB_CUDNN_FWD_PROBE", "nostats"}}, "not a kernel setting a variant can assign");
  refused(*builtin_kernels().reference(), "r", {{"FB_FLASH_FWD_PROBE", "x"}}, "reference");
  refused(v, "vv", {{"FB_FLASH_FWD_PROBE", "x"}}, "a variant itself");
  Descriptor plugin = flash;
  plugin.origin = "libmine.so";
  refused(plugin, "p", {{"FB_FLASH_FWD_PROBE", "x"}}, "plug-in");

  // Variants are not default kernels: a spec that names none runs them where `run` puts them.
  KernelSet set({*builtin_kernels().find("naive"), flash, v});
  for (const Descriptor* d : set.default_kernels()) CHECK(d->name != "flash+p");
}

TEST_CASE("a variant's every call runs under its settings: itself and its variant judged apart in one run",
          "[variant]") {
  const KernelSet kernels = kernels_with_reader();
  RunnerOptions opts;
  opts.kernels = &kernels;
  auto backend = make_cpu_backend();
  for (const bool interleaved : {false, true}) {
    INFO((interleaved ? "interleaved" : "blocked"));
    const Results res =
        run_sweep(small_sweep({"naive", "flash", "reads", "reads-wrong", "reads-right"}, interleaved), *backend, opts);
    for (const std::string k : {"flash", "reads", "reads-right"}) {
      INFO(k);
      const Record& r = record_of(res, k);
      CHECK(r.status == Status::ok);
      CHECK(r.verified == std::optional<bool>(true));
      CHECK(r.time_ms.samples.size() == 3);
    }
    const Record& wrong = record_of(res, "reads-wrong");
    CHECK(wrong.verified == std::optional<bool>(false));  // its O scaled by 1.01: the overlay reached the forward
    CHECK(wrong.time_ms.samples.size() == 3);
    // and the tile query (7 rows: the byte model's figure moves with it)
    CHECK(wrong.bytes_moved != record_of(res, "reads").bytes_moved);
    CHECK(record_of(res, "reads-right").bytes_moved == record_of(res, "reads").bytes_moved);
    CHECK(settings::current() == nullptr);  // nothing left in force after the run
  }
  // The same kernel under the process's environment is the variant: the setting is what differs.
  ::setenv(kVar, "wrong", 1);
  const Results env = run_sweep(small_sweep({"naive", "reads"}, true), *backend, opts);
  ::unsetenv(kVar);
  CHECK(record_of(env, "reads").verified == std::optional<bool>(false));
}

TEST_CASE("run --variant: after its kernel, recorded, refused with one message where it cannot run", "[variant]") {
  TempDir dir;
  const fs::path spec = dir.path / "spec.json", out = dir.path / "out.json";
  const nlohmann::json s = {{"seq", {32}},       {"batch", {1}},     {"heads", {1}},
                            {"head_dim", {32}},  {"dtype", {"fp32"}}, {"pass", {"fwd"}},
                            {"kernels", {"naive", "flash"}}, {"reps", 2}, {"warmup", 0}};
  std::ofstream(spec) << s.dump();
  const auto options = [&](std::vector<std::string> variants) {
    RunOptions o;
    o.spec_path = spec.string();
    o.json_out = out.string();
    o.backend = "cpu";
    o.quiet = true;
    o.fresh = true;
    o.no_ceilings = true;
    o.variants = std::move(variants);
    return o;
  };
  REQUIRE(run_command(options({"fp=flash:FB_FLASH_FWD_PROBE=persist", "fq=flash:FB_FLASH_FWD_PROBE=l2order:"
                                                                      "FB_FLASH_BWD=lean"})) == kExitOk);
  {
    const Results res = load_results(out.string());
    std::vector<std::string> order;
    for (const Record& r : res.records) order.push_back(r.kernel);
    CHECK(order == std::vector<std::string>{"naive", "flash", "fp", "fq"});
    for (const Record& r : res.records) CHECK(r.verified == std::optional<bool>(true));
    const nlohmann::json& v = res.settings.at("variants");
    CHECK(v.at("fp").at("kernel") == "flash");
    CHECK(v.at("fp").at("env").at("FB_FLASH_FWD_PROBE") == "persist");
    CHECK(v.at("fq").at("env").size() == 2);
  }
  CHECK(find_kernel("fp") == nullptr);  // the variants left with the command

  // --kernels names exactly what runs: a variant without its kernel, too.
  RunOptions o = options({"fp=flash:FB_FLASH_FWD_PROBE=persist"});
  o.kernels = {"naive", "fp"};
  REQUIRE(run_command(o) == kExitOk);
  {
    const Results res = load_results(out.string());
    REQUIRE(res.records.size() == 2);
    CHECK(res.records[1].kernel == "fp");
  }

  fs::remove(out);
  for (const std::string bad : {"fp", "fp=flash", "fp=flash:", "fp=flash:=x", "fp=nosuch:FB_FLASH_BWD=lean",
                                "naive=flash:FB_FLASH_BWD=lean", "f,p=flash:FB_FLASH_BWD=lean",
                                "fp=flash:FB_L2_FLUSH=clean", "fp=reference:FB_FLASH_BWD=lean",
                                "fp=flash:FB_FLASH_BWD=lean:FB_FLASH_BWD=standard"}) {
    INFO(bad);
    CHECK(run_command(options({bad})) == kExitUsage);
    CHECK_FALSE(fs::exists(out));
  }
  // Its kernel not among the run's: it would never run.
  RunOptions missing = options({"fp=flash-decode:FB_FLASH_FWD_PROBE=persist"});
  CHECK(run_command(missing) == kExitUsage);
  CHECK_FALSE(fs::exists(out));
  CHECK(find_kernel("fp") == nullptr);
}
