// The one list of kernels users can name. The CLI's help, spec validation, results JSON and the
// scripts (via `flashbench info --json`) all read names from here.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attention.h"
#include "case.h"

namespace fb {

struct KernelInfo {
  std::string_view name;         // what specs and results call it
  Algo algo;                     // what dispatch sees
  std::string_view description;  // one line for --help and README
  std::vector<int> head_dims;    // supported head dims; empty = any
};

// In the order they run and print.
const std::vector<KernelInfo>& kernel_registry();
const KernelInfo* find_kernel(std::string_view name);
// "naive, flash" for messages.
std::string kernel_names();

// Why a kernel cannot run a case on any backend (spec validation), nullopt if it can.
std::optional<std::string> unsupported_reason(const KernelInfo& k, const Case& c);

}  // namespace fb
