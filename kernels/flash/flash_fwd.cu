// The forward's host side: checks, and the one runtime -> template dispatch on (dtype, head_dim).
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include <cuda_runtime.h>

#include "common/check.h"
#include "common/device_caps.h"
#include "flash/flash.h"
#include "flash/flash_fwd_config.h"

namespace fb::cuda::flash {
namespace {

// Calls f(FwdConfig<T, D>{}) for the runtime (dtype, head_dim). A head_dim without an
// instantiation throws (unsupported_forward reports it before anything is launched).
template <Dtype T, typename F> auto with_head_dim(int head_dim, F&& f) {
  switch (head_dim) {
    case 32: return f(FwdConfig<T, 32>{});
    case 64: return f(FwdConfig<T, 64>{});
    case 128: return f(FwdConfig<T, 128>{});
    default: break;
  }
  throw std::invalid_argument("flash forward: head_dim " + std::to_string(head_dim) +
                              " not supported (32, 64, 128)");
}
template <typename F> auto with_config(const AttentionParams& p, F&& f) {
  switch (p.dtype) {
    case Dtype::fp64: return with_head_dim<Dtype::fp64>(p.head_dim, f);
    case Dtype::fp32: return with_head_dim<Dtype::fp32>(p.head_dim, f);
    case Dtype::fp16: return with_head_dim<Dtype::fp16>(p.head_dim, f);
    case Dtype::bf16: return with_head_dim<Dtype::bf16>(p.head_dim, f);
  }
  throw std::invalid_argument("flash forward: unknown dtype");
}

// Grid limits: x counts (batch * heads) blocks, y the query tiles.
constexpr long long kMaxGridX = std::numeric_limits<int>::max();
constexpr long long kMaxGridY = 65535;
// mma.sync with bf16 operands, ldmatrix and cp.async need sm_80.
constexpr int kTensorCoreMinMajor = 8;

bool is_16bit(Dtype t) { return t == Dtype::fp16 || t == Dtype::bf16; }

}  // namespace

const char* unsupported_forward(const AttentionParams& p) {
  if (p.head_dim != 32 && p.head_dim != 64 && p.head_dim != 128)
    return "flash: head_dim must be 32, 64 or 128";
  if (p.batch < 1 || p.heads < 1 || p.kv_heads < 1 || p.seq_q < 1 || p.seq_k < 1)
    return "flash: batch, heads, kv_heads, seq_q and seq_k must be at least 1";
  if (p.heads % p.kv_heads != 0) return "flash: kv_heads must divide heads";
  if (!(p.scale > 0.0) || !std::isfinite(p.scale))
    return "flash: softmax scale must be positive and finite";
  const int br = with_config(p, [](auto cfg) { return decltype(cfg)::Traits::kBr; });
  if (static_cast<long long>(p.batch) * p.heads > kMaxGridX)
    return "flash: batch * heads exceeds the grid limit";
  if ((static_cast<long long>(p.seq_q) + br - 1) / br > kMaxGridY)
    return "flash: seq_q exceeds the grid limit (65535 query tiles)";

  // What the current device offers; skipped where no device answers (the launch would report it).
  const auto caps = current_device_caps();
  if (!caps) return nullptr;
  const int major = caps->major, smem_optin = caps->smem_optin;
  if (is_16bit(p.dtype) && major < kTensorCoreMinMajor)
    return "flash: fp16/bf16 need compute capability 8.0 or newer";
  const std::size_t smem =
      with_config(p, [](auto cfg) { return std::size_t(decltype(cfg)::Traits::kSmemBytes); });
  if (smem > static_cast<std::size_t>(smem_optin))
    return "flash: this tile configuration needs more shared memory per block than the GPU offers";
  return nullptr;
}

int query_tile(const AttentionParams& p) {
  return with_config(p, [](auto cfg) { return decltype(cfg)::Traits::kBr; });
}

void forward(const AttentionParams& p, const Context& ctx) {
  if (const char* why = unsupported_forward(p)) throw std::invalid_argument(why);
  if (!p.q || !p.k || !p.v || !p.o || !p.lse)
    throw std::invalid_argument("flash forward: q, k, v, o and lse must be device pointers");
  const auto stream = static_cast<cudaStream_t>(ctx.stream);
  with_config(p, [&](auto cfg) {
    using Cfg = decltype(cfg);
    run_fwd<Cfg::kDtype, Cfg::kHeadDim>(p, stream);
  });
}

}  // namespace fb::cuda::flash
