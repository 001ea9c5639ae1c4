// The one header the host side includes to talk to attention implementations.
//
// Every implementation (CPU naive/tiled/reference, CUDA naive/flash/reference) reads the same
// AttentionParams, so the runner does not care which one it runs.
//
// Layout (all tensors contiguous, "BHSD"):
//   Q, O, dO, dQ : [batch, heads,    seq_q, head_dim]
//   K, V, dK, dV : [batch, kv_heads, seq_k, head_dim]
//   LSE, D       : [batch, heads, seq_q]   natural-log log-sum-exp of the scaled scores; accumulator type
// Causal masking with seq_q != seq_k is aligned bottom-right (FlashAttention >= 2.1): query i sees keys
// j <= i + seq_k - seq_q (kernels/common/mask.h, the one definition every implementation uses). With
// seq_q > seq_k the first seq_q - seq_k query rows see no key: for such an empty row every
// implementation writes O = 0 and LSE = -inf, and the backward gives it dQ = 0 (it adds nothing to dK
// and dV). Comparisons count a -inf LSE matched by -inf as error 0.
// Query head h reads key/value head h / (heads / kv_heads) (GQA/MQA). BHSD keeps the g = heads/kv_heads
// query heads that share one K/V head contiguous, so the naive path can run them as one GEMM.
//
// Element types: fp64 -> double, fp32 -> float, fp16 -> IEEE half, bf16 -> bfloat16 (16-bit storage),
// fp8 -> OCP e4m3 (kernels/common/fp8.h) for Q, K, V only: an fp8 case writes O in bf16
// (output_dtype) and runs the forward only.
// Accumulator type (LSE, D, softmax statistics): double for fp64, float for everything else.
//
// FP8 (e4m3) with per-tensor scales: the caller quantises each of Q, K, V as x8 = e4m3(x / s_x)
// with s_x = amax(x) / 448 (1 when x is all zero) and passes s_q, s_k, s_v as the descale factors:
// the real tensor is x8 * s_x. A kernel dequantises exactly (e4m3 values are exact in fp32):
//   S = (scale * descale_q * descale_k) * Q8 K8^T                     fp32
//   P = exp(S - m) in [0, 1];  P8 = e4m3(P * p_scale)                  P quantised for P.V
//   O = (descale_v / p_scale) * (P8 V8) / rowsum(P)                    fp32, then rounded to bf16
// with the row sum taken from the fp32 P (as FlashAttention-3 does), LSE from the fp32 S. A tiled
// kernel quantises P per tile against its running max m; the naive path quantises the normalised P
// it stores (m = LSE, no division afterwards).
// p_scale = 2^8 (kFp8PScale): a power of two, so scaling is exact; P = 1 maps to 256 <= 448, and P
// down to 2^-14 stays normal in e4m3 (3 mantissa bits: relative rounding <= 2^-4).
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/mask.h"

namespace fb {

enum class Dtype { fp64, fp32, fp16, bf16, fp8 };

// Which pass a run times. fwd_bwd times both.
enum class Pass { fwd, bwd, fwd_bwd };

constexpr std::size_t dtype_bytes(Dtype t) {
  return t == Dtype::fp64 ? 8 : t == Dtype::fp32 ? 4 : t == Dtype::fp8 ? 1 : 2;
}
// Element type of O (and of dO, dQ, dK, dV where a pass has them): the inputs' own, bf16 for fp8.
constexpr Dtype output_dtype(Dtype t) { return t == Dtype::fp8 ? Dtype::bf16 : t; }
// Scale P is multiplied by before its e4m3 rounding for P.V (see above).
constexpr float kFp8PScale = 256.0f;
// Bytes of the accumulator type (LSE and softmax statistics).
constexpr std::size_t accum_bytes(Dtype t) { return t == Dtype::fp64 ? 8 : 4; }

struct AttentionParams {
  Dtype dtype = Dtype::fp32;
  int batch = 1;
  int heads = 1;
  int kv_heads = 1;  // divides heads
  int seq_q = 1;     // query rows: Q, O, dO, dQ, LSE
  int seq_k = 1;     // key rows: K, V, dK, dV
  int head_dim = 64;
  bool causal = false;
  double scale = 0.0;  // softmax scale, 1/sqrt(head_dim) unless set
  // KV splits of a split-KV kernel (flash-decode): 0 = the kernel chooses from the shape and the
  // device; other kernels ignore it (kernels/common/splitkv.h).
  int kv_splits = 0;
  // fp8 only (see above): Q, K, V hold e4m3 codes whose real values are code * descale_*; P is
  // quantised as e4m3(P * p_scale). Other dtypes ignore them.
  float descale_q = 1.0f;
  float descale_k = 1.0f;
  float descale_v = 1.0f;
  float p_scale = kFp8PScale;

  // Forward.
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;    // output_dtype(dtype)
  // Accumulator type. nullptr in a forward that no backward follows, for a family whose Ops::lse_optional says it
  // may be (it then writes O only: an inference forward, as cuDNN's without its Stats output).
  void* lse = nullptr;

  // Backward (the forward's O and LSE are inputs then).
  const void* dout = nullptr;
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;

  // Scratch owned by the caller, at least *_workspace_bytes(params) bytes (tracked by its allocator).
  void* workspace = nullptr;

  int group() const { return heads / kv_heads; }
  FB_HOST_DEVICE CausalMask mask() const { return CausalMask{seq_q, seq_k, causal}; }
  std::int64_t q_elems() const { return std::int64_t(batch) * heads * seq_q * head_dim; }
  std::int64_t kv_elems() const { return std::int64_t(batch) * kv_heads * seq_k * head_dim; }
  std::int64_t rows() const { return std::int64_t(batch) * heads * seq_q; }
};

}  // namespace fb

// ---------------------------------------------------------------------------------------------------
// CUDA entry points (defined in kernels/, built only when CUDA is enabled: FLASHBENCH_HAVE_CUDA).
// All pointers in params are device pointers. Every call checks its launches and cuBLAS calls and
// throws fb::CudaError (kernels/common/check.h) on failure.
namespace fb::cuda {

struct Context {
  void* stream = nullptr;  // cudaStream_t
  void* cublas = nullptr;  // cublasHandle_t, bound to `stream` (the naive path's GEMMs)
};

// One kernel family's entry points (a folder under kernels/). src/registry.cpp wraps each in a
// Descriptor; nothing else dispatches on kernels.
struct Ops {
  // nullptr when `pass` can run on these params on the current device, else why not.
  const char* (*unsupported)(Pass pass, const AttentionParams& p);
  // Scratch bytes params.workspace must hold for `pass`. For Pass::bwd/fwd_bwd it covers what the
  // forward keeps for the backward (the naive path's P) plus the backward's own scratch.
  std::size_t (*workspace_bytes)(Pass pass, const AttentionParams& p);
  // O and LSE from Q, K, V.
  void (*forward)(const AttentionParams& p, const Context& ctx);
  // dQ, dK, dV from Q, K, V, O, LSE, dO; a forward with the same workspace must have run first.
  void (*backward)(const AttentionParams& p, const Context& ctx);
  // Rows per tile along the dimension a tiled kernel loops over (query rows for the forward, key
  // rows for the backward), for the byte model; nullptr for untiled kernels.
  int (*tile)(Pass pass, const AttentionParams& p);
  // The forward takes params.lse == nullptr and then writes no log-sum-exp (the C API's inference forward,
  // include/flashbench/capi.h); false: it always writes LSE.
  bool lse_optional = false;
};

// Defined in each family's folder.
const Ops& naive_ops();       // kernels/naive
const Ops& flash_ops();       // kernels/flash
const Ops& flash_sm90_ops();  // kernels/flash_sm90
const Ops& flash_decode_ops();  // kernels/flash_decode: split-KV decode (seq_q small, long KV)
const Ops& reference_ops();   // kernels/reference: exact fp64, the yardstick
// kernels/cudnn, built only when configure found cuDNN (FLASHBENCH_HAVE_CUDNN): cuDNN's fused SDPA
// through its backend graph API, and the library's cudnnGetVersion() (e.g. 91400 for 9.14.0).
const Ops& cudnn_ops();
std::size_t cudnn_version();
// Variants for fp32 (kernels/flash/fp32_math.h); flash_ops() runs fp32 as 3xTF32 on tensor cores.
const Ops& flash_exact_ops();   // fp32 and fp64 on CUDA cores, exact arithmetic (refuses fp16/bf16)
const Ops& flash_tf32x1_ops();  // fp32 only, operands rounded to TF32 once: the diagnostic
const Ops& naive_tf32_ops();    // fp32 only, cuBLAS TF32 GEMMs (CUBLAS_COMPUTE_32F_FAST_TF32)
// flash_sm90_ops() runs the fp32 forward as 3xTF32 on wgmma; this is its 1xTF32 diagnostic (forward only).
const Ops& flash_sm90_tf32x1_ops();

// ---- utilities the CUDA backend uses around the kernels ----
// scale x standard normal values from (seed, stream_id), a counter-based RNG: same seed -> same tensor.
void fill_normal(void* dst, Dtype t, std::int64_t n, std::uint64_t seed, std::uint64_t stream_id,
                 const Context& ctx, double scale = 1.0);
// fp8 (see above): values drawn as fill_normal draws fp32 ones (same seed, stream and scale), quantised
// with their own per-tensor scale s = amax / 448 (1 when all are zero): dst = e4m3(x / s), the CPU
// backend's rule. Returns s, the descale; synchronises the stream (s is read back).
float fill_normal_fp8(void* dst, std::int64_t n, std::uint64_t seed, std::uint64_t stream_id,
                      const Context& ctx, double scale = 1.0);
// dst[i] = double(src[i]); for fp8, the code's value times `factor` (its descale: the real tensor).
// Other dtypes take factor 1.
void to_fp64(const void* src, Dtype t, double* dst, std::int64_t n, const Context& ctx, double factor = 1.0);

// Reads every 16 bytes of buf (bytes a multiple of 16) on the stream, writing nothing unless the XOR of all of it is a
// magic value (then to *sink, so the loads cannot be dropped): the L2 flush's clean step (cuda_resources.h L2Flush),
// which leaves the L2 holding clean lines of buf.
void read_all(const void* buf, std::size_t bytes, unsigned* sink, void* stream);

struct Diff {
  double max_abs = 0.0;        // max |a - b| over finite pairs
  std::int64_t nonfinite = 0;  // elements where a is NaN/Inf (unwritten poison counts here)
  double b_max_abs = 0.0;      // max |b| over finite b: the scale of the yardstick
};
// Compares a (type ta) with b (fp64) elementwise; synchronises the stream.
Diff max_abs_diff(const void* a, Dtype ta, const double* b, std::int64_t n, const Context& ctx);
// Same with b of type tb.
Diff max_abs_diff_typed(const void* a, Dtype ta, const void* b, Dtype tb, std::int64_t n,
                        const Context& ctx);

}  // namespace fb::cuda
