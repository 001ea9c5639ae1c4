// Views of a CompareReport: an aligned table for a terminal, GitHub markdown for a pull-request
// comment (summary line first, changed rows in a table, unchanged rows folded away), and JSON for
// scripts.
#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "printers.h"
#include "printers/text.h"

namespace fb {

namespace {

using namespace text;

constexpr std::array kVerdicts = {Verdict::regression,  Verdict::error_exceeded, Verdict::unverified,
                                  Verdict::now_failed,  Verdict::missing,        Verdict::unconfirmed,
                                  Verdict::slower_noise, Verdict::faster,        Verdict::same,
                                  Verdict::added};

// "1 regression" / "2 regressions", "10 unchanged", ...
std::string count_phrase(Verdict v, std::size_t n) {
  const bool one = n == 1;
  switch (v) {
    case Verdict::regression: return fmt::format("{} regression{}", n, one ? "" : "s");
    case Verdict::error_exceeded: return fmt::format("{} over the error bound", n);
    case Verdict::now_failed: return fmt::format("{} now failing", n);
    case Verdict::unverified: return fmt::format("{} not verified", n);
    case Verdict::unconfirmed: return fmt::format("{} slower but not on re-measure", n);
    case Verdict::missing: return fmt::format("{} missing", n);
    case Verdict::slower_noise: return fmt::format("{} slower within noise", n);
    case Verdict::faster: return fmt::format("{} faster", n);
    case Verdict::same: return fmt::format("{} unchanged", n);
    case Verdict::added: return fmt::format("{} added", n);
  }
  return fmt::format("{} ?", n);
}

std::size_t count(const CompareReport& rep, Verdict v) {
  return std::size_t(std::count_if(rep.rows.begin(), rep.rows.end(),
                                   [v](const Comparison& c) { return c.verdict == v; }));
}

// "**2 regressions**, 10 unchanged": failures first (bold in markdown), zero counts left out.
std::string summary(const CompareReport& rep, bool markdown) {
  if (rep.rows.empty()) return "nothing to compare";
  std::string out;
  if (rep.timed_pairs > 0)
    out = fmt::format("geomean new/base {:.3f}× over {} timed pairs ({} base run{}); ", rep.geomean_ratio,
                      rep.timed_pairs, rep.history, rep.history == 1 ? "" : "s");
  const std::size_t prefix = out.size();
  for (Verdict v : kVerdicts) {
    const std::size_t n = count(rep, v);
    if (n == 0) continue;
    std::string phrase = count_phrase(v, n);
    if (markdown && is_failure(v)) phrase = "**" + phrase + "**";
    out += (out.size() == prefix ? "" : ", ") + phrase;
  }
  return out;
}

std::string median_ms(const Record* r, double history_median = 0) {
  if (!r) return "-";
  if (r->status != Status::ok) return std::string(to_string(r->status));
  return format_significant(history_median > 0 ? history_median : r->time_ms.median);
}

std::string ratio_text(double ratio) { return ratio > 0 ? fmt::format("{:.2f}×", ratio) : "-"; }

std::vector<std::string> row_cells(const Comparison& c) {
  return {c.key, c.kernel, median_ms(c.base, c.base_median), median_ms(c.next), ratio_text(c.ratio),
          std::string(to_string(c.verdict)), c.note};
}

const std::array<const char*, 7> kTitles = {"case", "kernel", "base ms", "new ms", "ratio", "verdict",
                                            "note"};
const std::array<bool, 7> kLeft = {true, true, false, false, false, true, true};

void print_text_table(std::ostream& os, const CompareReport& rep) {
  std::vector<std::vector<std::string>> rows;
  for (const Comparison& c : rep.rows) rows.push_back(row_cells(c));
  std::array<std::size_t, kTitles.size()> width{};
  for (std::size_t i = 0; i < kTitles.size(); ++i) width[i] = display_width(kTitles[i]);
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], display_width(row[i]));

  auto print = [&](const std::vector<std::string>& row) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) line += (i ? "  " : "") + pad(row[i], width[i], kLeft[i]);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    os << line << '\n';
  };
  if (!rows.empty()) {
    print(std::vector<std::string>(kTitles.begin(), kTitles.end()));
    for (const auto& row : rows) print(row);
    os << '\n';
  }
  for (const auto& w : rep.warnings) os << "warning: " << w << '\n';
  os << summary(rep, false) << (rep.failed() ? " - FAILED" : " - ok") << '\n';
}

// A table cell: pipes would end the cell and newlines the row.
std::string md_cell(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|') out += "\\|";
    else if (ch == '\n' || ch == '\r') out += ' ';
    else out += ch;
  }
  return out;
}

void print_md_rows(std::ostream& os, const std::vector<const Comparison*>& rows) {
  os << "| Case | Kernel | Base (ms) | New (ms) | Ratio | Verdict | Note |\n";
  os << "|:--|:--|--:|--:|--:|:--|:--|\n";
  for (const Comparison* c : rows) {
    auto cells = row_cells(*c);
    cells[0] = "`" + cells[0] + "`";
    if (is_failure(c->verdict)) cells[5] = "**" + cells[5] + "**";
    os << '|';
    for (const auto& cell : cells) os << ' ' << md_cell(cell) << " |";
    os << '\n';
  }
}

void print_markdown(std::ostream& os, const CompareReport& rep) {
  os << (rep.failed() ? "**flashbench gate: FAILED** - " : "flashbench gate: ok - ") << summary(rep, true) << "\n";
  for (const auto& w : rep.warnings) os << "\n> warning: " << md_cell(w) << "\n";
  std::vector<const Comparison*> changed, unchanged;
  for (const Comparison& c : rep.rows) (c.verdict == Verdict::same ? unchanged : changed).push_back(&c);
  if (!changed.empty()) {
    os << '\n';
    print_md_rows(os, changed);
  }
  // A sweep has many unchanged rows: fold them so the comment shows what moved.
  if (!unchanged.empty()) {
    os << "\n<details><summary>" << count_phrase(Verdict::same, unchanged.size()) << "</summary>\n\n";
    print_md_rows(os, unchanged);
    os << "\n</details>\n";
  }
}

nlohmann::json json_number_or_null(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
}

nlohmann::json median_json(const Record* r) {
  if (!r || r->status != Status::ok) return nullptr;
  return json_number_or_null(r->time_ms.median);
}

void print_json(std::ostream& os, const CompareReport& rep) {
  nlohmann::json j;
  j["failed"] = rep.failed();
  j["geomean_ratio"] = rep.timed_pairs > 0 ? json_number_or_null(rep.geomean_ratio) : nlohmann::json(nullptr);
  j["timed_pairs"] = rep.timed_pairs;
  j["history"] = rep.history;
  j["warnings"] = rep.warnings;
  nlohmann::json counts = nlohmann::json::object();
  for (Verdict v : kVerdicts) counts[std::string(to_string(v))] = count(rep, v);
  j["counts"] = std::move(counts);
  nlohmann::json rows = nlohmann::json::array();
  for (const Comparison& c : rep.rows) {
    rows.push_back({{"key", c.key},
                    {"kernel", c.kernel},
                    {"verdict", std::string(to_string(c.verdict))},
                    {"failure", is_failure(c.verdict)},
                    {"ratio", c.ratio > 0 ? json_number_or_null(c.ratio) : nlohmann::json(nullptr)},
                    {"base_median_ms", c.base_median > 0 ? json_number_or_null(c.base_median) : median_json(c.base)},
                    {"interval", c.ci_lo > 0 ? nlohmann::json::array({c.ci_lo, c.ci_hi}) : nlohmann::json(nullptr)},
                    {"threshold", c.threshold},
                    {"history", c.history},
                    {"outliers", c.outliers},
                    {"new_median_ms", median_json(c.next)},
                    {"note", c.note}});
  }
  j["rows"] = std::move(rows);
  os << j.dump(2) << '\n';
}

}  // namespace

void print_comparison(std::ostream& os, const CompareReport& rep, CompareFormat f) {
  switch (f) {
    case CompareFormat::table: print_text_table(os, rep); return;
    case CompareFormat::markdown: print_markdown(os, rep); return;
    case CompareFormat::json: print_json(os, rep); return;
  }
}

}  // namespace fb
