// CSV view of the records (RFC 4180): a header row, then one row per record with every scalar field.
// Fields holding a comma, a double quote, CR or LF are quoted, quotes inside doubled; lines end in CRLF
// as the RFC says. Absent optionals are empty fields; non-finite numbers are inf / -inf / nan, as in the
// JSON. Numbers are written in their shortest form that reads back exactly.
#include <cmath>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "printers.h"

namespace fb {

namespace {

constexpr const char* kEol = "\r\n";

std::string quote(const std::string& field) {
  if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
  std::string out = "\"";
  for (char ch : field) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

std::string num(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return fmt::format("{}", x);
}

std::string opt_num(const std::optional<double>& x) { return x ? num(*x) : std::string(); }

std::string boolean(bool b) { return b ? "true" : "false"; }

const std::vector<const char*> kHeader = {
    "key",       "batch",     "heads",          "kv_heads", "seq",        "seq_q",       "seq_k",
    "head_dim",  "dtype",
    "causal",    "pass",      "kernel",         "status",   "reason",     "median_ms",   "min_ms",
    "max_ms",    "mean_ms",   "stddev_ms",      "reps",     "flops",      "tflops",      "bytes_moved",
    "gbps",      "peak_bytes", "max_abs_diff",  "ref_max_abs_err", "verified",
};

void write_row(std::ostream& os, const std::vector<std::string>& fields) {
  for (std::size_t i = 0; i < fields.size(); ++i) os << (i ? "," : "") << quote(fields[i]);
  os << kEol;
}

}  // namespace

void write_csv(std::ostream& os, const Results& res) {
  write_row(os, std::vector<std::string>(kHeader.begin(), kHeader.end()));
  for (const Record& r : res.records) {
    const Case& c = r.c;
    const TimeStats& t = r.time_ms;
    write_row(os, {
                      c.key(),
                      std::to_string(c.batch),
                      std::to_string(c.heads),
                      std::to_string(c.kv_heads),
                      c.square() ? std::to_string(c.seq_q) : std::string(),  // seq: only when equal
                      std::to_string(c.seq_q),
                      std::to_string(c.seq_k),
                      std::to_string(c.head_dim),
                      std::string(to_string(c.dtype)),
                      boolean(c.causal),
                      std::string(to_string(c.pass)),
                      r.kernel,
                      std::string(to_string(r.status)),
                      r.reason,
                      num(t.median),
                      num(t.min),
                      num(t.max),
                      num(t.mean),
                      num(t.stddev),
                      std::to_string(t.reps),
                      num(r.flops),
                      num(r.tflops),
                      num(r.bytes_moved),
                      num(r.gbps),
                      std::to_string(r.peak_bytes),
                      opt_num(r.max_abs_diff),
                      opt_num(r.ref_max_abs_err),
                      r.verified ? boolean(*r.verified) : std::string(),
                  });
  }
}

std::string csv_text(const Results& r) {
  std::ostringstream ss;
  write_csv(ss, r);
  return ss.str();
}

}  // namespace fb
