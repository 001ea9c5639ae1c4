// Spec parsing: defaults, the product's size and order, tokens -> batch, every rejection (the message
// must name the field), the schema in configs/ kept equal to the parser, and hostile input.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "catch.h"
#include "registry.h"
#include "spec.h"

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

const fs::path kSourceDir = FLASHBENCH_SOURCE_DIR;
const fs::path kConfigs = kSourceDir / "configs";
const fs::path kFixtures = kSourceDir / "tests" / "data" / "specs";

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  REQUIRE(in);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The smallest valid spec: one case, kernel defaults (every registry kernel supports head_dim 64).
json base() {
  return json{{"seq", json::array({64})},
              {"batch", json::array({1})},
              {"heads", json::array({1})},
              {"head_dim", json::array({64})},
              {"dtype", json::array({"fp32"})}};
}

json with(json j, const std::string& key, json value) {
  j[key] = std::move(value);
  return j;
}

json without(json j, const std::string& key) {
  j.erase(key);
  return j;
}

// The SpecError message parse_spec gives for `text` (empty when it parses). Any other exception fails.
std::string error_of(const std::string& text) {
  try {
    fb::parse_spec(text);
  } catch (const fb::SpecError& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL("not a SpecError: " << e.what() << "\n  input: " << text.substr(0, 200));
  }
  return {};
}

// Rejected with one line containing every part (the field's path first among them).
void require_rejected(const std::string& text, std::initializer_list<std::string> parts) {
  const std::string msg = error_of(text);
  INFO("input: " << text.substr(0, 300));
  INFO("message: " << msg);
  REQUIRE_FALSE(msg.empty());
  CHECK(msg.find('\n') == std::string::npos);
  for (const std::string& part : parts) CHECK(msg.find(part) != std::string::npos);
}

void require_rejected(const json& j, std::initializer_list<std::string> parts) {
  require_rejected(j.dump(), parts);
}

void require_rejected(const char* text, std::initializer_list<std::string> parts) {
  require_rejected(std::string(text), parts);
}

// sweep_from_json on a value that text cannot carry (NaN, Infinity).
std::string error_of_json(const json& j) {
  try {
    fb::sweep_from_json(j);
  } catch (const fb::SpecError& e) {
    return e.what();
  }
  return {};
}

std::vector<std::string> registry_names() {
  std::vector<std::string> v;
  for (const fb::Descriptor* k : fb::builtin_kernels().default_kernels()) v.emplace_back(k->name);
  return v;
}

json schema() { return json::parse(read_text(kConfigs / "spec.schema.json")); }

}  // namespace

TEST_CASE("spec: defaults fill what the spec leaves out", "[spec]") {
  const fb::Sweep s = fb::parse_spec(base().dump());
  REQUIRE(s.cases.size() == 1);
  const fb::Case& c = s.cases[0];
  CHECK(c.seq_q == 64);
  CHECK(c.batch == 1);
  CHECK(c.heads == 1);
  CHECK(c.kv_heads == 1);  // kv_heads defaults to heads
  CHECK(c.head_dim == 64);
  CHECK(c.dtype == fb::Dtype::fp32);
  CHECK_FALSE(c.causal);
  CHECK(c.pass == fb::Pass::fwd);
  CHECK(s.kernels == registry_names());
  const fb::Sweep defaults;
  CHECK(s.warmup == defaults.warmup);
  CHECK(s.reps == defaults.reps);
  CHECK(s.seed == defaults.seed);
  CHECK(s.verify == defaults.verify);
  CHECK(s.spec == base());

  // kv_heads follows each heads value when not given.
  const fb::Sweep mha = fb::parse_spec(with(base(), "heads", {4, 8}).dump());
  REQUIRE(mha.cases.size() == 2);
  CHECK(mha.cases[0].kv_heads == 4);
  CHECK(mha.cases[1].kv_heads == 8);
}

TEST_CASE("spec: scalars and settings are read as given", "[spec]") {
  json j = base();
  j["name"] = "n";
  j["description"] = "d";
  j["$schema"] = "spec.schema.json";
  j["seq"] = 128;  // a lone value is a one-element axis
  j["dtype"] = "bf16";
  j["causal"] = true;
  j["pass"] = "fwd+bwd";
  j["kernels"] = {"flash", "naive"};  // given order is kept
  j["warmup"] = 0;
  j["reps"] = 7;
  j["seed"] = 9007199254740991LL;  // 2^53 - 1, the cap
  j["verify"] = false;
  j["head_dim"] = 128.0;  // an integral float is an integer, as in JSON Schema
  const fb::Sweep s = fb::parse_spec(j.dump());
  REQUIRE(s.cases.size() == 1);
  CHECK(s.cases[0].seq_q == 128);
  CHECK(s.cases[0].head_dim == 128);
  CHECK(s.cases[0].dtype == fb::Dtype::bf16);
  CHECK(s.cases[0].causal);
  CHECK(s.cases[0].pass == fb::Pass::fwd_bwd);
  CHECK(s.kernels == std::vector<std::string>{"flash", "naive"});
  CHECK(s.warmup == 0);
  CHECK(s.reps == 7);
  CHECK(s.seed == 9007199254740991ULL);
  CHECK_FALSE(s.verify);
  CHECK(s.spec == j);
}

TEST_CASE("spec: the product's size and order", "[spec]") {
  // Outermost first: dtype, head_dim, causal, pass, batch, heads, kv_heads, seq.
  const std::vector<fb::Dtype> dtypes = {fb::Dtype::bf16, fb::Dtype::fp32};
  const std::vector<int> head_dims = {128, 64};
  const std::vector<bool> causals = {true, false};
  const std::vector<fb::Pass> passes = {fb::Pass::bwd, fb::Pass::fwd};
  const std::vector<int> batches = {2, 1};
  const std::vector<int> heads = {8, 4};
  const std::vector<int> kv_heads = {4, 2, 1};
  const std::vector<int> seqs = {256, 64, 128};  // not sorted: the given order is kept
  json j = base();
  j["dtype"] = {"bf16", "fp32"};
  j["head_dim"] = head_dims;
  j["causal"] = causals;
  j["pass"] = {"bwd", "fwd"};
  j["batch"] = batches;
  j["heads"] = heads;
  j["kv_heads"] = kv_heads;
  j["seq"] = seqs;
  const fb::Sweep s = fb::parse_spec(j.dump());

  const std::vector<std::size_t> radix = {dtypes.size(),  head_dims.size(), causals.size(),  passes.size(),
                                          batches.size(), heads.size(),     kv_heads.size(), seqs.size()};
  std::size_t total = 1;
  for (std::size_t r : radix) total *= r;
  REQUIRE(s.cases.size() == total);

  std::set<std::string> keys;
  for (std::size_t i = 0; i < s.cases.size(); ++i) {
    // Case i's index in each axis, innermost (seq) fastest.
    std::vector<std::size_t> at(radix.size());
    std::size_t rest = i;
    for (std::size_t a = radix.size(); a-- > 0;) {
      at[a] = rest % radix[a];
      rest /= radix[a];
    }
    const fb::Case& c = s.cases[i];
    INFO("case " << i << ": " << c.key());
    CHECK(c.dtype == dtypes[at[0]]);
    CHECK(c.head_dim == head_dims[at[1]]);
    CHECK(c.causal == causals[at[2]]);
    CHECK(c.pass == passes[at[3]]);
    CHECK(c.batch == batches[at[4]]);
    CHECK(c.heads == heads[at[5]]);
    CHECK(c.kv_heads == kv_heads[at[6]]);
    CHECK(c.seq_q == seqs[at[7]]);
    keys.insert(c.key());
  }
  CHECK(keys.size() == total);  // no case twice
}

TEST_CASE("spec: tokens set batch = tokens / seq", "[spec]") {
  json j = without(base(), "batch");
  j["tokens"] = 16384;
  j["seq"] = {512, 16384, 1024};
  const fb::Sweep s = fb::parse_spec(j.dump());
  REQUIRE(s.cases.size() == 3);
  CHECK(s.cases[0].batch == 32);
  CHECK(s.cases[1].batch == 1);
  CHECK(s.cases[2].batch == 16);
  for (const fb::Case& c : s.cases) CHECK(std::int64_t(c.batch) * c.seq_q == 16384);

  j["tokens"] = {4096, 8192};  // a list of token counts is an axis in batch's place
  j["seq"] = {1024, 2048};
  const fb::Sweep two = fb::parse_spec(j.dump());
  REQUIRE(two.cases.size() == 4);
  CHECK(two.cases[0].batch == 4);
  CHECK(two.cases[1].batch == 2);
  CHECK(two.cases[2].batch == 8);
  CHECK(two.cases[3].batch == 4);

  j["tokens"] = 16384;
  j["seq"] = {512, 3000};
  require_rejected(j, {"spec.tokens", "16384", "spec.seq[1]", "3000"});
  j["seq"] = {32768};  // fewer tokens than one sequence
  require_rejected(j, {"spec.tokens", "spec.seq[0]", "32768"});
  j["tokens"] = std::int64_t(1) << 20;
  j["seq"] = {1};  // batch 2^20, over the batch cap
  require_rejected(j, {"spec.tokens", "batch", "1048576", "65536"});
  require_rejected(with(j, "batch", 1), {"spec", "batch", "tokens", "not both"});
  require_rejected(without(base(), "batch"), {"spec", "batch", "tokens"});
}

TEST_CASE("spec: model_dim sets heads = model_dim / head_dim", "[spec]") {
  json j = without(base(), "heads");
  j["model_dim"] = 2048;
  j["head_dim"] = {64, 128};
  j["seq"] = {1024};
  j.erase("kv_heads");
  const fb::Sweep s = fb::parse_spec(j.dump());
  REQUIRE(s.cases.size() % 2 == 0);
  for (const fb::Case& c : s.cases) {
    CHECK(c.heads * c.head_dim == 2048);
    CHECK(c.kv_heads == c.heads);  // default: no GQA
  }
  j["kv_heads"] = 8;  // divides 32 and 16
  for (const fb::Case& c : fb::parse_spec(j.dump()).cases) CHECK(c.kv_heads == 8);
  j["kv_heads"] = 32;  // divides 32 (d=64) but not 16 (d=128)
  require_rejected(j, {"spec.kv_heads", "does not divide"});
  j.erase("kv_heads");
  j["head_dim"] = {64, 96};  // 2048 / 96 is not whole
  j["kernels"] = {"naive"};
  require_rejected(j, {"spec.model_dim", "spec.head_dim[1]", "96"});
  require_rejected(with(j, "heads", 4), {"spec", "heads", "model_dim", "not both"});
}

TEST_CASE("spec: input_scale is a positive number with a cap", "[spec]") {
  CHECK(fb::parse_spec(base().dump()).input_scale == 1.0);
  CHECK(fb::parse_spec(with(base(), "input_scale", 30).dump()).input_scale == 30.0);
  CHECK(fb::parse_spec(with(base(), "input_scale", 0.25).dump()).input_scale == 0.25);
  require_rejected(with(base(), "input_scale", 0), {"spec.input_scale", "> 0"});
  require_rejected(with(base(), "input_scale", -2), {"spec.input_scale"});
  require_rejected(with(base(), "input_scale", 1e5), {"spec.input_scale", "at most"});
  require_rejected(with(base(), "input_scale", "big"), {"spec.input_scale", "number"});
  require_rejected(with(base(), "input_scale", true), {"spec.input_scale", "number"});
}

TEST_CASE("spec: fixtures and every committed config load", "[spec]") {
  const fb::Sweep gqa = fb::load_spec((kFixtures / "gqa_tokens.json").string());
  // seq 6 x kv_heads 3 x head_dim 2 x dtype 2 x causal 2 x pass 2
  REQUIRE(gqa.cases.size() == 6 * 3 * 2 * 2 * 2 * 2);
  for (const fb::Case& c : gqa.cases) {
    CHECK(std::int64_t(c.batch) * c.seq_q == 16384);
    CHECK(c.heads % c.kv_heads == 0);
  }
  CHECK(gqa.reps == 20);

  const fb::Sweep quick = fb::load_spec((kConfigs / "quick.json").string());
  std::set<fb::Dtype> dtypes;
  std::set<bool> causal;
  std::set<int> seqs;
  for (const fb::Case& c : quick.cases) {
    dtypes.insert(c.dtype);
    causal.insert(c.causal);
    seqs.insert(c.seq_q);
    CHECK(c.batch == 1);
    CHECK(c.heads <= 2);
  }
  CHECK(dtypes.count(fb::Dtype::fp32) == 1);
  CHECK(dtypes.count(fb::Dtype::bf16) == 1);
  CHECK(causal.size() == 2);
  CHECK(seqs.size() >= 3);
  CHECK(std::set<std::string>(quick.kernels.begin(), quick.kernels.end()) ==
        std::set<std::string>{"naive", "flash"});

  std::size_t configs = 0;
  for (const auto& entry : fs::directory_iterator(kConfigs)) {
    const fs::path p = entry.path();
    if (p.extension() != ".json" || p.filename() == "spec.schema.json") continue;
    INFO("config: " << p.filename().string());
    const std::string msg = [&]() -> std::string {
      try {
        fb::load_spec(p.string());
      } catch (const fb::SpecError& e) {
        return e.what();
      }
      return {};
    }();
    CHECK(msg.empty());
    ++configs;
  }
  CHECK(configs >= 1);
}

TEST_CASE("spec: load_spec names the file", "[spec]") {
  const std::string missing = (kFixtures / "no-such-spec.json").string();
  SECTION("missing file") {
    try {
      fb::load_spec(missing);
      FAIL("loaded a missing file");
    } catch (const fb::SpecError& e) {
      CHECK(std::string(e.what()).find("no-such-spec.json") != std::string::npos);
    }
  }
  SECTION("a directory") {
    try {
      fb::load_spec(kFixtures.string());
      FAIL("loaded a directory");
    } catch (const fb::SpecError& e) {
      CHECK(std::string(e.what()).find(kFixtures.filename().string()) != std::string::npos);
    }
  }
  SECTION("bad content: path, then the field") {
    try {
      fb::load_spec((kFixtures / "bad_head_dim.json").string());
      FAIL("loaded bad_head_dim.json");
    } catch (const fb::SpecError& e) {
      const std::string msg = e.what();
      INFO(msg);
      CHECK(msg.find("bad_head_dim.json: spec.head_dim[1]") != std::string::npos);
      CHECK(msg.find("flash") != std::string::npos);
      CHECK(msg.find("80") != std::string::npos);
    }
  }
  SECTION("malformed: line and column") {
    try {
      fb::load_spec((kFixtures / "malformed.json").string());
      FAIL("loaded malformed.json");
    } catch (const fb::SpecError& e) {
      const std::string msg = e.what();
      INFO(msg);
      // The missing comma is after line 4's value; the parser stops at line 5's key.
      CHECK(msg.find("malformed.json: spec") != std::string::npos);
      CHECK(msg.find("line 5, column") != std::string::npos);
    }
  }
}

TEST_CASE("spec: malformed JSON reports line and column", "[spec]") {
  require_rejected("{\n  \"seq\": [64,]\n}", {"spec", "malformed JSON", "line 2, column 14"});
  require_rejected("{\"seq\": [64]} x", {"spec", "line 1, column 15"});
  require_rejected("", {"spec", "line 1, column 1"});
  require_rejected("{\n\n   \"seq\": [NaN]}", {"spec", "line 3"});
  require_rejected("{\"seq\": [Infinity]}", {"spec", "malformed JSON"});
  require_rejected("{\"seq\": [1e400]}", {"spec", "malformed JSON", "1e400"});
  require_rejected("{\"seq\": [64], \"seq\": [128]}", {"spec.seq", "more than once"});
  require_rejected("[1, 2]", {"spec", "object", "a list"});
  require_rejected("42", {"spec", "object", "42"});
  require_rejected("null", {"spec", "object", "null"});
}

TEST_CASE("spec: unknown and missing keys", "[spec]") {
  require_rejected(with(base(), "haeds", 4), {"spec", "'haeds'", "did you mean 'heads'"});
  require_rejected(with(base(), "kernel", "naive"), {"'kernel'", "did you mean 'kernels'"});
  require_rejected(with(base(), "head-dim", 64), {"'head-dim'", "did you mean 'head_dim'"});
  const std::string far = error_of(with(base(), "zzzzzz", 1).dump());
  CHECK(far.find("'zzzzzz'") != std::string::npos);
  CHECK(far.find("did you mean") == std::string::npos);
  for (const char* key : {"seq", "heads", "head_dim", "dtype"})
    require_rejected(without(base(), key), {std::string("spec.") + key, "missing"});
}

TEST_CASE("spec: wrong types name the field", "[spec]") {
  require_rejected(with(base(), "heads", true), {"spec.heads", "true"});
  require_rejected(with(base(), "head_dim", {64, 64.5}), {"spec.head_dim[1]", "integer", "64.5"});
  require_rejected(with(base(), "seq", {"64"}), {"spec.seq[0]", "integer", "string '64'"});
  require_rejected(with(base(), "batch", nullptr), {"spec.batch", "null"});
  require_rejected(with(base(), "batch", {nullptr}), {"spec.batch[0]", "null"});
  require_rejected(with(base(), "seq", json::object({{"a", 1}})), {"spec.seq", "object"});
  require_rejected(with(base(), "seq", json::parse("[[64]]")), {"spec.seq[0]", "a list"});
  require_rejected(with(base(), "dtype", {32}), {"spec.dtype[0]", "string"});
  require_rejected(with(base(), "causal", {1}), {"spec.causal[0]", "true or false", "1"});
  require_rejected(with(base(), "pass", {false}), {"spec.pass[0]", "string"});
  require_rejected(with(base(), "kernels", {1}), {"spec.kernels[0]", "string"});
  require_rejected(with(base(), "warmup", "3"), {"spec.warmup", "string '3'"});
  require_rejected(with(base(), "warmup", {3}), {"spec.warmup", "single value"});
  require_rejected(with(base(), "reps", 2.5), {"spec.reps", "2.5"});
  require_rejected(with(base(), "verify", "yes"), {"spec.verify", "true or false"});
  require_rejected(with(base(), "verify", 1), {"spec.verify", "true or false"});
  require_rejected(with(base(), "seed", true), {"spec.seed", "true"});
  require_rejected(with(base(), "name", 5), {"spec.name", "string"});
  require_rejected(with(base(), "description", {"a"}), {"spec.description", "single value"});
  // Values JSON text cannot carry, given as a json value.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::string nan_msg = error_of_json(with(base(), "seq", {64, nan}));
  CHECK(nan_msg.find("spec.seq[1]") != std::string::npos);
  CHECK(nan_msg.find("NaN") != std::string::npos);
  const std::string inf_msg = error_of_json(with(base(), "heads", -inf));
  CHECK(inf_msg.find("spec.heads") != std::string::npos);
  CHECK(inf_msg.find("Infinity") != std::string::npos);
}

TEST_CASE("spec: empty axes, zero, negative and too large", "[spec]") {
  for (const char* key :
       {"seq", "batch", "heads", "head_dim", "dtype", "causal", "pass", "kernels", "kv_heads"})
    require_rejected(with(base(), key, json::array()), {std::string("spec.") + key, "empty"});
  require_rejected(with(base(), "seq", {64, 0}), {"spec.seq[1]", "positive", "0"});
  require_rejected(with(base(), "heads", -1), {"spec.heads", "positive", "-1"});
  require_rejected(with(base(), "batch", {0}), {"spec.batch[0]", "positive"});
  require_rejected(with(base(), "reps", 0), {"spec.reps", "positive"});
  require_rejected(with(base(), "warmup", -1), {"spec.warmup", "non-negative"});
  require_rejected(with(base(), "seed", -1), {"spec.seed", "non-negative"});
  require_rejected(with(base(), "seq", {64, 1048577}), {"spec.seq[1]", "1048577", "cap 1048576"});
  require_rejected(with(base(), "heads", 4097), {"spec.heads", "4097", "cap 4096"});
  require_rejected(with(base(), "batch", 65537), {"spec.batch", "65537", "cap 65536"});
  require_rejected(with(with(base(), "kernels", "naive"), "head_dim", 513),
                   {"spec.head_dim", "513", "cap 512"});
  require_rejected(with(base(), "seed", std::int64_t(1) << 53), {"spec.seed", "9007199254740992"});
  require_rejected(with(base(), "reps", 100001), {"spec.reps", "cap 100000"});
  // Huge numbers: a double, 2^63 (unsigned in nlohmann), 2^64 - 1, below INT64_MIN.
  require_rejected("{\"seq\":[1e300],\"batch\":1,\"heads\":1,\"head_dim\":64,\"dtype\":\"fp32\"}",
                   {"spec.seq[0]", "1e+300", "cap"});
  require_rejected(
      "{\"seq\":[9223372036854775808],\"batch\":1,\"heads\":1,\"head_dim\":64,\"dtype\":\"fp32\"}",
      {"spec.seq[0]", "9223372036854775808", "cap"});
  require_rejected(
      "{\"seq\":64,\"batch\":18446744073709551615,\"heads\":1,\"head_dim\":64,\"dtype\":\"fp32\"}",
      {"spec.batch", "18446744073709551615", "cap"});
  require_rejected(
      "{\"seq\":64,\"batch\":1,\"heads\":-9223372036854775809,\"head_dim\":64,\"dtype\":\"fp32\"}",
      {"spec.heads", "positive"});
  require_rejected("{\"seq\":[1099511627776],\"batch\":1,\"heads\":1,\"head_dim\":64,\"dtype\":\"fp32\"}",
                   {"spec.seq[0]", "1099511627776", "cap 1048576"});
  // Every size under its cap, the tensor over 2^40 elements: the message gives the numbers.
  json big = with(base(), "kernels", "naive");
  big["seq"] = 1048576;
  big["batch"] = 1024;
  big["heads"] = 64;
  big["head_dim"] = 512;
  require_rejected(big, {"spec", "batch 1024", "heads 64", "seq 1048576", "head_dim 512", "35184372088832",
                         "cap 1099511627776", "2^40"});
}

TEST_CASE("spec: duplicates within an axis", "[spec]") {
  require_rejected(with(base(), "seq", {64, 128, 64}), {"spec.seq[2]", "duplicate", "64", "spec.seq[0]"});
  require_rejected(with(base(), "seq", {64, 64.0}), {"spec.seq[1]", "duplicate"});
  require_rejected(with(base(), "dtype", {"fp32", "bf16", "fp32"}), {"spec.dtype[2]", "'fp32'"});
  require_rejected(with(base(), "causal", {true, true}), {"spec.causal[1]", "true"});
  require_rejected(with(base(), "pass", {"fwd", "fwd"}), {"spec.pass[1]"});
  require_rejected(with(base(), "kernels", {"naive", "naive"}), {"spec.kernels[1]", "'naive'"});
  require_rejected(with(base(), "kv_heads", {1, 1}), {"spec.kv_heads[1]"});
}

TEST_CASE("spec: unknown names list the valid ones", "[spec]") {
  require_rejected(with(base(), "dtype", {"fp32", "e5m2"}),
                   {"spec.dtype[1]", "'e5m2'", "fp64, fp32, fp16, bf16, fp8"});
  require_rejected(with(base(), "dtype", "FP16"), {"spec.dtype", "did you mean 'fp16'"});
  require_rejected(with(base(), "pass", "forward"), {"spec.pass", "'forward'", "fwd, bwd, fwd+bwd"});
  require_rejected(with(base(), "kernels", {"naive", "flsh"}),
                   {"spec.kernels[1]", "'flsh'", "did you mean 'flash'", fb::kernel_names()});
}

TEST_CASE("spec: kernel support and GQA rules across fields", "[spec]") {
  // flash has a fixed set of head dims (registry); naive runs any.
  const fb::Descriptor* flash = fb::find_kernel("flash");
  REQUIRE(flash != nullptr);
  REQUIRE_FALSE(flash->head_dims.empty());
  int unsupported = 80;  // a head_dim some models use (e.g. 80 in Phi-2) but not a power of two
  while (std::find(flash->head_dims.begin(), flash->head_dims.end(), unsupported) != flash->head_dims.end())
    unsupported += 8;
  require_rejected(with(base(), "head_dim", {64, unsupported}),
                   {"spec.head_dim[1]", "flash", std::to_string(unsupported)});
  require_rejected(with(with(base(), "head_dim", unsupported), "kernels", {"naive", "flash"}),
                   {"spec.head_dim", "flash", "spec.kernels"});
  CHECK(error_of(with(with(base(), "head_dim", unsupported), "kernels", "naive").dump()).empty());

  json gqa = with(base(), "heads", {8, 12});
  gqa["kv_heads"] = {4, 3};
  require_rejected(gqa, {"spec.kv_heads[1]", "spec.heads[0]", "8"});  // 3 does not divide 8
  gqa["kv_heads"] = {2, 1};
  CHECK(fb::parse_spec(gqa.dump()).cases.size() == 4);
  require_rejected(with(base(), "kv_heads", 2), {"spec.kv_heads", "spec.heads"});  // 2 does not divide 1
}

TEST_CASE("spec: too many cases are refused before any is built", "[spec]") {
  json j = base();
  std::vector<int> hundred(100);
  for (int i = 0; i < 100; ++i) hundred[i] = i + 1;
  j["seq"] = hundred;
  j["batch"] = hundred;
  j["heads"] = hundred;
  j["kernels"] = "naive";
  require_rejected(j, {"spec", "1000000 cases", std::to_string(fb::kMaxCases)});
  // Exactly the cap is fine (10 x 100 x 100 = kMaxCases).
  static_assert(fb::kMaxCases == 100000, "the sizes below multiply to kMaxCases");
  j["seq"] = std::vector<int>(hundred.begin(), hundred.begin() + 10);
  CHECK(fb::parse_spec(j.dump()).cases.size() == fb::kMaxCases);
}

TEST_CASE("spec: deep nesting is refused without recursion", "[spec]") {
  const std::size_t deep = 10000;
  require_rejected(std::string(deep, '['), {"spec", "nested deeper than"});
  std::string objects;
  for (std::size_t i = 0; i < deep; ++i) objects += "{\"a\":";
  require_rejected(objects, {"spec", "nested deeper than", "line 1"});
  require_rejected("{\"seq\": " + std::string(deep, '[') + std::string(deep, ']') + "}", {"spec", "nested"});
  // Brackets inside strings do not count.
  CHECK(error_of(with(base(), "name", std::string(deep, '[')).dump()).empty());
  // Shallow nesting inside an axis is a type error for that element.
  require_rejected("{\"seq\":[[[64]]],\"batch\":1,\"heads\":1,\"head_dim\":64,\"dtype\":\"fp32\"}",
                   {"spec.seq[0]", "a list"});
}

TEST_CASE("spec: configs/spec.schema.json matches the parser", "[spec]") {
  const json s = schema();
  CHECK(s.at("$schema") == "https://json-schema.org/draft/2020-12/schema");
  CHECK(s.at("type") == "object");
  CHECK(s.at("additionalProperties") == false);

  std::set<std::string> schema_keys;
  for (const auto& [key, value] : s.at("properties").items()) schema_keys.insert(key);
  CHECK(schema_keys == std::set<std::string>(fb::spec_keys().begin(), fb::spec_keys().end()));
  CHECK(s.at("$defs").at("dtype").at("enum").get<std::vector<std::string>>() == fb::spec_dtype_names());
  CHECK(s.at("$defs").at("pass").at("enum").get<std::vector<std::string>>() == fb::spec_pass_names());
  for (const std::string& name : fb::spec_dtype_names()) CHECK(fb::parse_dtype(name).has_value());
  for (const std::string& name : fb::spec_pass_names()) CHECK(fb::parse_pass(name).has_value());

  // Required keys: dropping one is refused, naming it; batch/tokens are one-of.
  for (const auto& key : s.at("required")) {
    const std::string k = key.get<std::string>();
    require_rejected(without(base(), k), {"spec." + k});
  }
  // batch/tokens and heads/model_dim are one-of pairs; giving neither is refused naming both.
  std::set<std::set<std::string>> one_of;
  for (const auto& group : s.at("allOf")) {
    std::set<std::string> alts;
    for (const auto& alt : group.at("oneOf")) alts.insert(alt.at("required").at(0).get<std::string>());
    one_of.insert(alts);
  }
  CHECK(one_of ==
        std::set<std::set<std::string>>{{"seq", "seq_q"}, {"batch", "tokens"}, {"heads", "model_dim"}});
  require_rejected(without(base(), "heads"), {"heads", "model_dim"});

  // Defaults equal the parser's.
  const fb::Sweep defaults;
  const json& props = s.at("properties");
  CHECK(props.at("warmup").at("default") == defaults.warmup);
  CHECK(props.at("reps").at("default") == defaults.reps);
  CHECK(props.at("seed").at("default") == defaults.seed);
  CHECK(props.at("verify").at("default") == defaults.verify);
  CHECK(props.at("causal").at("default") == json::array({false}));
  CHECK(props.at("pass").at("default") == json::array({"fwd"}));

  // Integer bounds: the schema's minimum and maximum are accepted, one past either is refused naming the
  // field. Other fields are set so that only the field under test can be at fault.
  std::size_t checked = 0;
  for (const auto& [key, prop] : props.items()) {
    const bool scalar = prop.value("type", "") == "integer";
    const bool axis = s.at("$defs").contains(key) && s.at("$defs").at(key).at("type") == "integer";
    if (!scalar && !axis) continue;
    const json& bounds = scalar ? prop : s.at("$defs").at(key);
    const std::int64_t lo = bounds.at("minimum").get<std::int64_t>();
    const std::int64_t hi = bounds.at("maximum").get<std::int64_t>();
    const auto spec_with = [&, key = key](std::int64_t v) {
      json j = with(base(), "kernels", "naive");  // naive runs every head_dim
      if (key == "tokens") {
        // tokens = batch * seq: hold batch at 1 for the minimum, seq at its cap (with a small head_dim
        // keeping the tensor under 2^40 elements) for the maximum.
        j.erase("batch");
        j["seq"] = v <= 1 ? 1 : std::int64_t(1048576);
        j["head_dim"] = 16;
      }
      if (key == "kv_heads") j["heads"] = std::clamp<std::int64_t>(v, 1, 4096);  // so that kv_heads divides
      if (key == "model_dim") {
        // heads = model_dim / head_dim: head_dim 1 for the minimum, the largest head_dim for the maximum.
        j.erase("heads");
        j["head_dim"] = v <= 1 ? 1 : 512;
      }
      j[key] = scalar ? json(v) : json::array({v});
      return j.dump();
    };
    INFO("field " << key << " in [" << lo << ", " << hi << "]");
    CHECK(error_of(spec_with(lo)) == "");
    CHECK(error_of(spec_with(hi)) == "");
    require_rejected(spec_with(lo - 1), {"spec." + key});
    require_rejected(spec_with(hi + 1), {"spec." + key});
    ++checked;
  }
  CHECK(checked == 11);  // seq batch tokens heads model_dim kv_heads head_dim splits warmup reps seed
}

TEST_CASE("spec: hostile and mutated specs parse or throw SpecError, nothing else", "[spec]") {
  std::size_t parsed = 0, rejected = 0;
  const auto feed = [&](const std::string& text) {
    try {
      const fb::Sweep s = fb::parse_spec(text);
      REQUIRE(s.cases.size() <= fb::kMaxCases);
      ++parsed;
    } catch (const fb::SpecError& e) {
      const std::string msg = e.what();
      if (msg.rfind("spec", 0) != 0 || msg.find('\n') != std::string::npos) {
        FAIL("message not one line starting with the path: " << msg);
      }
      ++rejected;
    } catch (const std::exception& e) {
      FAIL("not a SpecError: " << e.what() << "\n  input: " << text.substr(0, 300));
    }
  };

  const std::string tail = ",\"batch\":1,\"heads\":1,\"head_dim\":64,\"dtype\":\"fp32\"}";
  const std::vector<std::string> hostile = {
      std::string(100000, '['),
      std::string(100000, '{'),
      std::string(50000, ']') + std::string(50000, '['),
      "{\"seq\":" + std::string(65, '[') + "64" + std::string(65, ']') + tail,
      "{\"seq\":" + std::string(63, '[') + "64" + std::string(63, ']') + tail,
      "{\"seq\":[1099511627776]" + tail,  // N = 2^40
      "{\"seq\":[-64]" + tail,
      "{\"seq\":[-0]" + tail,
      "{\"seq\":[1e-400]" + tail,
      "{\"seq\":[NaN]" + tail,
      "{\"seq\":[-Infinity]" + tail,
      "{\"seq\":[1e300]" + tail,
      "{\"seq\":[1e400]" + tail,
      "{\"seq\":[9223372036854775807]" + tail,
      "{\"seq\":[9223372036854775808]" + tail,
      "{\"seq\":[99999999999999999999999999]" + tail,
      "{\"seq\":[-99999999999999999999999999]" + tail,
      "{\"seq\":[64.000000000000001]" + tail,
      "{\"seq\":[\"\\u0000\"]" + tail,
      "{\"\\u0000\":1" + tail,
      "{\"seq\":[64]" + tail + tail,
      "{\"" + std::string(1 << 20, 'k') + "\":1" + tail,
      "{\"seq\":[64],\"name\":\"\xe2\x82\xac\"" + tail,
      "{\"seq\":[64],\"name\":\"\xc3\x28\"" + tail,  // invalid UTF-8
      "{\"seq\":[64],\"name\":\"" + std::string(100000, 'x') + "\"" + tail,
      "{}",
      "[]",
      "\"spec\"",
      std::string("\0", 1),
      "{\"seq\":[64]" + tail + std::string("\0", 1),
      "{\"seq\":{\"a\":[]}" + tail,
      "{\"seq\":[64],\"kernels\":[\"" + std::string(5000, 'a') + "\"]" + tail,
  };
  for (const std::string& text : hostile) feed(text);

  // 10^6 and ~10^11 cases: refused from the count alone.
  std::vector<int> many(1000);
  for (int i = 0; i < 1000; ++i) many[i] = i + 1;
  json huge = with(base(), "kernels", "naive");
  huge["seq"] = many;
  huge["batch"] = many;
  feed(huge.dump());
  huge["heads"] = std::vector<int>(many.begin(), many.begin() + 100);
  huge["head_dim"] = std::vector<int>(many.begin(), many.begin() + 100);
  feed(huge.dump());

  // Random byte edits of quick.json from a fixed seed: replace, insert, delete, or copy a run.
  const std::string quick = read_text(kConfigs / "quick.json");
  const std::string syntax = "{}[]\",:0123456789-+.eE \n\\tfnul";
  std::mt19937 rng(20240601);
  constexpr int kMutants = 3000;
  constexpr int kMaxEdits = 4;
  for (int m = 0; m < kMutants; ++m) {
    std::string text = quick;
    const int edits = 1 + int(rng() % kMaxEdits);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      const std::size_t at = rng() % text.size();
      const char byte = rng() % 2 ? syntax[rng() % syntax.size()] : char(rng() % 256);
      switch (rng() % 4) {
        case 0: text[at] = byte; break;
        case 1: text.insert(text.begin() + std::ptrdiff_t(at), byte); break;
        case 2: text.erase(at, 1); break;
        default: text.insert(at, text.substr(at, 1 + rng() % 16)); break;
      }
    }
    feed(text);
  }
  // Both outcomes occur, so the mutations exercise the parser rather than only its first check.
  CHECK(parsed > 0);
  CHECK(rejected > 0);
}

TEST_CASE("spec: seq_q and seq_k in place of seq", "[spec]") {
  const json split = with(with(without(base(), "seq"), "seq_q", {1, 16}), "seq_k", {4096, 8192, 31});
  const fb::Sweep s = fb::parse_spec(split.dump());
  REQUIRE(s.cases.size() == 6);
  // seq_q outer, seq_k innermost, values in the order given.
  const int want[][2] = {{1, 4096}, {1, 8192}, {1, 31}, {16, 4096}, {16, 8192}, {16, 31}};
  for (std::size_t i = 0; i < 6; ++i) {
    CHECK(s.cases[i].seq_q == want[i][0]);
    CHECK(s.cases[i].seq_k == want[i][1]);
  }
  CHECK(s.cases[0].key() == "b1-h1-kv1-q1-k4096-d64-fp32-full-fwd");
  // seq is the shorthand: the same cases as seq_q = seq_k, with the keys results had before.
  const fb::Sweep square = fb::parse_spec(with(base(), "seq", {64, 128}).dump());
  REQUIRE(square.cases.size() == 2);
  CHECK(square.cases[1].seq_q == 128);
  CHECK(square.cases[1].seq_k == 128);
  CHECK(square.cases[1].key() == "b1-h1-kv1-n128-d64-fp32-full-fwd");
  const fb::Sweep same = fb::parse_spec(with(with(without(base(), "seq"), "seq_q", 64), "seq_k", 64).dump());
  CHECK(same.cases[0].key() == fb::parse_spec(base().dump()).cases[0].key());
  // tokens count query tokens: batch = tokens / seq_q.
  const json tokens = with(without(split, "batch"), "tokens", 64);
  const fb::Sweep t = fb::parse_spec(tokens.dump());
  CHECK(t.cases[0].batch == 64);
  CHECK(t.cases[3].batch == 4);

  // One message naming the field.
  require_rejected(with(split, "seq", {64}), {"spec", "give seq", "seq_q and seq_k, not both"});
  require_rejected(without(split, "seq_k"), {"spec.seq_k", "missing", "seq_q needs seq_k"});
  require_rejected(without(split, "seq_q"), {"spec.seq_q", "missing", "seq_k needs seq_q"});
  require_rejected(without(base(), "seq"), {"spec.seq", "missing", "seq_q and seq_k"});
  require_rejected(with(split, "seq_k", {8, 0}), {"spec.seq_k[1]", "positive"});
  require_rejected(with(split, "seq_q", {1, 1}), {"spec.seq_q[1]", "duplicate"});
  require_rejected(with(split, "seq_k", 1048577), {"spec.seq_k", "cap 1048576"});
  require_rejected(with(without(split, "batch"), "tokens", 24), {"spec.tokens", "tokens / seq_q", "spec.seq_q[1]"});
  // The tensor cap looks at the longer of the two: K with 2^20 keys x 2^12 heads x 2^9 dims.
  require_rejected(with(with(with(with(split, "seq_k", 1048576), "heads", 4096), "head_dim", 512), "kernels", "naive"),
                   {"spec", "max(seq_q, seq_k)", "cap"});
}

TEST_CASE("spec: splits is the innermost axis, in the key when forced; max_kv_bytes leaves big cases out",
          "[spec]") {
  json j = base();
  j.erase("seq");
  j["seq_q"] = {1};
  j["seq_k"] = {100, 1000};
  j["splits"] = {0, 4};
  const fb::Sweep s = fb::parse_spec(j.dump());
  REQUIRE(s.cases.size() == 4);
  CHECK(s.cases[0].splits == 0);
  CHECK(s.cases[1].splits == 4);
  CHECK(s.cases[1].seq_k == 100);
  CHECK(s.cases[0].key().find("-s") == std::string::npos);  // auto keeps the key it had
  CHECK(s.cases[1].key().size() > 3);
  CHECK(s.cases[1].key().substr(s.cases[1].key().size() - 3) == "-s4");
  CHECK(s.cases[1].params().kv_splits == 4);

  CHECK(error_of_json(with(j, "splits", {0, -1})).find("spec.splits[1]") != std::string::npos);
  CHECK(error_of_json(with(j, "splits", {2000})).find("spec.splits") != std::string::npos);
  CHECK(error_of_json(with(j, "splits", {4, 4})).find("duplicate") != std::string::npos);

  // K and V of fp32, d = 64, one head: 2 * 4 * 64 * seq_k bytes; 100 keys fit in 60000, 1000 do not.
  json capped = with(j, "max_kv_bytes", 60000);
  const fb::Sweep c = fb::parse_spec(capped.dump());
  REQUIRE(c.cases.size() == 2);
  CHECK(c.cases[0].seq_k == 100);
  CHECK(error_of_json(with(j, "max_kv_bytes", 10)).find("spec.max_kv_bytes") != std::string::npos);
  CHECK(error_of_json(with(j, "max_kv_bytes", "big")).find("spec.max_kv_bytes") != std::string::npos);
}
