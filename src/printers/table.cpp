// The results table for a terminal: one row per record, aligned columns, a blank line between groups
// of a different (dtype, head_dim, causal, pass) so that a sweep over seq reads as one block per shape.
#include <algorithm>
#include <cmath>
#include <string>
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
    {"status", true},    {"median ms", false}, {"TFLOP/s", false},   {"GB/s", false},
    {"peak mem", false}, {"max|Δ| naive", false}, {"err fp64", false}, {"ok", true},
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

}  // namespace

void print_table(std::ostream& os, const Results& res) {
  if (res.records.empty()) {
    os << "(no results)\n";
    return;
  }
  std::vector<std::vector<std::string>> rows;
  rows.reserve(res.records.size());
  for (const Record& r : res.records) rows.push_back(cells(r));

  std::vector<std::size_t> width(kColumns.size());
  for (std::size_t i = 0; i < kColumns.size(); ++i) width[i] = display_width(kColumns[i].title);
  for (const auto& row : rows) {
    // A reason spans the measurement columns, so it does not widen the first of them.
    const std::size_t measured = row.size() == kColumns.size() ? row.size() : kStatusColumn + 1;
    for (std::size_t i = 0; i < measured; ++i) width[i] = std::max(width[i], display_width(row[i]));
  }

  auto print_row = [&](const std::vector<std::string>& row) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (i) line += "  ";
      const bool spans = row.size() != kColumns.size() && i == row.size() - 1;
      line += spans ? row[i] : pad(row[i], width[i], kColumns[i].left);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    os << line << '\n';
  };

  std::vector<std::string> header;
  for (const Column& c : kColumns) header.push_back(c.title);
  print_row(header);
  std::size_t total = 0;
  for (std::size_t w : width) total += w;
  total += 2 * (width.size() - 1);
  std::string rule;
  for (std::size_t i = 0; i < total; ++i) rule += "─";
  os << rule << '\n';

  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (i > 0 && !same_group(res.records[i - 1].c, res.records[i].c)) os << '\n';
    print_row(rows[i]);
  }
}

}  // namespace fb
