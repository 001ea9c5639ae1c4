// Loading users' kernel libraries (--kernel-lib, include/flashbench/plugin.h) into the kernel list.
//
// Each library's kernels become Descriptors like the built-ins' (role tiled, the tiled byte model,
// origin = the library's path), so spec validation, the runner, `info` and `--list` see them without
// knowing they came from a plug-in. A kernel's failing call throws, which the runner records as a
// `failed` row with the plug-in's message.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "registry.h"

namespace fb {

// A library that cannot be used: what() is one line naming the path and what is wrong.
class PluginError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The kernels of one library, checked and wrapped. The library stays loaded for the process's life.
// Throws PluginError.
std::vector<Descriptor> load_kernel_library(const std::string& path);

// Makes the active kernel set the built-ins followed by every library's kernels, in the order given
// (nothing changes when `paths` is empty). Throws PluginError, also when a name is taken twice; the
// active set is then left as it was.
void activate_kernel_libraries(const std::vector<std::string>& paths);

}  // namespace fb
