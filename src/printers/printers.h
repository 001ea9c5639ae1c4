// Views over Records: table (stdout), CSV, markdown; JSON lives in record.h. Printers never measure.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "compare.h"
#include "record.h"

namespace fb {

void print_table(std::ostream& os, const Results& r);

// The table a row at a time, as cases finish (run on a terminal): the header with the first row,
// column widths fixed up front from the cases and kernels to come.
class LiveTable {
 public:
  LiveTable(std::ostream& os, const std::vector<Case>& cases, const std::vector<std::string>& kernels);
  void add(const Record& r);

 private:
  std::ostream& os_;
  std::vector<std::size_t> width_;
  bool started_ = false;
  Case last_;
};

// One record on one line (run's output when stdout is not a terminal: logs, CI).
std::string record_line(const Record& r);

// Median-time ratio baseline / kernel over the cases where both are ok, per kernel.
struct Speedup {
  std::string kernel;
  int cases = 0;
  double geomean = 0, min = 0, max = 0;
};
std::vector<Speedup> speedups(const Results& r, const std::string& baseline);

// run's closing lines: counts by status, each kernel's geomean speed-up over `baseline`, the files
// written (or that nothing was saved).
void print_summary(std::ostream& os, const Results& r, const std::string& baseline,
                   const std::vector<std::string>& written);
void write_csv(std::ostream& os, const Results& r);
std::string csv_text(const Results& r);

enum class CompareFormat { table, markdown, json };
void print_comparison(std::ostream& os, const CompareReport& rep, CompareFormat f);

}  // namespace fb
