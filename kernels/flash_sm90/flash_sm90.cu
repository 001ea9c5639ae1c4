// The Hopper kernels' host side: checks, tensor maps, and the forward's one runtime -> template
// dispatch on (dtype, head_dim). The backward's launcher is flash_sm90_bwd.cu.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include <cuda.h>
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled
#include <cuda_runtime.h>

#include "common/check.h"
#include "common/device_caps.h"
#include "common/ptx_sm90.cuh"
#include "flash_sm90/flash_sm90.h"
#include "flash_sm90/flash_sm90_bwd.h"
#include "flash_sm90/flash_sm90_config.h"
#include "flash_sm90/flash_sm90_fp8.h"
#include "flash_sm90/flash_sm90_tf32.h"
#include "flash_sm90/flash_sm90_tma.h"

namespace fb::cuda::flash_sm90 {

// 1 in the image compiled for sm_90a, 0 in every other one: the host reads the copy of the image the
// runtime loaded for the current device, which tells whether the kernels there have real bodies.
__device__ int g_flash_sm90_device_code = FB_PTX_SM90A;

namespace {

// Calls f(FwdConfig<T, D>{}) for the runtime (dtype, head_dim); unsupported() vets both first.
template <Dtype T, typename F> auto with_head_dim(int head_dim, F&& f) {
  switch (head_dim) {
    case 64: return f(FwdConfig<T, 64>{});
    case 128: return f(FwdConfig<T, 128>{});
    case 256: return f(FwdConfig<T, 256>{});
    default: break;
  }
  throw std::invalid_argument("flash-sm90: head_dim " + std::to_string(head_dim) +
                              " not supported (64, 128, 256)");
}
template <typename F> auto with_config(const AttentionParams& p, F&& f) {
  switch (p.dtype) {
    case Dtype::fp16: return with_head_dim<Dtype::fp16>(p.head_dim, f);
    case Dtype::bf16: return with_head_dim<Dtype::bf16>(p.head_dim, f);
    default: break;
  }
  throw std::invalid_argument("flash-sm90: dtype must be fp16 or bf16");
}

// The forward numbers its work tiles (batch * heads * query tiles) in an int.
constexpr long long kMaxWorkTiles = std::numeric_limits<int>::max();
// The fp32 forward's grid: x counts (batch * heads) blocks, y the query tiles.
constexpr long long kMaxGridX = std::numeric_limits<int>::max();
constexpr long long kMaxGridY = 65535;
// wgmma, TMA and setmaxnreg exist on compute capability 9.0 (sm_90a) only.
constexpr int kArchMajor = 9;
constexpr int kArchMinor = 0;
// TMA global addresses must be 16-byte aligned.
constexpr std::uintptr_t kTmaAlign = 16;

// Whether the image loaded for `dev` carries the sm_90a kernels, asked once per device.
constexpr int kMaxDevices = 64;
enum : int { kUnknown = 0, kNoCode = 1, kHasCode = 2 };
std::array<std::atomic<int>, kMaxDevices> g_device_code{};

bool device_code_loaded(int dev) {
  if (dev < 0 || dev >= kMaxDevices) return false;
  int known = g_device_code[dev].load();
  if (known == kUnknown) {
    int flag = 0;
    const cudaError_t err = cudaMemcpyFromSymbol(&flag, g_flash_sm90_device_code, sizeof(flag));
    (void)cudaGetLastError();  // a failed query must not surface as the next launch's error
    known = err == cudaSuccess && flag == 1 ? kHasCode : kNoCode;
    g_device_code[dev].store(known);
  }
  return known == kHasCode;
}

bool configured_head_dim(int head_dim) {
  for (int d : kHeadDims)
    if (d == head_dim) return true;
  return false;
}

bool misaligned(const void* ptr) {
  return ptr != nullptr && reinterpret_cast<std::uintptr_t>(ptr) % kTmaAlign != 0;
}

PFN_cuTensorMapEncodeTiled_v12000 encode_tiled_fn() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    constexpr unsigned kDriverApiVersion = 12000;  // the cuTensorMapEncodeTiled ABI introduced in 12.0
    FB_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, kDriverApiVersion,
                                                   cudaEnableDefault, &found));
#else  // toolkits before 12.5 have only the unversioned query (deprecated since)
    FB_CUDA_CHECK(cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &f, cudaEnableDefault, &found));
#endif
    if (found != cudaDriverEntryPointSuccess || f == nullptr)
      throw CudaError("flash-sm90: the CUDA driver offers no cuTensorMapEncodeTiled (needs 12.0+)");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

}  // namespace

void encode_bhsd_map(CUtensorMap* map, Dtype t, const void* base, int head_dim, int seq,
                     std::int64_t planes, int box_cols, int box_rows) {
  constexpr cuuint32_t kRank = 3;
  const std::uint64_t elem = dtype_bytes(t);
  const cuuint64_t dims[kRank] = {cuuint64_t(head_dim), cuuint64_t(seq), cuuint64_t(planes)};
  // Byte strides of dimensions 1 and 2 (dimension 0 is contiguous).
  const cuuint64_t strides[kRank - 1] = {cuuint64_t(head_dim) * elem,
                                         cuuint64_t(head_dim) * cuuint64_t(seq) * elem};
  const cuuint32_t box[kRank] = {cuuint32_t(box_cols), cuuint32_t(box_rows), 1};
  const cuuint32_t element_strides[kRank] = {1, 1, 1};
  const CUtensorMapDataType type = t == Dtype::bf16   ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                   : t == Dtype::fp32 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                                      : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const CUresult r = encode_tiled_fn()(
      map, type, kRank, const_cast<void*>(base), dims, strides, box, element_strides,
      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);  // NONE = out-of-bounds elements read as zeros
  if (r != CUDA_SUCCESS)
    throw CudaError("flash-sm90: cuTensorMapEncodeTiled failed (CUresult " + std::to_string(int(r)) +
                    ") for a [" + std::to_string(planes) + ", " + std::to_string(seq) + ", " +
                    std::to_string(head_dim) + "] tensor");
}

void encode_u8_map(CUtensorMap* map, const void* base, std::int64_t cols, std::int64_t rows,
                   std::int64_t planes, int box_cols, int box_rows, int swizzle_bytes) {
  constexpr cuuint32_t kRank = 3;
  const cuuint64_t dims[kRank] = {cuuint64_t(cols), cuuint64_t(rows), cuuint64_t(planes)};
  const cuuint64_t strides[kRank - 1] = {cuuint64_t(cols), cuuint64_t(cols) * cuuint64_t(rows)};
  const cuuint32_t box[kRank] = {cuuint32_t(box_cols), cuuint32_t(box_rows), 1};
  const cuuint32_t element_strides[kRank] = {1, 1, 1};
  const CUtensorMapSwizzle swizzle =
      swizzle_bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B;
  const CUresult r = encode_tiled_fn()(
      map, CU_TENSOR_MAP_DATA_TYPE_UINT8, kRank, const_cast<void*>(base), dims, strides, box,
      element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw CudaError("flash-sm90: cuTensorMapEncodeTiled failed (CUresult " + std::to_string(int(r)) +
                    ") for an e4m3 [" + std::to_string(planes) + ", " + std::to_string(rows) + ", " +
                    std::to_string(cols) + "] tensor");
}

namespace {

// Query rows per block and shared memory of the forward for p's dtype and head_dim (vetted).
int forward_query_tile(const AttentionParams& p) {
  if (p.dtype == Dtype::fp32) return tf32_query_tile(p.head_dim);
  if (p.dtype == Dtype::fp8) return fp8_query_tile(p.head_dim);
  return with_config(p, [](auto cfg) { return decltype(cfg)::Traits::kBr; });
}
std::size_t forward_smem_bytes(const AttentionParams& p) {
  if (p.dtype == Dtype::fp32) return tf32_smem_bytes(p.head_dim);
  if (p.dtype == Dtype::fp8) return fp8_smem_bytes(p.head_dim);
  return with_config(p, [](auto cfg) { return std::size_t(decltype(cfg)::Traits::kSmemBytes); });
}

// The checks of the forward kernels (every dtype); tf32x1 names the diagnostic in messages.
const char* forward_unsupported(const AttentionParams& p, bool tf32x1);
// The fp32 backward's (its forward runs first, so the forward's checks too).
const char* fp32_backward_unsupported(const AttentionParams& p, bool tf32x1);

}  // namespace

// fp32: the forward and the backward are 3xTF32 on wgmma (flash_sm90_tf32_kernel.cuh,
// flash_sm90_tf32_bwd_kernel.cuh).
// fp8: the forward only, on e4m3 wgmma (flash_sm90_fp8_kernel.cuh), d = 64 or 128.
const char* unsupported(Pass pass, const AttentionParams& p) {
  if (p.dtype == Dtype::fp8) {
    if (pass != Pass::fwd) return "flash-sm90: fp8 runs the forward only (no fp8 backward is built)";
    return forward_unsupported(p, false);
  }
  if (pass != Pass::fwd && p.dtype == Dtype::fp32) return fp32_backward_unsupported(p, false);
  if (pass != Pass::fwd) {
    if (const char* why = backward_unsupported(p)) return why;
    if (misaligned(p.dout) || misaligned(p.dq))
      return "flash-sm90: dout and dq must be 16-byte aligned (TMA, vector stores)";
  }
  if (p.dtype != Dtype::fp16 && p.dtype != Dtype::bf16 && p.dtype != Dtype::fp32)
    return "flash-sm90: dtype must be fp16, bf16 or fp32";
  if (const char* why = forward_unsupported(p, false)) return why;
  const auto caps = current_device_caps();  // present: forward_unsupported asked for it
  if (pass != Pass::fwd && caps && backward_smem_bytes(p) > static_cast<std::size_t>(caps->smem_optin))
    return "flash-sm90: the backward's tile configuration needs more shared memory per block than "
           "the GPU offers";
  return nullptr;
}

const char* unsupported_tf32x1(Pass pass, const AttentionParams& p) {
  if (p.dtype != Dtype::fp32)
    return "flash-sm90-tf32x1: fp32 only (a diagnostic mode of the fp32 wgmma kernels)";
  if (pass != Pass::fwd) return fp32_backward_unsupported(p, true);
  return forward_unsupported(p, true);
}

namespace {

const char* forward_unsupported(const AttentionParams& p, bool tf32x1) {
  if (p.dtype != Dtype::fp16 && p.dtype != Dtype::bf16 && p.dtype != Dtype::fp32 &&
      p.dtype != Dtype::fp8)
    return "flash-sm90: dtype must be fp16, bf16, fp32 or fp8";
  if (!configured_head_dim(p.head_dim)) return "flash-sm90: head_dim must be 64, 128 or 256";
  if (p.dtype == Dtype::fp8) {
    if (!fp8_head_dim(p.head_dim))
      return "flash-sm90: fp8 runs head_dim 64 and 128 only (a Q/K row is one swizzle row)";
    // P' = exp2(s - m + log2 p_scale) is P * p_scale exactly only for a power of two.
    int exp = 0;
    if (!(p.p_scale > 0.f) || !std::isfinite(p.p_scale) || std::frexp(p.p_scale, &exp) != 0.5f)
      return "flash-sm90: fp8 needs p_scale to be a power of two";
    if (!(p.descale_q > 0.f && p.descale_k > 0.f && p.descale_v > 0.f) ||
        !std::isfinite(p.descale_q * p.descale_k) || !std::isfinite(p.descale_v))
      return "flash-sm90: fp8 descales must be positive and finite";
  }
  if (p.dtype == Dtype::fp32 && p.head_dim == 256)
    return "flash-sm90: head_dim 256 runs fp16/bf16 only (the fp32 forward's tiles stop at 128)";
  if (p.batch < 1 || p.heads < 1 || p.kv_heads < 1 || p.seq_q < 1 || p.seq_k < 1)
    return "flash-sm90: batch, heads, kv_heads, seq_q and seq_k must be at least 1";
  if (p.heads % p.kv_heads != 0) return "flash-sm90: kv_heads must divide heads";
  if (!(p.scale > 0.0) || !std::isfinite(p.scale))
    return "flash-sm90: softmax scale must be positive and finite";
  const int br = forward_query_tile(p);
  const long long q_tiles = (static_cast<long long>(p.seq_q) + br - 1) / br;
  if (p.dtype == Dtype::fp32) {  // one block per (plane, query tile)
    if (static_cast<long long>(p.batch) * p.heads > kMaxGridX)
      return "flash-sm90: batch * heads exceeds the grid limit";
    if (q_tiles > kMaxGridY) return "flash-sm90: seq_q exceeds the grid limit (65535 query tiles)";
  } else if (static_cast<long long>(p.batch) * p.heads * q_tiles > kMaxWorkTiles) {
    return "flash-sm90: batch * heads * query tiles exceeds 2^31 - 1 (the work-tile index)";
  }
  if (misaligned(p.q) || misaligned(p.k) || misaligned(p.v) || misaligned(p.o) ||
      (p.dtype == Dtype::fp8 && misaligned(p.workspace)))
    return "flash-sm90: q, k, v, o (and fp8's workspace) must be 16-byte aligned (TMA)";

  const auto caps = current_device_caps();
  if (!caps) return "flash-sm90: no CUDA device answered (needs compute capability 9.0)";
  const int dev = caps->device, major = caps->major, minor = caps->minor, smem_optin = caps->smem_optin;
  if (major != kArchMajor || minor != kArchMinor)
    return "flash-sm90: needs a compute capability 9.0 GPU (H100/H200: wgmma, TMA, sm_90a)";
  if (!device_code_loaded(dev))
    return "flash-sm90: this build has no sm_90a device code (configure with "
           "CMAKE_CUDA_ARCHITECTURES including 90a)";
  if (forward_smem_bytes(p) > static_cast<std::size_t>(smem_optin))
    return tf32x1 ? "flash-sm90-tf32x1: the tile configuration needs more shared memory per block "
                    "than the GPU offers"
                  : "flash-sm90: this tile configuration needs more shared memory per block than "
                    "the GPU offers";
  return nullptr;
}

const char* fp32_backward_unsupported(const AttentionParams& p, bool tf32x1) {
  if (const char* why = forward_unsupported(p, tf32x1)) return why;
  if (const char* why = tf32_backward_unsupported(p)) return why;
  if (misaligned(p.dout) || misaligned(p.dq) || misaligned(p.dk) || misaligned(p.dv))
    return "flash-sm90: dout, dq, dk and dv must be 16-byte aligned (TMA, vector stores and reductions)";
  const auto caps = current_device_caps();  // present: forward_unsupported asked for it
  if (caps && tf32_backward_smem_bytes(p.head_dim) > static_cast<std::size_t>(caps->smem_optin))
    return "flash-sm90: the fp32 backward's tile configuration needs more shared memory per block "
           "than the GPU offers";
  return nullptr;
}

}  // namespace

// The forward writes LSE as an output; its scratch: fp8's V transposed (flash_sm90_fp8.h), the 16-bit d = 64
// forward's split parts where it splits the last round of work tiles (fwd_workspace_bytes, flash_sm90_split.h; else
// none). A backward case runs the forward first with the backward's workspace (one allocation, the forward done with
// it before the backward starts on the same stream), so that one covers the larger of the two.
std::size_t workspace_bytes(Pass pass, const AttentionParams& p) {
  if (p.dtype == Dtype::fp8) return fp8_head_dim(p.head_dim) ? fp8_workspace_bytes(p) : 0;
  if (p.dtype == Dtype::fp32) return pass == Pass::fwd ? 0 : tf32_backward_workspace_bytes(p);
  if (p.dtype != Dtype::fp16 && p.dtype != Dtype::bf16) return 0;
  const std::size_t fwd = configured_head_dim(p.head_dim) ? with_config(p, [&](auto cfg) {
    using Cfg = decltype(cfg);
    return fwd_workspace_bytes<Cfg::kDtype, Cfg::kHeadDim>(p);
  })
                                                          : 0;
  if (pass == Pass::fwd) return fwd;
  return std::max(fwd, backward_workspace_bytes(p));
}

void forward(const AttentionParams& p, const Context& ctx) {
  if (const char* why = unsupported(Pass::fwd, p)) throw std::invalid_argument(why);
  if (!p.q || !p.k || !p.v || !p.o)  // lse may be nullptr: an inference forward writes O only
    throw std::invalid_argument("flash-sm90 forward: q, k, v and o must be device pointers");
  const auto stream = static_cast<cudaStream_t>(ctx.stream);
  if (p.dtype == Dtype::fp32) {
    if (p.head_dim == 64) run_tf32_fwd<64, true>(p, stream);
    else run_tf32_fwd<128, true>(p, stream);
    return;
  }
  if (p.dtype == Dtype::fp8) {
    if (!p.workspace)
      throw std::invalid_argument("flash-sm90 forward: fp8 needs its workspace (V transposed)");
    if (p.head_dim == 64) run_fp8_fwd<64>(p, stream);
    else run_fp8_fwd<128>(p, stream);
    return;
  }
  with_config(p, [&](auto cfg) {
    using Cfg = decltype(cfg);
    run_fwd<Cfg::kDtype, Cfg::kHeadDim>(p, stream);
  });
}

void backward(const AttentionParams& p, const Context& ctx) {
  if (const char* why = unsupported(Pass::bwd, p)) throw std::invalid_argument(why);
  if (p.dtype == Dtype::fp32) return run_tf32_backward(p, ctx, /*split=*/true);
  run_backward(p, ctx);
}

int query_tile(const AttentionParams& p) {
  const bool configured = configured_head_dim(p.head_dim) &&
                          (p.dtype == Dtype::fp16 || p.dtype == Dtype::bf16 ||
                           (p.dtype == Dtype::fp32 && p.head_dim != 256) ||
                           (p.dtype == Dtype::fp8 && fp8_head_dim(p.head_dim)));
  return configured ? forward_query_tile(p) : 0;
}

void forward_tf32x1(const AttentionParams& p, const Context& ctx) {
  if (const char* why = unsupported_tf32x1(Pass::fwd, p)) throw std::invalid_argument(why);
  if (!p.q || !p.k || !p.v || !p.o)  // lse may be nullptr, as in forward()
    throw std::invalid_argument("flash-sm90-tf32x1 forward: q, k, v and o must be device pointers");
  const auto stream = static_cast<cudaStream_t>(ctx.stream);
  if (p.head_dim == 64) run_tf32_fwd<64, false>(p, stream);
  else run_tf32_fwd<128, false>(p, stream);
}

void backward_tf32x1(const AttentionParams& p, const Context& ctx) {
  if (const char* why = unsupported_tf32x1(Pass::bwd, p)) throw std::invalid_argument(why);
  run_tf32_backward(p, ctx, /*split=*/false);
}

}  // namespace fb::cuda::flash_sm90
