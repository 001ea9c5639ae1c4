#include <cmath>

#include "case.h"
#include "catch.h"
#include "judge.h"
#include "registry.h"
#include "record.h"
#include "runner.h"

using namespace fb;

TEST_CASE("FLOPs follow FlashAttention's convention", "[case]") {
  Case c;
  c.batch = 2;
  c.heads = 16;
  c.kv_heads = 16;
  c.seq = 4096;
  c.head_dim = 128;
  const double fwd = 4.0 * 2 * 16 * 4096.0 * 4096.0 * 128;
  REQUIRE(flops(c) == fwd);
  c.causal = true;
  REQUIRE(flops(c) == fwd / 2);
  c.causal = false;
  c.pass = Pass::bwd;
  REQUIRE(flops(c) == 2.5 * fwd);
  c.pass = Pass::fwd_bwd;
  REQUIRE(flops(c) == 3.5 * fwd);
}

TEST_CASE("modelled bytes: naive grows as N^2, flash as N^2/Br", "[case]") {
  Case c;
  c.heads = c.kv_heads = 32;
  c.head_dim = 128;
  c.dtype = Dtype::bf16;
  c.seq = 4096;
  const double naive = naive_bytes(c, 0);
  const double flash = tiled_bytes(c, 128);
  // Naive moves S and P four times (N^2 elements of 2 bytes each): 32*4096^2*2*4 bytes at least.
  REQUIRE(naive >= 32.0 * 4096 * 4096 * 2 * 4);
  // Flash re-reads K and V once per query tile: (2*N*d*e) * N/Br against naive's 4*N^2*e, a ratio of
  // d / (2*Br) = 0.5 here. The model is an upper bound: on a GPU most K/V re-reads hit L2.
  REQUIRE(std::abs(flash / naive - 128.0 / (2 * 128)) < 0.05);
  // Doubling N nearly quadruples naive: the N^2 terms dominate.
  Case c2 = c;
  c2.seq = 8192;
  REQUIRE(std::abs(naive_bytes(c2, 0) / naive - 4.0) < 0.1);  // + linear Q/K/V/O terms
  // Causal: naive still writes every score (cuBLAS has no mask), the tiled kernel skips half the tiles.
  Case causal = c;
  causal.causal = true;
  REQUIRE(naive_bytes(causal, 0) == naive);
  REQUIRE(tiled_bytes(causal, 128) < 0.6 * flash);
}

TEST_CASE("modelled bytes: the tiled backward re-reads Q and dO once per key tile", "[case]") {
  Case c;
  c.heads = c.kv_heads = 16;
  c.head_dim = 128;
  c.dtype = Dtype::bf16;
  c.seq = 8192;
  c.pass = Pass::bwd;
  const double q_bytes = 16.0 * 8192 * 128 * 2;
  // Halving the key tile doubles the per-tile re-reads of Q and dO (2 tensors x N/tile tiles).
  const double d = tiled_bytes(c, 64) - tiled_bytes(c, 128);
  REQUIRE(d >= 2 * q_bytes * (8192 / 64 - 8192 / 128));
  REQUIRE(tiled_bytes(c, 128) < naive_bytes(c, 0));}

TEST_CASE("case keys are stable and distinguish every field", "[case]") {
  Case a;
  a.batch = 1;
  a.heads = 16;
  a.kv_heads = 4;
  a.seq = 1024;
  a.head_dim = 64;
  a.dtype = Dtype::fp16;
  a.causal = true;
  a.pass = Pass::fwd_bwd;
  REQUIRE(a.key() == "b1-h16-kv4-n1024-d64-fp16-causal-fwd+bwd");
  Case b = a;
  b.kv_heads = 16;
  REQUIRE(!(a == b));
  REQUIRE(a.params().group() == 4);
  REQUIRE(std::abs(a.params().scale - 0.125) < 1e-15);
}

TEST_CASE("dtype and pass names round-trip", "[case]") {
  for (Dtype t : {Dtype::fp64, Dtype::fp32, Dtype::fp16, Dtype::bf16})
    REQUIRE(parse_dtype(to_string(t)) == t);
  for (Pass p : {Pass::fwd, Pass::bwd, Pass::fwd_bwd}) REQUIRE(parse_pass(to_string(p)) == p);
  REQUIRE(!parse_dtype("fp8"));
  REQUIRE(!parse_pass("both"));
}

TEST_CASE("registry: names unique, head_dim, dtype and role from the descriptor", "[case]") {
  REQUIRE(builtin_kernels().baseline() == find_kernel("naive"));
  REQUIRE(builtin_kernels().reference() != nullptr);
  REQUIRE(kernel_names().find("reference") == std::string::npos);  // not a user kernel
  Case fp32;
  fp32.head_dim = 64;
  fp32.dtype = Dtype::fp32;
  REQUIRE(unsupported_reason(*find_kernel("flash-sm90"), fp32).has_value());
  REQUIRE(!unsupported_reason(*find_kernel("flash"), fp32).has_value());
  KernelSet set;
  Descriptor d = *find_kernel("flash");
  set.add(d);
  REQUIRE_THROWS_AS(set.add(d), std::invalid_argument);  // a name is registered once
  REQUIRE(find_kernel("naive") != nullptr);
  REQUIRE(find_kernel("flash") != nullptr);
  REQUIRE(find_kernel("nope") == nullptr);
  Case c;
  c.head_dim = 80;
  REQUIRE(unsupported_reason(*find_kernel("flash"), c).has_value());
  REQUIRE(!unsupported_reason(*find_kernel("naive"), c).has_value());
  c.head_dim = 128;
  REQUIRE(!unsupported_reason(*find_kernel("flash"), c).has_value());
}

TEST_CASE("verification bounds are at the tensor's own scale", "[case]") {
  // No max(1, .): a tensor of magnitude 0.06 is judged at 0.06.
  REQUIRE(bound_for(Rule::tiled_no_baseline, "O", Dtype::bf16, 0.06, 0) < 0.06 / 16);
  REQUIRE(bound_for(Rule::tiled_no_baseline, "O", Dtype::bf16, 600, 0) ==
          10000 * bound_for(Rule::tiled_no_baseline, "O", Dtype::bf16, 0.06, 0));
  // Tighter with precision, for every rule.
  for (Rule r : {Rule::baseline, Rule::tiled_no_baseline}) {
    REQUIRE(bound_for(r, "O", Dtype::fp64, 1, 0) < bound_for(r, "O", Dtype::fp32, 1, 0));
    REQUIRE(bound_for(r, "O", Dtype::fp32, 1, 0) < bound_for(r, "O", Dtype::fp16, 1, 0));
    REQUIRE(bound_for(r, "O", Dtype::fp16, 1, 0) < bound_for(r, "O", Dtype::bf16, 1, 0));
  }
  // LSE is stored in fp32: its floor is fp32's, whatever the input dtype.
  REQUIRE(floor_of("LSE", Dtype::bf16, 8.0) == floor_of("O", Dtype::fp32, 8.0));
  REQUIRE(floor_of("LSE", Dtype::bf16, 8.0) < 1e-5);
  REQUIRE(ulp_at(1.0, Dtype::bf16) == 0x1p-7);
  REQUIRE(ulp_at(0.1, Dtype::bf16) == 0x1p-11);  // 0.1 is in [2^-4, 2^-3)
  REQUIRE(ulp_at(0.0, Dtype::bf16) == 0.0);
  // The relative rule: 2x (3x for gradients) the baseline's error plus 2 ulps at the scale.
  REQUIRE(bound_for(Rule::relative, "O", Dtype::bf16, 1.0, 0.01) == 0.02 + 2 * 0x1p-7);
  REQUIRE(bound_for(Rule::relative, "dQ", Dtype::bf16, 1.0, 0.01) == 0.03 + 2 * 0x1p-7);
}

TEST_CASE("ceilings give each ok result its roofline percentages, kept through JSON", "[case]") {
  Results res;
  Record ok;
  ok.kernel = "flash";
  ok.tflops = 395;
  ok.gbps = 2128;
  ok.bytes_moved = 1e9;
  Record skipped = ok;
  skipped.status = Status::skipped;
  res.records = {ok, skipped};
  attach_ceilings(res, {{"gemm_bf16_tflops", 790.0}, {"copy_gbps", 4256.0}});
  REQUIRE(res.device["ceilings"]["copy_gbps"] == 4256.0);
  REQUIRE(std::abs(res.records[0].roofline["pct_of_gemm_peak"].get<double>() - 50.0) < 1e-12);
  REQUIRE(std::abs(res.records[0].roofline["pct_of_copy_bandwidth"].get<double>() - 50.0) < 1e-12);
  REQUIRE(res.records[1].roofline.empty());
  const Record back = record_from_json(to_json(res.records[0]));
  REQUIRE(back.roofline == res.records[0].roofline);
  REQUIRE(record_from_json(to_json(res.records[1])).roofline.empty());
}
