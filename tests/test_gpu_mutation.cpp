// Mutation testing on the GPU [gpu]: wrong versions of the real tiled kernels (flash, flash-sm90),
// built by acting on their inputs and outputs (test code only, never in the product's kernel list),
// must be rejected by the runner's rule in every dtype each kernel runs, at N = 128, 1000 and 4096,
// with and without naive in the case; the unmodified kernels must pass. The CPU mutation test
// (test_mutation.cpp) covers the bugs that live inside the algorithm.
#include <cuda_runtime.h>

#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/cuda/cuda_backend.h"
#include "catch.h"
#include "support.h"
#include "common/check.h"
#include "registry.h"
#include "runner.h"

using namespace fb;

namespace {

using namespace fb::test;

constexpr std::uint64_t kSeed = 20261130;

enum class GpuBug { zero_output, scale_one_over_d, lse_base2, dkdv_other_head };

const char* slug(GpuBug b) {
  switch (b) {
    case GpuBug::zero_output: return "zero-output";
    case GpuBug::scale_one_over_d: return "scale-1-over-d";
    case GpuBug::lse_base2: return "lse-base2";
    case GpuBug::dkdv_other_head: return "dkdv-other-head";
  }
  return "?";
}

// LSE (fp32, or fp64 for fp64 cases) times log2(e), through the host.
void lse_to_base2(const AttentionParams& p, cudaStream_t s) {
  const std::size_t n = std::size_t(p.rows());
  FB_CUDA_CHECK(cudaStreamSynchronize(s));
  if (p.dtype == Dtype::fp64) {
    std::vector<double> h(n);
    FB_CUDA_CHECK(cudaMemcpy(h.data(), p.lse, n * 8, cudaMemcpyDeviceToHost));
    for (double& x : h) x *= 1.4426950408889634;
    FB_CUDA_CHECK(cudaMemcpy(p.lse, h.data(), n * 8, cudaMemcpyHostToDevice));
  } else {
    std::vector<float> h(n);
    FB_CUDA_CHECK(cudaMemcpy(h.data(), p.lse, n * 4, cudaMemcpyDeviceToHost));
    for (float& x : h) x *= 1.44269504f;
    FB_CUDA_CHECK(cudaMemcpy(p.lse, h.data(), n * 4, cudaMemcpyHostToDevice));
  }
}

// Rotates dK and dV by one K/V head: head g's gradients land in head (g + 1) % kv_heads.
void rotate_kv_heads(const AttentionParams& p, cudaStream_t s) {
  const std::size_t head = std::size_t(p.seq_k) * p.head_dim * dtype_bytes(p.dtype);
  const std::size_t per_batch = head * p.kv_heads;
  void* tmp = nullptr;
  FB_CUDA_CHECK(cudaMalloc(&tmp, per_batch));
  for (void* t : {p.dk, p.dv}) {
    for (int b = 0; b < p.batch; ++b) {
      char* base = static_cast<char*>(t) + std::size_t(b) * per_batch;
      FB_CUDA_CHECK(cudaMemcpyAsync(tmp, base, per_batch, cudaMemcpyDeviceToDevice, s));
      for (int g = 0; g < p.kv_heads; ++g)
        FB_CUDA_CHECK(cudaMemcpyAsync(base + ((g + 1) % p.kv_heads) * head, static_cast<char*>(tmp) + g * head,
                                      head, cudaMemcpyDeviceToDevice, s));
    }
  }
  FB_CUDA_CHECK(cudaStreamSynchronize(s));
  FB_CUDA_CHECK(cudaFree(tmp));
}

Descriptor gpu_mutant(const Descriptor& real, GpuBug bug) {
  Descriptor d = real;
  d.name = real.name + "-mutant-" + slug(bug);
  d.role = Role::tiled;
  d.origin = "tests/test_gpu_mutation.cpp";
  d.cpu = {};
  const auto fwd = real.cuda.forward, bwd = real.cuda.backward;
  const auto mutated = [bug](const AttentionParams& p) {
    AttentionParams q = p;
    if (bug == GpuBug::scale_one_over_d) q.scale = 1.0 / p.head_dim;
    return q;
  };
  d.cuda.forward = [fwd, bug, mutated](const AttentionParams& p, const cuda::Context& ctx, NoState& st) {
    fwd(mutated(p), ctx, st);
    const auto s = static_cast<cudaStream_t>(ctx.stream);
    if (bug == GpuBug::zero_output)
      FB_CUDA_CHECK(cudaMemsetAsync(p.o, 0, std::size_t(p.q_elems()) * dtype_bytes(p.dtype), s));
    if (bug == GpuBug::lse_base2) lse_to_base2(p, s);
  };
  d.cuda.backward = [bwd, bug, mutated](const AttentionParams& p, const cuda::Context& ctx, NoState& st) {
    bwd(mutated(p), ctx, st);
    if (bug == GpuBug::dkdv_other_head) rotate_kv_heads(p, static_cast<cudaStream_t>(ctx.stream));
  };
  return d;
}

}  // namespace

TEST_CASE("gpu mutation: wrong outputs of flash and flash-sm90 are rejected, the real ones pass", "[gpu]") {
  CudaBackend b(0);
  KernelSet set;
  // The kernels that must pass the FP32 rule in fp32 (the TF32 diagnostics fail it by design).
  for (const Descriptor& d : builtin_kernels().all())
    if (d.name != "flash-tf32x1" && d.name != "flash-sm90-tf32x1" && d.name != "naive-tf32") set.add(d);
  const std::vector<GpuBug> bugs = {GpuBug::zero_output, GpuBug::scale_one_over_d, GpuBug::lse_base2,
                                    GpuBug::dkdv_other_head};
  for (const char* real : {"flash", "flash-sm90"})
    for (GpuBug bug : bugs) set.add(gpu_mutant(*builtin_kernels().find(real), bug));

  std::map<std::string, std::map<std::string, bool>> killed;  // mutant -> config -> killed
  std::vector<std::string> real_failures;
  for (Dtype t : {Dtype::fp64, Dtype::fp32, Dtype::fp16, Dtype::bf16}) {
    for (int seq : {128, 1000, 4096}) {
      for (bool causal : {false, true}) {
        Case c;
        c.batch = 2;
        c.heads = 8;
        c.kv_heads = 2;
        c.set_seq(seq);
        c.head_dim = 64;
        c.dtype = t;
        c.causal = causal;
        c.pass = Pass::bwd;  // O and LSE from the untimed forward, gradients from the backward
        INFO(c.key());
        b.prepare(c, kSeed);
        std::vector<Record> all;
        for (const Descriptor& d : set.all()) {
          if (d.role == Role::reference) continue;
          if (b.check_fits(c, d)) continue;  // flash-sm90 and its mutants: 16-bit on Hopper only
          b.run(d, 0, 1);
          all.push_back(ok_record(c, d.name));
        }
        for (bool with_naive : {true, false}) {
          std::vector<Record> records;
          for (const Record& r : all)
            if (with_naive || r.kernel != "naive") records.push_back(r);
          verify_case(b, records, set);
          const std::string config =
              fmt::format("{} N={} {}", to_string(t), seq, with_naive ? "with naive" : "without naive");
          for (const Record& r : records) {
            REQUIRE(r.verified.has_value());
            if (r.kernel.find("-mutant-") == std::string::npos) {
              if (!*r.verified) real_failures.push_back(r.kernel + " " + c.key() + " " + r.errors.dump());
            } else {
              bool& k = killed[r.kernel][config];
              k = k || !*r.verified;
            }
          }
        }
        b.release();
      }
    }
  }
  std::size_t dead = 0;
  std::vector<std::string> survivors;
  for (const auto& [name, configs] : killed) {
    bool all = true;
    for (const auto& [config, k] : configs)
      if (!k) {
        survivors.push_back(name + " survives " + config);
        all = false;
      }
    dead += all;
  }
  std::printf("gpu mutants: %zu/%zu killed (every dtype each kernel runs, N = 128, 1000, 4096, with and "
              "without naive)\n",
              dead, killed.size());
  for (const auto& s : survivors) std::printf("  %s\n", s.c_str());
  for (const auto& f : real_failures) std::printf("  real kernel failed: %s\n", f.c_str());
  CHECK(!killed.empty());
  CHECK(survivors.empty());
  CHECK(real_failures.empty());
}
