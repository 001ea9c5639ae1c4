// Results data: the JSON schema (round trip, strict reading), summarize(), atomic writes, and the
// table and CSV views.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "catch.h"
#include "printers/printers.h"
#include "record.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string fixture(const std::string& name) {
  return std::string(FLASHBENCH_SOURCE_DIR) + "/tests/data/results/" + name;
}

// The message of the runtime_error f throws, or a marker that no test expects.
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A scratch folder per test, removed at the end.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag)
      : path(fs::temp_directory_path() / ("fb-record-" + tag + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fb::Record sample_record() {
  fb::Record r;
  r.c.batch = 2;
  r.c.heads = 8;
  r.c.kv_heads = 2;
  r.c.set_seq(1024);
  r.c.head_dim = 128;
  r.c.dtype = fb::Dtype::fp16;
  r.c.causal = true;
  r.c.pass = fb::Pass::fwd_bwd;
  r.kernel = "flash";
  r.status = fb::Status::ok;
  r.reason = "";
  r.time_ms = {1.25, 1.0, 2.5, 1.375, 0.3125, 17};
  r.flops = 1.5e12;
  r.tflops = 120.5;
  r.bytes_moved = 3.0e9;
  r.gbps = 2400.25;
  r.peak_bytes = (std::uint64_t(1) << 40) + 3;  // over 32 bits
  r.max_abs_diff = 0.0009765625;
  r.ref_max_abs_err = 0.001953125;
  r.verified = true;
  r.errors = {{"O", {{"ref", 0.001953125}, {"naive", 0.0009765625}}}, {"rows_compared", 16384}};
  return r;
}

fb::Results sample_results() {
  fb::Results res;
  res.tool = {{"name", "flashbench"}, {"version", "0.1.0"}, {"git", "abc123"}};
  res.created = "2025-01-01T00:00:00Z";
  res.backend = "cpu";
  res.device = {{"name", "test cpu"}, {"threads", 2}};
  res.spec = {{"seq", {1024}}};
  res.settings = {{"warmup", 1}, {"reps", 3}, {"seed", 42}, {"verify", true}};
  res.records.push_back(sample_record());
  res.records.back().clocks = fb::clock_report(1755u, std::uint64_t{0x5});
  fb::Record skipped = sample_record();
  skipped.kernel = "naive";
  skipped.status = fb::Status::skipped;
  skipped.reason = "too big";
  skipped.time_ms = {};
  skipped.tflops = skipped.gbps = 0;
  skipped.peak_bytes = 0;
  skipped.max_abs_diff.reset();
  skipped.ref_max_abs_err.reset();
  skipped.verified.reset();
  skipped.errors = json::object();
  res.records.push_back(skipped);
  return res;
}

// Through text and back, as a file would go.
fb::Results round_trip(const fb::Results& r) { return fb::results_from_json(json::parse(fb::to_json(r).dump())); }

void check_same_record(const fb::Record& a, const fb::Record& b) {
  CHECK(a.c.key() == b.c.key());
  CHECK(a.c.batch == b.c.batch);
  CHECK(a.c.heads == b.c.heads);
  CHECK(a.c.kv_heads == b.c.kv_heads);
  CHECK(a.c.seq_q == b.c.seq_q);
  CHECK(a.c.seq_k == b.c.seq_k);
  CHECK(a.c.head_dim == b.c.head_dim);
  CHECK(a.c.dtype == b.c.dtype);
  CHECK(a.c.causal == b.c.causal);
  CHECK(a.c.pass == b.c.pass);
  CHECK(a.kernel == b.kernel);
  CHECK(a.status == b.status);
  CHECK(a.reason == b.reason);
  CHECK(a.time_ms.median == b.time_ms.median);
  CHECK(a.time_ms.min == b.time_ms.min);
  CHECK(a.time_ms.max == b.time_ms.max);
  CHECK(a.time_ms.mean == b.time_ms.mean);
  CHECK(a.time_ms.stddev == b.time_ms.stddev);
  CHECK(a.time_ms.reps == b.time_ms.reps);
  CHECK(a.flops == b.flops);
  CHECK(a.tflops == b.tflops);
  CHECK(a.bytes_moved == b.bytes_moved);
  CHECK(a.gbps == b.gbps);
  CHECK(a.peak_bytes == b.peak_bytes);
  CHECK(a.max_abs_diff == b.max_abs_diff);
  CHECK(a.ref_max_abs_err == b.ref_max_abs_err);
  CHECK(a.verified == b.verified);
  CHECK(a.errors == b.errors);
  CHECK(a.clocks == b.clocks);
}

// The JSON of sample_results() with one edit, read back: the error message (or the no-throw marker).
std::string read_error_after(const std::function<void(json&)>& edit) {
  json j = fb::to_json(sample_results());
  edit(j);
  return error_of([&] { fb::results_from_json(j); });
}

}  // namespace

TEST_CASE("summarize: median, min, max, mean and sample stddev", "[record]") {
  constexpr double tol = 1e-12;
  SECTION("odd count, unsorted input") {
    const fb::TimeStats t = fb::summarize({3.0, 1.0, 2.0});
    CHECK(t.reps == 3);
    CHECK(t.median == 2.0);
    CHECK(t.min == 1.0);
    CHECK(t.max == 3.0);
    CHECK(std::abs(t.mean - 2.0) <= tol);
    CHECK(std::abs(t.stddev - 1.0) <= tol);  // sum of squares 2, n - 1 = 2
  }
  SECTION("even count: mean of the two middle values") {
    const fb::TimeStats t = fb::summarize({4.0, 1.0, 3.0, 2.0});
    CHECK(t.median == 2.5);
    CHECK(std::abs(t.mean - 2.5) <= tol);
    CHECK(std::abs(t.stddev - std::sqrt(5.0 / 3.0)) <= tol);  // (2.25+0.25+0.25+2.25) / 3
  }
  SECTION("one rep: stddev 0") {
    const fb::TimeStats t = fb::summarize({0.75});
    CHECK(t.reps == 1);
    CHECK(t.median == 0.75);
    CHECK(t.min == 0.75);
    CHECK(t.max == 0.75);
    CHECK(t.mean == 0.75);
    CHECK(t.stddev == 0.0);
  }
  SECTION("median is robust to one outlier, mean is not") {
    const fb::TimeStats t = fb::summarize({1.0, 1.0, 1.0, 1.0, 100.0});
    CHECK(t.median == 1.0);
    CHECK(std::abs(t.mean - 20.8) <= tol);
    CHECK(t.max == 100.0);
  }
  SECTION("no reps") {
    const fb::TimeStats t = fb::summarize({});
    CHECK(t.reps == 0);
    CHECK(t.median == 0.0);
  }
}

TEST_CASE("status names", "[record]") {
  for (fb::Status s : {fb::Status::ok, fb::Status::skipped, fb::Status::failed})
    CHECK(fb::parse_status(fb::to_string(s)) == s);
  CHECK_FALSE(fb::parse_status("OK").has_value());
}

TEST_CASE("results JSON round trip keeps every field", "[record]") {
  const fb::Results res = sample_results();
  const fb::Results back = round_trip(res);
  CHECK(back.schema_version == fb::kSchemaVersion);
  CHECK(back.tool == res.tool);
  CHECK(back.created == res.created);
  CHECK(back.backend == res.backend);
  CHECK(back.device == res.device);
  CHECK(back.spec == res.spec);
  CHECK(back.settings == res.settings);
  REQUIRE(back.records.size() == res.records.size());
  for (std::size_t i = 0; i < res.records.size(); ++i) check_same_record(back.records[i], res.records[i]);

  SECTION("the written form follows the schema's names") {
    const json j = fb::to_json(res);
    const json& r = j.at("results").at(0);
    CHECK(r.at("key") == "b2-h8-kv2-n1024-d128-fp16-causal-fwd+bwd");
    CHECK(r.at("case").at("pass") == "fwd+bwd");
    CHECK(r.at("case").at("kv_heads") == 2);
    CHECK(r.at("time_ms").at("reps") == 17);
    CHECK(r.at("memory").at("peak_bytes") == res.records[0].peak_bytes);
    CHECK(r.at("status") == "ok");
    const json& s = j.at("results").at(1);
    CHECK(s.at("status") == "skipped");
    CHECK(s.at("max_abs_diff").is_null());
    CHECK(s.at("ref_max_abs_err").is_null());
    CHECK(s.at("verified").is_null());
    CHECK(r.at("clocks").at("sm_mhz_min") == 1755);
    CHECK(!s.contains("clocks"));  // a record with no readings writes none
  }
}

TEST_CASE("clock_report: the lowest SM clock and the event reasons by nvml.h's names", "[record]") {
  CHECK(fb::clock_report(std::nullopt, std::nullopt).empty());
  const json only_clock = fb::clock_report(1980u, std::nullopt);
  CHECK(only_clock.at("sm_mhz_min") == 1980);
  CHECK(!only_clock.contains("event_reasons"));
  // 0x1 (gpu idle: a reading between reps) and unnamed bits stay in the mask only.
  const json r = fb::clock_report(1770u, std::uint64_t{0x1 | 0x4 | 0x40 | 0x1000});
  CHECK(r.at("event_reasons") == json::array({"sw_power_cap", "hw_thermal_slowdown"}));
  CHECK(r.at("event_reasons_mask") == 0x1045);
  CHECK(fb::clock_report(std::nullopt, std::uint64_t{0}).at("event_reasons").empty());
}

TEST_CASE("non-finite errors are written as strings and read back", "[record]") {
  fb::Results res = sample_results();
  fb::Record& r = res.records[0];
  r.max_abs_diff = kNaN;
  r.ref_max_abs_err = kInf;
  r.verified = false;
  r.errors["O"]["ref"] = kInf;
  r.errors["dQ"] = {{"ref", kNaN}, {"naive", -kInf}};

  const json j = fb::to_json(res);
  const json& w = j.at("results").at(0);
  CHECK(w.at("max_abs_diff") == "nan");
  CHECK(w.at("ref_max_abs_err") == "inf");
  CHECK(w.at("errors").at("O").at("ref") == "inf");
  CHECK(w.at("errors").at("dQ").at("ref") == "nan");
  CHECK(w.at("errors").at("dQ").at("naive") == "-inf");
  // No null sneaks in for a non-finite value (null means "absent").
  CHECK_FALSE(contains(j.dump(), "null,\"ref_max_abs_err\""));

  const fb::Record back = round_trip(res).records.at(0);
  REQUIRE(back.max_abs_diff.has_value());
  CHECK(std::isnan(*back.max_abs_diff));
  REQUIRE(back.ref_max_abs_err.has_value());
  CHECK(std::isinf(*back.ref_max_abs_err));
  CHECK(*back.ref_max_abs_err > 0);
  CHECK(back.verified == false);
  // The free-form errors object reads back as written.
  CHECK(back.errors.at("dQ").at("ref") == "nan");
  CHECK(fb::to_json(back) == w);

  SECTION("'-inf' reads as a number too") {
    const std::string msg = read_error_after([](json& jj) { jj["results"][0]["time_ms"]["min"] = "-inf"; });
    CHECK(msg == "(nothing thrown)");
  }
}

TEST_CASE("strict reading names the field that is wrong", "[record]") {
  CHECK(read_error_after([](json&) {}) == "(nothing thrown)");

  CHECK(read_error_after([](json& j) { j["results"][1]["time_ms"].erase("median"); }) ==
        "results[1].time_ms.median: missing");
  CHECK(read_error_after([](json& j) { j["results"][1]["time_ms"]["median"] = "fast"; }) ==
        "results[1].time_ms.median: expected a number");
  CHECK(read_error_after([](json& j) { j["results"][0]["time_ms"]["median"] = nullptr; }) ==
        "results[0].time_ms.median: expected a number");
  CHECK(read_error_after([](json& j) { j["results"][0]["time_ms"]["reps"] = 17.0; }) ==
        "results[0].time_ms.reps: expected an integer");
  CHECK(read_error_after([](json& j) { j["results"][0]["case"]["seq"] = 0; }) ==
        "results[0].case.seq: must be between 1 and 2147483647");
  CHECK(read_error_after([](json& j) { j["results"][0]["case"]["batch"] = 1ULL << 40; }) ==
        "results[0].case.batch: must be at most 2147483647");
  CHECK(read_error_after([](json& j) { j["results"][0]["memory"]["peak_bytes"] = -1; }) ==
        "results[0].memory.peak_bytes: must not be negative");
  CHECK(read_error_after([](json& j) { j["results"][0]["case"]["dtype"] = "e5m2"; }) ==
        "results[0].case.dtype: unknown dtype 'e5m2'");
  CHECK(read_error_after([](json& j) { j["results"][0]["case"]["pass"] = "both"; }) ==
        "results[0].case.pass: unknown pass 'both'");
  CHECK(read_error_after([](json& j) { j["results"][0]["case"]["causal"] = 1; }) ==
        "results[0].case.causal: expected true or false");
  CHECK(read_error_after([](json& j) { j["results"][0]["status"] = "passed"; }) ==
        "results[0].status: 'passed' is not ok, skipped or failed");
  CHECK(read_error_after([](json& j) { j["results"][0]["verified"] = "yes"; }) ==
        "results[0].verified: expected true, false or null");
  CHECK(read_error_after([](json& j) { j["results"][0].erase("ref_max_abs_err"); }) ==
        "results[0].ref_max_abs_err: missing");
  CHECK(read_error_after([](json& j) { j["results"][0]["errors"] = json::array(); }) ==
        "results[0].errors: expected an object");
  CHECK(read_error_after([](json& j) { j["results"][0]["kernel"] = ""; }) ==
        "results[0].kernel: must not be empty");
  CHECK(read_error_after([](json& j) { j["results"][0]["case"] = 3; }) == "results[0].case: expected an object");
  CHECK(read_error_after([](json& j) { j["results"][0]["key"] = "b1-h1-kv1-n1-d64-fp32-full-fwd"; }) ==
        "results[0].key: 'b1-h1-kv1-n1-d64-fp32-full-fwd' does not match the case "
        "('b2-h8-kv2-n1024-d128-fp16-causal-fwd+bwd')");
  CHECK(read_error_after([](json& j) { j["results"] = json::object(); }) == "results: expected an array");
  CHECK(read_error_after([](json& j) { j["tool"].erase("git"); }) == "tool.git: missing");
  CHECK(read_error_after([](json& j) { j["settings"]["reps"] = 0; }) ==
        "settings.reps: must be between 1 and 2147483647");
  CHECK(read_error_after([](json& j) { j["spec"] = "fast.json"; }) == "spec: expected an object or an array");
  CHECK(read_error_after([](json& j) { j.erase("backend"); }) == "backend: missing");

  SECTION("schema versions: same major reads, another major is refused") {
    CHECK(read_error_after([](json& j) { j["schema_version"] = "1.4.2"; }) == "(nothing thrown)");
    CHECK(read_error_after([](json& j) { j["schema_version"] = "2.0.0"; }) ==
          "schema_version: '2.0.0' is not supported (this flashbench reads 1.x)");
    CHECK(read_error_after([](json& j) { j["schema_version"] = "one"; }) ==
          "schema_version: 'one' is not a version of the form MAJOR.MINOR.PATCH");
    CHECK(read_error_after([](json& j) { j["schema_version"] = 1; }) == "schema_version: expected a string");
  }
  SECTION("unknown fields are ignored (minor versions may add some)") {
    CHECK(read_error_after([](json& j) {
            j["future"] = 1;
            j["results"][0]["future"] = {1, 2};
          }) == "(nothing thrown)");
  }
  SECTION("merged files carry an array of specs") {
    CHECK(read_error_after([](json& j) { j["spec"] = json::array({j["spec"], j["spec"]}); }) ==
          "(nothing thrown)");
  }
  SECTION("a lone record names itself") {
    json r = fb::to_json(sample_record());
    r["flops"] = true;
    CHECK(error_of([&] { fb::record_from_json(r); }) == "record.flops: expected a number");
    CHECK(error_of([&] { fb::results_from_json(json::array()); }) == "results file: expected an object");
  }
}

TEST_CASE("load_results: fixtures load, bad files name the path", "[record]") {
  for (const char* name :
       {"base.json", "same.json", "slower.json", "noisy.json", "missing.json", "failed.json", "error.json"}) {
    INFO(name);
    const fb::Results r = fb::load_results(fixture(name));
    // The fixtures are 1.0 files: an older minor of the same major reads, and having no `complete`
    // (added in 1.1) means a whole run.
    CHECK(r.schema_version.substr(0, 2) == std::string(fb::kSchemaVersion).substr(0, 2));
    CHECK(r.complete);
    CHECK_FALSE(r.records.empty());
    // Every fixture writes back to exactly what was read.
    CHECK(fb::to_json(fb::results_from_json(fb::to_json(r))) == fb::to_json(r));
  }

  TempDir dir("load");
  SECTION("missing file") {
    const std::string path = (dir.path / "nope.json").string();
    const std::string msg = error_of([&] { fb::load_results(path); });
    CHECK(contains(msg, path + ": cannot open"));
  }
  SECTION("a folder is not a results file") {
    CHECK(error_of([&] { fb::load_results(dir.path.string()); }) ==
          dir.path.string() + ": is a folder, not a results file");
  }
  SECTION("malformed JSON gives line and column") {
    const fs::path path = dir.path / "bad.json";
    std::ofstream(path) << "{\n  \"schema_version\": \"1.0.0\",\n  \"tool\": ,\n}\n";
    const std::string msg = error_of([&] { fb::load_results(path.string()); });
    CHECK(contains(msg, path.string() + ":3:11: malformed JSON"));
  }
  SECTION("a schema error carries the path too") {
    const fs::path path = dir.path / "old.json";
    json j = fb::to_json(sample_results());
    j["results"][1]["kernel"] = 7;
    std::ofstream(path) << j.dump(2);
    CHECK(error_of([&] { fb::load_results(path.string()); }) ==
          path.string() + ": results[1].kernel: expected a string");
  }
}

TEST_CASE("write_file_atomic replaces the file and leaves no temporary", "[record]") {
  TempDir dir("atomic");
  const fs::path path = dir.path / "out.json";
  const std::string tmp = path.string() + ".tmp." + std::to_string(::getpid());

  fb::write_file_atomic(path.string(), "first\n");
  CHECK(read_text(path) == "first\n");
  fb::write_file_atomic(path.string(), "second, longer\n");
  CHECK(read_text(path) == "second, longer\n");
  CHECK_FALSE(fs::exists(tmp));

  SECTION("a missing folder fails with the path") {
    const std::string bad = (dir.path / "no-such-dir" / "out.json").string();
    const std::string msg = error_of([&] { fb::write_file_atomic(bad, "x"); });
    CHECK(contains(msg, bad + ": cannot write"));
  }
  SECTION("a failed rename removes the temporary") {
    const fs::path folder = dir.path / "a-folder";
    fs::create_directories(folder / "inside");  // rename() of a file over a non-empty folder fails
    const std::string msg = error_of([&] { fb::write_file_atomic(folder.string(), "x"); });
    CHECK(contains(msg, "rename failed"));
    CHECK_FALSE(fs::exists(folder.string() + ".tmp." + std::to_string(::getpid())));
    CHECK(fs::is_directory(folder / "inside"));
  }
}

TEST_CASE("CSV: header, one row per record, RFC 4180 quoting", "[record]") {
  fb::Results res = sample_results();
  res.records[1].reason = "needs 2 GiB, \"S\" is N x N";
  res.records[0].ref_max_abs_err = kInf;
  const std::string text = fb::csv_text(res);

  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t eol; (eol = text.find("\r\n", start)) != std::string::npos; start = eol + 2)
    lines.push_back(text.substr(start, eol - start));
  CHECK(start == text.size());  // every line ends in CRLF
  REQUIRE(lines.size() == 3);

  const std::string& header = lines[0];
  CHECK(header.rfind("key,batch,heads,kv_heads,seq,seq_q,seq_k,head_dim,dtype,causal,pass,kernel,status,reason,",
                     0) == 0);
  for (const char* col : {"median_ms", "stddev_ms", "reps", "tflops", "gbps", "peak_bytes", "max_abs_diff",
                          "ref_max_abs_err", "verified"})
    CHECK(contains(header, col));

  auto count_commas = [](const std::string& s) { return std::count(s.begin(), s.end(), ','); };
  // Row 1 has no quoted field, so its commas separate exactly as many fields as the header has.
  CHECK(count_commas(lines[1]) == count_commas(header));
  CHECK(contains(lines[1], ",flash,ok,,"));
  CHECK(contains(lines[1], ",inf,true"));                  // ref_max_abs_err, verified
  CHECK(contains(lines[1], std::to_string((std::uint64_t(1) << 40) + 3)));
  // Row 2: the reason quoted, its quotes doubled; absent optionals empty.
  CHECK(contains(lines[2], ",naive,skipped,\"needs 2 GiB, \"\"S\"\" is N x N\","));
  CHECK(lines[2].substr(lines[2].size() - 3) == ",,,");

  std::ostringstream os;
  fb::write_csv(os, res);
  CHECK(os.str() == text);
}

TEST_CASE("table: aligned rows, reasons for skipped and failed, groups apart", "[record]") {
  fb::Results res = sample_results();
  fb::Record failed = res.records[1];
  failed.kernel = "flash";
  failed.status = fb::Status::failed;
  failed.reason = "CUDA error: an illegal memory access was encountered " + std::string(100, 'x');
  res.records.push_back(failed);
  fb::Record other = res.records[0];  // another dtype: a new group
  other.c.dtype = fb::Dtype::bf16;
  other.peak_bytes = 3 * 1024 * 1024 / 2;
  other.verified.reset();
  other.max_abs_diff.reset();
  res.records.push_back(other);

  std::ostringstream os;
  fb::print_table(os, res);
  const std::string out = os.str();
  INFO(out);
  for (const char* part : {"kernel", "flash", "naive", "skipped", "too big", "failed", "illegal memory access",
                           "8/2", "fwd+bwd", "1.250", "120.5", "2400", "1.0 TiB", "1.5 MiB", "9.77e-04", "✓"})
    CHECK(contains(out, part));
  CHECK_FALSE(contains(out, std::string(100, 'x')));  // the long reason is cut
  CHECK(contains(out, "…"));
  CHECK(contains(out, "\n\n"));  // fp16 rows, then bf16 rows after a blank line

  // Columns are aligned: the "kernel" title and the kernel names start at the same column.
  std::istringstream lines(out);
  std::string header, rule, row;
  std::getline(lines, header);
  std::getline(lines, rule);
  std::getline(lines, row);
  const auto column = [](const std::string& s, std::size_t bytes) {
    std::size_t n = 0;  // display columns before byte offset `bytes`
    for (std::size_t i = 0; i < bytes; ++i)
      if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) ++n;
    return n;
  };
  CHECK(column(header, header.find("kernel")) == column(row, row.find("flash")));

  std::ostringstream empty;
  fb::print_table(empty, fb::Results{});
  CHECK(contains(empty.str(), "no results"));
}

TEST_CASE("results: complete is written, read back, and checked", "[record]") {
  fb::Results res = sample_results();
  res.complete = false;
  const json j = fb::to_json(res);
  CHECK(j.at("complete") == false);
  CHECK_FALSE(fb::results_from_json(j).complete);
  json bad = j;
  bad["complete"] = "no";
  CHECK(error_of([&] { fb::results_from_json(bad); }) == "complete: expected true or false");
  json old = j;
  old.erase("complete");  // a 1.0 file
  CHECK(fb::results_from_json(old).complete);
}

namespace {

fb::Record timed(const std::string& kernel, int seq, double median_ms) {
  fb::Record r;
  r.c.set_seq(seq);
  r.kernel = kernel;
  r.time_ms.median = r.time_ms.mean = median_ms;
  r.time_ms.stddev = median_ms / 50;  // 2% noise
  r.time_ms.reps = 10;
  return r;
}

}  // namespace

TEST_CASE("printers: speed-ups are geomeans of baseline/kernel over cases where both ran", "[record]") {
  fb::Results res;
  res.records = {timed("naive", 64, 4.0), timed("flash", 64, 1.0),   // 4x
                 timed("naive", 128, 9.0), timed("flash", 128, 9.0),  // 1x
                 timed("flash", 256, 1.0)};                           // no naive: left out
  fb::Record skipped = timed("naive", 256, 0);
  skipped.status = fb::Status::skipped;
  res.records.push_back(skipped);
  const auto s = fb::speedups(res, "naive");
  REQUIRE(s.size() == 1);
  CHECK(s[0].kernel == "flash");
  CHECK(s[0].cases == 2);
  CHECK(std::abs(s[0].geomean - 2.0) < 1e-12);  // sqrt(4 * 1)
  CHECK(s[0].min == 1.0);
  CHECK(s[0].max == 4.0);

  std::ostringstream os;
  fb::print_summary(os, res, "naive", {"out.json"});
  const std::string out = os.str();
  INFO(out);
  CHECK(contains(out, "6 results: 5 ok, 1 skipped, 0 failed"));
  CHECK(contains(out, "flash ran 2.00x faster than naive (geomean of 2 cases"));
  CHECK(contains(out, "wrote out.json"));
  std::ostringstream none;
  fb::print_summary(none, res, "naive", {});
  CHECK(contains(none.str(), "not saved"));

  res.records = {timed("naive", 64, 1.0), timed("flash", 64, 4.0)};
  std::ostringstream slower;
  fb::print_summary(slower, res, "naive", {});
  CHECK(contains(slower.str(), "flash ran 4.00x slower than naive"));
}

TEST_CASE("rep_drift: the second half of the reps against the first, and run's summary names the drifted",
          "[record]") {
  // Session 55 (results/h100/s55/T, O): flash-sm90's reps on an H100 climbing under the power cap after another
  // kernel's backward, and the same kernel's flat reps when it ran first.
  const std::vector<double> climbing = {19.15, 19.51, 19.92, 20.83, 20.91, 21.53, 21.89, 21.89, 22.14, 22.65};
  const std::vector<double> flat = {19.0, 19.1, 19.2, 19.4, 19.3, 19.4, 19.4, 19.4, 19.0, 19.0};
  CHECK(std::abs(fb::rep_drift(climbing) - (21.89 / 19.92 - 1)) < 1e-12);
  CHECK(std::abs(fb::rep_drift(flat) - (19.4 / 19.2 - 1)) < 1e-12);
  // Odd counts leave the middle rep out; falling reps drift below 0; too few reps or no time: NaN.
  CHECK(std::abs(fb::rep_drift({4, 4, 4, 9, 2, 2, 2}) - (2.0 / 4.0 - 1)) < 1e-12);
  CHECK(std::isnan(fb::rep_drift({1, 2, 3, 4, 5})));
  CHECK(std::isnan(fb::rep_drift({0, 0, 0, 1, 1, 1})));
  CHECK(std::isnan(fb::rep_drift({})));

  fb::Results res;
  res.records = {timed("flash", 64, 21.89), timed("flash-sm90", 64, 19.3), timed("naive", 64, 1.0)};
  res.records[0].time_ms.samples = climbing;
  res.records[1].time_ms.samples = flat;
  res.records[2].time_ms.samples = {1, 1, 1, 2, 2, 2};  // skipped: never named
  res.records[2].status = fb::Status::skipped;
  std::ostringstream os;
  fb::print_summary(os, res, "naive", {});
  const std::string out = os.str();
  INFO(out);
  CHECK(contains(out, "1 timing drifted by more than 3% from the first half of its reps to the second"));
  CHECK(contains(out, res.records[0].c.key() + " flash: +9.9%"));
  CHECK_FALSE(contains(out, "flash-sm90:"));
  CHECK_FALSE(contains(out, " naive:"));
  res.records[0].time_ms.samples = flat;
  std::ostringstream steady;
  fb::print_summary(steady, res, "naive", {});
  CHECK_FALSE(contains(steady.str(), "drifted"));
}

TEST_CASE("printers: the noise column, the live table and the one-line form", "[record]") {
  fb::Results res;
  res.records = {timed("naive", 64, 4.0), timed("flash", 64, 1.0)};
  std::ostringstream table;
  fb::print_table(table, res);
  CHECK(contains(table.str(), "noise"));
  CHECK(contains(table.str(), "2.0%"));

  std::ostringstream live;
  std::vector<fb::Case> cases = {res.records[0].c};
  fb::LiveTable lt(live, cases, {"naive", "flash"});
  CHECK(live.str().empty());  // the header comes with the first row
  lt.add(res.records[0]);
  lt.add(res.records[1]);
  const std::string out = live.str();
  INFO(out);
  std::istringstream lines(out);
  std::string header, rule, a, b;
  std::getline(lines, header);
  std::getline(lines, rule);
  std::getline(lines, a);
  std::getline(lines, b);
  CHECK(contains(header, "median ms"));
  CHECK(a.find("naive") == b.find("flash"));  // the kernel column lines up
  CHECK(a.size() == b.size());                // and so do the numbers after it

  const std::string line = fb::record_line(res.records[1]);
  CHECK(contains(line, "flash  ok  1.000 ms ±2.0% (10 reps)"));
  fb::Record skipped = res.records[1];
  skipped.status = fb::Status::skipped;
  skipped.reason = "too big";
  CHECK(contains(fb::record_line(skipped), "flash  skipped: too big"));
}

TEST_CASE("results JSON: seq_q and seq_k, seq kept when equal, old files with seq alone read", "[record]") {
  fb::Results res = sample_results();
  res.records[0].c.seq_q = 1;
  res.records[0].c.seq_k = 4097;
  const json j = fb::to_json(res);
  const json& decode = j["results"][0]["case"];
  CHECK(decode["seq_q"] == 1);
  CHECK(decode["seq_k"] == 4097);
  CHECK_FALSE(decode.contains("seq"));  // a reader that knows only seq must not misread it
  CHECK(j["results"][0]["key"] == "b2-h8-kv2-q1-k4097-d128-fp16-causal-fwd+bwd");
  const json& square = j["results"][1]["case"];
  CHECK(square["seq"] == 1024);
  CHECK(square["seq_q"] == 1024);
  CHECK(square["seq_k"] == 1024);
  const fb::Results back = round_trip(res);
  check_same_record(back.records[0], res.records[0]);
  check_same_record(back.records[1], res.records[1]);

  // A file from before seq_q/seq_k: seq alone.
  json old = j;
  for (auto& r : old["results"]) {
    r["case"].erase("seq_q");
    r["case"].erase("seq_k");
  }
  old["results"].erase(0);
  const fb::Results read_old = fb::results_from_json(old);
  CHECK(read_old.records[0].c.seq_q == 1024);
  CHECK(read_old.records[0].c.seq_k == 1024);
  CHECK(read_old.records[0].c.key() == "b2-h8-kv2-n1024-d128-fp16-causal-fwd+bwd");

  // seq beside unequal lengths, or one of the pair alone, is refused naming the field.
  json bad = j;
  bad["results"][0]["case"]["seq"] = 1;
  CHECK(error_of([&] { fb::results_from_json(bad); }).rfind("results[0].case.seq: 1 does not match", 0) == 0);
  bad = j;
  bad["results"][0]["case"].erase("seq_k");
  CHECK(error_of([&] { fb::results_from_json(bad); }) == "results[0].case.seq_k: missing");
}
