// Views over Records: table (stdout), CSV, markdown; JSON lives in record.h. Printers never measure.
#pragma once

#include <ostream>
#include <string>

#include "compare.h"
#include "record.h"

namespace fb {

void print_table(std::ostream& os, const Results& r);
void write_csv(std::ostream& os, const Results& r);
std::string csv_text(const Results& r);

enum class CompareFormat { table, markdown, json };
void print_comparison(std::ostream& os, const CompareReport& rep, CompareFormat f);

}  // namespace fb
