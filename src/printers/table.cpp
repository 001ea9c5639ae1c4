// The results table for a terminal: one row per record, aligned columns, a blank line between groups
// of a different (dtype, head_dim, causal, pass) so that a sweep over seq reads as one block per shape.
// Also its live form (rows as cases finish), the one-line form for logs, and run's closing summary.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "printers.h"
#include "printers/text.h"

namespace fb {

namespace {

using namespace text;

constexpr std::size_t kReasonWidth = 72;  // skipped/failed reasons are cut here to keep rows on one line

struct Column {
  const char* title;
  bool left;  // text left-aligned, numbers right-aligned
};

// Columns up to and including `status` are shown for every row; a row that is not ok puts its reason
// in place of the measurement columns after it.
const std::vector<Column> kColumns = {
    {"B", false},        {"H/Hkv", false},    {"N", false},          {"d", false},
    {"dtype", true},     {"causal", true},    {"pass", true},        {"kernel", true},
    {"status", true},    {"median ms", false}, {"noise", false},     {"reps", false},
    {"TFLOP/s", false},  {"GB/s", false},      {"peak mem", false},  {"max|Δ| naive", false},
    {"err fp64", false}, {"ok", true},
};
constexpr std::size_t kStatusColumn = 8;

std::string verified_mark(const std::optional<bool>& v) {
  if (!v) return "-";
  return *v ? "✓" : "✗";
}

std::vector<std::string> cells(const Record& r) {
  const Case& c = r.c;
  std::vector<std::string> row = {
      fmt::format("{}", c.batch),
      fmt::format("{}/{}", c.heads, c.kv_heads),
      c.square() ? fmt::format("{}", c.seq_q) : fmt::format("{}/{}", c.seq_q, c.seq_k),  // N or Nq/Nk
      fmt::format("{}", c.head_dim),
      std::string(to_string(c.dtype)),
      c.causal ? "yes" : "no",
      std::string(to_string(c.pass)),
      r.kernel,
      std::string(to_string(r.status)),
  };
  if (r.status != Status::ok) {
    row.push_back(truncate_display(r.reason.empty() ? "-" : r.reason, kReasonWidth));
    return row;
  }
  row.push_back(format_significant(r.time_ms.median));
  row.push_back(format_noise(r.time_ms.stddev, r.time_ms.mean, r.time_ms.reps));
  row.push_back(fmt::format("{}", r.time_ms.reps));
  row.push_back(format_significant(r.tflops));
  row.push_back(format_significant(r.gbps));
  row.push_back(format_bytes(r.peak_bytes));
  row.push_back(format_error(r.max_abs_diff));
  row.push_back(format_error(r.ref_max_abs_err));
  row.push_back(verified_mark(r.verified));
  return row;
}

bool same_group(const Case& a, const Case& b) {
  return a.dtype == b.dtype && a.head_dim == b.head_dim && a.causal == b.causal && a.pass == b.pass;
}

void widen(std::vector<std::size_t>& width, const std::vector<std::string>& row) {
  // A reason spans the measurement columns, so it does not widen the first of them.
  const std::size_t measured = row.size() == kColumns.size() ? row.size() : kStatusColumn + 1;
  for (std::size_t i = 0; i < measured; ++i) width[i] = std::max(width[i], display_width(row[i]));
}

std::vector<std::size_t> title_widths() {
  std::vector<std::size_t> width(kColumns.size());
  for (std::size_t i = 0; i < kColumns.size(); ++i) width[i] = display_width(kColumns[i].title);
  return width;
}

void print_row(std::ostream& os, const std::vector<std::size_t>& width, const std::vector<std::string>& row) {
  std::string line;
  for (std::size_t i = 0; i < row.size(); ++i) {
    if (i) line += "  ";
    const bool spans = row.size() != kColumns.size() && i == row.size() - 1;
    line += spans ? row[i] : pad(row[i], width[i], kColumns[i].left);
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  os << line << '\n';
}

void print_header(std::ostream& os, const std::vector<std::size_t>& width) {
  std::vector<std::string> header;
  for (const Column& c : kColumns) header.push_back(c.title);
  print_row(os, width, header);
  std::size_t total = 0;
  for (std::size_t w : width) total += w;
  total += 2 * (width.size() - 1);
  std::string rule;
  for (std::size_t i = 0; i < total; ++i) rule += "─";
  os << rule << '\n';
}

}  // namespace

void print_table(std::ostream& os, const Results& res) {
  if (res.records.empty()) {
    os << "(no results)\n";
    return;
  }
  std::vector<std::vector<std::string>> rows;
  rows.reserve(res.records.size());
  for (const Record& r : res.records) rows.push_back(cells(r));

  std::vector<std::size_t> width = title_widths();
  for (const auto& row : rows) widen(width, row);
  print_header(os, width);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (i > 0 && !same_group(res.records[i - 1].c, res.records[i].c)) os << '\n';
    print_row(os, width, rows[i]);
  }
}

LiveTable::LiveTable(std::ostream& os, const std::vector<Case>& cases, const std::vector<std::string>& kernels)
    : os_(os), width_(title_widths()) {
  // The shape columns are known now; the measurements get room for the usual 4 significant digits
  // (format_significant), so that most rows line up without knowing them in advance.
  constexpr std::size_t kNumberWidth = 8;
  for (const Case& c : cases) {
    Record r;
    r.c = c;
    r.status = Status::skipped;
    widen(width_, cells(r));
  }
  for (const std::string& k : kernels) width_[kStatusColumn - 1] = std::max(width_[kStatusColumn - 1], display_width(k));
  for (std::size_t i = kStatusColumn + 1; i < width_.size(); ++i) width_[i] = std::max(width_[i], kNumberWidth);
}

void LiveTable::add(const Record& r) {
  if (!started_) print_header(os_, width_);
  if (started_ && !same_group(last_, r.c)) os_ << '\n';
  started_ = true;
  last_ = r.c;
  print_row(os_, width_, cells(r));
  os_.flush();
}

std::string record_line(const Record& r) {
  const Case& c = r.c;
  std::string line = fmt::format("B={} H={}{} {} d={} {} {} {}  {}  {}", c.batch, c.heads,
                                 c.kv_heads != c.heads ? fmt::format("/{}", c.kv_heads) : "",
                                 c.square() ? fmt::format("N={}", c.seq_q)
                                            : fmt::format("Nq={} Nk={}", c.seq_q, c.seq_k),
                                 c.head_dim,
                                 to_string(c.dtype), c.causal ? "causal" : "full", to_string(c.pass), r.kernel,
                                 to_string(r.status));
  if (r.status != Status::ok) return line + ": " + (r.reason.empty() ? "-" : r.reason);
  const std::string noise = format_noise(r.time_ms.stddev, r.time_ms.mean, r.time_ms.reps);
  line += fmt::format("  {} ms{} ({} rep{})  {} TFLOP/s  {} GB/s", format_significant(r.time_ms.median),
                      noise == "-" ? "" : " ±" + noise, r.time_ms.reps, r.time_ms.reps == 1 ? "" : "s",
                      format_significant(r.tflops), format_significant(r.gbps));
  if (r.ref_max_abs_err) line += "  err " + format_error(r.ref_max_abs_err);
  if (r.verified) line += *r.verified ? "  verified" : "  VERIFICATION FAILED";
  return line;
}

std::vector<Speedup> speedups(const Results& res, const std::string& baseline) {
  std::map<std::string, const Record*> base;  // case key -> the baseline's ok record
  for (const Record& r : res.records)
    if (r.kernel == baseline && r.status == Status::ok && r.time_ms.median > 0) base[r.c.key()] = &r;
  std::vector<Speedup> out;
  std::map<std::string, std::size_t> index;
  std::map<std::string, double> log_sum;
  for (const Record& r : res.records) {
    if (r.kernel == baseline || r.status != Status::ok || !(r.time_ms.median > 0)) continue;
    const auto b = base.find(r.c.key());
    if (b == base.end()) continue;
    const double x = b->second->time_ms.median / r.time_ms.median;
    auto [it, added] = index.emplace(r.kernel, out.size());
    if (added) out.push_back({r.kernel, 0, 0, x, x});
    Speedup& s = out[it->second];
    ++s.cases;
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
    log_sum[r.kernel] += std::log(x);
  }
  for (Speedup& s : out) s.geomean = std::exp(log_sum[s.kernel] / double(s.cases));
  return out;
}

void print_summary(std::ostream& os, const Results& res, const std::string& baseline,
                   const std::vector<std::string>& written) {
  int ok = 0, skipped = 0, failed = 0, unverified = 0;
  for (const Record& r : res.records) {
    ok += r.status == Status::ok;
    skipped += r.status == Status::skipped;
    failed += r.status == Status::failed;
    unverified += r.status == Status::ok && r.verified && !*r.verified;
  }
  os << fmt::format("\n{} results: {} ok, {} skipped, {} failed", res.records.size(), ok, skipped, failed);
  if (unverified) os << fmt::format(" ({} ok but FAILED verification)", unverified);
  os << '\n';
  for (const Speedup& s : speedups(res, baseline)) {
    // A speed-up under 1 is said as a slowdown: "0.5x faster" reads wrong.
    const std::string how = s.geomean >= 1 ? fmt::format("{:.2f}x faster", s.geomean)
                                           : fmt::format("{:.2f}x slower", 1 / s.geomean);
    const std::string range =
        s.cases > 1 ? fmt::format("; speed-up {:.2f}x to {:.2f}x", s.min, s.max) : std::string();
    os << fmt::format("{} ran {} than {} (geomean of {} case{} where both ran{})\n", s.kernel, how, baseline,
                      s.cases, s.cases == 1 ? "" : "s", range);
  }
  // Timings whose reps trended (rep_drift): their median depends on what the GPU ran before them.
  std::vector<std::pair<const Record*, double>> drifted;
  for (const Record& r : res.records) {
    const double d = r.status == Status::ok ? rep_drift(r.time_ms.samples) : std::nan("");
    if (std::isfinite(d) && std::abs(d) > kDriftWarn) drifted.emplace_back(&r, d);
  }
  if (!drifted.empty()) {
    os << fmt::format(
        "{} timing{} drifted by more than {:.0f}% from the first half of {} reps to the second (the GPU still "
        "changing state, e.g. its clock under the power cap after other work: such a median depends on what ran "
        "before it; a longer --warmup-time steadies it):\n",
        drifted.size(), drifted.size() == 1 ? "" : "s", kDriftWarn * 100, drifted.size() == 1 ? "its" : "their");
    constexpr std::size_t kMaxListed = 10;
    for (std::size_t i = 0; i < drifted.size() && i < kMaxListed; ++i)
      os << fmt::format("  {} {}: {:+.1f}%\n", drifted[i].first->c.key(), drifted[i].first->kernel,
                        drifted[i].second * 100);
    if (drifted.size() > kMaxListed) os << fmt::format("  ... and {} more\n", drifted.size() - kMaxListed);
  }
  if (written.empty())
    os << "results not saved (give -o FILE.json and/or --csv FILE.csv to keep them)\n";
  for (const std::string& path : written) os << "wrote " << path << '\n';
}

}  // namespace fb
