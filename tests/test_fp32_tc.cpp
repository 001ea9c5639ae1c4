// GPU tests [gpu] of fp32 on tensor cores: the flash kernel's Fp32Math modes (kernels/flash/fp32_math.h:
// 3xTF32, the exact CUDA-core path, the 1xTF32 diagnostic) and naive's TF32 GEMMs, called through
// their entry points and judged against the fp64 reference with the FP32 rule of src/judge.h:
//   err(kernel) <= f * err(naive fp32) + 2 ulps of fp32 at max|ref|,  f = 2 (O, LSE), 3 (gradients)
// 3xTF32 and the exact path must pass it; 1xTF32 must fail it, by a wide margin, or the rule would be
// too loose to tell TF32 from fp32.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "attention.h"
#include "catch.h"
#include "common/check.h"
#include "flash/flash.h"
#include "flash_sm90/flash_sm90.h"
#include "judge.h"
#include "naive/naive.h"
#include "reference/reference.h"

namespace {

using namespace fb;
namespace flash = fb::cuda::flash;
using flash::Fp32Math;

constexpr std::uint64_t kSeed = 20261130;
// 1xTF32 rounds every operand to 11 significant bits (~2^-12 relative), 3xTF32 keeps ~22: their
// errors differ by orders of magnitude. 10x is far inside that and far outside run-to-run noise.
constexpr double kTf32x1Margin = 10.0;

struct DeviceMem {
  void* p = nullptr;
  explicit DeviceMem(std::size_t bytes) { FB_CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(bytes, 16))); }
  DeviceMem(const DeviceMem&) = delete;
  DeviceMem& operator=(const DeviceMem&) = delete;
  ~DeviceMem() { FB_CUDA_CHECK_NOTHROW(cudaFree(p)); }
};

class Cublas {
 public:
  Cublas() { FB_CUBLAS_CHECK(cublasCreate(&h_)); }
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;
  ~Cublas() { cublasDestroy(h_); }
  cublasHandle_t get() const { return h_; }

 private:
  cublasHandle_t h_ = nullptr;
};

struct Shape {
  int batch, heads, kv_heads, seq_q, seq_k, head_dim;
  bool causal;
  std::string key() const {
    const std::string n = seq_q == seq_k ? std::to_string(seq_q)
                                         : std::to_string(seq_q) + "x" + std::to_string(seq_k);
    return "b" + std::to_string(batch) + " h" + std::to_string(heads) + "/" + std::to_string(kv_heads) +
           " N" + n + " d" + std::to_string(head_dim) + (causal ? " causal" : "");
  }
};

AttentionParams params_of(const Shape& s, Dtype t) {
  AttentionParams p;
  p.dtype = t;
  p.batch = s.batch;
  p.heads = s.heads;
  p.kv_heads = s.kv_heads;
  p.seq_q = s.seq_q;
  p.seq_k = s.seq_k;
  p.head_dim = s.head_dim;
  p.causal = s.causal;
  p.scale = 1.0 / std::sqrt(double(s.head_dim));
  return p;
}

const char* const kTensors[] = {"O", "LSE", "dQ", "dK", "dV"};

// One implementation under test: its forward, its backward (null: forward only).
struct Variant {
  std::string name;
  std::function<void(const AttentionParams&, const cuda::Context&)> forward, backward;
  // Null: runs every shape; else a reason for shapes (or devices) it cannot run, which it skips.
  std::function<const char*(const AttentionParams&)> unsupported;
};

std::vector<Variant> variants() {
  auto flash_mode = [](Fp32Math m, bool has_backward) {
    Variant v;
    v.name = std::string("flash ") + flash::to_string(m);
    v.forward = [m](const AttentionParams& p, const cuda::Context& c) { flash::forward(p, c, m); };
    if (has_backward)
      v.backward = [m](const AttentionParams& p, const cuda::Context& c) { flash::backward(p, c, m); };
    return v;
  };
  return {
      {"naive", &cuda::naive::forward, &cuda::naive::backward},
      {"naive tf32", &cuda::naive::forward_tf32, &cuda::naive::backward_tf32},
      flash_mode(Fp32Math::tf32x3, true),
      flash_mode(Fp32Math::exact, true),
      flash_mode(Fp32Math::tf32x1, true),
      // flash-sm90's fp32 forward and backward (3xTF32 on wgmma) and its 1xTF32 diagnostic; sm_90a,
      // d 64/128.
      {"sm90 tf32x3", &cuda::flash_sm90::forward, &cuda::flash_sm90::backward,
       [](const AttentionParams& p) { return cuda::flash_sm90::unsupported(Pass::bwd, p); }},
      {"sm90 tf32x1", &cuda::flash_sm90::forward_tf32x1, &cuda::flash_sm90::backward_tf32x1,
       [](const AttentionParams& p) { return cuda::flash_sm90::unsupported_tf32x1(Pass::bwd, p); }},
  };
}

// Max |error| per tensor (and max |ref|) of every variant for one shape, forward and backward.
struct Errors {
  std::map<std::string, std::map<std::string, double>> err;  // variant -> tensor -> max |x - ref|
  std::map<std::string, double> magnitude;                     // tensor -> max |ref|
};

Errors run_shape(const Shape& s, const std::vector<Variant>& vs, cublasHandle_t handle) {
  const cuda::Context ctx{nullptr, handle};
  AttentionParams p = params_of(s, Dtype::fp32);
  const std::int64_t nq = p.q_elems(), nkv = p.kv_elems(), rows = p.rows();
  const std::int64_t counts[] = {nq, rows, nq, nkv, nkv};  // O, LSE, dQ, dK, dV

  // Inputs in fp32, and the same values in fp64 for the reference.
  DeviceMem q(nq * 4), k(nkv * 4), v(nkv * 4), dout(nq * 4);
  DeviceMem q64(nq * 8), k64(nkv * 8), v64(nkv * 8), dout64(nq * 8);
  cuda::fill_normal(q.p, Dtype::fp32, nq, kSeed, 0, ctx);
  cuda::fill_normal(k.p, Dtype::fp32, nkv, kSeed, 1, ctx);
  cuda::fill_normal(v.p, Dtype::fp32, nkv, kSeed, 2, ctx);
  cuda::fill_normal(dout.p, Dtype::fp32, nq, kSeed, 3, ctx);
  cuda::to_fp64(q.p, Dtype::fp32, static_cast<double*>(q64.p), nq, ctx);
  cuda::to_fp64(k.p, Dtype::fp32, static_cast<double*>(k64.p), nkv, ctx);
  cuda::to_fp64(v.p, Dtype::fp32, static_cast<double*>(v64.p), nkv, ctx);
  cuda::to_fp64(dout.p, Dtype::fp32, static_cast<double*>(dout64.p), nq, ctx);

  // The fp64 reference.
  AttentionParams r = params_of(s, Dtype::fp64);
  DeviceMem ro(nq * 8), rlse(rows * 8), rdq(nq * 8), rdk(nkv * 8), rdv(nkv * 8);
  DeviceMem rws(cuda::reference::workspace_bytes(Pass::bwd, r));
  r.q = q64.p, r.k = k64.p, r.v = v64.p, r.dout = dout64.p;
  r.o = ro.p, r.lse = rlse.p, r.dq = rdq.p, r.dk = rdk.p, r.dv = rdv.p, r.workspace = rws.p;
  cuda::reference::forward(r, ctx);
  cuda::reference::backward(r, ctx);
  const double* refs[] = {static_cast<double*>(ro.p), static_cast<double*>(rlse.p), static_cast<double*>(rdq.p),
                          static_cast<double*>(rdk.p), static_cast<double*>(rdv.p)};

  Errors out;
  DeviceMem o(nq * 4), lse(rows * 4), dq(nq * 4), dk(nkv * 4), dv(nkv * 4);
  const std::size_t ws_bytes = std::max({cuda::naive::workspace_bytes(Pass::bwd, p),
                                         flash::workspace_bytes(Pass::bwd, p),
                                         cuda::flash_sm90::workspace_bytes(Pass::bwd, p)});
  DeviceMem ws(ws_bytes);
  p.q = q.p, p.k = k.p, p.v = v.p, p.dout = dout.p;
  p.o = o.p, p.lse = lse.p, p.dq = dq.p, p.dk = dk.p, p.dv = dv.p, p.workspace = ws.p;
  void* outs[] = {o.p, lse.p, dq.p, dk.p, dv.p};
  for (const Variant& var : vs) {
    if (var.unsupported && var.unsupported(p)) continue;
    // NaN poison (0xff bytes) first: an output a kernel leaves unwritten counts as non-finite.
    for (int i = 0; i < 5; ++i) FB_CUDA_CHECK(cudaMemset(outs[i], 0xff, std::size_t(counts[i]) * 4));
    var.forward(p, ctx);
    const int tensors = var.backward ? 5 : 2;
    if (var.backward) var.backward(p, ctx);
    FB_CUDA_CHECK(cudaDeviceSynchronize());
    for (int i = 0; i < tensors; ++i) {
      const cuda::Diff d = cuda::max_abs_diff(outs[i], Dtype::fp32, refs[i], counts[i], ctx);
      out.err[var.name][kTensors[i]] =
          d.nonfinite > 0 ? std::numeric_limits<double>::infinity() : d.max_abs;
      out.magnitude[kTensors[i]] = d.b_max_abs;
    }
  }
  return out;
}

// The scale `tensor` is judged at, as the runner does (dQ, dK: at least dV's / 16).
double judged(const Errors& e, const std::string& tensor) {
  const auto dv = e.magnitude.find("dV");
  return judged_scale(tensor, e.magnitude.at(tensor), dv == e.magnitude.end() ? 0.0 : dv->second);
}
// The FP32 rule's bound for `tensor` given naive fp32's error (the runner's judge).
double fp32_bound(const Errors& e, const std::string& tensor, int seq_k) {
  const auto dv = e.magnitude.find("dV");
  return tensor_bound(Rule::relative, tensor, Dtype::fp32, e.magnitude.at(tensor),
                      dv == e.magnitude.end() ? 0.0 : dv->second, e.err.at("naive").at(tensor), seq_k)
      .bound;
}

std::vector<Shape> shapes() {
  // Odd lengths (1, one short of a 64-key tile plus 13, not a tile multiple, one past 4096), both
  // head dims of the tuned tiles, causal on/off, GQA/MQA/MHA and a batch of 2 rotating through them.
  const int seqs[] = {1, 77, 1000, 4099};
  const int heads[][2] = {{4, 2}, {4, 1}, {2, 2}};
  std::vector<Shape> out;
  int i = 0;
  for (int n : seqs)
    for (int d : {64, 128})
      for (bool causal : {false, true}) {
        out.push_back({i % 5 == 0 ? 2 : 1, heads[i % 3][0], heads[i % 3][1], n, n, d, causal});
        ++i;
      }
  out.push_back({1, 4, 2, 77, 77, 32, true});  // head_dim 32 has its own tiles too
  // Fewer keys than one K/V tile of either kernel, both head dims.
  out.push_back({1, 4, 2, 17, 17, 64, true});
  out.push_back({2, 4, 1, 17, 17, 128, false});
  // seq_q != seq_k, causal aligned bottom-right: fewer queries than keys (decode-like), and more (the
  // first 923 rows see no key: O = 0, LSE = -inf, no gradient).
  out.push_back({1, 4, 1, 77, 1000, 64, true});
  out.push_back({1, 2, 2, 1000, 77, 128, true});
  out.push_back({2, 4, 2, 300, 1111, 128, false});
  return out;
}

bool has_tf32_tensor_cores() {
  int dev = 0, major = 0;
  FB_CUDA_CHECK(cudaGetDevice(&dev));
  FB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  return major >= 8;
}

}  // namespace

TEST_CASE("fp32 on tensor cores: 3xTF32 meets the FP32 rule, 1xTF32 fails it", "[gpu][fp32tc]") {
  if (!has_tf32_tensor_cores()) {
    WARN("TF32 tensor cores need compute capability 8.0: not run");
    return;
  }
  const Cublas cublas;
  const std::vector<Variant> vs = variants();
  for (const Shape& s : shapes()) {
    INFO("case " << s.key());
    const Errors e = run_shape(s, vs, cublas.get());
    // One line per case and tensor: the figures docs/perf-notes.md quotes.
    for (const char* t : kTensors) {
      if (!e.magnitude.count(t)) continue;
      std::printf("fp32-tc %-28s %-3s bound %.2e |", s.key().c_str(), t, fp32_bound(e, t, s.seq_k));
      for (const Variant& v : vs)
        if (e.err.count(v.name) && e.err.at(v.name).count(t)) std::printf(" %s %.2e", v.name.c_str(), e.err.at(v.name).at(t));
      std::printf("\n");
    }
    for (const char* t : kTensors) {
      const double bound = fp32_bound(e, t, s.seq_k);
      INFO(t << ": bound " << bound << ", naive " << e.err.at("naive").at(t));
      // The yardstick itself is sane (the judge's baseline rule).
      CHECK(e.err.at("naive").at(t) <= bound_for(Rule::baseline, t, Dtype::fp32, judged(e, t), 0));
      CHECK(e.err.at("flash tf32x3").at(t) <= bound);
      CHECK(e.err.at("flash exact").at(t) <= bound);
      if (e.err.count("sm90 tf32x3") && e.err.at("sm90 tf32x3").count(t)) {
        const double x3 = e.err.at("sm90 tf32x3").at(t), x1 = e.err.at("sm90 tf32x1").at(t);
        INFO("sm90: 3xTF32 " << x3 << ", 1xTF32 " << x1);
        CHECK(x3 <= bound);
        CHECK(std::isfinite(x1));
        CHECK(x1 > bound);
        CHECK(x1 > kTf32x1Margin * x3);
        // ... and fails it for TF32's rounding, not for a wrong result: O within the bound of a tiled
        // fp16 kernel (fp16 has TF32's 10-bit mantissa). A kernel that mixes up its tiles fails here.
        if (std::string(t) == "O")
          CHECK(x1 <= bound_for(Rule::tiled_no_baseline, t, Dtype::fp16, judged(e, t), 0, s.seq_k));
      }
      if (e.err.at("flash tf32x1").count(t)) {
        const double x1 = e.err.at("flash tf32x1").at(t), x3 = e.err.at("flash tf32x3").at(t);
        INFO("1xTF32 " << x1 << ", 3xTF32 " << x3);
        CHECK(std::isfinite(x1));
        CHECK(x1 > bound);
        CHECK(x1 > kTf32x1Margin * x3);
      }
      // The TF32 peer is reported, not judged: whether cuBLAS takes a TF32 kernel for a given shape
      // (N = 1: k = 1) is its own choice. It must still be finite.
      CHECK(std::isfinite(e.err.at("naive tf32").at(t)));
    }
  }
}

TEST_CASE("fp32 modes refuse the dtypes they do not apply to, with a reason", "[gpu][fp32tc]") {
  const Shape s{1, 2, 2, 64, 64, 64, false};
  for (Dtype t : {Dtype::fp16, Dtype::bf16}) {
    const AttentionParams p = params_of(s, t);
    CHECK(flash::unsupported(Pass::fwd, p, Fp32Math::exact) != nullptr);
    CHECK(flash::unsupported(Pass::fwd, p, Fp32Math::tf32x1) != nullptr);
    CHECK(flash::unsupported(Pass::fwd, p, Fp32Math::tf32x3) == nullptr);  // `flash` as ever
    CHECK(cuda::naive::unsupported_tf32(Pass::fwd, p) != nullptr);
  }
  const AttentionParams p64 = params_of(s, Dtype::fp64);
  CHECK(flash::unsupported(Pass::bwd, p64, Fp32Math::exact) == nullptr);
  CHECK(flash::unsupported(Pass::fwd, p64, Fp32Math::tf32x1) != nullptr);
  const AttentionParams p32 = params_of(s, Dtype::fp32);
  for (Fp32Math m : {Fp32Math::exact, Fp32Math::tf32x3, Fp32Math::tf32x1}) {
    INFO(flash::to_string(m));
    CHECK(flash::unsupported(Pass::fwd, p32, m) == nullptr);
  }
  CHECK(cuda::naive::unsupported_tf32(Pass::bwd, p32) == nullptr);
  // A refused call throws instead of launching.
  CHECK_THROWS_AS(flash::forward(params_of(s, Dtype::bf16), cuda::Context{}, Fp32Math::exact),
                  std::invalid_argument);
}

// Hidden (run it by its tag): times every variant at the headline shape, forward and
// backward, and prints TFLOP/s, for docs/perf-notes.md before the variants are registered as kernels.
// The one thing it asserts is the split's price: 3xTF32 cannot be faster than 1xTF32.
TEST_CASE("fp32 on tensor cores: time every variant", "[.][fp32tc-speed]") {
  if (!has_tf32_tensor_cores()) return;
  constexpr int kWarm = 2, kReps = 10;
  const Cublas cublas;
  const cuda::Context ctx{nullptr, cublas.get()};
  const std::vector<Variant> vs = variants();
  for (int d : {64, 128})
    for (bool causal : {false, true}) {
      // 16k tokens, model dim 2048 (configs/h200-fp32-tc.json at N = 4096).
      const Shape s{4, 2048 / d, 2048 / d, 4096, 4096, d, causal};
      AttentionParams p = params_of(s, Dtype::fp32);
      const std::int64_t nq = p.q_elems(), nkv = p.kv_elems(), rows = p.rows();
      DeviceMem q(nq * 4), k(nkv * 4), v(nkv * 4), dout(nq * 4), o(nq * 4), lse(rows * 4), dq(nq * 4),
          dk(nkv * 4), dv(nkv * 4);
      DeviceMem ws(std::max({cuda::naive::workspace_bytes(Pass::bwd, p), flash::workspace_bytes(Pass::bwd, p),
                             cuda::flash_sm90::workspace_bytes(Pass::bwd, p)}));
      for (auto [ptr, n, id] : {std::tuple{q.p, nq, 0}, {k.p, nkv, 1}, {v.p, nkv, 2}, {dout.p, nq, 3}})
        cuda::fill_normal(ptr, Dtype::fp32, n, kSeed, std::uint64_t(id), ctx);
      p.q = q.p, p.k = k.p, p.v = v.p, p.dout = dout.p;
      p.o = o.p, p.lse = lse.p, p.dq = dq.p, p.dk = dk.p, p.dv = dv.p, p.workspace = ws.p;
      // 4 d per visible (query, key) pair and head forward (2 GEMMs), 2.5x that backward (FlashAttention's
      // convention).
      const double fwd_flop = 4.0 * s.batch * s.heads * p.mask().visible_pairs() * d;
      std::map<std::string, double> fwd_ms;
      for (const Variant& var : vs) {
        if (var.unsupported && var.unsupported(p)) continue;
        cudaEvent_t e0, e1;
        FB_CUDA_CHECK(cudaEventCreate(&e0));
        FB_CUDA_CHECK(cudaEventCreate(&e1));
        auto time_ms = [&](auto&& fn) {
          for (int i = 0; i < kWarm; ++i) fn();
          FB_CUDA_CHECK(cudaEventRecord(e0));
          for (int i = 0; i < kReps; ++i) fn();
          FB_CUDA_CHECK(cudaEventRecord(e1));
          FB_CUDA_CHECK(cudaEventSynchronize(e1));
          float ms = 0;
          FB_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
          return double(ms) / kReps;
        };
        const double f = time_ms([&] { var.forward(p, ctx); });
        const double b = var.backward ? time_ms([&] { var.backward(p, ctx); }) : 0.0;
        FB_CUDA_CHECK(cudaEventDestroy(e0));
        FB_CUDA_CHECK(cudaEventDestroy(e1));
        fwd_ms[var.name] = f;
        std::printf("fp32-tc-speed %-24s %-12s fwd %8.3f ms %6.1f TFLOP/s | bwd %8.3f ms %6.1f TFLOP/s\n",
                    s.key().c_str(), var.name.c_str(), f, fwd_flop / f * 1e-9, b,
                    b > 0 ? 2.5 * fwd_flop / b * 1e-9 : 0.0);
        CHECK(f > 0);
      }
      CHECK(fwd_ms.at("flash tf32x1") < fwd_ms.at("flash tf32x3"));
    }
}
