// The results JSON schema, written and read in one place (README "Results JSON" documents it).
//
// Non-finite numbers: JSON has no literal for infinity or NaN (nlohmann::json would write null, which
// reads back as "absent"). An error of inf or nan is a real finding (an overflowed or poisoned output),
// so every number in a results file is written through `num_to_json`: finite values as JSON numbers,
// non-finite ones as the strings "inf", "-inf" and "nan". Readers accept those three strings wherever a
// typed number goes (time_ms.*, flops, max_abs_diff, ref_max_abs_err, ...). The free-form `errors` and
// `settings` objects are read back as written: a non-finite leaf stays the string, the same form the
// runner stores there in memory.
//
// Reading is strict: a missing or mistyped field throws std::runtime_error naming its path
// ("results[3].time_ms.median: expected a number"). Unknown fields are ignored, so a newer minor
// version of the schema still reads; a different major version is refused.
#include "record.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <unistd.h>

namespace fb {

using nlohmann::json;

std::string_view to_string(Status s) {
  switch (s) {
    case Status::ok: return "ok";
    case Status::skipped: return "skipped";
    case Status::failed: return "failed";
  }
  return "?";
}

std::optional<Status> parse_status(std::string_view s) {
  for (Status st : {Status::ok, Status::skipped, Status::failed})
    if (s == to_string(st)) return st;
  return std::nullopt;
}

TimeStats summarize(const std::vector<double>& times_ms) {
  TimeStats t;
  t.reps = int(times_ms.size());
  if (times_ms.empty()) return t;

  std::vector<double> v = times_ms;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  t.min = v.front();
  t.max = v.back();
  t.median = n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);

  double sum = 0;
  for (double x : v) sum += x;
  t.mean = sum / double(n);
  t.samples = times_ms;
  std::vector<double> dev(n);
  for (std::size_t i = 0; i < n; ++i) dev[i] = std::abs(v[i] - t.median);
  std::sort(dev.begin(), dev.end());
  t.mad = n % 2 == 1 ? dev[n / 2] : 0.5 * (dev[n / 2 - 1] + dev[n / 2]);
  if (n > 1) {
    // Two-pass sample variance (n - 1): the spread of single timings, not of the mean.
    double ss = 0;
    for (double x : v) ss += (x - t.mean) * (x - t.mean);
    t.stddev = std::sqrt(ss / double(n - 1));
  }
  return t;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  const std::size_t n = v.size();
  std::nth_element(v.begin(), v.begin() + n / 2, v.end());
  const double hi = v[n / 2];
  if (n % 2 == 1) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + n / 2);
  return 0.5 * (lo + hi);
}

double rep_drift(const std::vector<double>& samples) {
  const std::size_t n = samples.size();
  if (n < std::size_t(kDriftMinReps)) return std::nan("");
  const std::size_t half = n / 2;
  const double first = median_of({samples.begin(), samples.begin() + std::ptrdiff_t(half)});
  const double second = median_of({samples.end() - std::ptrdiff_t(half), samples.end()});
  if (!(first > 0) || !std::isfinite(first) || !std::isfinite(second)) return std::nan("");
  return second / first - 1;
}

// ---------------------------------------------------------------------------------------------------
// Writing

namespace {

json num_to_json(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return x;
}

json opt_num_to_json(const std::optional<double>& x) { return x ? num_to_json(*x) : json(nullptr); }

// The errors object is free-form (per tensor, per yardstick): encode every non-finite leaf.
json encode_numbers(const json& j) {
  if (j.is_number_float()) return num_to_json(j.get<double>());
  if (j.is_object() || j.is_array()) {
    json out = j;
    for (auto& item : out) item = encode_numbers(item);
    return out;
  }
  return j;
}

}  // namespace

json to_json(const Record& r) {
  const Case& c = r.c;
  json j;
  j["key"] = c.key();
  j["case"] = {{"batch", c.batch},       {"heads", c.heads},
               {"kv_heads", c.kv_heads}, {"seq_q", c.seq_q},
               {"seq_k", c.seq_k},       {"head_dim", c.head_dim},
               {"dtype", std::string(to_string(c.dtype))},
               {"causal", c.causal},     {"pass", std::string(to_string(c.pass))}};
  // `seq` as well when the lengths are equal: readers from before seq_q/seq_k still read the file.
  if (c.square()) j["case"]["seq"] = c.seq_q;
  // The split count asked of a split-KV kernel, when not auto (the key carries it too).
  if (c.splits != 0) j["case"]["splits"] = c.splits;
  j["kernel"] = r.kernel;
  j["status"] = std::string(to_string(r.status));
  j["reason"] = r.reason;
  j["time_ms"] = {{"median", num_to_json(r.time_ms.median)}, {"min", num_to_json(r.time_ms.min)},
                  {"max", num_to_json(r.time_ms.max)},       {"mean", num_to_json(r.time_ms.mean)},
                  {"stddev", num_to_json(r.time_ms.stddev)}, {"mad", num_to_json(r.time_ms.mad)},
                  {"reps", r.time_ms.reps}};
  {
    json samples = json::array();
    for (double x : r.time_ms.samples) samples.push_back(num_to_json(x));
    j["time_ms"]["samples"] = std::move(samples);
  }
  j["flops"] = num_to_json(r.flops);
  j["tflops"] = num_to_json(r.tflops);
  j["bytes_moved"] = num_to_json(r.bytes_moved);
  j["gbps"] = num_to_json(r.gbps);
  j["memory"] = {{"peak_bytes", r.peak_bytes}};
  // Split-KV kernels: the split count the kernel ran with (auto resolved).
  if (r.kv_splits) j["kv_splits"] = *r.kv_splits;
  j["max_abs_diff"] = opt_num_to_json(r.max_abs_diff);
  j["ref_max_abs_err"] = opt_num_to_json(r.ref_max_abs_err);
  j["verified"] = r.verified ? json(*r.verified) : json(nullptr);
  j["errors"] = encode_numbers(r.errors.is_null() ? json::object() : r.errors);
  if (r.roofline.is_object() && !r.roofline.empty()) j["roofline"] = encode_numbers(r.roofline);
  if (r.clocks.is_object() && !r.clocks.empty()) j["clocks"] = r.clocks;
  return j;
}

json clock_report(std::optional<unsigned> sm_mhz_min, std::optional<std::uint64_t> event_reasons) {
  // nvml.h's nvmlClocksEventReasons bits, by the names it gives them.
  static constexpr std::pair<std::uint64_t, const char*> kReasons[] = {
      {0x2, "applications_clocks_setting"}, {0x4, "sw_power_cap"},        {0x8, "hw_slowdown"},
      {0x10, "sync_boost"},                 {0x20, "sw_thermal_slowdown"}, {0x40, "hw_thermal_slowdown"},
      {0x80, "hw_power_brake_slowdown"},    {0x100, "display_clock_setting"}};
  json j = json::object();
  if (sm_mhz_min) j["sm_mhz_min"] = *sm_mhz_min;
  if (event_reasons) {
    json names = json::array();
    for (const auto& [bit, name] : kReasons)
      if (*event_reasons & bit) names.push_back(name);
    j["event_reasons"] = std::move(names);
    j["event_reasons_mask"] = *event_reasons;
  }
  return j;
}

json to_json(const Results& r) {
  json j;
  j["schema_version"] = r.schema_version;
  j["tool"] = r.tool;
  j["created"] = r.created;
  j["backend"] = r.backend;
  j["device"] = encode_numbers(r.device);
  j["spec"] = r.spec;
  j["settings"] = encode_numbers(r.settings);
  j["complete"] = r.complete;
  json results = json::array();
  for (const Record& rec : r.records) results.push_back(to_json(rec));
  j["results"] = std::move(results);
  return j;
}

// ---------------------------------------------------------------------------------------------------
// Reading

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what);
}

std::string child(const std::string& path, const char* name) {
  return path.empty() ? std::string(name) : path + "." + name;
}

// One object being read: field lookups that name the full path when they fail.
class Reader {
 public:
  Reader(const json& j, std::string path) : j_(j), path_(std::move(path)) {
    if (!j_.is_object()) fail(path_.empty() ? "results file" : path_, "expected an object");
  }

  const std::string& path() const { return path_; }

  const json& at(const char* name) const {
    auto it = j_.find(name);
    if (it == j_.end()) fail(child(path_, name), "missing");
    return *it;
  }

  bool has_non_null(const char* name) const {
    auto it = j_.find(name);
    return it != j_.end() && !it->is_null();
  }

  Reader object(const char* name) const { return Reader(at(name), child(path_, name)); }

  const json& object_json(const char* name) const {
    const json& v = at(name);
    if (!v.is_object()) fail(child(path_, name), "expected an object");
    return v;
  }

  std::string string(const char* name) const {
    const json& v = at(name);
    if (!v.is_string()) fail(child(path_, name), "expected a string");
    return v.get<std::string>();
  }

  bool boolean(const char* name) const {
    const json& v = at(name);
    if (!v.is_boolean()) fail(child(path_, name), "expected true or false");
    return v.get<bool>();
  }

  double number(const char* name) const { return number_from(at(name), child(path_, name)); }

  std::optional<double> optional_number(const char* name) const {
    const json& v = at(name);  // present, possibly null: the schema always writes the field
    if (v.is_null()) return std::nullopt;
    return number_from(v, child(path_, name));
  }

  std::optional<bool> optional_boolean(const char* name) const {
    const json& v = at(name);
    if (v.is_null()) return std::nullopt;
    if (!v.is_boolean()) fail(child(path_, name), "expected true, false or null");
    return v.get<bool>();
  }

  // An integer in [lo, hi]; 4096.0 is refused (the schema writes integers as integers).
  std::int64_t integer(const char* name, std::int64_t lo, std::int64_t hi) const {
    const json& v = at(name);
    const std::string p = child(path_, name);
    if (!v.is_number_integer()) fail(p, "expected an integer");
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t(hi))
      fail(p, fmt::format("must be at most {}", hi));
    const std::int64_t x = v.get<std::int64_t>();
    if (x < lo || x > hi) fail(p, fmt::format("must be between {} and {}", lo, hi));
    return x;
  }

  std::uint64_t unsigned_integer(const char* name) const {
    const json& v = at(name);
    const std::string p = child(path_, name);
    if (!v.is_number_integer()) fail(p, "expected an integer");
    if (!v.is_number_unsigned() && v.get<std::int64_t>() < 0) fail(p, "must not be negative");
    return v.get<std::uint64_t>();
  }

  static double number_from(const json& v, const std::string& p) {
    if (v.is_number()) return v.get<double>();
    if (v.is_string()) {
      const auto& s = v.get_ref<const std::string&>();
      if (s == "inf") return std::numeric_limits<double>::infinity();
      if (s == "-inf") return -std::numeric_limits<double>::infinity();
      if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    }
    fail(p, "expected a number");
  }

 private:
  const json& j_;
  std::string path_;
};

constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();

Case case_from(const Reader& r) {
  Case c;
  c.batch = int(r.integer("batch", 1, kIntMax));
  c.heads = int(r.integer("heads", 1, kIntMax));
  c.kv_heads = int(r.integer("kv_heads", 1, kIntMax));
  // seq_q and seq_k, or (files from before they existed) seq alone; seq beside them must agree.
  if (r.has_non_null("seq_q") || r.has_non_null("seq_k")) {
    c.seq_q = int(r.integer("seq_q", 1, kIntMax));
    c.seq_k = int(r.integer("seq_k", 1, kIntMax));
    if (r.has_non_null("seq")) {
      const std::int64_t n = r.integer("seq", 1, kIntMax);
      if (n != c.seq_q || n != c.seq_k)
        fail(child(r.path(), "seq"),
             fmt::format("{} does not match seq_q {} and seq_k {} (seq is given only when they are equal)",
                         n, c.seq_q, c.seq_k));
    }
  } else {
    c.set_seq(int(r.integer("seq", 1, kIntMax)));
  }
  c.head_dim = int(r.integer("head_dim", 1, kIntMax));
  const std::string dtype = r.string("dtype");
  auto d = parse_dtype(dtype);
  if (!d) fail(child(r.path(), "dtype"), fmt::format("unknown dtype '{}'", dtype));
  c.dtype = *d;
  c.causal = r.boolean("causal");
  const std::string pass = r.string("pass");
  auto p = parse_pass(pass);
  if (!p) fail(child(r.path(), "pass"), fmt::format("unknown pass '{}'", pass));
  c.pass = *p;
  if (r.has_non_null("splits")) c.splits = int(r.integer("splits", 0, kIntMax));
  return c;
}

Record record_from(const json& j, const std::string& path) {
  const Reader r(j, path);
  Record rec;
  rec.c = case_from(r.object("case"));

  // The key is redundant with the case; a mismatch means a hand-edited or corrupted file.
  const std::string key = r.string("key");
  if (key != rec.c.key())
    fail(child(path, "key"), fmt::format("'{}' does not match the case ('{}')", key, rec.c.key()));

  rec.kernel = r.string("kernel");
  if (rec.kernel.empty()) fail(child(path, "kernel"), "must not be empty");
  const std::string status = r.string("status");
  auto st = parse_status(status);
  if (!st) fail(child(path, "status"), fmt::format("'{}' is not ok, skipped or failed", status));
  rec.status = *st;
  rec.reason = r.string("reason");

  const Reader t = r.object("time_ms");
  rec.time_ms.median = t.number("median");
  rec.time_ms.min = t.number("min");
  rec.time_ms.max = t.number("max");
  rec.time_ms.mean = t.number("mean");
  rec.time_ms.stddev = t.number("stddev");
  rec.time_ms.reps = int(t.integer("reps", 0, kIntMax));
  // 1.1: the robust spread and every rep (absent in 1.0 files: the gate then uses the summary).
  if (t.has_non_null("mad")) rec.time_ms.mad = t.number("mad");
  if (t.has_non_null("samples")) {
    const json& s = t.at("samples");
    if (!s.is_array()) fail(child(t.path(), "samples"), "expected an array of numbers");
    for (std::size_t i = 0; i < s.size(); ++i)
      rec.time_ms.samples.push_back(Reader::number_from(s[i], fmt::format("{}.samples[{}]", t.path(), i)));
  }

  rec.flops = r.number("flops");
  rec.tflops = r.number("tflops");
  rec.bytes_moved = r.number("bytes_moved");
  rec.gbps = r.number("gbps");
  rec.peak_bytes = r.object("memory").unsigned_integer("peak_bytes");
  if (r.has_non_null("kv_splits")) rec.kv_splits = int(r.integer("kv_splits", 1, kIntMax));
  rec.max_abs_diff = r.optional_number("max_abs_diff");
  rec.ref_max_abs_err = r.optional_number("ref_max_abs_err");
  rec.verified = r.optional_boolean("verified");
  rec.errors = r.object_json("errors");
  if (j.contains("roofline")) rec.roofline = r.object_json("roofline");  // optional: CUDA runs only
  if (j.contains("clocks")) rec.clocks = r.object_json("clocks");        // optional: where NVML read them
  return rec;
}

// "1.0.0" -> 1; anything else is malformed.
int schema_major(const std::string& v, const std::string& path) {
  int major = 0, minor = 0, patch = 0;
  char tail = 0;
  if (std::sscanf(v.c_str(), "%d.%d.%d%c", &major, &minor, &patch, &tail) != 3 || major < 0)
    fail(path, fmt::format("'{}' is not a version of the form MAJOR.MINOR.PATCH", v));
  return major;
}

// Line and column (1-based) of a byte offset, for parse errors a person can find in an editor.
std::pair<std::size_t, std::size_t> line_column(const std::string& text, std::size_t byte) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

}  // namespace

Record record_from_json(const json& j) { return record_from(j, "record"); }

Results results_from_json(const json& j) {
  const Reader r(j, "");
  Results res;
  res.schema_version = r.string("schema_version");
  const int major = schema_major(res.schema_version, "schema_version");
  const int ours = schema_major(kSchemaVersion, "kSchemaVersion");
  if (major != ours)
    fail("schema_version", fmt::format("'{}' is not supported (this flashbench reads {}.x)",
                                       res.schema_version, ours));

  const Reader tool = r.object("tool");
  tool.string("name");
  tool.string("version");
  tool.string("git");
  res.tool = r.at("tool");
  res.created = r.string("created");
  res.backend = r.string("backend");
  res.device = r.object_json("device");
  // One spec object from `run`; an array of them from `merge`.
  res.spec = r.at("spec");
  if (!res.spec.is_object() && !res.spec.is_array()) fail("spec", "expected an object or an array");
  const Reader settings = r.object("settings");
  settings.integer("warmup", 0, kIntMax);
  settings.integer("reps", 1, kIntMax);
  res.settings = r.at("settings");
  if (j.contains("complete")) {
    if (!j["complete"].is_boolean()) fail("complete", "expected true or false");
    res.complete = j["complete"].get<bool>();
  }

  const json& results = r.at("results");
  if (!results.is_array()) fail("results", "expected an array");
  res.records.reserve(results.size());
  for (std::size_t i = 0; i < results.size(); ++i)
    res.records.push_back(record_from(results[i], fmt::format("results[{}]", i)));
  return res;
}

Results load_results(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw std::runtime_error(fmt::format("{}: is a folder, not a results file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw std::runtime_error(fmt::format("{}: cannot read", path));
  const std::string text = ss.str();

  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    // nlohmann's message starts with "[json.exception.parse_error.N] parse error at line L, column C: ";
    // keep only the reason and say where in the editor's terms (path:line:column).
    std::string what = e.what();
    const auto colon = what.find(": ");
    if (colon != std::string::npos) what = what.substr(colon + 2);
    // e.byte is 1-based and points just past the offending character.
    const auto [line, col] = line_column(text, e.byte > 0 ? e.byte - 1 : 0);
    throw std::runtime_error(fmt::format("{}:{}:{}: malformed JSON: {}", path, line, col, what));
  }
  try {
    return results_from_json(j);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("{}: {}", path, e.what()));
  }
}

void write_file_atomic(const std::string& path, const std::string& text) {
  // The temporary lives next to the target so that rename() stays within one file system (atomic);
  // the pid keeps two concurrent writers from sharing it.
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  auto failed = [&](const char* step) {
    const std::string err = std::strerror(errno);
    std::remove(tmp.c_str());
    throw std::runtime_error(fmt::format("{}: cannot write ({} failed: {})", path, step, err));
  };

  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) failed("open");
  const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  // fsync before rename: otherwise a crash can leave the new name pointing at an empty file.
  const bool flushed = wrote && std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  const int saved = errno;
  const bool closed = std::fclose(f) == 0;
  if (!wrote || !flushed) {
    errno = saved;
    failed(wrote ? "flush" : "write");
  }
  if (!closed) failed("close");
  if (std::rename(tmp.c_str(), path.c_str()) != 0) failed("rename");
}

std::string env_line(const nlohmann::json& env) {
  std::string line;
  if (env.is_object())
    for (const auto& [k, v] : env.items())
      line += (line.empty() ? "" : " ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  return line.empty() ? "none" : line;
}

}  // namespace fb
