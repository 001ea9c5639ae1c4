// Split-KV decode: support checks, the split plan and the runtime -> configuration dispatch.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include <cstdint>

#include <cuda_fp16.h>

#include "common/check.h"
#include "common/device_caps.h"
#include "common/ptx_sm90.cuh"
#include "flash_decode/flash_decode.h"
#include "flash_decode/flash_decode_traits.h"

namespace fb::cuda::decode {

// 1 in the image compiled for sm_90a, 0 in the others: the TMA ring's kernels have bodies only there
// (an sm_90 build without 90a traps in them), so the host reads which image the device loaded.
__device__ int g_decode_sm90a_code = FB_PTX_SM90A;

Shape shape_for(const AttentionParams& p) {
  // The table of flash_decode_launch.cuh: rows per CTA and keys per tile of Cfg16 .. Cfg128.
  const int rows = p.group() * p.seq_q;
  if (rows <= 16) return {16, p.head_dim == 64 ? kTileKeys16<64> : kTileKeys16<128>};
  if (rows <= 32) return {32, 64};
  if (rows <= 64) return {64, 32};
  return {128, 32};
}

const char* unsupported(Pass pass, const AttentionParams& p) {
  if (pass != Pass::fwd)
    return "flash-decode is forward-only (a decode step has no backward); the backward runs on flash / "
           "flash-sm90";
  if (p.dtype != Dtype::fp16 && p.dtype != Dtype::bf16) return "flash-decode runs fp16 and bf16 only";
  if (p.head_dim != 64 && p.head_dim != 128) return "flash-decode supports head_dim 64 and 128";
  if (p.seq_q > kMaxSeqQ)
    return "flash-decode is for decoding, seq_q <= 64 query rows against the KV cache; longer query "
           "blocks run on flash / flash-sm90";
  if (p.kv_splits < 0 || p.kv_splits > kMaxKvSplits) return "flash-decode: splits must be 0 (auto) .. 1024";
  const auto caps = current_device_caps();
  if (!caps) return "flash-decode: no CUDA device answers";
  if (caps->major < 8) return "flash-decode needs sm_80 or newer (mma.sync bf16, cp.async)";
  return nullptr;
}

const Probes& probes() {
  static const Probes read = [] {
    const auto env = [](const char* name) {
      const char* v = std::getenv(name);
      return std::string(v ? v : "");
    };
    const auto bad = [](const char* name, const std::string& v, const char* allowed) {
      return std::invalid_argument(std::string(name) + " (a timing probe of flash-decode) must be " + allowed +
                                   ", got '" + v + "'");
    };
    Probes pr;  // unset variables keep the defaults of flash_decode.h
    const std::string sync = env("FB_DECODE_SYNC");
    if (sync == "warp" || sync == "block") pr.warp_ring = sync == "warp";
    else if (!sync.empty()) throw bad("FB_DECODE_SYNC", sync, "'block' or 'warp'");
    const std::string l2 = env("FB_DECODE_L2");
    if (l2 == "128") pr.l2 = L2Hint::p128;
    else if (l2 == "256") pr.l2 = L2Hint::p256;
    else if (l2 == "ef256") pr.l2 = L2Hint::evict256;
    else if (l2 == "0") pr.l2 = L2Hint::none;
    else if (!l2.empty()) throw bad("FB_DECODE_L2", l2, "0, 128, 256 or ef256");
    const std::string sk = env("FB_DECODE_STREAMK");
    if (sk == "1" || sk == "0") pr.stream_k = sk == "1";
    else if (!sk.empty()) throw bad("FB_DECODE_STREAMK", sk, "0 or 1");
    const std::string rot = env("FB_DECODE_ROTATE");
    if (rot == "1" || rot == "0") pr.rotate = rot == "1";
    else if (!rot.empty()) throw bad("FB_DECODE_ROTATE", rot, "0 or 1");
    const std::string ctas = env("FB_DECODE_CTAS");
    if (!ctas.empty()) {
      if (ctas.size() != 1 || ctas[0] < '0' || ctas[0] > '8') throw bad("FB_DECODE_CTAS", ctas, "0 .. 8");
      pr.ctas_per_sm = ctas[0] - '0';
    }
    return pr;
  }();
  return read;
}

SplitPlan plan(const AttentionParams& p) {
  const int sms = current_sm_count();
  const Shape s = shape_for(p);
  const long long rows = static_cast<long long>(p.group()) * p.seq_q;
  const long long base = static_cast<long long>(p.batch) * p.kv_heads * ((rows + s.rows_per_cta - 1) / s.rows_per_cta);
  const int forced = s.rows_per_cta <= 16 ? probes().ctas_per_sm : 0;
  const long long target = static_cast<long long>(forced > 0 ? forced : auto_ctas_per_sm(s.rows_per_cta)) * sms;
  return plan_splits(p.seq_k, p.kv_splits, base, target, kMinKeysPerSplit, s.tile_keys);
}

StreamPlan stream_plan(const AttentionParams& p) {
  StreamPlan sk;
  const Shape s = shape_for(p);
  if (!probes().stream_k || p.kv_splits != 0 || s.rows_per_cta > 16) return sk;
  const Ring ring = ring_for(p, plan(p));
  if (ring == Ring::tma || ring == Ring::tma_deep) return sk;  // stream-K runs the cp.async rings only
  const long long total = static_cast<long long>(p.batch) * p.kv_heads * p.seq_k;
  const long long per_sm = probes().ctas_per_sm > 0 ? probes().ctas_per_sm : 2;
  const long long ctas = per_sm * current_sm_count();
  // Not rounded to whole tiles: that would leave up to a tile's worth of CTAs a wave idle (1024-key
  // ranges at batch 1, 32k keys: 256 CTAs for 264 places); a range's partial end tiles are masked.
  long long per = (total + ctas - 1) / ctas;
  if (per < kMinKeysPerSplit) per = kMinKeysPerSplit;
  sk.keys_per_cta = per;
  sk.ctas = static_cast<int>((total + per - 1) / per);
  // A run of seq_k keys meets at most ceil(seq_k / per) + 1 ranges of per keys.
  const long long pieces = (p.seq_k + per - 1) / per + 1;
  sk.max_pieces = static_cast<int>(pieces < sk.ctas ? pieces : sk.ctas);
  return sk;
}

std::size_t workspace_bytes(Pass pass, const AttentionParams& p) {
  if (pass != Pass::fwd || unsupported(pass, p)) return 0;
  const StreamPlan sk = stream_plan(p);
  if (sk.keys_per_cta > 0) {
    if (sk.max_pieces <= 1) return 0;
    return std::size_t(sk.max_pieces) * std::size_t(p.rows()) * std::size_t(p.head_dim + 1) * sizeof(float);
  }
  const SplitPlan sp = plan(p);
  if (sp.splits <= 1) return 0;
  // Partial O [splits, rows, d] and LSE [splits, rows], fp32.
  return std::size_t(sp.splits) * std::size_t(p.rows()) * std::size_t(p.head_dim + 1) * sizeof(float);
}

namespace {

// The device's answers ring_for needs, once per device (it runs on every forward, between timing events).
struct Known {
  int major = 0;
  int smem_optin = 0;
  int sms = 0;
  bool sm90a = false;  // the loaded image has the TMA ring's code
};
Known known_device() {
  static std::mutex mu;
  static std::map<int, Known> known;
  int device = 0;
  FB_CUDA_CHECK(cudaGetDevice(&device));
  const std::lock_guard<std::mutex> lock(mu);
  auto it = known.find(device);
  if (it == known.end()) {
    const auto caps = current_device_caps();
    int code = 0;
    const cudaError_t err = cudaMemcpyFromSymbol(&code, g_decode_sm90a_code, sizeof(code));
    (void)cudaGetLastError();  // a failed query means no TMA ring, not the next launch's error
    const bool sm90a = err == cudaSuccess && code == 1;
    if (!caps) return Known{};
    it = known.emplace(device, Known{caps->major, caps->smem_optin, current_sm_count(), sm90a}).first;
  }
  return it->second;
}

// TMA reads through tensor maps: 16-byte aligned bases (cudaMalloc's are; a caller's views may not be).
bool tma_aligned(const AttentionParams& p) {
  const auto aligned = [](const void* x) { return reinterpret_cast<std::uintptr_t>(x) % 16 == 0; };
  return aligned(p.k) && aligned(p.v);
}

// The default for up to sixteen rows a head, per shape, from session 7's calls A and B (one row, GQA
// 32/8, bf16; every setting measured twice; docs/perf-notes.md): at d = 128 on an sm_90a image, the
// cp.async ring with the .L2::128B hint where the grid is at most one CTA per SM and each CTA streams
// >= 8192 keys (batch 16 at 32k keys: 504-507 us against 520-524 on TMA; batch 1 at 128k: 141-142
// against 144), the TMA ring elsewhere (batch 256: 1012-1016 us against 1030-1032 and 1060-1063 on the
// plain cp.async ring; batch 1-16 at 4k keys +3-14%); the plain cp.async ring otherwise (d = 64: TMA
// not measured there).
Ring default_ring(const AttentionParams& p, const SplitPlan& sp) {
  if (p.head_dim != 128) return Ring::standard;
  const Known k = known_device();
  if (k.major != 9 || !k.sm90a || !tma_aligned(p)) return Ring::standard;
  const long long ctas = static_cast<long long>(p.batch) * p.kv_heads * sp.splits;
  if (ctas <= k.sms && sp.keys_per_split >= kLongSplitKeys) return Ring::standard_l2;
  return Ring::tma;
}

}  // namespace

Ring ring_for(const AttentionParams& p, const SplitPlan& sp) {
  // Read once: an A/B switch for a whole run, not a per-case setting.
  static const std::string forced = [] {
    const char* v = std::getenv("FB_DECODE_RING");
    return std::string(v ? v : "");
  }();
  if (shape_for(p).rows_per_cta > 16) return Ring::standard;
  if (forced.empty()) return default_ring(p, sp);
  if (forced == "std" || forced == "cpasync") return Ring::standard;
  if (forced == "small") return Ring::small;
  const bool tma = forced == "tma" || forced == "tmadeep";
  if (!tma && forced != "deep" && forced != "deepall")
    throw std::invalid_argument("FB_DECODE_RING (flash-decode's K/V ring) must be tma, tmadeep, std, deep, "
                                "deepall or small, got '" + forced + "'");
  if (tma && !tma_aligned(p)) return Ring::standard;
  const Known k = known_device();
  if (tma && (k.major != 9 || !k.sm90a)) return Ring::standard;
  if (forced == "tma") return Ring::tma;
  const std::size_t deep_bytes = p.head_dim == 64 ? CfgDeep<__half, 64>::kSmemBytes : CfgDeep<__half, 128>::kSmemBytes;
  const long long ctas = static_cast<long long>(p.batch) * p.kv_heads * sp.splits;
  if (std::size_t(k.smem_optin) < deep_bytes || (forced != "deepall" && ctas > k.sms))
    return tma ? Ring::tma : Ring::standard;
  return tma ? Ring::tma_deep : Ring::deep;
}

void forward(const AttentionParams& p, const Context& ctx) {
  const SplitPlan sp = plan(p);
  const StreamPlan sk = stream_plan(p);
  if ((sk.keys_per_cta > 0 ? sk.max_pieces : sp.splits) > 1 && p.workspace == nullptr)
    throw std::invalid_argument("flash-decode: params.workspace is null (workspace_bytes() asks for it)");
  const auto stream = static_cast<cudaStream_t>(ctx.stream);
  const Ring ring = ring_for(p, sp);
  if (p.head_dim == 64) launch_hdim64(p, sp, sk, ring, stream);
  else launch_hdim128(p, sp, sk, ring, stream);
}

}  // namespace fb::cuda::decode
