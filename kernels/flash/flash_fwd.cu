// The forward's host side: checks, and the one runtime -> template dispatch on (dtype, head_dim,
// fp32 math).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <cuda_runtime.h>

#include "common/check.h"
#include "common/device_caps.h"
#include "common/settings.h"
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
    // Tensor cores only (kTcHeadDims): no CUDA-core instantiation exists for these.
    case 96:
      if constexpr (FwdConfig<T, 96>::kTensorCores) return f(FwdConfig<T, 96>{});
      break;
    case 256:
      if constexpr (FwdConfig<T, 256>::kTensorCores) return f(FwdConfig<T, 256>{});
      break;
    default: break;
  }
  throw std::invalid_argument("flash forward: head_dim " + std::to_string(head_dim) +
                              " not supported for this dtype");
}
template <typename F> auto with_config(const AttentionParams& p, F&& f) {
  switch (p.dtype) {
    case Dtype::fp64: return with_head_dim<Dtype::fp64>(p.head_dim, f);
    case Dtype::fp32: return with_head_dim<Dtype::fp32>(p.head_dim, f);
    case Dtype::fp16: return with_head_dim<Dtype::fp16>(p.head_dim, f);
    case Dtype::bf16: return with_head_dim<Dtype::bf16>(p.head_dim, f);
    case Dtype::fp8: break;  // refused by unsupported()
  }
  throw std::invalid_argument("flash forward: unknown dtype");
}

// Grid limits: x counts (batch * heads) blocks, y the query tiles.
constexpr long long kMaxGridX = std::numeric_limits<int>::max();
constexpr long long kMaxGridY = 65535;
// mma.sync with bf16 operands, ldmatrix and cp.async need sm_80.
constexpr int kTensorCoreMinMajor = 8;

bool is_16bit(Dtype t) { return t == Dtype::fp16 || t == Dtype::bf16; }

template <std::size_t n> bool listed(const int (&dims)[n], int head_dim) {
  for (int d : dims)
    if (d == head_dim) return true;
  return false;
}

// Calls f(integral_constant<int, D>, integral_constant<Fp32Math, M>) for the TF32 kernels.
template <typename F> auto with_tf32(int head_dim, Fp32Math math, F&& f) {
  auto with_d = [&](auto m) {
    switch (head_dim) {
      case 32: return f(std::integral_constant<int, 32>{}, m);
      case 64: return f(std::integral_constant<int, 64>{}, m);
      case 128: return f(std::integral_constant<int, 128>{}, m);
      default: break;
    }
    throw std::invalid_argument("flash forward: head_dim " + std::to_string(head_dim) +
                                " not supported (32, 64, 128)");
  };
  if (math == Fp32Math::tf32x1)
    return with_d(std::integral_constant<Fp32Math, Fp32Math::tf32x1>{});
  return with_d(std::integral_constant<Fp32Math, Fp32Math::tf32x3>{});
}

int tf32_query_tile(int head_dim) {
  return with_tf32(head_dim, Fp32Math::tf32x3,
                   [](auto d, auto) { return Tf32FwdConfig<decltype(d)::value>::kBr; });
}
std::size_t tf32_smem_bytes(int head_dim) {
  return with_tf32(head_dim, Fp32Math::tf32x3, [](auto d, auto) {
    return std::size_t(Tf32FwdConfig<decltype(d)::value>::kSmemBytes);
  });
}

}  // namespace

const FwdProbe& fwd_probe() {
  static fb::settings::PerOverlay<FwdProbe> probe_cache;
  const FwdProbe& probe = probe_cache.get([] {
    FwdProbe f;
    const char* env = fb::settings::get("FB_FLASH_FWD_PROBE");
    std::string v = env ? env : "";
    std::size_t pos = 0;
    while (pos <= v.size()) {
      const std::size_t end = std::min(v.find(',', pos), v.size());
      const std::string w = v.substr(pos, end - pos);
      pos = end + 1;
      if (w.empty()) continue;
      f.set = true;
      if (w == "old") f.old = true;
      else if (w == "l2order") f.l2order = true;
      else if (w == "persist") f.persist = true;
      else if (w == "persist2") f.persist_early = true;
      else if (w == "pf") f.prefetch = true;
      else if (w == "nopf") f.no_prefetch = true;
      else if (w == "epi") f.lean_epi = true;
      else if (w == "pro") f.lean_pro = true;
      else if (w == "nokpipe") f.no_frag_pipe = true;
      else if (w == "novlate") f.no_v_late = true;
      else if (w == "nopdltail") f.no_pdl_tail = true;
      else if (w == "nokvtail") f.no_kv_tail = true;
      else if (w == "nolean64") f.no_lean64 = true;
      else if (w == "kvsubwave") f.kv_subwave = true;
      else if (w == "nokvsubwave") f.no_kv_subwave = true;
      else if (w == "br64") f.br64 = true;
      else if (w == "br64short") f.br64_short = true;
      else if (w == "kvsubwave3")
        throw std::invalid_argument("FB_FLASH_FWD_PROBE: 'kvsubwave3' is the d = 128 default since call N "
                                    "(nokvsubwave runs the kernels before it; docs/perf-notes.md)");
      else if (w == "kvtail")
        throw std::invalid_argument("FB_FLASH_FWD_PROBE: 'kvtail' is the d = 128 default since session 31 "
                                    "(nokvtail runs the kernels before it; docs/perf-notes.md)");
      else if (w == "pdltail")
        throw std::invalid_argument("FB_FLASH_FWD_PROBE: 'pdltail' is the d = 128 default since session 30 "
                                    "(nopdltail runs the kernels before it; docs/perf-notes.md)");
      else if (w == "solotail")
        throw std::invalid_argument("FB_FLASH_FWD_PROBE: 'solotail' (a grid's partial last wave as a launch of its "
                                    "own at one block an SM) was measured and removed in session 30 "
                                    "(docs/perf-notes.md)");
      else if (w == "copylate" || w == "vlate" || w == "vlate64" || w == "kmid")
        throw std::invalid_argument("FB_FLASH_FWD_PROBE: '" + w +
                                    "': session 28 measured copylate, vlate, vlate64 and kmid; vlate became the "
                                    "d = 128 default (novlate runs the kernels before it), the others were removed "
                                    "(docs/perf-notes.md)");
      else if (w == "lse" || w == "kpipe" || w == "kpipelong")
        throw std::invalid_argument("FB_FLASH_FWD_PROBE: '" + w +
                                    "': lse was removed in session 15; kpipe and kpipelong became the default on "
                                    "non-causal d = 128 launches in session 15 (nokpipe runs the kernels before "
                                    "it; docs/perf-notes.md)");
      else if (w.size() > 4 && w.compare(0, 4, "band") == 0 &&
               w.find_first_not_of("0123456789", 4) == std::string::npos && w.size() <= 7)
        f.band = std::stoi(w.substr(4));
      else if (w == "cluster2" || w == "cluster4" || w == "cluster8")
        throw std::invalid_argument("FB_FLASH_FWD_PROBE: '" + w +
                                    "': clusterN (non-causal launches in thread-block clusters) was measured and "
                                    "removed in session 19 (docs/perf-notes.md)");
      else if (w.size() > 4 && w.compare(0, 4, "tail") == 0 &&
               w.find_first_not_of("0123456789", 4) == std::string::npos && w.size() <= 6)
        f.tail = std::stoi(w.substr(4));
      else
        throw std::invalid_argument("FB_FLASH_FWD_PROBE: '" + w +
                                    "' is not a flash forward probe (old, l2order, persist, persist2, pf, nopf, "
                                    "epi, pro, nokpipe, novlate, nopdltail, nokvtail, nolean64, kvsubwave, "
                                    "nokvsubwave, br64, br64short, "
                                    "bandN with N >= 0, tailN with N >= 0)");
    }
    if (f.no_prefetch && f.prefetch) throw std::invalid_argument("FB_FLASH_FWD_PROBE: nopf contradicts pf");
    // epi alone made ptxas spill a P value in every KV step at d = 128; with pro's prologue the loop is the default's.
    if (f.lean_epi && !f.lean_pro)
      throw std::invalid_argument("FB_FLASH_FWD_PROBE: epi is built with pro only (epi,pro)");
    if ((f.lean_epi || f.lean_pro) && (f.old || f.persist || f.persist_early || f.prefetch || f.no_prefetch))
      throw std::invalid_argument("FB_FLASH_FWD_PROBE: pro and epi take the default's kernel bits; they do not "
                                  "combine with old, persist, persist2, pf or nopf");
    // nokpipe, novlate, nopdltail: the shipped kernels and order less one bit, each alone (nopdltail's check first,
    // nokpipe's last: a pair of them is refused under the later word's name, as ever).
    const int words = int(f.old) + int(f.l2order) + int(f.band >= 0) + int(f.tail >= 0) + int(f.persist) +
                      int(f.persist_early) + int(f.prefetch) + int(f.no_prefetch) + int(f.lean_epi) + int(f.lean_pro) +
                      int(f.no_frag_pipe) + int(f.no_v_late) + int(f.no_pdl_tail) + int(f.no_kv_tail) +
                      int(f.no_lean64) + int(f.kv_subwave) + int(f.no_kv_subwave) + int(f.br64) + int(f.br64_short);
    if ((f.br64 || f.br64_short) && words > 1)
      throw std::invalid_argument(std::string("FB_FLASH_FWD_PROBE: ") + (f.br64_short ? "br64short" : "br64") +
                                  " runs the shipped kernels and order with 64-row tiles on grids of less than one "
                                  "wave; it takes no other word");
    if ((f.kv_subwave || f.no_kv_subwave) && words > 1)
      throw std::invalid_argument(std::string("FB_FLASH_FWD_PROBE: ") +
                                  (f.no_kv_subwave ? "nokvsubwave" : "kvsubwave") +
                                  " runs the shipped kernels and order with other pieces on grids of less than one "
                                  "wave; it takes no other word");
    if (f.no_lean64 && words > 1)
      throw std::invalid_argument("FB_FLASH_FWD_PROBE: nolean64 runs the shipped kernels and order less the lean "
                                  "prologue and epilogue at d = 64; it takes no other word");
    if (f.no_kv_tail && words > 1)
      throw std::invalid_argument("FB_FLASH_FWD_PROBE: nokvtail runs the shipped kernels and order less one bit; it "
                                  "takes no other word");
    if (f.no_pdl_tail && words > 1)
      throw std::invalid_argument("FB_FLASH_FWD_PROBE: nopdltail runs the shipped kernels and order less one bit; it "
                                  "takes no other word");
    if (f.no_v_late && words > 1)
      throw std::invalid_argument("FB_FLASH_FWD_PROBE: novlate runs the shipped kernels and order less one bit; it "
                                  "takes no other word");
    if (f.no_frag_pipe && words > 1)
      throw std::invalid_argument("FB_FLASH_FWD_PROBE: nokpipe runs the shipped kernels and order less one bit; "
                                  "it takes no other word");
    return f;
  });
  return probe;
}

int fwd_subwave_min_pieces() {
  if (fwd_probe().no_kv_subwave) return 0;
  return fwd_probe().kv_subwave ? 2 : kKvSubwaveMinPieces;
}

const char* unsupported_forward(const AttentionParams& p, Fp32Math math) {
  if (!listed(kTcHeadDims, p.head_dim)) return "flash: head_dim must be 32, 64, 96, 128 or 256";
  if (!is_16bit(p.dtype) && !listed(kFp32HeadDims, p.head_dim))
    return "flash: head_dim 96 and 256 run fp16/bf16 only (the fp32/fp64 tiles are 32, 64, 128)";
  if (p.batch < 1 || p.heads < 1 || p.kv_heads < 1 || p.seq_q < 1 || p.seq_k < 1)
    return "flash: batch, heads, kv_heads, seq_q and seq_k must be at least 1";
  if (p.heads % p.kv_heads != 0) return "flash: kv_heads must divide heads";
  if (!(p.scale > 0.0) || !std::isfinite(p.scale))
    return "flash: softmax scale must be positive and finite";
  if (const char* why = fp32_math_unsupported(p.dtype, math)) return why;
  const int br = query_tile(p, math);
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
  if (uses_tf32(p.dtype, math) && major < kTensorCoreMinMajor)
    return "flash: fp32 on TF32 tensor cores needs compute capability 8.0 or newer (the exact "
           "CUDA-core path runs anywhere)";
  // 16-bit: the smaller tiles' shared memory (run_fwd picks them where the default's does not fit).
  const std::size_t smem = uses_tf32(p.dtype, math) ? tf32_smem_bytes(p.head_dim)
                                              : with_config(p, [](auto cfg) {
                                                  return std::size_t(decltype(cfg)::SmallTraits::kSmemBytes);
                                                });
  if (smem > static_cast<std::size_t>(smem_optin))
    return "flash: this tile configuration needs more shared memory per block than the GPU offers";
  return nullptr;
}
const char* unsupported_forward(const AttentionParams& p) {
  return unsupported_forward(p, Fp32Math::tf32x3);
}

int query_tile(const AttentionParams& p, Fp32Math math) {
  if (uses_tf32(p.dtype, math)) return tf32_query_tile(p.head_dim);
  return with_config(p, [](auto cfg) { return decltype(cfg)::Traits::kBr; });
}
int query_tile(const AttentionParams& p) { return query_tile(p, Fp32Math::tf32x3); }

void forward(const AttentionParams& p, const Context& ctx, Fp32Math math) {
  if (const char* why = unsupported_forward(p, math)) throw std::invalid_argument(why);
  if (!p.q || !p.k || !p.v || !p.o || !p.lse)
    throw std::invalid_argument("flash forward: q, k, v, o and lse must be device pointers");
  const auto stream = static_cast<cudaStream_t>(ctx.stream);
  if (uses_tf32(p.dtype, math)) {
    with_tf32(p.head_dim, math, [&](auto d, auto m) {
      run_fwd_tf32<decltype(d)::value, decltype(m)::value>(p, stream);
    });
    return;
  }
  with_config(p, [&](auto cfg) {
    using Cfg = decltype(cfg);
    run_fwd<Cfg::kDtype, Cfg::kHeadDim>(p, stream);
  });
}
void forward(const AttentionParams& p, const Context& ctx) { forward(p, ctx, Fp32Math::tf32x3); }

std::size_t forward_workspace_bytes(const AttentionParams& p) {
  // Only the 16-bit d = 128 kernels can take any (kFwdKvTail); the rest, params no kernel runs, and a machine where
  // no device answers (the plan asks the device) take none.
  if (!is_16bit(p.dtype) || p.head_dim != 128 || p.causal || unsupported_forward(p) != nullptr) return 0;
  if (!current_device_caps()) return 0;
  return p.dtype == Dtype::bf16 ? fwd_workspace<Dtype::bf16, 128>(p) : fwd_workspace<Dtype::fp16, 128>(p);
}

}  // namespace fb::cuda::flash
