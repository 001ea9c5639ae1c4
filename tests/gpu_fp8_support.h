// What the GPU tests of naive's fp8 forward share (test_gpu_fp8.cpp, test_gpu_fp8_pad.cpp): e4m3 inputs
// drawn on the host, and the same codes through naive's CUDA path (cuBLASLt FP8 GEMMs), the CPU
// backend's emulation of the same roundings and the fp64 reference, with the distance between outputs.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "attention.h"
#include "backend/cpu/cpu_attention.h"
#include "backend/cpu/memory.h"
#include "backend/cpu/numeric.h"
#include "backend/cpu/parallel.h"
#include "backend/cuda/cuda_resources.h"
#include "catch.h"
#include "common/check.h"
#include "common/fp8.h"
#include "gpu_support.h"

namespace fb::test {

// e4m3 codes of standard normals at a per-tensor scale, as the backends quantise (attention.h):
// descale s = amax / 448, codes e4m3(x / s).
struct Fp8Codes {
  std::vector<std::uint8_t> v;
  float descale = 1;
};
inline Fp8Codes quantised_normals(std::int64_t n, std::mt19937_64& gen) {
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<std::size_t>(n));
  float amax = 0;
  for (float& e : x) {
    e = normal(gen);
    amax = std::max(amax, std::abs(e));
  }
  Fp8Codes c;
  c.descale = amax > 0 ? amax / kFp8E4m3Max : 1.0f;
  c.v.resize(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) c.v[i] = fp8_e4m3_from_float(x[i] / c.descale);
  return c;
}

// The real values of the codes (code * descale), for the fp64 reference.
inline std::vector<double> dequantised(const Fp8Codes& c) {
  std::vector<double> x(c.v.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = double(fp8_e4m3_to_float(c.v[i])) * c.descale;
  return x;
}

struct Fp8Inputs {
  AttentionParams p;  // shape, scale, descales; pointers unset
  Fp8Codes q, k, v;
};
// Q, K, V of the fp8 shape `shape` drawn from `seed`, their descales in p.
inline Fp8Inputs make_fp8_inputs(const AttentionParams& shape, std::uint64_t seed) {
  Fp8Inputs in;
  in.p = shape;
  std::mt19937_64 gen(seed);
  in.q = quantised_normals(in.p.q_elems(), gen);
  in.k = quantised_normals(in.p.kv_elems(), gen);
  in.v = quantised_normals(in.p.kv_elems(), gen);
  in.p.descale_q = in.q.descale;
  in.p.descale_k = in.k.descale;
  in.p.descale_v = in.v.descale;
  return in;
}

// cudaMalloc'd bytes (at least 16, so that an empty tensor still has an address), freed on scope exit.
struct DeviceMemory {
  void* p = nullptr;
  explicit DeviceMemory(std::size_t bytes) { FB_CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(bytes, 16))); }
  ~DeviceMemory() { FB_CUDA_CHECK_NOTHROW(cudaFree(p)); }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
};

// An fp8 forward's outputs as the GPU and CPU backends store them.
struct Fp8Outputs {
  std::vector<std::uint16_t> o_bits;  // bf16
  std::vector<float> lse;
  std::vector<double> o() const {
    std::vector<double> out;
    out.reserve(o_bits.size());
    for (std::uint16_t b : o_bits) out.push_back(cpu::bf16_bits_to_float(b));
    return out;
  }
};

// naive's CUDA fp8 forward of the shape `shape` (descales and p_scale included) on the codes q, k, v.
// The workspace and outputs start as 0xff bytes (e4m3 -NaN, bf16 and fp32 NaN): padding the GEMMs read
// but nobody wrote, or an output row left unwritten, shows as NaN.
inline Fp8Outputs run_naive_fp8_cuda(const AttentionParams& shape, const std::vector<std::uint8_t>& q,
                                     const std::vector<std::uint8_t>& k, const std::vector<std::uint8_t>& v) {
  gpu();  // the backend's device is the current one
  AttentionParams p = shape;
  const std::size_t nq = std::size_t(p.q_elems()), nkv = std::size_t(p.kv_elems()), rows = std::size_t(p.rows());
  REQUIRE(q.size() == nq);
  REQUIRE(k.size() == nkv);
  REQUIRE(v.size() == nkv);
  const cuda::Ops& ops = cuda::naive_ops();
  REQUIRE(ops.unsupported(Pass::fwd, p) == nullptr);
  const std::size_t ws_bytes = ops.workspace_bytes(Pass::fwd, p);
  DeviceMemory dq(nq), dk(nkv), dv(nkv), dout(nq * 2), dlse(rows * 4), ws(ws_bytes);
  FB_CUDA_CHECK(cudaMemcpy(dq.p, q.data(), nq, cudaMemcpyHostToDevice));
  FB_CUDA_CHECK(cudaMemcpy(dk.p, k.data(), nkv, cudaMemcpyHostToDevice));
  FB_CUDA_CHECK(cudaMemcpy(dv.p, v.data(), nkv, cudaMemcpyHostToDevice));
  FB_CUDA_CHECK(cudaMemset(ws.p, 0xff, ws_bytes));
  FB_CUDA_CHECK(cudaMemset(dout.p, 0xff, nq * 2));
  FB_CUDA_CHECK(cudaMemset(dlse.p, 0xff, rows * 4));
  p.q = dq.p;
  p.k = dk.p;
  p.v = dv.p;
  p.o = dout.p;
  p.lse = dlse.p;
  p.workspace = ws.p;
  cuda::Stream stream;
  cuda::CublasHandle cublas(stream.get());
  ops.forward(p, cuda::Context{stream.get(), cublas.get()});
  FB_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  Fp8Outputs out;
  out.o_bits.resize(nq);
  out.lse.resize(rows);
  FB_CUDA_CHECK(cudaMemcpy(out.o_bits.data(), dout.p, nq * 2, cudaMemcpyDeviceToHost));
  FB_CUDA_CHECK(cudaMemcpy(out.lse.data(), dlse.p, rows * 4, cudaMemcpyDeviceToHost));
  return out;
}
inline Fp8Outputs run_naive_fp8_cuda(const Fp8Inputs& in) {
  return run_naive_fp8_cuda(in.p, in.q.v, in.k.v, in.v.v);
}

// The CPU backend's naive fp8 emulation (cpu_attention.cpp) on the same codes: no alignment rule there.
inline Fp8Outputs run_naive_fp8_cpu(const Fp8Inputs& in, cpu::ThreadPool& pool) {
  AttentionParams p = in.p;
  Fp8Outputs out;
  out.o_bits.resize(std::size_t(p.q_elems()));
  out.lse.resize(std::size_t(p.rows()));
  p.q = in.q.v.data();  // cpu::Fp8E4m3 is one byte holding the code
  p.k = in.k.v.data();
  p.v = in.v.v.data();
  p.o = out.o_bits.data();  // cpu::BFloat16: the bf16 bits
  p.lse = out.lse.data();
  cpu::MemoryTracker tracker;
  cpu::Context ctx;
  ctx.tracker = &tracker;
  ctx.pool = &pool;
  cpu::naive_forward(p, ctx);
  return out;
}

// The fp64 reference on the real values of the same codes.
struct Fp8Exact {
  std::vector<double> o, lse;
};
inline Fp8Exact fp8_reference(const Fp8Inputs& in, cpu::ThreadPool& pool) {
  AttentionParams p = in.p;
  p.dtype = Dtype::fp64;
  const std::vector<double> q = dequantised(in.q), k = dequantised(in.k), v = dequantised(in.v);
  p.q = q.data();
  p.k = k.data();
  p.v = v.data();
  std::vector<int> rows(std::size_t(p.seq_q));
  for (int i = 0; i < p.seq_q; ++i) rows[std::size_t(i)] = i;
  Fp8Exact out;
  out.o.resize(std::size_t(p.q_elems()));
  out.lse.resize(std::size_t(p.rows()));
  cpu::reference_forward(p, rows, out.o.data(), out.lse.data(), pool);
  return out;
}

// |a - b| over a pair of outputs: max (infinite where one is finite and the other not), mean (of the
// finite differences, over every element), and the share of elements that differ at all. Equal values,
// -inf included (a row with no key), count as 0.
struct Agreement {
  double max_abs = 0, mean_abs = 0, differing = 0;
};
template <typename A, typename B>
Agreement agreement(const std::vector<A>& a, const std::vector<B>& b) {
  REQUIRE(a.size() == b.size());
  Agreement g;
  std::size_t diff = 0;
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = double(a[i]), y = double(b[i]);
    if (x == y) continue;
    ++diff;
    const double d =
        std::isfinite(x) && std::isfinite(y) ? std::abs(x - y) : std::numeric_limits<double>::infinity();
    g.max_abs = d > g.max_abs ? d : g.max_abs;
    if (std::isfinite(d)) sum += d;
  }
  g.differing = a.empty() ? 0 : double(diff) / double(a.size());
  g.mean_abs = a.empty() ? 0 : sum / double(a.size());
  return g;
}

template <typename T>
double max_abs_finite(const std::vector<T>& v) {
  double m = 0;
  for (T x : v)
    if (std::isfinite(double(x))) m = std::max(m, std::abs(double(x)));
  return m;
}

}  // namespace fb::test
