#include "registry.h"

#include <algorithm>

#include <fmt/format.h>

namespace fb {

const std::vector<KernelInfo>& kernel_registry() {
  static const std::vector<KernelInfo> kernels = {
      {"naive", Algo::naive,
       "standard attention: S = scale*QK^T and P = softmax(S) materialised as N x N arrays (cuBLAS on GPU)",
       {}},
      {"flash", Algo::flash,
       "FlashAttention: Q/K/V tiles on chip, online softmax, nothing N x N (tensor cores for fp16/bf16)",
       {32, 64, 128}},
      {"flash-sm90", Algo::flash_sm90,
       "FlashAttention for Hopper (sm_90a): TMA loads, wgmma, producer/consumer warpgroups; fp16/bf16, "
       "CUDA backend only",
       {64, 128}},
  };
  return kernels;
}

const KernelInfo* find_kernel(std::string_view name) {
  for (const auto& k : kernel_registry())
    if (k.name == name) return &k;
  return nullptr;
}

std::string kernel_names() {
  std::string out;
  for (const auto& k : kernel_registry()) out += (out.empty() ? "" : ", ") + std::string(k.name);
  return out;
}

std::optional<std::string> unsupported_reason(const KernelInfo& k, const Case& c) {
  if (!k.head_dims.empty() &&
      std::find(k.head_dims.begin(), k.head_dims.end(), c.head_dim) == k.head_dims.end()) {
    return fmt::format("kernel '{}' supports head_dim {}, not {}", k.name,
                       fmt::join(k.head_dims, ", "), c.head_dim);
  }
  return std::nullopt;
}

}  // namespace fb
