// JSON sweep spec -> Sweep. Every rejection is one SpecError line that starts with the path of the
// field at fault ("spec.head_dim[1]: ..."). configs/spec.schema.json states the same rules for editors
// and other tools; tests/test_spec.cpp holds the two together (keys, enums, bounds, defaults).
#include "spec.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "common/mask.h"
#include "common/splitkv.h"
#include "registry.h"

namespace fb {
namespace {

using json = nlohmann::json;

// ---- Caps: far above any real run, so a typo (an extra zero or six) fails here with a message naming
// the field instead of as an allocation failure deep inside a backend. The schema repeats them.
constexpr std::int64_t kMaxSeq = std::int64_t(1) << 20;
constexpr std::int64_t kMaxBatch = std::int64_t(1) << 16;
constexpr std::int64_t kMaxHeads = 4096;
constexpr std::int64_t kMaxHeadDim = 512;
constexpr std::int64_t kMaxTokens = kMaxBatch * kMaxSeq;  // tokens = batch * seq_q
constexpr int kTensorElemsLog2 = 40;
constexpr std::uint64_t kMaxTensorElems = std::uint64_t(1) << kTensorElemsLog2;  // B*H*N*d of one tensor
constexpr std::int64_t kMaxWarmup = 100000;
constexpr std::int64_t kMaxReps = 100000;
// The largest integer a double holds exactly: the seed survives every JSON tool that reads results.
constexpr std::int64_t kMaxSeed = (std::int64_t(1) << 53) - 1;
// Q and K scaled by up to 1e4: scores of order 1e8, far past where an exp without max-subtraction
// overflows even in fp64, yet every input stays finite in fp16 (max 65504) at the inputs' 5 sigma.
constexpr double kMaxInputScale = 1e4;
// The largest tensor the caps allow must not overflow the 64-bit element count computed below.
static_assert(double(kMaxTokens) * double(kMaxHeads) * double(kMaxHeadDim) < 9.2e18,
              "caps too large for a 64-bit element count");
static_assert(kMaxSeq <= INT32_MAX && kMaxBatch <= INT32_MAX, "Case holds sizes in int");
static_assert(kMaxSeq <= CausalMask::kMaxSeq, "the mask's 32-bit arithmetic is exact for every sequence");

// A valid spec nests two levels (an object of lists). nlohmann's DOM copies, dumps and compares
// recursively, so deeper input is refused by a bracket scan before nlohmann ever sees it.
constexpr int kMaxDepth = 64;
constexpr std::size_t kMaxSpecBytes = std::size_t(16) << 20;  // a spec is a few hundred bytes
constexpr std::size_t kMaxSuggestDistance = 2;                // "did you mean" only for near misses
constexpr std::size_t kMaxEcho = 40;                          // user text echoed back in a message
constexpr std::size_t kMaxEchoLong = 200;                     // paths and parser messages

constexpr const char* kRequired[] = {"head_dim", "dtype"};  // and seq, or seq_q and seq_k

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw SpecError(path + ": " + what);
}

// User text made safe for a one-line message: control bytes (and, for text that may not be UTF-8,
// every non-ASCII byte) escaped; long text cut at a character boundary.
std::string echo(std::string_view s, std::size_t max_chars = kMaxEcho, bool escape_non_ascii = false) {
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    const bool continuation = (c & 0xC0) == 0x80;  // inside a UTF-8 sequence: never cut here
    if (out.size() >= max_chars && !continuation) {
      out += "...";
      break;
    }
    if (c < 0x20 || c == 0x7F || (escape_non_ascii && c >= 0x80))
      out += fmt::format("\\x{:02x}", c);
    else
      out += ch;
  }
  return out;
}

std::string in_quotes(std::string_view s) { return "'" + echo(s) + "'"; }

// A JSON value as a message shows it: scalars by value, containers by kind (never dumped: they may be
// huge).
std::string describe(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return v.get<bool>() ? "true" : "false";
    case json::value_t::string: return "the string " + in_quotes(v.get_ref<const std::string&>());
    case json::value_t::number_integer: return std::to_string(v.get<std::int64_t>());
    case json::value_t::number_unsigned: return std::to_string(v.get<std::uint64_t>());
    case json::value_t::number_float: {
      const double d = v.get<double>();
      if (std::isnan(d)) return "NaN";
      if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
      return fmt::format("{}", d);
    }
    case json::value_t::array: return "a list";
    case json::value_t::object: return "an object";
    default: return v.type_name();
  }
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours
// ("haeds" -> "heads" is one edit).
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

// " (did you mean 'seq'?)" for the closest candidate within kMaxSuggestDistance, else "".
template <class Names>
std::string suggestion(std::string_view given, const Names& candidates) {
  const std::string g = lower(given);
  std::size_t best = kMaxSuggestDistance + 1;
  std::string best_name;
  for (const auto& cand : candidates) {
    const std::string c = lower(cand);
    // The distance is at least the length difference: skip hopeless (possibly huge) inputs early.
    const std::size_t gap = g.size() > c.size() ? g.size() - c.size() : c.size() - g.size();
    if (gap >= best) continue;
    const std::size_t dist = edit_distance(g, c);
    if (dist < best) {
      best = dist;
      best_name = std::string(cand);
    }
  }
  return best <= kMaxSuggestDistance ? " (did you mean '" + best_name + "'?)" : "";
}

std::string join(const std::vector<std::string>& v) { return fmt::format("{}", fmt::join(v, ", ")); }

// 1-based line and column of byte `index` (0-based) of `text`.
std::pair<std::size_t, std::size_t> line_column(const std::string& text, std::size_t index) {
  index = std::min(index, text.size());
  std::size_t line = 1, line_start = 0;
  for (std::size_t i = 0; i < index; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return {line, index - line_start + 1};
}

// Refuses nesting deeper than kMaxDepth. Brackets inside strings do not count. On malformed text the
// count may drift, but only after the point where nlohmann's parser stops with its own error.
void check_depth(const std::string& text) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character cannot end the string
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth) {
        const auto [line, col] = line_column(text, i);
        fail("spec", fmt::format("JSON nested deeper than {} levels at line {}, column {} (a spec is an "
                                 "object of lists)",
                                 kMaxDepth, line, col));
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

// nlohmann's message without its "[json.exception...] parse error at line L, column C: " prefix (we
// compute the position ourselves from the byte offset).
std::string parse_reason(const std::string& what) {
  std::size_t start = 0;
  const std::size_t column = what.find("column ");
  const std::size_t colon = what.find(": ", column == std::string::npos ? 0 : column);
  if (colon != std::string::npos) {
    start = colon + 2;
  } else if (const std::size_t bracket = what.find("] "); bracket != std::string::npos) {
    start = bracket + 2;
  }
  return echo(std::string_view(what).substr(start), kMaxEchoLong, /*escape_non_ascii=*/true);
}

json parse_json(const std::string& text) {
  if (text.size() > kMaxSpecBytes)
    fail("spec",
         fmt::format("{} bytes of JSON, more than the cap {} bytes on a spec", text.size(), kMaxSpecBytes));
  check_depth(text);
  // nlohmann keeps the last of repeated keys silently; a repeated top-level key is surely a mistake.
  std::set<std::string> top_keys;
  const json::parser_callback_t on_event = [&top_keys](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::key && depth == 1 && !top_keys.insert(parsed.get<std::string>()).second)
      fail("spec." + echo(parsed.get_ref<const std::string&>()), "key given more than once");
    return true;
  };
  try {
    return json::parse(text, on_event);
  } catch (const json::parse_error& e) {
    const auto [line, col] = line_column(text, e.byte > 0 ? e.byte - 1 : 0);
    fail("spec", fmt::format("malformed JSON at line {}, column {}: {}", line, col, parse_reason(e.what())));
  } catch (const json::exception& e) {
    // e.g. out_of_range for a number no double holds (1e400)
    fail("spec", "malformed JSON: " + parse_reason(e.what()));
  }
}

// ---- reading fields ----

struct Item {
  const json* value;
  std::string path;  // "spec.seq[2]", or "spec.seq" for a lone scalar
};

template <class T>
struct Axis {
  std::vector<T> values;
  std::vector<std::string> paths;
  std::size_t size() const { return values.size(); }
};

// The elements of axis `key`: a list, or a lone scalar taken as a one-element list.
std::vector<Item> axis_items(const json& spec, const std::string& key) {
  const json& v = spec.at(key);
  const std::string path = "spec." + key;
  std::vector<Item> items;
  if (v.is_array()) {
    if (v.empty()) fail(path, "must list at least one value, got an empty list");
    items.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) items.push_back({&v[i], fmt::format("{}[{}]", path, i)});
  } else if (v.is_object()) {
    fail(path, "must be a list of values (or one value), got an object");
  } else {
    items.push_back({&v, path});
  }
  return items;
}

std::string integer_kind(std::int64_t lo) {
  return lo == 0 ? "a non-negative integer" : lo == 1 ? "a positive integer" : "an integer";
}

// An integer in [lo, hi]. JSON Schema counts 64.0 as an integer, so an integral float is accepted too.
std::int64_t to_int(const Item& item, std::int64_t lo, std::int64_t hi, std::string_view name) {
  const json& v = *item.value;
  const auto too_small = [&] {
    fail(item.path, fmt::format("must be {}, got {}", integer_kind(lo), describe(v)));
  };
  const auto too_large = [&] {
    fail(item.path, fmt::format("{} is more than the cap {} on {}", describe(v), hi, name));
  };
  if (v.is_number_unsigned()) {  // before is_number_integer, which is true for unsigned too
    const auto u = v.get<std::uint64_t>();
    if (u < std::uint64_t(std::max<std::int64_t>(lo, 0))) too_small();
    if (u > std::uint64_t(hi)) too_large();
    return std::int64_t(u);
  }
  if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    if (i < lo) too_small();
    if (i > hi) too_large();
    return i;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d))
      fail(item.path, fmt::format("must be {}, got {}", integer_kind(lo), describe(v)));
    if (d < double(lo)) too_small();
    if (d > double(hi)) too_large();
    return std::int64_t(d);
  }
  fail(item.path, fmt::format("must be {}, got {}", integer_kind(lo), describe(v)));
}

const std::string& to_str(const Item& item) {
  if (!item.value->is_string()) fail(item.path, "must be a string, got " + describe(*item.value));
  return item.value->get_ref<const std::string&>();
}

bool to_bool(const Item& item) {
  if (!item.value->is_boolean()) fail(item.path, "must be true or false, got " + describe(*item.value));
  return item.value->get<bool>();
}

template <class T, class Show>
void reject_duplicates(const Axis<T>& axis, Show show) {
  std::map<T, std::size_t> seen;
  for (std::size_t i = 0; i < axis.size(); ++i) {
    const auto [it, fresh] = seen.emplace(axis.values[i], i);
    if (!fresh)
      fail(axis.paths[i],
           fmt::format("duplicate value {} (also at {})", show(axis.values[i]), axis.paths[it->second]));
  }
}

Axis<std::int64_t> int_axis(const json& spec, const std::string& key, std::int64_t lo, std::int64_t hi) {
  Axis<std::int64_t> axis;
  for (const Item& item : axis_items(spec, key)) {
    axis.values.push_back(to_int(item, lo, hi, key));
    axis.paths.push_back(item.path);
  }
  reject_duplicates(axis, [](std::int64_t v) { return std::to_string(v); });
  return axis;
}

// A string axis whose values map through `parse` (nullopt = unknown, listed against `valid`).
template <class T, class Parse>
Axis<T> enum_axis(const json& spec, const std::string& key, const std::vector<std::string>& valid,
                  Parse parse) {
  Axis<T> axis;
  Axis<std::string> names;
  for (const Item& item : axis_items(spec, key)) {
    const std::string& s = to_str(item);
    const std::optional<T> v = parse(s);
    if (!v)
      fail(item.path,
           fmt::format("unknown {} {}{}; valid: {}", key, in_quotes(s), suggestion(s, valid), join(valid)));
    axis.values.push_back(*v);
    axis.paths.push_back(item.path);
    names.values.push_back(s);
    names.paths.push_back(item.path);
  }
  reject_duplicates(names, in_quotes);
  return axis;
}

Axis<bool> bool_axis(const json& spec, const std::string& key) {
  Axis<bool> axis;
  for (const Item& item : axis_items(spec, key)) {
    axis.values.push_back(to_bool(item));
    axis.paths.push_back(item.path);
  }
  reject_duplicates(axis, [](bool b) { return std::string(b ? "true" : "false"); });
  return axis;
}

// A scalar setting: one value, not a list.
Item scalar_item(const json& spec, const std::string& key) {
  const json& v = spec.at(key);
  if (v.is_array() || v.is_object()) fail("spec." + key, "must be a single value, got " + describe(v));
  return {&v, "spec." + key};
}

void check_keys(const json& spec) {
  const auto& known = spec_keys();
  std::vector<std::string> unknown;
  for (const auto& [key, value] : spec.items())
    if (std::find(known.begin(), known.end(), key) == known.end())
      unknown.push_back(in_quotes(key) + suggestion(key, known));
  if (unknown.empty()) return;
  fail("spec", fmt::format("unknown key{} {}; valid keys: {}", unknown.size() > 1 ? "s" : "", join(unknown),
                           join(known)));
}

// a * b, saturating at the largest size_t: the case count is known before anything is allocated.
std::size_t mul_saturating(std::size_t a, std::size_t b) {
  constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
  return (a != 0 && b > kMax / a) ? kMax : a * b;
}

}  // namespace

const std::vector<std::string>& spec_keys() {
  static const std::vector<std::string> keys = {
      "$schema", "name",   "description", "seq",     "seq_q",  "seq_k",  "batch", "tokens", "heads",
      "model_dim", "kv_heads", "head_dim", "dtype", "causal", "pass", "kernels", "warmup", "reps",
      "seed",    "verify", "input_scale", "splits", "max_kv_bytes", "rep_order"};
  return keys;
}

const std::vector<std::string>& spec_dtype_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (Dtype t : kDtypes) v.emplace_back(to_string(t));
    return v;
  }();
  return names;
}

const std::vector<std::string>& spec_pass_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (Pass p : {Pass::fwd, Pass::bwd, Pass::fwd_bwd}) v.emplace_back(to_string(p));
    return v;
  }();
  return names;
}

Sweep sweep_from_json(const nlohmann::json& j) {
  if (!j.is_object()) fail("spec", "must be a JSON object { ... }, got " + describe(j));
  check_keys(j);
  // Sequence lengths: `seq` (self-attention, seq_q = seq_k) or both of seq_q and seq_k.
  const bool split_seq = j.contains("seq_q") || j.contains("seq_k");
  if (split_seq && j.contains("seq"))
    fail("spec", "give seq (seq_q = seq_k), or seq_q and seq_k, not both");
  if (!split_seq && !j.contains("seq")) fail("spec.seq", "missing (required), or give seq_q and seq_k");
  if (split_seq && !j.contains("seq_q"))
    fail("spec.seq_q", "missing: seq_k needs seq_q (or give seq for both)");
  if (split_seq && !j.contains("seq_k"))
    fail("spec.seq_k", "missing: seq_q needs seq_k (or give seq for both)");
  for (const char* key : kRequired)
    if (!j.contains(key)) fail(std::string("spec.") + key, "missing (required)");
  const bool by_tokens = j.contains("tokens");
  if (by_tokens == j.contains("batch"))
    fail("spec", by_tokens ? "give batch or tokens, not both (batch = tokens / seq_q)"
                           : "missing batch (or tokens, with batch = tokens / seq_q)");

  const bool by_model_dim = j.contains("model_dim");
  if (by_model_dim == j.contains("heads"))
    fail(by_model_dim ? "spec" : "spec.heads",
         by_model_dim ? "give heads or model_dim, not both (heads = model_dim / head_dim)"
                      : "missing (required), or give model_dim (heads = model_dim / head_dim)");

  Sweep sweep;
  for (const char* key : {"name", "description", "$schema"})
    if (j.contains(key)) to_str(scalar_item(j, key));

  // ---- each field on its own: types, bounds, duplicates (linear in the spec's size) ----
  // seq is the query axis then; the key lengths pair with it one to one (seq) or as a product.
  const Axis<std::int64_t> seq = int_axis(j, split_seq ? "seq_q" : "seq", 1, kMaxSeq);
  const Axis<std::int64_t> seq_k = split_seq ? int_axis(j, "seq_k", 1, kMaxSeq) : seq;
  const Axis<std::int64_t> batch_or_tokens =
      by_tokens ? int_axis(j, "tokens", 1, kMaxTokens) : int_axis(j, "batch", 1, kMaxBatch);
  // With model_dim (the FlashAttention papers hold it at 2048 while d varies) heads = model_dim / d.
  const Axis<std::int64_t> heads = by_model_dim ? int_axis(j, "model_dim", 1, kMaxHeads * kMaxHeadDim)
                                                : int_axis(j, "heads", 1, kMaxHeads);
  const bool kv_given = j.contains("kv_heads");
  const Axis<std::int64_t> kv_heads = kv_given ? int_axis(j, "kv_heads", 1, kMaxHeads) : Axis<std::int64_t>{};
  const Axis<std::int64_t> head_dim = int_axis(j, "head_dim", 1, kMaxHeadDim);
  const Axis<Dtype> dtype = enum_axis<Dtype>(j, "dtype", spec_dtype_names(), parse_dtype);
  const Axis<bool> causal =
      j.contains("causal") ? bool_axis(j, "causal") : Axis<bool>{{false}, {"spec.causal"}};
  const Axis<Pass> pass = j.contains("pass") ? enum_axis<Pass>(j, "pass", spec_pass_names(), parse_pass)
                                             : Axis<Pass>{{Pass::fwd}, {"spec.pass"}};
  // KV splits of split-KV kernels (0 = the kernel chooses); other kernels run splits = 0 only.
  const Axis<std::int64_t> splits =
      j.contains("splits") ? int_axis(j, "splits", 0, kMaxKvSplits) : Axis<std::int64_t>{{0}, {"spec.splits"}};
  // Cases whose K and V together hold more bytes than this are left out of the product (decode sweeps
  // cross batch with seq_k and keep the KV cache to what one case should allocate).
  double max_kv_bytes = 0;
  if (j.contains("max_kv_bytes")) {
    const Item item = scalar_item(j, "max_kv_bytes");
    const json& v = *item.value;
    if (!v.is_number() || v.is_boolean() || !(v.get<double>() >= 1) || !std::isfinite(v.get<double>()))
      fail(item.path, "must be a number of bytes >= 1, got " + describe(v));
    max_kv_bytes = v.get<double>();
  }

  std::vector<const Descriptor*> kernels;
  if (j.contains("kernels")) {
    std::vector<std::string> registered;
    for (const Descriptor* k : active_kernels().user_kernels()) registered.emplace_back(k->name);
    Axis<std::string> names;
    for (const Item& item : axis_items(j, "kernels")) {
      const std::string& s = to_str(item);
      const Descriptor* k = find_kernel(s);
      if (!k || k->role == Role::reference)
        fail(item.path, fmt::format("unknown kernel {}{}; registered kernels: {}", in_quotes(s),
                                    suggestion(s, registered), kernel_names()));
      kernels.push_back(k);
      names.values.push_back(s);
      names.paths.push_back(item.path);
    }
    reject_duplicates(names, in_quotes);
  } else {
    for (const Descriptor* k : active_kernels().default_kernels()) kernels.push_back(k);
  }

  if (j.contains("warmup")) sweep.warmup = int(to_int(scalar_item(j, "warmup"), 0, kMaxWarmup, "warmup"));
  if (j.contains("reps")) sweep.reps = int(to_int(scalar_item(j, "reps"), 1, kMaxReps, "reps"));
  if (j.contains("seed")) sweep.seed = std::uint64_t(to_int(scalar_item(j, "seed"), 0, kMaxSeed, "seed"));
  if (j.contains("verify")) sweep.verify = to_bool(scalar_item(j, "verify"));
  if (j.contains("rep_order")) {
    const Item item = scalar_item(j, "rep_order");
    const std::string& s = to_str(item);
    const std::optional<RepOrder> order = parse_rep_order(s);
    const std::vector<std::string> valid = {"blocked", "interleaved"};
    if (!order)
      fail(item.path,
           fmt::format("unknown rep_order {}{}; valid: {}", in_quotes(s), suggestion(s, valid), join(valid)));
    sweep.rep_order = *order;
  }
  if (j.contains("input_scale")) {
    const Item item = scalar_item(j, "input_scale");
    const json& v = *item.value;
    if (!v.is_number() || v.is_boolean())
      fail(item.path, "must be a number, got " + describe(v));
    const double x = v.get<double>();
    if (!(x > 0 && x <= kMaxInputScale))
      fail(item.path, fmt::format("must be > 0 and at most {}, got {}", kMaxInputScale, describe(v)));
    sweep.input_scale = x;
  }

  // ---- the case count, before any pairwise check or allocation (10^6+ cases never allocate) ----
  // Product order, outermost first: dtype, head_dim, causal, pass, batch|tokens, heads, kv_heads, seq
  // (or seq_q, then seq_k). Consecutive cases then differ in seq (seq_k) only: each printed block is
  // a time-vs-N series.
  const std::size_t kv_count = kv_given ? kv_heads.size() : 1;  // default: kv_heads = heads
  const std::size_t seqk_count = split_seq ? seq_k.size() : 1;  // seq: seq_k = seq_q
  const std::size_t sizes[] = {dtype.size(), head_dim.size(), causal.size(), pass.size(), batch_or_tokens.size(),
                               heads.size(), kv_count,        seq.size(),    seqk_count,  splits.size()};
  std::size_t count = 1;
  for (const std::size_t n : sizes) count = mul_saturating(count, n);
  if (count > kMaxCases)
    fail("spec",
         fmt::format("the sweep has {}{} cases (dtype {} x head_dim {} x causal {} x pass {} x {} {} x "
                     "heads {} x kv_heads {} x {}{}), more than the cap {} (kMaxCases)",
                     count == std::numeric_limits<std::size_t>::max() ? "more than " : "", count, sizes[0],
                     sizes[1], sizes[2], sizes[3], by_tokens ? "tokens" : "batch", sizes[4], sizes[5],
                     sizes[6],
                     split_seq ? fmt::format("seq_q {} x seq_k {}", sizes[7], sizes[8])
                               : fmt::format("seq {}", sizes[7]),
                     sizes[9] > 1 ? fmt::format(" x splits {}", sizes[9]) : std::string(), kMaxCases));

  // ---- rules across fields (each loop is bounded by the case count) ----
  // Query heads of (heads or model_dim value h, head_dim value d).
  const auto heads_of = [&](std::int64_t h, std::int64_t d) { return by_model_dim ? h / d : h; };
  if (by_model_dim) {
    for (std::size_t m = 0; m < heads.size(); ++m)
      for (std::size_t d = 0; d < head_dim.size(); ++d) {
        const std::int64_t md = heads.values[m], hd = head_dim.values[d];
        if (md % hd != 0)
          fail(heads.paths[m], fmt::format("{} is not a whole number of heads of {} = {} (heads = model_dim / "
                                           "head_dim must divide exactly)", md, head_dim.paths[d], hd));
        if (md / hd > kMaxHeads)
          fail(heads.paths[m], fmt::format("heads = model_dim / head_dim = {} / {} = {} is more than the cap {}",
                                           md, hd, md / hd, kMaxHeads));
      }
  }
  if (kv_given) {
    for (std::size_t k = 0; k < kv_heads.size(); ++k)
      for (std::size_t h = 0; h < heads.size(); ++h)
        for (std::size_t d = 0; d < (by_model_dim ? head_dim.size() : 1); ++d) {
          const std::int64_t nh = heads_of(heads.values[h], head_dim.values[d]);
          if (nh % kv_heads.values[k] != 0)
            fail(kv_heads.paths[k],
                 fmt::format("{} does not divide {} = {} (each K/V head serves heads / kv_heads "
                             "query heads)",
                             kv_heads.values[k], by_model_dim ? "heads (model_dim / head_dim)" : heads.paths[h],
                             nh));
        }
  }
  if (by_tokens) {
    for (std::size_t t = 0; t < batch_or_tokens.size(); ++t) {
      for (std::size_t n = 0; n < seq.size(); ++n) {
        const std::int64_t tokens = batch_or_tokens.values[t], len = seq.values[n];
        const char* per = split_seq ? "seq_q" : "seq";
        if (tokens % len != 0)
          fail(batch_or_tokens.paths[t],
               fmt::format("{} tokens is not a whole number of sequences of {} = {} (batch = tokens / {} "
                           "must divide exactly)",
                           tokens, seq.paths[n], len, per));
        if (tokens / len > kMaxBatch)
          fail(batch_or_tokens.paths[t],
               fmt::format("batch = tokens / {} = {} / {} = {} (with {}) is more than the cap {} on batch",
                           per, tokens, len, tokens / len, seq.paths[n], kMaxBatch));
      }
    }
  }
  // Head dims a listed kernel cannot run make the whole spec wrong; other combinations a kernel cannot
  // run (if a kernel ever has them) become skipped records at run time.
  for (const Descriptor* k : kernels) {
    for (std::size_t d = 0; d < head_dim.size(); ++d) {
      if (const auto reason = unsupported_head_dim(*k, int(head_dim.values[d])))
        fail(head_dim.paths[d],
             *reason + (j.contains("kernels") ? " (listed in spec.kernels)"
                                              : " (spec.kernels not given: every kernel runs)"));
    }
  }
  // Q is the largest tensor (heads >= kv_heads). Under the caps the product fits in 64 bits.
  const auto max_of = [](const Axis<std::int64_t>& a) {
    return std::uint64_t(*std::max_element(a.values.begin(), a.values.end()));
  };
  const auto min_of = [](const Axis<std::int64_t>& a) {
    return std::uint64_t(*std::min_element(a.values.begin(), a.values.end()));
  };
  // Rows of Q (batch * seq_q) or of K (batch * seq_k), whichever is larger; with tokens, batch is at
  // most max(tokens) / min(seq_q), itself at most kMaxBatch (checked above).
  const std::uint64_t max_batch = by_tokens ? max_of(batch_or_tokens) / min_of(seq) : max_of(batch_or_tokens);
  const std::uint64_t q_rows = by_tokens ? max_of(batch_or_tokens) : max_batch * max_of(seq);
  const std::uint64_t rows_tokens = std::max(q_rows, max_batch * max_of(seq_k));
  const std::uint64_t max_heads =
      by_model_dim ? max_of(heads) / *std::min_element(head_dim.values.begin(), head_dim.values.end())
                   : max_of(heads);
  const std::uint64_t elems = rows_tokens * max_heads * max_of(head_dim);
  if (elems > kMaxTensorElems) {
    const std::string sizes_text =
        by_tokens
            ? fmt::format("tokens {} x heads {} x head_dim {}", rows_tokens, max_heads, max_of(head_dim))
            : fmt::format("batch {} x heads {} x {} {} x head_dim {}", max_of(batch_or_tokens), max_heads,
                          split_seq ? "max(seq_q, seq_k)" : "seq", std::max(max_of(seq), max_of(seq_k)),
                          max_of(head_dim));
    fail("spec", fmt::format("{} = {} elements in one tensor (B*H*N*d), more than the cap {} (2^{})",
                             sizes_text, elems, kMaxTensorElems, kTensorElemsLog2));
  }

  // ---- the product ----
  sweep.cases.reserve(count);
  for (const Dtype t : dtype.values)
    for (const std::int64_t d : head_dim.values)
      for (const bool c : causal.values)
        for (const Pass p : pass.values)
          for (const std::int64_t b : batch_or_tokens.values)
            for (const std::int64_t h : heads.values)
              for (std::size_t k = 0; k < kv_count; ++k)
                for (const std::int64_t n : seq.values)
                  for (std::size_t nk = 0; nk < seqk_count; ++nk) {
                    Case cs;
                    cs.dtype = t;
                    cs.head_dim = int(d);
                    cs.causal = c;
                    cs.pass = p;
                    cs.batch = int(by_tokens ? b / n : b);
                    cs.heads = int(heads_of(h, d));
                    cs.kv_heads = int(kv_given ? kv_heads.values[k] : cs.heads);
                    cs.seq_q = int(n);
                    cs.seq_k = split_seq ? int(seq_k.values[nk]) : int(n);
                    const double kv_bytes = 2.0 * cs.batch * cs.kv_heads * double(cs.seq_k) * cs.head_dim *
                                            double(dtype_bytes(cs.dtype));
                    if (max_kv_bytes > 0 && kv_bytes > max_kv_bytes) continue;
                    for (const std::int64_t sp : splits.values) {
                      cs.splits = int(sp);
                      sweep.cases.push_back(cs);
                    }
                  }
  if (sweep.cases.empty())
    fail("spec.max_kv_bytes", fmt::format("{} leaves no case: every combination holds more K/V bytes",
                                          describe(j.at("max_kv_bytes"))));
  for (const Descriptor* k : kernels) sweep.kernels.emplace_back(k->name);
  sweep.spec = j;
  return sweep;
}

Sweep parse_spec(const std::string& text) { return sweep_from_json(parse_json(text)); }

Sweep load_spec(const std::string& path) {
  const std::string shown = echo(path, kMaxEchoLong);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw SpecError(shown + ": cannot read spec file: it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw SpecError(
        fmt::format("{}: cannot read spec file ({})", shown, std::generic_category().message(errno)));
  std::string text;
  constexpr std::size_t kChunk = 1 << 16;
  std::vector<char> buffer(kChunk);
  while (in.read(buffer.data(), std::streamsize(buffer.size())) || in.gcount() > 0) {
    text.append(buffer.data(), std::size_t(in.gcount()));
    if (text.size() > kMaxSpecBytes)
      throw SpecError(fmt::format("{}: spec file larger than the cap {} bytes", shown, kMaxSpecBytes));
  }
  if (in.bad()) throw SpecError(shown + ": cannot read spec file (read error)");
  try {
    return parse_spec(text);
  } catch (const SpecError& e) {
    throw SpecError(shown + ": " + e.what());
  }
}

}  // namespace fb
