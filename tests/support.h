// Helpers every test file uses the same way (CPU and GPU): a built-in kernel by name, and the record of
// a run that went through (verify_case fills in its errors and verdict).
#pragma once

#include <string>

#include "catch.h"
#include "record.h"
#include "registry.h"

namespace fb::test {

inline const Descriptor& kernel(const char* name) {
  const Descriptor* k = find_kernel(name);
  REQUIRE(k != nullptr);
  return *k;
}

inline Record ok_record(const Case& c, const std::string& kernel_name) {
  Record r;
  r.c = c;
  r.kernel = kernel_name;
  return r;
}

}  // namespace fb::test
